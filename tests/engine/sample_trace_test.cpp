// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSession::trace (issue 18, trace one sample): every module's output for one sample,
// in execution order, and the gradient of that sample's loss w.r.t. each output, checked by
// finite differences through the rest of the model; the run goes on as if nothing happened.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "engine/data/generators.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/factories.h"
#include "engine/train/session.h"

namespace nns::train {
namespace {

using namespace std::chrono_literals;

SessionParts parts() {
  SessionParts p;
  p.make_model = []() -> nn::ModulePtr {
    return std::make_shared<nn::Sequential>(
        std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::Tanh>(),
                                   std::make_shared<nn::Linear>(8, 3)});
  };
  p.loss = std::make_shared<nn::CrossEntropyLoss>();
  p.make_optimizer = [](const std::vector<Tensor>& params) {
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(0.1));
  };
  data::SpiralsOptions o;
  o.samples = 120;
  data::DatasetSplit split = data::make_spirals(o).split(0.25, 0);
  p.train = split.train;
  p.test = split.test;
  return p;
}

std::vector<double> values(const Tensor& t) {
  const Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

TEST(SampleTrace, RecordsEveryOutputAndTheLossGradientWrtIt) {
  SessionConfig config;
  config.batch_size = 10;
  TrainingSession session(parts(), config);
  session.step(5);
  ASSERT_TRUE(session.wait_idle(60s));
  const Tensor x = from_vector(std::vector<float>{0.3f, -0.7f}, Shape{1, 2});
  const Tensor y = from_vector(std::vector<int64_t>{2}, Shape{1});
  const uint64_t id = session.trace(x, y);
  ASSERT_TRUE(session.wait_idle(60s));
  std::optional<SampleTrace> trace = session.take_trace();
  ASSERT_TRUE(trace.has_value());
  EXPECT_EQ(trace->id, id);
  EXPECT_EQ(trace->step, 5);
  EXPECT_EQ(trace->error, "");
  // Execution order: the layers as they ran, the model itself last.
  ASSERT_EQ(trace->modules.size(), 4u);
  EXPECT_EQ(trace->modules[0].module, "0");
  EXPECT_EQ(trace->modules[1].module, "1");
  EXPECT_EQ(trace->modules[2].module, "2");
  EXPECT_EQ(trace->modules[3].module, "");
  EXPECT_EQ(values(trace->modules[0].input), values(x));

  // The gradient w.r.t. each layer's output, by central differences of the loss computed
  // through the layers after it (in double precision, from the layers' own outputs).
  auto& net = dynamic_cast<nn::Sequential&>(*session.model());
  nn::CrossEntropyLoss loss;
  for (size_t layer = 0; layer < 3; ++layer) {
    const ModuleTrace& m = trace->modules[layer];
    ASSERT_TRUE(m.grad_output.defined()) << m.module;
    const std::vector<double> out = values(m.output);
    const std::vector<double> grad = values(m.grad_output);
    auto loss_from = [&](std::vector<double> h) {
      NoGradGuard no_grad;
      Tensor t = from_vector(h, m.output.sizes());
      for (size_t next = layer + 1; next < 3; ++next) {
        net[static_cast<int64_t>(next)]->to(kFloat64);
        t = (*net[static_cast<int64_t>(next)])(t);
        net[static_cast<int64_t>(next)]->to(kFloat32);
      }
      return loss({t, y}).at(0).item();
    };
    for (size_t i = 0; i < out.size(); ++i) {
      std::vector<double> up = out, down = out;
      up[i] += 1e-5;
      down[i] -= 1e-5;
      const double numeric = (loss_from(up) - loss_from(down)) / 2e-5;
      EXPECT_NEAR(grad[i], numeric, 1e-4 + 1e-3 * std::abs(numeric)) << m.module << "[" << i << "]";
    }
  }
  EXPECT_NEAR(trace->loss, loss({trace->modules[2].output, y}).at(0).item(), 1e-6);
}

// A trace between two steps changes nothing of the run: the same seed gives the same losses.
TEST(SampleTrace, LeavesTheRunAsItWas) {
  SessionConfig config;
  config.batch_size = 10;
  config.seed = 4;
  std::vector<double> plain, traced;
  for (bool trace : {false, true}) {
    TrainingSession s(parts(), config);
    s.step(7);
    if (trace) {
      s.trace(from_vector(std::vector<float>{0.1f, 0.2f}, Shape{1, 2}),
              from_vector(std::vector<int64_t>{1}, Shape{1}));
    }
    s.step(7);
    ASSERT_TRUE(s.wait_idle(60s));
    for (const StepMetrics& m : s.take_step_metrics()) (trace ? traced : plain).push_back(m.loss);
  }
  EXPECT_EQ(plain, traced);
}

}  // namespace
}  // namespace nns::train
