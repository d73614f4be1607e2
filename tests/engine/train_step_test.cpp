// SPDX-License-Identifier: GPL-3.0-or-later
// train_step (issue 41): the one training step a session runs eagerly and a CUDA graph captures
// (tests/cuda/graph_test.cpp runs the captured one). On the CPU: the same weights as the step
// written out by hand, bit for bit; a step whose loss or gradient is not finite raises found_inf
// and changes no weight and no optimizer state; the hooks come in the step's order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/clip_grad.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/factory.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/train_step.h"

namespace nns::train {
namespace {

nn::ModulePtr mlp() {
  return std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 16), std::make_shared<nn::Tanh>(),
                                 std::make_shared<nn::Linear>(16, 3)});
}

Tensor loss_fn(const Tensor& output, const Tensor& targets) {
  return cross_entropy(output, targets);
}

::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != kFloat32 || b.dtype() != kFloat32) {
    return ::testing::AssertionFailure() << "not two float32 tensors of one shape";
  }
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  if (std::memcmp(ca.raw_data(), cb.raw_data(), sizeof(float) * ca.numel()) != 0) {
    return ::testing::AssertionFailure() << "the values differ";
  }
  return ::testing::AssertionSuccess();
}

// Every tensor the optimizer keeps, step counts included.
std::vector<Tensor> state_copies(const optim::Optimizer& opt) {
  std::vector<Tensor> out;
  for (const auto& [index, state] : opt.state_dict().state) {
    for (const auto& item : state) out.push_back(item.value().clone());
  }
  return out;
}

TEST(TrainStep, EndsWhereTheStepWrittenOutEnds) {
  for (const char* name : {"SGD", "Adam"}) {
    SCOPED_TRACE(name);
    manual_seed(1);
    const nn::ModulePtr a = mlp();
    const nn::ModulePtr b = mlp();
    b->load_state_dict(a->state_dict());
    const optim::OptionList options = {{"lr", 0.05}};
    auto opt_a = optim::make_optimizer(name, {optim::ParamGroup(a->parameters())}, options);
    auto opt_b = optim::make_optimizer(name, {optim::ParamGroup(b->parameters())}, options);
    const TrainStep step{*b, *opt_b, loss_fn, /*clip_grad_norm=*/0.5};
    manual_seed(2);
    for (int i = 0; i < 5; ++i) {
      const Tensor x = randn({8, 4}) * 3.0;
      const Tensor y = randint(0, 3, {8});
      opt_a->zero_grad();
      const Tensor loss = loss_fn((*a)(x), y);
      loss.backward();
      nn::clip_grad_norm_(a->parameters(), 0.5);
      opt_a->step();
      const StepResult r = train_step(step, x, y);
      EXPECT_EQ(r.loss.item(), loss.item()) << "step " << i;
      EXPECT_EQ(r.found_inf.item(), 0.0);
      EXPECT_FALSE(r.output.requires_grad());
    }
    const auto pa = a->named_parameters();
    const auto pb = b->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
      EXPECT_TRUE(same_bits(pb[i].second, pa[i].second)) << pa[i].first;
    }
  }
}

TEST(TrainStep, ANonFiniteStepRaisesFoundInfAndChangesNothing) {
  manual_seed(1);
  const nn::ModulePtr model = mlp();
  auto opt = optim::make_optimizer("Adam", {optim::ParamGroup(model->parameters())}, {});
  int before_update = 0;
  TrainStep step{*model, *opt, loss_fn};
  step.before_optimizer_step = [&] { ++before_update; };
  ASSERT_EQ(train_step(step, randn({8, 4}), randint(0, 3, {8})).found_inf.item(), 0.0);
  EXPECT_EQ(before_update, 1);
  std::vector<Tensor> params, state = state_copies(*opt);
  for (const Tensor& p : model->parameters()) params.push_back(p.detach().clone());

  // An infinite input saturates the Tanh: the loss is finite, the first layer's weight
  // gradient (0 * inf) is not. A NaN input makes the loss NaN too.
  for (const float value :
       {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    SCOPED_TRACE(value);
    Tensor bad = randn({8, 4});
    bad.data_ptr<float>()[5] = value;
    const StepResult r = train_step(step, bad, randint(0, 3, {8}));
    EXPECT_EQ(r.found_inf.item(), 1.0);
    EXPECT_EQ(std::isfinite(r.loss.item()), std::isinf(value));
    EXPECT_EQ(before_update, 1) << "the probes look only at an update that happens";
    size_t i = 0;
    for (const Tensor& p : model->parameters()) EXPECT_TRUE(same_bits(p, params[i++]));
    const std::vector<Tensor> state_after = state_copies(*opt);
    ASSERT_EQ(state_after.size(), state.size());
    for (size_t j = 0; j < state.size(); ++j) {
      EXPECT_TRUE(same_bits(state_after[j], state[j])) << "state tensor " << j;
    }
  }
}

TEST(TrainStep, CallsItsHooksInTheStepsOrder) {
  manual_seed(1);
  const nn::ModulePtr model = mlp();
  auto opt = optim::make_optimizer("SGD", {optim::ParamGroup(model->parameters())}, {{"lr", 1.0}});
  std::vector<std::string> calls;
  const Tensor weight = model->parameters().front();
  Tensor weight_then;
  TrainStep step{*model, *opt, loss_fn};
  step.mark = [&](ProfilePhase phase) {
    static const char* const names[] = {"data", "forward", "loss", "backward", "optimizer"};
    calls.push_back(names[static_cast<int>(phase)]);
  };
  step.before_optimizer_step = [&] {
    calls.push_back("before_optimizer_step");
    weight_then = weight.detach().clone();
  };
  const Tensor weight_before = weight.detach().clone();
  train_step(step, randn({8, 4}), randint(0, 3, {8}));
  EXPECT_EQ(calls, (std::vector<std::string>{"optimizer", "forward", "loss", "backward",
                                             "optimizer", "before_optimizer_step"}));
  ASSERT_TRUE(weight_then.defined());
  EXPECT_TRUE(same_bits(weight_then, weight_before)) << "the hook runs before the update";
  EXPECT_FALSE(same_bits(weight, weight_before)) << "the update ran";
}

}  // namespace
}  // namespace nns::train
