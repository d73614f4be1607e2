// SPDX-License-Identifier: GPL-3.0-or-later
// LR schedulers against PyTorch 1.13 (optim_adaptive fixtures "sched.*"): StepLR,
// CosineAnnealingLR and OneCycleLR learning-rate (and momentum) sequences over two groups to
// the last bit, the entries they write into the optimizer's groups, state_dict keys and
// round trip, and PyTorch's errors.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>

#include "engine/optim/adam.h"
#include "engine/optim/factory.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/rmsprop.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/factories.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace nns::test {
namespace {

using optim::LRScheduler;
using optim::Optimizer;
using optim::ParamGroup;
using optim::SchedulerValues;

const Fixtures& fx() {
  return Fixtures::load("optim_adaptive");
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// make_fixtures' _two_groups: a [2] with the optimizer's lr, b [3] with lr1.
std::unique_ptr<Optimizer> two_groups(const std::string& name, double lr0, double lr1,
                                      optim::OptionList options = {}) {
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{zeros({2}, TensorOptions().requires_grad(true))});
  groups.emplace_back(std::vector<Tensor>{zeros({3}, TensorOptions().requires_grad(true))},
                      optim::make_optimizer_options(name, [&] {
                        optim::OptionList o = options;
                        o.emplace_back("lr", lr1);
                        return o;
                      }()));
  options.emplace_back("lr", lr0);
  return optim::make_optimizer(name, std::move(groups), options);
}

double momentum_of(const Optimizer& opt, size_t group) {
  for (const auto& [key, value] : opt.param_groups()[group].options().items()) {
    if (key == "momentum") return std::get<double>(value);
    if (key == "betas") return std::get<std::vector<double>>(value)[0];
  }
  ADD_FAILURE() << "no momentum";
  return 0;
}

// Steps the scheduler through the fixture's rows, comparing get_last_lr(), each group's lr
// and (when recorded) the momentum exactly; then the group and state keys.
void run_schedule(const std::string& name, Optimizer& opt, LRScheduler& sched) {
  SCOPED_TRACE(name);
  const FixtureTensor& lr = fx().tensor("sched." + name + ".lr");
  const bool has_momentum = fx().has_tensor("sched." + name + ".momentum");
  const int64_t rows = lr.shape[0], cols = lr.shape[1];
  for (int64_t r = 0; r < rows; ++r) {
    if (r > 0) sched.step();
    ASSERT_EQ(sched.get_last_lr().size(), static_cast<size_t>(cols));
    for (int64_t g = 0; g < cols; ++g) {
      EXPECT_EQ(sched.get_last_lr()[g], lr.data[r * cols + g]) << "row " << r << " group " << g;
      EXPECT_EQ(opt.param_groups()[g].options().get_lr(), lr.data[r * cols + g]);
      if (has_momentum) {
        EXPECT_EQ(momentum_of(opt, g),
                  fx().tensor("sched." + name + ".momentum").data[r * cols + g])
            << "row " << r << " group " << g;
      }
    }
  }
  EXPECT_EQ(sched.last_epoch(), rows - 1);
  std::vector<std::string> group_keys;
  const optim::OptimizerStateDict sd = opt.state_dict();
  for (const auto& [key, value] : sd.param_groups[0].options) group_keys.push_back(key);
  group_keys.push_back("params");
  EXPECT_EQ(group_keys, split(fx().string("sched." + name + ".group_keys")));
  std::vector<std::string> state_keys;
  for (const auto& [key, value] : sched.state_dict()) state_keys.push_back(key);
  EXPECT_EQ(state_keys, split(fx().string("sched." + name + ".state_keys")));
}

TEST(LrSchedulerTest, StepLRMatchesPyTorch) {
  auto opt = two_groups("SGD", 0.1, 0.05);
  optim::StepLR sched(*opt, 3, 0.5);
  run_schedule("step", *opt, sched);
  EXPECT_EQ(sched.base_lrs(), (std::vector<double>{0.1, 0.05}));
}

TEST(LrSchedulerTest, CosineAnnealingLRMatchesPyTorchPastTMax) {
  auto opt = two_groups("SGD", 0.1, 0.03);
  optim::CosineAnnealingLR sched(*opt, 5, 0.001);
  run_schedule("cosine", *opt, sched);  // 23 steps: down, back up, down again
  auto adam = two_groups("Adam", 0.1, 0.02);
  optim::CosineAnnealingLR zero_min(*adam, 7);
  run_schedule("cosine0", *adam, zero_min);
}

TEST(LrSchedulerTest, OneCycleLRMatchesPyTorch) {
  {
    auto opt = two_groups("Adam", 0.1, 0.1);
    optim::OneCycleLROptions o;
    o.max_lr = {0.1, 0.2};
    o.total_steps = 20;
    optim::OneCycleLR sched(*opt, o);
    run_schedule("onecycle_cos", *opt, sched);  // beta1 cycles
  }
  {
    auto opt = two_groups("SGD", 0.1, 0.1, {{"momentum", 0.9}});
    optim::OneCycleLROptions o;
    o.max_lr = {0.5};
    o.total_steps = 15;
    o.pct_start = 0.25;
    o.anneal_strategy = "linear";
    o.div_factor = 10;
    o.final_div_factor = 100;
    o.base_momentum = {0.8};
    o.max_momentum = {0.9};
    optim::OneCycleLR sched(*opt, o);
    run_schedule("onecycle_linear", *opt, sched);
    // Stepped past total_steps: PyTorch's ValueError, word for word.
    EXPECT_EQ(error_of<ValueError>([&] { sched.step(); }),
              fx().string("sched.onecycle_linear.error"));
  }
  {
    auto opt = two_groups("RMSprop", 0.1, 0.1, {{"momentum", 0.5}});
    optim::OneCycleLROptions o;
    o.max_lr = {0.3};
    o.total_steps = 17;
    o.three_phase = true;
    optim::OneCycleLR sched(*opt, o);
    run_schedule("onecycle_three", *opt, sched);
  }
  {
    auto opt = two_groups("AdamW", 0.1, 0.1);
    auto sched = optim::make_scheduler(
        "OneCycleLR", *opt,
        {{"max_lr", 0.01}, {"total_steps", int64_t{10}}, {"cycle_momentum", false}});
    run_schedule("onecycle_nomom", *opt, *sched);
  }
}

TEST(LrSchedulerTest, FactoryBuildsTheSameSchedules) {
  auto opt = two_groups("SGD", 0.1, 0.03);
  auto sched =
      optim::make_scheduler("cosineannealinglr", *opt, {{"T_max", 5.0}, {"eta_min", 0.001}});
  run_schedule("cosine", *opt, *sched);
  auto opt2 = two_groups("SGD", 0.1, 0.05);
  auto step = optim::make_scheduler("StepLR", *opt2, {{"step_size", int64_t{3}}, {"gamma", 0.5}});
  run_schedule("step", *opt2, *step);
}

TEST(LrSchedulerTest, StateDictRoundTripResumesTheSchedule) {
  // Five steps, then the optimizer's and the scheduler's state go to a fresh pair, which
  // continues with PyTorch's sequence.
  auto opt = two_groups("Adam", 0.1, 0.1);
  optim::OneCycleLROptions o;
  o.max_lr = {0.1, 0.2};
  o.total_steps = 20;
  optim::OneCycleLR sched(*opt, o);
  for (int i = 0; i < 5; ++i) sched.step();
  const SchedulerValues state = sched.state_dict();
  EXPECT_EQ(std::get<int64_t>(state[0].second), 20);
  EXPECT_EQ(std::get<std::string>(state[2].second), "cos");

  auto fresh = two_groups("Adam", 0.5, 0.5);
  fresh->load_state_dict(opt->state_dict());  // with initial_lr, max_lr, ... of each group
  EXPECT_EQ(*fresh->param_groups()[1].options().scheduler_entry("max_lr"), 0.2);
  optim::OneCycleLROptions other;
  other.max_lr = {1.0};
  other.total_steps = 7;
  other.anneal_strategy = "linear";
  optim::OneCycleLR resumed(*fresh, other);
  fresh->load_state_dict(opt->state_dict());
  resumed.load_state_dict(state);
  EXPECT_EQ(resumed.last_epoch(), 5);
  const FixtureTensor& lr = fx().tensor("sched.onecycle_cos.lr");
  const FixtureTensor& momentum = fx().tensor("sched.onecycle_cos.momentum");
  for (int r = 6; r <= 20; ++r) {
    resumed.step();
    EXPECT_EQ(resumed.get_last_lr()[1], lr.data[r * 2 + 1]) << r;
    EXPECT_EQ(momentum_of(*fresh, 0), momentum.data[r * 2]) << r;
  }
}

TEST(LrSchedulerTest, LoadStateDictRefusesUnknownKeysAndWrongKinds) {
  auto opt = two_groups("SGD", 0.1, 0.05);
  optim::StepLR sched(*opt, 3, 0.5);
  EXPECT_NE(error_of<KeyError>([&] {
              sched.load_state_dict({{"gamma", 0.2}, {"T_max", int64_t{3}}});
            })
                .find("StepLR load_state_dict: unknown key 'T_max' (a StepLR has step_size, gamma, "
                      "base_lrs,"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              sched.load_state_dict({{"step_size", 2.5}});
            }).find("'step_size' must be an integer"),
            std::string::npos);
  // Nothing changed: gamma is still 0.5.
  EXPECT_EQ(std::get<double>(sched.state_dict()[1].second), 0.5);
  sched.load_state_dict({{"step_size", 2.0}, {"last_epoch", int64_t{1}}});
  sched.step();  // epoch 2: a multiple of the new step_size
  EXPECT_EQ(sched.get_last_lr()[0], 0.1 * 0.5);
}

TEST(LrSchedulerTest, OneCycleLRErrorsAreTorchs) {
  auto sgd = two_groups("SGD", 0.1, 0.1);
  auto make = [&](Optimizer& opt, const SchedulerValues& options) {
    return optim::make_scheduler("OneCycleLR", opt, options);
  };
  EXPECT_EQ(error_of<ValueError>([&] {
              make(*sgd, {{"max_lr", 0.1}});
            }),
            "You must define either total_steps OR (epochs AND steps_per_epoch)");
  EXPECT_EQ(error_of<ValueError>([&] {
              make(*sgd, {{"max_lr", 0.1}, {"total_steps", int64_t{-2}}});
            }),
            "Expected positive integer total_steps, but got -2");
  EXPECT_EQ(error_of<ValueError>([&] {
              make(*sgd, {{"max_lr", 0.1}, {"epochs", int64_t{2}}});
            }),
            "Expected positive integer steps_per_epoch, but got 0");
  EXPECT_EQ(error_of<ValueError>([&] {
              make(*sgd, {{"max_lr", 0.1}, {"total_steps", int64_t{10}}, {"pct_start", 1.5}});
            }),
            "Expected float between 0 and 1 pct_start, but got 1.5");
  EXPECT_EQ(error_of<ValueError>([&] {
              make(*sgd, {{"max_lr", 0.1},
                          {"total_steps", int64_t{10}},
                          {"anneal_strategy", std::string("exp")}});
            }),
            "anneal_strategy must by one of 'cos' or 'linear', instead got exp");
  EXPECT_EQ(
      error_of<ValueError>([&] {
        make(*sgd, {{"max_lr", std::vector<double>{0.1, 0.2, 0.3}}, {"total_steps", int64_t{10}}});
      }),
      "expected 2 values for max_lr, got 3");
  EXPECT_NE(error_of<ValueError>([&] {
              make(*sgd, {{"total_steps", int64_t{10}}});
            }).find("OneCycleLR needs the option 'max_lr'"),
            std::string::npos);
  // epochs * steps_per_epoch, and the entries OneCycleLR writes are there.
  auto sched = make(*sgd, {{"max_lr", 0.1}, {"epochs", int64_t{2}}, {"steps_per_epoch", 5.0}});
  EXPECT_EQ(std::get<int64_t>(sched->state_dict()[0].second), 10);
  EXPECT_EQ(*sgd->param_groups()[0].options().scheduler_entry("min_lr"), 0.1 / 25 / 1e4);
}

TEST(LrSchedulerTest, OtherErrors) {
  auto opt = two_groups("SGD", 0.1, 0.1);
  EXPECT_NE(error_of<KeyError>([&] { optim::make_scheduler("ExponentialLR", *opt, {}); })
                .find("unknown LR scheduler 'ExponentialLR' (known: StepLR, CosineAnnealingLR, "
                      "OneCycleLR)"),
            std::string::npos);
  EXPECT_NE(error_of<KeyError>([&] {
              optim::make_scheduler("StepLR", *opt, {{"step_size", int64_t{2}}, {"gama", 0.1}});
            }).find("StepLR has no option 'gama' (it has step_size, gamma)"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              optim::make_scheduler("StepLR", *opt, {});
            }).find("StepLR needs the option 'step_size'"),
            std::string::npos);
  EXPECT_THROW(optim::StepLR(*opt, 0), ValueError);
  EXPECT_THROW(optim::CosineAnnealingLR(*opt, 0), ValueError);
  // OneCycleLR reads its entries from the groups: a group loaded without them is a KeyError
  // saying what to do.
  optim::OneCycleLROptions o;
  o.max_lr = {0.1};
  o.total_steps = 10;
  optim::OneCycleLR sched(*opt, o);
  optim::OptimizerStateDict plain = opt->state_dict();
  for (auto& group : plain.param_groups) {
    std::erase_if(group.options, [](const auto& item) {
      return optim::OptimizerOptions::is_scheduler_entry(item.first);
    });
  }
  opt->load_state_dict(plain);
  EXPECT_NE(error_of<KeyError>([&] {
              sched.step();
            }).find("OneCycleLR: param_groups[0] has no 'initial_lr'"),
            std::string::npos);
}

TEST(LrSchedulerTest, SchedulerKeepsAnExistingInitialLr) {
  // PyTorch's setdefault: a second scheduler starts from the first one's initial_lr.
  auto opt = two_groups("SGD", 0.1, 0.2);
  optim::StepLR first(*opt, 1, 0.5);
  first.step();
  EXPECT_EQ(opt->param_groups()[0].options().get_lr(), 0.05);
  optim::CosineAnnealingLR second(*opt, 4);
  EXPECT_EQ(second.base_lrs(), (std::vector<double>{0.1, 0.2}));
  EXPECT_EQ(second.get_last_lr(), (std::vector<double>{0.05, 0.1}));
}

}  // namespace
}  // namespace nns::test
