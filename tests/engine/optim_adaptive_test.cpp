// SPDX-License-Identifier: GPL-3.0-or-later
// Adam, AdamW and RMSprop against PyTorch 1.13 (optim_adaptive fixtures): 20-step trajectories
// with recorded gradients for every option (float64 and float32 bit for bit), the state and
// param_group layout of state_dict, resuming from PyTorch's own state, a small model trained
// end to end, errors, and the optimizer factory.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <variant>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "engine/optim/adam.h"
#include "engine/optim/factory.h"
#include "engine/optim/rmsprop.h"
#include "engine/optim/sgd.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace nns::test {
namespace {

using optim::Optimizer;
using optim::OptionList;
using optim::ParamGroup;

const Fixtures& fx() {
  return Fixtures::load("optim_adaptive");
}

constexpr int kSteps = 20;  // OPT_STEPS in tests/fixtures/areas/optim_adaptive.py
constexpr int kMid = 10;    // OPT_MID

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The fixture's "lr=0.01;betas=0.8,0.95;amsgrad=true" as make_optimizer's options.
OptionList parse_options(const std::string& text) {
  OptionList out;
  for (const std::string& item : split(text, ';')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (value == "true" || value == "false") {
      out.emplace_back(key, value == "true");
    } else if (value.find(',') != std::string::npos) {
      std::vector<double> numbers;
      for (const std::string& v : split(value, ',')) numbers.push_back(std::stod(v));
      out.emplace_back(key, numbers);
    } else {
      out.emplace_back(key, std::stod(value));
    }
  }
  return out;
}

Tensor leaf(const std::string& name) {
  Tensor t = fx().tensor(name).to_tensor();
  t.requires_grad_(true);
  return t;
}

struct Case {
  std::string name;
  Tensor w, b;
  std::unique_ptr<Optimizer> optimizer;
};

// The fixture case's optimizer over fresh copies of its parameters at `init` ("init" or
// "step<k>"): one group, or w with the defaults and b with its own options as in PyTorch
// (the defaults overridden by options1).
Case make_case(const std::string& name, const std::string& init = "init") {
  Case c{name, leaf(name + "." + init + ".w"), leaf(name + "." + init + ".b"), nullptr};
  const std::string opt = fx().string(name + ".optimizer");
  const OptionList options = parse_options(fx().string(name + ".options"));
  std::vector<ParamGroup> groups;
  if (name.find(".groups.") != std::string::npos) {
    OptionList options1 = options;
    for (const auto& item : parse_options(fx().string(name + ".options1"))) {
      options1.push_back(item);
    }
    groups.emplace_back(std::vector<Tensor>{c.w});
    groups.emplace_back(std::vector<Tensor>{c.b}, optim::make_optimizer_options(opt, options1));
  } else {
    groups.emplace_back(std::vector<Tensor>{c.w, c.b});
  }
  c.optimizer = optim::make_optimizer(opt, std::move(groups), options);
  return c;
}

void set_grads(Case& c, int k) {
  for (auto [n, p] : {std::pair{"w", c.w}, std::pair{"b", c.b}}) {
    const std::string grad = c.name + ".grad" + std::to_string(k) + "." + n;
    p.set_grad(fx().has_tensor(grad) ? fx().tensor(grad).to_tensor() : Tensor());
  }
}

void expect_step(const Case& c, int k) {
  const std::string step = c.name + ".step" + std::to_string(k) + ".";
  EXPECT_TRUE(exactly_equal(c.w.detach(), fx().tensor(step + "w"))) << c.name << " step " << k;
  EXPECT_TRUE(exactly_equal(c.b.detach(), fx().tensor(step + "b"))) << c.name << " step " << k;
}

// The recorded state (prefix "<case>.state" or "<case>.mid") of parameter n in PyTorch's
// layout; RMSprop's step is a Python int there, an int64 tensor here.
optim::ParamState fixture_state(const std::string& prefix, const std::string& n,
                                const std::vector<std::string>& keys) {
  optim::ParamState st("State");
  for (const std::string& key : keys) {
    const std::string name = prefix + "." + n + "." + key;
    st.insert(key, fx().has_tensor(name) ? fx().tensor(name).to_tensor()
                                         : scalar_tensor(fx().scalar(name), kInt64));
  }
  return st;
}

std::vector<std::string> cases() {
  return split(fx().string("cases"), ' ');
}

TEST(OptimAdaptiveTest, TrajectoriesMatchPyTorchBitForBit) {
  // float64 and float32 alike: the update rounds where PyTorch's kernels round.
  ASSERT_EQ(cases().size(), 27u);
  for (const std::string& name : cases()) {
    Case c = make_case(name);
    for (int k = 0; k < kSteps; ++k) {
      set_grads(c, k);
      c.optimizer->step();
      expect_step(c, k);
    }
  }
}

TEST(OptimAdaptiveTest, StateMatchesPyTorchsKeysOrderAndValues) {
  for (const std::string& name : cases()) {
    SCOPED_TRACE(name);
    Case c = make_case(name);
    for (int k = 0; k < kSteps; ++k) {
      set_grads(c, k);
      c.optimizer->step();
    }
    const optim::OptimizerStateDict sd = c.optimizer->state_dict();
    ASSERT_EQ(sd.state.size(), 2u);
    for (auto [i, n] : {std::pair{0, "w"}, std::pair{1, "b"}}) {
      const optim::ParamState& st = sd.state.at(i);
      const std::vector<std::string> keys = split(fx().string(name + ".state_keys." + n), ',');
      EXPECT_EQ(st.keys(), keys) << n;
      for (const std::string& key : keys) {
        const std::string want = name + ".state." + n + "." + key;
        if (fx().has_tensor(want)) {
          // Adam's step: a float32 scalar tensor, as PyTorch's.
          EXPECT_TRUE(exactly_equal(st[key], fx().tensor(want))) << n << "." << key;
        } else {
          EXPECT_EQ(st[key].dtype(), kInt64);
          EXPECT_EQ(st[key].item(), fx().scalar(want)) << n << "." << key;
        }
      }
    }
    // param_groups[0]'s keys in PyTorch's order ("params" comes last in its state_dict).
    std::vector<std::string> group_keys;
    for (const auto& [key, value] : sd.param_groups[0].options) group_keys.push_back(key);
    group_keys.push_back("params");
    EXPECT_EQ(group_keys, split(fx().string(name + ".group_keys"), ','));
  }
}

TEST(OptimAdaptiveTest, PyTorchsStateLoadsAndResumes) {
  // A fresh optimizer over the parameters after step kMid - 1 takes PyTorch's state from that
  // point (as a checkpoint would hold it); the remaining steps are PyTorch's.
  for (const std::string& name : cases()) {
    SCOPED_TRACE(name);
    Case c = make_case(name, "step" + std::to_string(kMid - 1));
    optim::OptimizerStateDict sd = c.optimizer->state_dict();
    for (auto [i, n] : {std::pair{0, "w"}, std::pair{1, "b"}}) {
      sd.state.emplace(
          i, fixture_state(name + ".mid", n, split(fx().string(name + ".state_keys." + n), ',')));
    }
    c.optimizer->load_state_dict(sd);
    for (int k = kMid; k < kSteps; ++k) {
      set_grads(c, k);
      c.optimizer->step();
      expect_step(c, k);
    }
  }
}

TEST(OptimAdaptiveTest, StateDictRoundTrip) {
  for (const std::string name : {"adam.amsgrad.f32", "adamw.groups.f32",
                                 "rmsprop.centered_momentum.f64", "rmsprop.groups.f32"}) {
    SCOPED_TRACE(name);
    Case a = make_case(name);
    for (int k = 0; k < kMid; ++k) {
      set_grads(a, k);
      a.optimizer->step();
    }
    // A fresh optimizer with other options over copies of the parameters.
    Tensor w = a.w.detach().clone().requires_grad_(true);
    Tensor b = a.b.detach().clone().requires_grad_(true);
    std::vector<ParamGroup> groups;
    groups.emplace_back(std::vector<Tensor>{w});
    groups.emplace_back(std::vector<Tensor>{b});
    if (a.optimizer->param_groups().size() == 1) {
      groups.pop_back();
      groups[0].params.push_back(b);
    }
    Case r{
        name, w, b,
        optim::make_optimizer(fx().string(name + ".optimizer"), std::move(groups), {{"lr", 0.5}})};
    r.optimizer->load_state_dict(a.optimizer->state_dict());
    EXPECT_EQ(r.optimizer->param_groups()[0].options().get_lr(),
              a.optimizer->param_groups()[0].options().get_lr());
    // Copies, not the same tensors.
    EXPECT_FALSE(r.optimizer->find_state(w)->find("step")->is_same(
        *a.optimizer->find_state(a.w)->find("step")));
    for (int k = kMid; k < kSteps; ++k) {
      set_grads(r, k);
      r.optimizer->step();
      expect_step(r, k);
    }
  }
}

TEST(OptimAdaptiveTest, SmallModelTrainsAsInPyTorch) {
  for (const std::string name : {"model.adam", "model.adamw", "model.rmsprop"}) {
    SCOPED_TRACE(name);
    auto model = std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::Tanh>(),
        std::make_shared<nn::Linear>(5, 2)});
    {
      NoGradGuard no_grad;
      for (auto& [n, p] : model->named_parameters()) {
        Tensor param = p;
        param.copy_(fx().tensor("model.init." + n).to_tensor());
      }
    }
    std::unique_ptr<Optimizer> opt;
    if (name == std::string("model.adam")) {
      optim::AdamOptions o(0.05);
      o.amsgrad = true;
      opt = std::make_unique<optim::Adam>(model->parameters(), o);
    } else if (name == std::string("model.adamw")) {
      opt = std::make_unique<optim::AdamW>(model->parameters(), optim::AdamWOptions(0.05));
    } else {
      optim::RMSpropOptions o(0.01);
      o.momentum = 0.5;
      o.centered = true;
      opt = std::make_unique<optim::RMSprop>(model->parameters(), o);
    }
    const Tensor x = fx().tensor("model.x").to_tensor();
    const Tensor y = fx().tensor("model.y").to_tensor();
    const FixtureTensor& losses = fx().tensor(std::string(name) + ".losses");
    for (int k = 0; k < kSteps; ++k) {
      opt->zero_grad();
      Tensor loss = ((*model)(x)-y).pow(2).mean();
      loss.backward();
      opt->step();
      EXPECT_NEAR(loss.item(), losses.data[k], 1e-5 * std::abs(losses.data[k])) << "step " << k;
    }
    for (const auto& [n, p] : model->named_parameters()) {
      EXPECT_TRUE(all_close(p.detach(), fx().tensor(std::string(name) + ".final." + n), 1e-4, 1e-5))
          << n;
    }
  }
}

TEST(OptimAdaptiveTest, DefaultsAreTorchs) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  auto adam = optim::make_optimizer("Adam", {ParamGroup({w})}, {});
  const OptionList items = adam->defaults().items();
  EXPECT_EQ(std::get<double>(items[0].second), 1e-3);
  EXPECT_EQ(std::get<std::vector<double>>(items[1].second), (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(std::get<double>(items[2].second), 1e-8);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(items[6].second));  // foreach: None
  auto adamw = optim::make_optimizer("adamw", {ParamGroup({w})}, {});
  EXPECT_EQ(std::get<double>(adamw->defaults().items()[3].second), 1e-2);  // weight_decay
  auto rmsprop = optim::make_optimizer("RMSprop", {ParamGroup({w})}, {});
  EXPECT_EQ(rmsprop->defaults().get_lr(), 1e-2);
  EXPECT_EQ(std::get<double>(rmsprop->defaults().items()[2].second), 0.99);  // alpha
}

TEST(OptimAdaptiveTest, BadOptionsAreValueErrors) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  auto build = [&](const std::string& name, const OptionList& options) {
    optim::make_optimizer(name, {ParamGroup({w})}, options);
  };
  EXPECT_NE(error_of<ValueError>([&] {
              build("Adam", {{"lr", -1.0}});
            }).find("Adam: Invalid learning rate: -1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("AdamW", {{"eps", -1e-3}});
            }).find("AdamW: Invalid epsilon value: -0.001"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("Adam", {{"betas", std::vector<double>{0.9, 1.0}}});
            }).find("Invalid beta parameter at index 1: 1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("Adam", {{"betas", std::vector<double>{0.9}}});
            }).find("'betas' must be a pair"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("RMSprop", {{"alpha", -0.5}});
            }).find("RMSprop: Invalid alpha value: -0.5"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("RMSprop", {{"momentum", -0.5}});
            }).find("Invalid momentum value: -0.5"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("Adam", {{"weight_decay", -1.0}});
            }).find("Invalid weight_decay value: -1"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("Adam", {{"fused", true}});
            }).find("fused=True is not supported"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              build("AdamW", {{"amsgrad", 1.0}});
            }).find("'amsgrad' must be true or false"),
            std::string::npos);
  // foreach may be a flag (the same update, up to rounding in PyTorch) and is kept.
  auto adam = optim::make_optimizer("Adam", {ParamGroup({w})}, {{"foreach", false}});
  EXPECT_EQ(std::get<bool>(adam->defaults().items()[6].second), false);
}

TEST(OptimAdaptiveTest, FactoryNamesAndUnknownOptionsAreKeyErrors) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  EXPECT_NE(error_of<KeyError>([&] {
              optim::make_optimizer("Adagrad", {ParamGroup({w})}, {});
            }).find("unknown optimizer 'Adagrad' (known: SGD, Adam, AdamW, RMSprop)"),
            std::string::npos);
  EXPECT_NE(error_of<KeyError>([&] {
              optim::make_optimizer("AdamW", {ParamGroup({w})}, {{"lr_decay", 0.1}});
            }).find("AdamW has no option 'lr_decay' (it has lr, betas,"),
            std::string::npos);
  EXPECT_NE(error_of<KeyError>([&] {
              optim::make_optimizer("rmsprop", {ParamGroup({w})}, {{"nesterov", true}});
            }).find("RMSprop has no option 'nesterov'"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              optim::make_optimizer("sgd", {ParamGroup({w})}, {{"momentum", 0.9}});
            }).find("SGD needs a learning rate"),
            std::string::npos);
  auto sgd = optim::make_optimizer("sgd", {ParamGroup({w})}, {{"lr", 0.1}, {"momentum", 0.9}});
  ASSERT_NE(dynamic_cast<optim::SGD*>(sgd.get()), nullptr);
  EXPECT_EQ(sgd->defaults().get_lr(), 0.1);
  EXPECT_NE(
      dynamic_cast<optim::AdamW*>(optim::make_optimizer("ADAMW", {ParamGroup({w})}, {}).get()),
      nullptr);
}

TEST(OptimAdaptiveTest, BadParametersAndStateAreRefusedBeforeAnyUpdate) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  Tensor h = ones({2}, TensorOptions(kFloat16).requires_grad(true));
  optim::Adam adam(std::vector<Tensor>{w, h}, optim::AdamOptions(0.1));
  w.set_grad(ones({2}));
  h.set_grad(ones({2}, kFloat16));
  EXPECT_NE(error_of<DtypeError>([&] {
              adam.step();
            }).find("Adam: parameter 1 of group 0 is torch.float16"),
            std::string::npos);
  EXPECT_EQ(values(w), (std::vector<double>{1, 1}));
  EXPECT_EQ(adam.find_state(w), nullptr);

  // amsgrad turned on after the state was made: PyTorch's KeyError, with what to do.
  optim::Adam plain(std::vector<Tensor>{w}, optim::AdamOptions(0.1));
  w.set_grad(ones({2}));
  plain.step();
  plain.param_groups()[0].options().set("amsgrad", true);
  EXPECT_NE(error_of<KeyError>([&] { plain.step(); }).find("no 'max_exp_avg_sq'"),
            std::string::npos);

  // Options of another optimizer in a group.
  Tensor b = ones({2}, TensorOptions().requires_grad(true));
  EXPECT_NE(error_of<ValueError>([&] {
              optim::Adam(std::vector<ParamGroup>{ParamGroup({b}, optim::AdamWOptions().clone())},
                          optim::AdamOptions());
            }).find("Adam: a parameter group has options of another optimizer"),
            std::string::npos);
  EXPECT_THROW(
      optim::RMSprop(std::vector<ParamGroup>{ParamGroup({b}, optim::AdamOptions().clone())},
                     optim::RMSpropOptions()),
      ValueError);
}

TEST(OptimAdaptiveTest, NonContiguousParameterIsUpdatedInPlace) {
  // A leaf that is a transposed view of its storage: updated through a contiguous copy that
  // is written back, giving the same values as a contiguous parameter.
  Tensor base = fx().tensor("adam.default.f32.init.w").to_tensor();
  Tensor t = base.t();
  t.requires_grad_(true);
  Tensor c = base.t().contiguous().requires_grad_(true);
  optim::Adam a(std::vector<Tensor>{t}, optim::AdamOptions(0.01));
  optim::Adam b(std::vector<Tensor>{c}, optim::AdamOptions(0.01));
  const uint32_t version = t.version();
  for (int k = 0; k < 3; ++k) {
    Tensor g = fx().tensor("adam.default.f32.grad" + std::to_string(k) + ".w").to_tensor().t();
    t.set_grad(g);
    c.set_grad(g.contiguous());
    a.step();
    b.step();
  }
  EXPECT_EQ(values(t), values(c));
  EXPECT_GT(t.version(), version);
  EXPECT_FALSE(t.is_contiguous());
}

// The groups train.py writes under torch 2.x (torch 2.11's defaults, keys 1.13 lacks: fused=None,
// decoupled_weight_decay, AdamW's differentiable and fused, SGD's fused, RMSprop's capturable)
// resume here; what would change the update is refused by name.
TEST(OptimAdaptiveTest, TorchTwoGroupKeysAreTaken) {
  Tensor w = ones({2}, TensorOptions().requires_grad(true));
  const optim::OptionValue none = std::monostate{};
  const optim::OptionList adam = {{"lr", 0.01},
                                  {"betas", std::vector<double>{0.9, 0.999}},
                                  {"eps", 1e-8},
                                  {"weight_decay", 0.0},
                                  {"amsgrad", false},
                                  {"maximize", false},
                                  {"foreach", none},
                                  {"capturable", false},
                                  {"differentiable", false},
                                  {"fused", none},
                                  {"decoupled_weight_decay", false}};
  EXPECT_NO_THROW(optim::make_optimizer("Adam", {ParamGroup({w})}, adam));
  optim::OptionList adamw = adam;
  adamw.back().second = true;
  EXPECT_NO_THROW(optim::make_optimizer("AdamW", {ParamGroup({w})}, adamw));
  EXPECT_NE(error_of<ValueError>([&] {
              optim::make_optimizer("Adam", {ParamGroup({w})}, adamw);
            }).find("Adam: decoupled_weight_decay=True is AdamW's update; choose AdamW"),
            std::string::npos);
  EXPECT_NE(error_of<ValueError>([&] {
              optim::make_optimizer("AdamW", {ParamGroup({w})}, {{"fused", true}});
            }).find("fused=True is not supported"),
            std::string::npos);
  EXPECT_NO_THROW(optim::make_optimizer("SGD", {ParamGroup({w})},
                                        {{"lr", 0.1},
                                         {"momentum", 0.0},
                                         {"dampening", 0.0},
                                         {"weight_decay", 0.0},
                                         {"nesterov", false},
                                         {"maximize", false},
                                         {"foreach", none},
                                         {"differentiable", false},
                                         {"fused", none}}));
  EXPECT_NO_THROW(optim::make_optimizer("RMSprop", {ParamGroup({w})},
                                        {{"lr", 0.01},
                                         {"momentum", 0.0},
                                         {"alpha", 0.99},
                                         {"eps", 1e-8},
                                         {"centered", false},
                                         {"weight_decay", 0.0},
                                         {"capturable", false},
                                         {"foreach", none},
                                         {"maximize", false},
                                         {"differentiable", false}}));
}

}  // namespace
}  // namespace nns::test
