// SPDX-License-Identifier: GPL-3.0-or-later
// Optimizer and SGD: the update rule against PyTorch 1.13 (gradients set by hand, step by
// step), parameter groups, skipped parameters, zero_grad, option errors, and the seeds'
// training examples (seed 002's loop, freezing a weight).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <variant>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "nn_seed_modules.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace nns::test {
namespace {

using optim::ParamGroup;
using optim::SGD;
using optim::SGDOptions;

const Fixtures& fx() {
  return Fixtures::load("optim");
}

constexpr int kSteps = 5;  // make_fixtures.py's SGD_STEPS

SGDOptions sgd_options(double lr, double momentum = 0, double dampening = 0,
                       double weight_decay = 0, bool nesterov = false, bool maximize = false) {
  SGDOptions o(lr);
  o.momentum = momentum;
  o.dampening = dampening;
  o.weight_decay = weight_decay;
  o.nesterov = nesterov;
  o.maximize = maximize;
  return o;
}

Tensor leaf(const std::string& name) {
  Tensor t = fx().tensor(name).to_tensor();
  t.requires_grad_(true);
  return t;
}

// Runs the fixture case `name` (parameters w and b, five steps with recorded gradients; a
// missing gradient means none) on the optimizer make() builds, comparing after each step.
void run_case(const std::string& name,
              const std::function<std::unique_ptr<SGD>(const Tensor& w, const Tensor& b)>& make) {
  SCOPED_TRACE(name);
  Tensor w = leaf(name + ".init.w");
  Tensor b = leaf(name + ".init.b");
  const void* w_data = w.raw_data();
  std::unique_ptr<SGD> sgd = make(w, b);
  for (int k = 0; k < kSteps; ++k) {
    for (auto [n, p] : {std::pair{"w", w}, std::pair{"b", b}}) {
      const std::string grad = name + ".grad" + std::to_string(k) + "." + n;
      p.set_grad(fx().has_tensor(grad) ? fx().tensor(grad).to_tensor() : Tensor());
    }
    sgd->step();
    const std::string step = name + ".step" + std::to_string(k) + ".";
    // PyTorch fuses the multiply-add of add(other, alpha); the engine rounds twice.
    EXPECT_TRUE(all_close(w.detach(), fx().tensor(step + "w"), 1e-6, 1e-7)) << "step " << k;
    EXPECT_TRUE(all_close(b.detach(), fx().tensor(step + "b"), 1e-6, 1e-7)) << "step " << k;
  }
  // Updated in place: the same tensors, still leaves that require grad.
  EXPECT_EQ(w.raw_data(), w_data);
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(w.requires_grad());
  for (auto [n, p] : {std::pair{"w", w}, std::pair{"b", b}}) {
    const optim::ParamState* state = sgd->find_state(p);
    const std::string buf = name + ".buf." + n;
    if (fx().has_tensor(buf)) {
      ASSERT_NE(state, nullptr) << n;
      ASSERT_NE(state->find("momentum_buffer"), nullptr) << n;
      EXPECT_TRUE(all_close(*state->find("momentum_buffer"), fx().tensor(buf), 1e-6, 1e-7)) << n;
    } else {
      EXPECT_TRUE(state == nullptr || state->find("momentum_buffer") == nullptr) << n;
    }
  }
}

TEST(OptimSgdTest, UpdateRuleMatchesPyTorch) {
  const std::pair<const char*, SGDOptions> cases[] = {
      {"plain", sgd_options(0.1)},
      {"momentum", sgd_options(0.1, 0.9)},
      {"dampening", sgd_options(0.05, 0.8, 0.5)},
      {"nesterov", sgd_options(0.1, 0.9, 0, 0, true)},
      {"wd_momentum", sgd_options(0.1, 0.9, 0, 0.01)},
      {"maximize", sgd_options(0.1, 0.5, 0, 0.1, false, true)},
      {"nesterov_wd", sgd_options(0.01, 0.7, 0, 0.05, true)},
      {"f64_all", sgd_options(0.1, 0.9, 0.1, 0.02)},
  };
  for (const auto& [name, options] : cases) {
    run_case(std::string("sgd.") + name, [&](const Tensor& w, const Tensor& b) {
      return std::make_unique<SGD>(std::vector<Tensor>{w, b}, options);
    });
  }
}

TEST(OptimSgdTest, Float64MatchesToTheLastBits) {
  // PyTorch's vectorized add(other, alpha) is a fused multiply-add (one rounding); the
  // engine's rounds the product first, so float64 agrees to about one unit in the last place.
  Tensor w = leaf("sgd.f64_all.init.w");
  Tensor b = leaf("sgd.f64_all.init.b");
  SGD sgd({w, b}, sgd_options(0.1, 0.9, 0.1, 0.02));
  for (int k = 0; k < kSteps; ++k) {
    const std::string g = "sgd.f64_all.grad" + std::to_string(k) + ".";
    w.set_grad(fx().tensor(g + "w").to_tensor());
    b.set_grad(fx().tensor(g + "b").to_tensor());
    sgd.step();
  }
  EXPECT_TRUE(all_close(w.detach(), fx().tensor("sgd.f64_all.step4.w"), 1e-14, 1e-15));
  EXPECT_TRUE(all_close(b.detach(), fx().tensor("sgd.f64_all.step4.b"), 1e-14, 1e-15));
}

TEST(OptimSgdTest, ParamGroupsHaveTheirOwnOptions) {
  // SGD([{"params": [w]}, {"params": [b], "lr": 0.01, "momentum": 0}], lr=0.1, momentum=0.9)
  run_case("sgd.groups", [](const Tensor& w, const Tensor& b) {
    std::vector<ParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{w});
    groups.emplace_back(std::vector<Tensor>{b}, sgd_options(0.01).clone());
    return std::make_unique<SGD>(std::move(groups), sgd_options(0.1, 0.9));
  });
  // The same through add_param_group.
  run_case("sgd.groups", [](const Tensor& w, const Tensor& b) {
    auto sgd = std::make_unique<SGD>(std::vector<Tensor>{w}, sgd_options(0.1, 0.9));
    sgd->add_param_group(ParamGroup({b}, sgd_options(0.01).clone()));
    EXPECT_EQ(sgd->param_groups().size(), 2u);
    EXPECT_EQ(sgd->param_groups()[1].options().get_lr(), 0.01);
    return sgd;
  });
}

TEST(OptimSgdTest, GroupsWithoutOptionsCopyTheDefaults) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  SGD sgd(std::vector<Tensor>{w}, sgd_options(0.5, 0.9));
  Tensor b = ones({2}, TensorOptions().requires_grad(true));
  sgd.add_param_group(ParamGroup({b}));
  // Changing one group's lr (as a scheduler does) leaves the others and the defaults alone.
  sgd.param_groups()[1].options().set_lr(0.25);
  EXPECT_EQ(sgd.param_groups()[0].options().get_lr(), 0.5);
  EXPECT_EQ(sgd.defaults().get_lr(), 0.5);
  w.set_grad(ones({2}));
  b.set_grad(ones({2}));
  sgd.step();
  EXPECT_EQ(values(w), (std::vector<double>{0.5, 0.5}));
  EXPECT_EQ(values(b), (std::vector<double>{0.75, 0.75}));
}

TEST(OptimSgdTest, ParametersWithoutGradientAreSkipped) {
  // b has no gradient at steps 1 and 2: unchanged there, and its momentum buffer waits.
  run_case("sgd.skip", [](const Tensor& w, const Tensor& b) {
    return std::make_unique<SGD>(std::vector<Tensor>{w, b}, sgd_options(0.1, 0.9));
  });
  EXPECT_TRUE(
      exactly_equal(fx().tensor("sgd.skip.step1.b").to_tensor(), fx().tensor("sgd.skip.step0.b")));
}

TEST(OptimSgdTest, ZeroGrad) {
  Tensor w = ones({3}, TensorOptions().requires_grad(true));
  SGD sgd(std::vector<Tensor>{w}, sgd_options(0.1));
  (w * 2.0).sum().backward();
  Tensor grad = w.grad();
  // set_to_none=false zeroes the same gradient tensor in place.
  sgd.zero_grad(false);
  ASSERT_TRUE(w.grad().defined());
  EXPECT_TRUE(w.grad().is_same(grad));
  EXPECT_EQ(values(grad), (std::vector<double>{0, 0, 0}));
  // A zero gradient still steps (weight decay and momentum would act); none skips.
  (w * 2.0).sum().backward();
  sgd.zero_grad();
  EXPECT_FALSE(w.grad().defined());
  sgd.step();
  EXPECT_EQ(values(w), (std::vector<double>{1, 1, 1}));
  // A later backward starts from nothing.
  (w * 3.0).sum().backward();
  EXPECT_EQ(values(w.grad()), (std::vector<double>{3, 3, 3}));
  sgd.step();
  for (double v : values(w)) EXPECT_FLOAT_EQ(v, 0.7f);
}

TEST(OptimSgdTest, BadOptionsAndParametersAreValueErrors) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w}, sgd_options(-0.1));
            }).find("Invalid learning rate: -0.1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w}, sgd_options(0.1, -1));
            }).find("Invalid momentum value: -1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w}, sgd_options(0.1, 0, 0, -0.5));
            }).find("Invalid weight_decay value: -0.5"),
            std::string::npos);
  const char* nesterov = "Nesterov momentum requires a momentum and zero dampening";
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w}, sgd_options(0.1, 0, 0, 0, true));
            }).find(nesterov),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w}, sgd_options(0.1, 0.9, 0.1, 0, true));
            }).find(nesterov),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{}, sgd_options(0.1));
            }).find("empty parameter list"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w * 2.0}, sgd_options(0.1));
            }).find("can't optimize a non-leaf Tensor"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              SGD(std::vector<Tensor>{w, w}, sgd_options(0.1));
            }).find("the same parameter twice"),
            std::string::npos);

  // A bad group is refused and the optimizer is left as it was.
  SGD sgd(std::vector<Tensor>{w}, sgd_options(0.1));
  EXPECT_NE(error_of<ValueError>([&] {
              sgd.add_param_group(ParamGroup({w}));
            }).find("some parameters appear in more than one parameter group"),
            std::string::npos);
  EXPECT_EQ(sgd.param_groups().size(), 1u);
  // Options made invalid after construction are caught before any parameter changes.
  Tensor b = ones({2}, TensorOptions().requires_grad(true));
  sgd.add_param_group(ParamGroup({b}, sgd_options(0.1, 0, 0, 0, true).clone()));
  w.set_grad(ones({2}));
  EXPECT_THROW(sgd.step(), ValueError);
  EXPECT_EQ(values(w), (std::vector<double>{1, 1}));
}

TEST(OptimSgdTest, StateDictHasPyTorchsLayout) {
  Tensor w = leaf("sgd.groups.init.w");
  Tensor b = leaf("sgd.groups.init.b");
  std::vector<ParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{w});
  groups.emplace_back(std::vector<Tensor>{b}, sgd_options(0.01).clone());
  SGD sgd(std::move(groups), sgd_options(0.1, 0.9));
  w.set_grad(fx().tensor("sgd.groups.grad0.w").to_tensor());
  b.set_grad(fx().tensor("sgd.groups.grad0.b").to_tensor());
  sgd.step();

  const optim::OptimizerStateDict sd = sgd.state_dict();
  // b's group has no momentum, so only w (index 0) has state.
  ASSERT_EQ(sd.state.size(), 1u);
  ASSERT_EQ(sd.state.count(0), 1u);
  EXPECT_EQ(sd.state.at(0).keys(), (std::vector<std::string>{"momentum_buffer"}));
  EXPECT_TRUE(
      sd.state.at(0)["momentum_buffer"].is_same(*sgd.find_state(w)->find("momentum_buffer")));
  ASSERT_EQ(sd.param_groups.size(), 2u);
  EXPECT_EQ(sd.param_groups[0].params, (std::vector<int64_t>{0}));
  EXPECT_EQ(sd.param_groups[1].params, (std::vector<int64_t>{1}));
  std::vector<std::string> names;
  for (const auto& [name, value] : sd.param_groups[1].options) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"lr", "momentum", "dampening", "weight_decay",
                                             "nesterov", "maximize", "foreach", "differentiable"}));
  EXPECT_EQ(std::get<double>(sd.param_groups[0].options[0].second), 0.1);
  EXPECT_EQ(std::get<double>(sd.param_groups[1].options[0].second), 0.01);
  EXPECT_EQ(std::get<bool>(sd.param_groups[1].options[4].second), false);
}

TEST(OptimSgdTest, LoadStateDictResumesTraining) {
  // Train two steps, save, load into a fresh optimizer over copies of the parameters: the
  // remaining steps give PyTorch's values.
  const std::string name = "sgd.wd_momentum";
  Tensor w = leaf(name + ".init.w");
  Tensor b = leaf(name + ".init.b");
  SGD sgd(std::vector<Tensor>{w, b}, sgd_options(0.1, 0.9, 0, 0.01));
  auto set_grads = [&](Tensor& pw, Tensor& pb, int k) {
    pw.set_grad(fx().tensor(name + ".grad" + std::to_string(k) + ".w").to_tensor());
    pb.set_grad(fx().tensor(name + ".grad" + std::to_string(k) + ".b").to_tensor());
  };
  for (int k = 0; k < 2; ++k) {
    set_grads(w, b, k);
    sgd.step();
  }
  Tensor w2 = w.detach().clone().requires_grad_(true);
  Tensor b2 = b.detach().clone().requires_grad_(true);
  SGD resumed(std::vector<Tensor>{w2, b2}, sgd_options(0.5));
  resumed.load_state_dict(sgd.state_dict());
  EXPECT_EQ(resumed.param_groups()[0].options().get_lr(), 0.1);
  // The loaded buffers are copies: stepping one optimizer leaves the other's alone.
  EXPECT_FALSE(resumed.find_state(w2)
                   ->find("momentum_buffer")
                   ->is_same(*sgd.find_state(w)->find("momentum_buffer")));
  for (int k = 2; k < kSteps; ++k) {
    set_grads(w2, b2, k);
    resumed.step();
  }
  EXPECT_TRUE(all_close(w2.detach(), fx().tensor(name + ".step4.w"), 1e-6, 1e-7));
  EXPECT_TRUE(all_close(b2.detach(), fx().tensor(name + ".step4.b"), 1e-6, 1e-7));
}

TEST(OptimSgdTest, LoadStateDictRefusesMismatchesAndChangesNothing) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  Tensor b = ones({3}, TensorOptions().requires_grad(true));
  SGD sgd(std::vector<Tensor>{w, b}, sgd_options(0.1, 0.9));
  w.set_grad(ones({2}));
  b.set_grad(ones({3}));
  sgd.step();
  const optim::OptimizerStateDict good = sgd.state_dict();

  Tensor c = ones({2}, TensorOptions().requires_grad(true));
  SGD other(std::vector<Tensor>{c}, sgd_options(0.3));
  EXPECT_NE(error_of<ValueError>([&] {
              other.load_state_dict(good);
            }).find("doesn't match the size of optimizer's group"),
            std::string::npos);
  optim::OptimizerStateDict two_groups = good;
  two_groups.param_groups.push_back(two_groups.param_groups[0]);
  EXPECT_NE(error_of<ValueError>([&] {
              other.load_state_dict(two_groups);
            }).find("different number of parameter groups"),
            std::string::npos);

  SGD fresh(std::vector<Tensor>{b, w}, sgd_options(0.3));  // shapes swapped
  EXPECT_NE(error_of<ShapeError>([&] { fresh.load_state_dict(good); })
                .find("'momentum_buffer' of parameter 0 has shape [2], but the parameter has "
                      "shape [3]"),
            std::string::npos);
  optim::OptimizerStateDict unknown = good;
  unknown.param_groups[0].options.emplace_back("betas", std::vector<double>{0.9, 0.999});
  EXPECT_NE(error_of<KeyError>([&] { sgd.load_state_dict(unknown); }).find("no option 'betas'"),
            std::string::npos);
  optim::OptimizerStateDict wrong_kind = good;
  wrong_kind.param_groups[0].options[4].second = 1.0;
  EXPECT_NE(error_of<ValueError>([&] {
              sgd.load_state_dict(wrong_kind);
            }).find("'nesterov' must be true or false"),
            std::string::npos);
  // None of these changed anything.
  EXPECT_EQ(fresh.param_groups()[0].options().get_lr(), 0.3);
  EXPECT_EQ(fresh.find_state(b), nullptr);
  EXPECT_EQ(sgd.param_groups()[0].options().items().size(), 8u);
}

// Seed 002: "teaches" Net to output the constant zero function.
TEST(OptimSgdTest, Seed002TrainingLoopDrivesL1WeightToZero) {
  manual_seed(0);
  auto net = std::make_shared<Net>();
  SGDOptions options(1e-4);
  options.weight_decay = 1e-2;
  options.momentum = 0.9;
  SGD optimizer(net->parameters(), options);

  for (int step = 0; step < 10000; ++step) {
    Tensor input = randn({4});
    Tensor output = (*net)(input);
    Tensor loss = output.abs();
    net->zero_grad();
    loss.backward();
    optimizer.step();
    if (step == 0 || step == 9 || step == 99) {
      for (const auto& [name, p] : net->named_parameters()) {
        EXPECT_TRUE(all_close(p.detach(),
                              fx().tensor("seed002.step" + std::to_string(step) + "." + name), 1e-5,
                              1e-6))
            << name << " at step " << step;
      }
    }
  }
  net->eval();

  // "its values are now much closer to 0"
  for (double v : values(net->l1->weight)) EXPECT_LT(std::abs(v), 0.01);
  // And they are PyTorch's: the same init and inputs for the same seed, the same updates
  // (10000 float32 steps may drift by a few roundings).
  for (const auto& [name, p] : net->named_parameters()) {
    EXPECT_TRUE(all_close(p.detach(), fx().tensor("seed002.final." + name), 1e-3, 1e-4)) << name;
  }
}

// Seed 003: net.fc1.weight.requires_grad = False freezes it; the rest trains.
struct TwoLinear : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2;
  TwoLinear() {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    register_module("relu", std::make_shared<nn::ReLU>());
    fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
  }
  using Module::forward;
  Tensor forward(const Tensor& x) override { return (*fc2)((*fc1)(x).relu()); }
};

TEST(OptimSgdTest, FrozenWeightIsNotUpdated) {
  manual_seed(0);
  auto model = std::make_shared<TwoLinear>();
  model->fc1->weight.requires_grad_(false);
  SGD optimizer(model->parameters(), sgd_options(0.1, 0.9));
  Tensor x = fx().tensor("freeze.x").to_tensor();
  Tensor y = fx().tensor("freeze.y").to_tensor();
  for (const auto& [name, p] : model->named_parameters()) {
    EXPECT_TRUE(exactly_equal(p.detach(), fx().tensor("freeze.init." + name))) << name;
  }
  const std::vector<double> frozen = values(model->fc1->weight);
  for (int i = 0; i < 5; ++i) {
    optimizer.zero_grad();
    ((*model)(x)-y).pow(2).mean().backward();
    optimizer.step();
  }
  EXPECT_FALSE(model->fc1->weight.grad().defined());
  EXPECT_EQ(values(model->fc1->weight), frozen);
  for (const auto& [name, p] : model->named_parameters()) {
    if (name != "fc1.weight") {
      EXPECT_NE(values(p), fx().tensor("freeze.init." + name).data) << name;
    }
    EXPECT_TRUE(all_close(p.detach(), fx().tensor("freeze.final." + name), 1e-5, 1e-6)) << name;
  }
}

}  // namespace
}  // namespace nns::test
