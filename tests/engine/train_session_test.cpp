// SPDX-License-Identifier: GPL-3.0-or-later
// TrainingSession: commands from another thread, reproducibility with a seed (also across
// pause / step / resume), per-epoch metrics, NaN/Inf stops naming the module, probes through
// the session, reset, predictions.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <thread>

#include "engine/data/generators.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/train/session.h"

namespace nns::train {
namespace {

using namespace std::chrono_literals;

// Multiplies by NaN once `after` calls have passed (0: always).
class NanAfter : public nn::Module {
 public:
  explicit NanAfter(int after = 0) : Module("NanAfter"), after_(after) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override {
    if (calls_++ < after_) return input;
    return input * std::numeric_limits<double>::quiet_NaN();
  }

 private:
  int after_;
  int calls_ = 0;
};

// Identity forward whose backward turns the gradient into NaN.
class NanGrad : public nn::Module {
 public:
  NanGrad() : Module("NanGrad") {}
  using Module::forward;
  Tensor forward(const Tensor& input) override {
    Tensor out = input * 1.0;
    // The handle is dropped on purpose: the hook lives as long as `out`'s graph.
    out.register_hook(
        TensorHook([](const Tensor& g) { return g * std::numeric_limits<double>::quiet_NaN(); }));
    return out;
  }
};

data::DatasetSplit spirals() {
  data::SpiralsOptions o;
  o.samples = 300;
  o.seed = 3;
  return data::make_spirals(o).split(0.2, 0);
}

SessionParts mlp_parts(double lr = 0.1, std::function<nn::ModulePtr()> middle = nullptr) {
  SessionParts parts;
  parts.make_model = [middle]() -> nn::ModulePtr {
    auto net = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
        std::make_shared<nn::Linear>(2, 16), std::make_shared<nn::ReLU>()});
    if (middle) net->append(middle());
    net->append(std::make_shared<nn::Linear>(16, 3));
    return net;
  };
  parts.loss = std::make_shared<nn::CrossEntropyLoss>();
  parts.make_optimizer = [lr](const std::vector<Tensor>& params) {
    optim::SGDOptions o(lr);
    o.momentum = 0.9;
    return std::make_unique<optim::SGD>(params, o);
  };
  data::DatasetSplit split = spirals();
  parts.train = split.train;
  parts.test = split.test;
  return parts;
}

SessionConfig config_with(int64_t epochs, int64_t max_steps = 0, uint64_t seed = 7) {
  SessionConfig c;
  c.batch_size = 16;
  c.epochs = epochs;
  c.max_steps = max_steps;
  c.seed = seed;
  return c;
}

std::vector<double> losses(TrainingSession& s) {
  std::vector<double> out;
  for (const StepMetrics& m : s.take_step_metrics()) out.push_back(m.loss);
  return out;
}

TEST(TrainSession, TrainsForTheConfiguredEpochsWithTrainAndTestMetrics) {
  TrainingSession s(mlp_parts(), config_with(4));
  EXPECT_EQ(s.status().state, RunState::Idle);
  EXPECT_EQ(s.status().batches_per_epoch, 15);  // 240 training samples / 16
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  EXPECT_EQ(st.state, RunState::Stopped) << st.error;
  EXPECT_EQ(st.step, 60);
  EXPECT_EQ(st.epoch, 4);
  EXPECT_GT(st.steps_per_second, 0);
  const std::vector<EpochMetrics> h = s.epoch_history();
  ASSERT_EQ(h.size(), 4u);
  for (size_t i = 0; i < h.size(); ++i) {
    EXPECT_EQ(h[i].epoch, static_cast<int64_t>(i + 1));
    EXPECT_EQ(h[i].step, static_cast<int64_t>(15 * (i + 1)));
    EXPECT_TRUE(std::isfinite(h[i].test_loss));
    EXPECT_GE(h[i].train_accuracy, 0.0);
    EXPECT_LE(h[i].test_accuracy, 1.0);
  }
  EXPECT_LT(h.back().train_loss, h.front().train_loss);
  ASSERT_TRUE(st.last_evaluation.has_value());
  EXPECT_EQ(st.last_evaluation->loss, h.back().test_loss);
  EXPECT_EQ(s.take_step_metrics().size(), 60u);
  // A poller reads only what it has not seen.
  EXPECT_EQ(s.epoch_count(), 4u);
  const std::vector<EpochMetrics> tail = s.epoch_history(2);
  ASSERT_EQ(tail.size(), 2u);
  EXPECT_EQ(tail[0].epoch, 3);
  EXPECT_EQ(tail[1].step, h[3].step);
  EXPECT_TRUE(s.epoch_history(4).empty());
  EXPECT_TRUE(s.epoch_history(9).empty());
  // With a limit, the oldest go; the count and the indices still run over all of them.
  s.set_epoch_history_limit(3);
  ASSERT_EQ(s.epoch_history().size(), 3u);
  EXPECT_EQ(s.epoch_history().front().epoch, 2);
  EXPECT_EQ(s.epoch_count(), 4u);
  ASSERT_EQ(s.epoch_history(0).size(), 3u);
  ASSERT_EQ(s.epoch_history(3).size(), 1u);
  EXPECT_EQ(s.epoch_history(3)[0].epoch, 4);
}

TEST(TrainSession, SameSeedGivesBitIdenticalLossesAcrossPauseStepAndResume) {
  std::vector<double> straight;
  {
    TrainingSession s(mlp_parts(), config_with(0, 50));
    s.start();
    ASSERT_TRUE(s.wait_idle(60s));
    straight = losses(s);
  }
  ASSERT_EQ(straight.size(), 50u);
  TrainingSession s(mlp_parts(), config_with(0, 50));
  s.step(3);
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().state, RunState::Paused);
  EXPECT_EQ(s.status().step, 3);
  s.step();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().step, 4);  // one batch exactly
  s.start();
  s.pause();  // wherever it lands (even at the end), the run goes on the same
  ASSERT_TRUE(s.wait_idle(60s));
  const int64_t paused_at = s.status().step;
  EXPECT_TRUE(s.status().state == RunState::Paused || s.status().state == RunState::Stopped);
  std::this_thread::sleep_for(5ms);
  EXPECT_EQ(s.status().step, paused_at);  // nothing moves while paused
  s.resume();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().state, RunState::Stopped);
  const std::vector<double> interrupted = losses(s);
  ASSERT_EQ(interrupted.size(), straight.size());
  for (size_t i = 0; i < straight.size(); ++i) {
    ASSERT_EQ(interrupted[i], straight[i]) << "step " << i + 1 << ", paused at " << paused_at;
  }

  // A different seed gives a different run.
  TrainingSession other(mlp_parts(), config_with(0, 50, 8));
  other.start();
  ASSERT_TRUE(other.wait_idle(60s));
  EXPECT_NE(losses(other), straight);
}

TEST(TrainSession, ResetGivesTheInitialWeightsAndTheSameRunAgain) {
  TrainingSession s(mlp_parts(), config_with(0, 20));
  const Tensor w = s.model()->get_parameter("0.weight");
  const Tensor initial = w.detach().clone();
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  const std::vector<double> first = losses(s);
  EXPECT_NE(w.to_vector<float>(), initial.to_vector<float>());
  s.reset();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  EXPECT_EQ(st.state, RunState::Idle);
  EXPECT_EQ(st.step, 0);
  EXPECT_EQ(st.resets, 1);
  EXPECT_TRUE(s.epoch_history().empty());
  EXPECT_EQ(w.to_vector<float>(), initial.to_vector<float>());  // same tensor, values back
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(losses(s), first);
}

TEST(TrainSession, SetLrAppliesFromTheNextStep) {
  TrainingSession s(mlp_parts(0.1), config_with(0, 10));
  s.step(2);
  s.set_lr(0.025);
  s.step(2);
  ASSERT_TRUE(s.wait_idle(60s));
  const std::vector<StepMetrics> m = s.take_step_metrics();
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].lr, 0.1);
  EXPECT_EQ(m[2].lr, 0.025);
  EXPECT_EQ(s.status().lr, 0.025);
}

TEST(TrainSession, SetBatchSizeAppliesFromTheNextEpoch) {
  TrainingSession s(mlp_parts(), config_with(0, 17));
  s.step(2);
  s.set_batch_size(60);
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().step, 17);  // 15 batches of 16, then batches of 60
  EXPECT_EQ(s.status().batch_size, 60);
  EXPECT_EQ(s.status().batches_per_epoch, 4);
  EXPECT_THROW(s.set_batch_size(0), ValueError);
}

TEST(TrainSession, HugeLearningRateStopsTheRunAndNamesAModule) {
  TrainingSession s(mlp_parts(1e30), config_with(5));
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  ASSERT_EQ(st.state, RunState::Failed);
  // Either the loss or a gradient goes first, depending on how the weights blow up.
  EXPECT_TRUE(st.error.find("a gradient is not finite") != std::string::npos ||
              st.error.find("the first non-finite value (NaN or Inf) appeared in") !=
                  std::string::npos)
      << st.error;
  EXPECT_NE(st.error.find("lower the learning rate"), std::string::npos) << st.error;
  EXPECT_LT(st.step, 10);
  // The weights stay finite: the failing step never reached the optimizer.
  for (const Tensor& p : s.model()->parameters()) EXPECT_FALSE(any_non_finite(p));
  s.start();  // refused until reset
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().state, RunState::Failed);
  s.reset();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().state, RunState::Idle);
  EXPECT_TRUE(s.status().error.empty());
}

TEST(TrainSession, NanActivationNamesTheFirstModuleThatMadeIt) {
  TrainingSession s(mlp_parts(0.1, [] { return std::make_shared<NanAfter>(5); }), config_with(3));
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  ASSERT_EQ(st.state, RunState::Failed);
  EXPECT_EQ(st.failed_module, "2");
  EXPECT_EQ(st.step, 5);  // steps 1-5 ran; the sixth failed
  EXPECT_NE(st.error.find("the loss is nan at step 6"), std::string::npos) << st.error;
  EXPECT_NE(st.error.find("module '2' (NanAfter)"), std::string::npos) << st.error;
}

TEST(TrainSession, NanGradientNamesTheModuleInBackwardOrder) {
  TrainingSession s(mlp_parts(0.1, [] { return std::make_shared<NanGrad>(); }), config_with(3));
  s.step();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  ASSERT_EQ(st.state, RunState::Failed);
  EXPECT_EQ(st.failed_module, "2");
  EXPECT_EQ(st.step, 0);
  EXPECT_NE(st.error.find("the gradient w.r.t. the input of module '2' (NanGrad)"),
            std::string::npos)
      << st.error;
}

TEST(TrainSession, AStepErrorFailsTheRunWithItsMessage) {
  SessionParts parts = mlp_parts();
  parts.make_model = [] { return std::make_shared<nn::Linear>(3, 3); };  // data has 2 features
  TrainingSession s(std::move(parts), config_with(1));
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(s.status().state, RunState::Failed);
  EXPECT_NE(s.status().error.find("step 1 failed"), std::string::npos) << s.status().error;
}

TEST(TrainSession, BadPartsAreRefusedAtConstruction) {
  SessionParts parts = mlp_parts();
  parts.loss = nullptr;
  EXPECT_THROW(TrainingSession(std::move(parts), config_with(1)), ValueError);
  SessionParts empty = mlp_parts();
  empty.train = data::Dataset();
  EXPECT_THROW(TrainingSession(std::move(empty), config_with(1)), ValueError);
  SessionConfig c = config_with(1);
  c.batch_size = 0;
  EXPECT_THROW(TrainingSession(mlp_parts(), c), ValueError);
}

TEST(TrainSession, ProbesThroughTheSessionPlaceAndRemoveTheirHooks) {
  TrainingSession s(mlp_parts(), config_with(0, 100));
  EXPECT_THROW(s.add_probe("fc9"), KeyError);
  EXPECT_THROW(s.add_probe("0", ProbeOptions{true, true, true, 0}), ValueError);
  const ProbeId id = s.add_probe("0", ProbeOptions{true, true, true, 2, 0});
  s.step(4);
  ASSERT_TRUE(s.wait_idle(60s));
  const nn::ModulePtr fc = s.model()->get_submodule("0");
  EXPECT_EQ(fc->hook_count(), 1u);  // the forward hook; the step hooks are gone between steps
  std::set<int64_t> steps;
  for (const ProbeSample& p : s.take_probe_samples()) {
    EXPECT_EQ(p.probe, id);
    steps.insert(p.step);
  }
  EXPECT_EQ(steps, (std::set<int64_t>{1, 3}));
  s.remove_probe(id);
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(fc->hook_count(), 0u);
}

TEST(TrainSession, ProbesDoNotChangeTheRun) {
  std::vector<double> plain;
  {
    TrainingSession s(mlp_parts(), config_with(0, 30));
    s.start();
    ASSERT_TRUE(s.wait_idle(60s));
    plain = losses(s);
  }
  TrainingSession s(mlp_parts(), config_with(0, 30));
  for (const std::string& name : s.module_names())
    s.add_probe(name, ProbeOptions{true, true, true, 3});
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  EXPECT_EQ(losses(s), plain);
  EXPECT_FALSE(s.take_probe_samples().empty());
}

TEST(TrainSession, PredictRunsBetweenStepsInEvalMode) {
  TrainingSession s(mlp_parts(), config_with(0, 1000000));
  s.start();
  const Tensor grid = rand({50, 2});
  const uint64_t id = s.predict(grid);
  s.pause();
  ASSERT_TRUE(s.wait_idle(60s));
  std::optional<Prediction> p = s.take_prediction();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->id, id);
  EXPECT_TRUE(p->error.empty());
  EXPECT_EQ(p->outputs.sizes(), (Shape{50, 3}));
  EXPECT_FALSE(p->outputs.requires_grad());
  EXPECT_TRUE(s.model()->is_training());
  EXPECT_FALSE(s.take_prediction().has_value());
}

// The worker flushes denormals (config.flush_denormal, on by default): a denormal input to
// the model reads as zero there, and passes through when the setting is off.
TEST(TrainSession, TheWorkerFlushesDenormalsUnlessToldNot) {
  const double denormal = std::numeric_limits<float>::denorm_min() * 1000.0;
  for (const bool flush : {true, false}) {
    SessionParts parts = mlp_parts();
    parts.make_model = [] { return std::make_shared<nn::Linear>(2, 1); };
    SessionConfig config = config_with(0, 1);
    config.flush_denormal = flush;
    TrainingSession s(std::move(parts), config);
    s.model()->get_parameter("weight").detach().fill_(1.0);
    s.model()->get_parameter("bias").detach().fill_(0.0);
    s.predict(tensor({{denormal, 0.0}}));
    ASSERT_TRUE(s.wait_idle(60s));
    std::optional<Prediction> p = s.take_prediction();
    ASSERT_TRUE(p.has_value());
    ASSERT_TRUE(p->error.empty()) << p->error;
    EXPECT_EQ(p->outputs.item(), flush ? 0.0 : static_cast<double>(static_cast<float>(denormal)))
        << "flush_denormal=" << flush;
  }
}

TEST(TrainSession, CommandsReturnAtOnceAndTheSessionEndsWhileRunning) {
  auto s = std::make_unique<TrainingSession>(mlp_parts(), config_with(0));
  const auto t0 = std::chrono::steady_clock::now();
  s->start();
  s->set_lr(0.05);
  s->evaluate();
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_LT(t1 - t0, 50ms);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(s->status().state, RunState::Running);
  s.reset();  // joins the worker after its current step
}

TEST(TrainSession, EvaluateOnDemand) {
  TrainingSession s(mlp_parts(), config_with(0, 5));
  s.step(5);
  s.evaluate();
  ASSERT_TRUE(s.wait_idle(60s));
  const SessionStatus st = s.status();
  ASSERT_TRUE(st.last_evaluation.has_value());
  EXPECT_EQ(st.last_evaluation->step, 5);
  EXPECT_TRUE(std::isfinite(st.last_evaluation->loss));
  EXPECT_GE(st.last_evaluation->accuracy, 0.0);
}

}  // namespace
}  // namespace nns::train
