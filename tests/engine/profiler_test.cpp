// SPDX-License-Identifier: GPL-3.0-or-later
// The profiler (engine/train/profiler.h): on a model where one layer pair does nearly all the
// arithmetic by construction, that pair leads the profile; the rows add up to the measured
// step; calls, output bytes, self and inclusive times are what the model's structure says; the
// hooks exist only on sampled steps; and in a session it profiles within its budget, turns off,
// clears on reset and never changes the losses.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/graph/project.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/error.h"
#include "engine/train/profiler.h"
#include "engine/train/session.h"

namespace nns::train {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int64_t kBatch = 256;
constexpr int64_t kWide = 2048;

// A training loop over `net` with the profiler's calls where a session makes them. Each step's
// wall time, begin_step to end_step, is kept to check the profile's own against it.
struct Loop {
  std::shared_ptr<nn::Module> net;
  Tensor x, y;
  std::unique_ptr<optim::SGD> optimizer;
  double wall = 0;  // the steps' wall time, begin_step to end_step

  Loop(std::shared_ptr<nn::Module> model, int64_t in, int64_t out)
      : net(std::move(model)), x(randn({kBatch, in})), y(randn({kBatch, out})) {
    optimizer = std::make_unique<optim::SGD>(net->parameters(), optim::SGDOptions(0.01));
  }

  void run(Profiler& profiler, int64_t first, int64_t last) {
    for (int64_t s = first; s <= last; ++s) {
      const Clock::time_point start = Clock::now();
      profiler.begin_step(s);
      profiler.mark(ProfilePhase::Data);
      const Tensor input = x.clone();
      profiler.mark(ProfilePhase::Forward);
      const Tensor output = (*net)(input);
      profiler.mark(ProfilePhase::Loss);
      const Tensor loss = mse_loss(output, y);
      profiler.mark(ProfilePhase::Backward);
      loss.backward();
      profiler.mark(ProfilePhase::Optimizer);
      optimizer->step();
      optimizer->zero_grad();
      profiler.end_step();
      wall += std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
};

// Every step sampled and recorded from the first: these tests count the steps they ran (the
// default leaves the first sampled step out; see TheFirstSampledStepIsLeftOutByDefault).
ProfilerOptions every_step() {
  ProfilerOptions o;
  o.every = 1;
  o.max_overhead = 0;
  o.warmup = 0;
  return o;
}

// 16 -> 16 -> 2048 -> 16 -> 16: the two wide Linears ("2" and "3") do 256 times the
// multiply-adds of the narrow ones.
std::shared_ptr<nn::Sequential> wide_net() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(16, kWide), std::make_shared<nn::Linear>(kWide, 16),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 16)});
}

const ModuleProfile& row(const StepProfile& p, const std::string& module) {
  for (const ModuleProfile& m : p.modules) {
    if (m.module == module) return m;
  }
  throw KeyError("no module '" + module + "' in the profile");
}

double self_seconds(const ModuleProfile& m) {
  return m.self_forward_seconds + m.self_backward_seconds;
}

TEST(Profiler, TheWideLayersLeadAndTheRowsAddUpToTheStep) {
  Loop loop(wide_net(), 16, 16);
  Profiler profiler(loop.net, kCPU, every_step());
  // Enough steps that the system taking the CPU from a narrow module now and then does not
  // make it look wide.
  const int64_t steps = 100;
  loop.run(profiler, 1, steps);
  const StepProfile p = profiler.profile();
  EXPECT_EQ(p.device, "cpu");
  EXPECT_EQ(p.timer, "steady clock");
  EXPECT_EQ(p.steps, steps);
  EXPECT_EQ(p.skipped, 0);
  ASSERT_EQ(p.modules.size(), 6u);  // the Sequential itself is not a row

  std::vector<ModuleProfile> order = p.modules;
  std::sort(order.begin(), order.end(), [](const ModuleProfile& a, const ModuleProfile& b) {
    return self_seconds(a) > self_seconds(b);
  });
  std::string table;
  for (const ModuleProfile& m : order) {
    table += m.module + " " + m.type + " " + std::to_string(self_seconds(m)) + " s\n";
  }
  // A wide one on top; the second place is not asserted: on a machine busier than its cores,
  // the system may take more from a narrow module's few calls than the other wide one needs.
  EXPECT_TRUE(order[0].module == "2" || order[0].module == "3") << table;
  EXPECT_EQ(order[0].type, "Linear");
  double modules = 0;
  for (const ModuleProfile& m : p.modules) modules += self_seconds(m);
  EXPECT_GT(self_seconds(row(p, "2")) + self_seconds(row(p, "3")), 0.5 * modules) << table;

  // The rows (every module's self time, the time outside them, the data, loss and optimizer)
  // are the measured step, and that is within the loop's own measure of the steps.
  EXPECT_GT(p.step_seconds, 0);
  EXPECT_NEAR(p.accounted_seconds(), p.step_seconds, 0.15 * p.step_seconds);
  EXPECT_LE(p.step_seconds, loop.wall);
  EXPECT_NEAR(
      p.forward_seconds,
      p.outside_forward_seconds +
          [&] {
            double s = 0;
            for (const ModuleProfile& m : p.modules) s += m.self_forward_seconds;
            return s;
          }(),
      1e-9);
  EXPECT_GT(p.data_seconds, 0);
  EXPECT_GT(p.loss_seconds, 0);
  EXPECT_GT(p.optimizer_seconds, 0);
}

TEST(Profiler, CallsOutputBytesAndSelfTimesFollowTheModel) {
  Loop loop(wide_net(), 16, 16);
  Profiler profiler(loop.net, kCPU, every_step());
  const int64_t steps = 5;
  loop.run(profiler, 1, steps);
  const StepProfile p = profiler.profile();
  const std::map<std::string, int64_t> widths = {{"0", 16}, {"1", 16}, {"2", kWide},
                                                 {"3", 16}, {"4", 16}, {"5", 16}};
  for (const ModuleProfile& m : p.modules) {
    EXPECT_EQ(m.calls, steps) << m.module;
    EXPECT_EQ(m.output_bytes, steps * kBatch * widths.at(m.module) * 4) << m.module;
    EXPECT_GT(m.forward_seconds, 0) << m.module;
    EXPECT_GT(m.backward_seconds, 0) << m.module;
    EXPECT_LE(m.self_forward_seconds, m.forward_seconds) << m.module;
    EXPECT_LE(m.self_backward_seconds, m.backward_seconds) << m.module;
  }
  EXPECT_EQ(row(p, "0").type, "Linear");
  EXPECT_EQ(row(p, "1").type, "ReLU");
}

// A container's self time is its time less its children's; a module called twice a step (a
// graph's Ref node reusing it) has both calls summed.
TEST(Profiler, AContainersSelfTimeLeavesOutItsChildrenAndReusedModulesSumTheirCalls) {
  auto shared = std::make_shared<nn::Linear>(16, 16);
  auto inner = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{shared, std::make_shared<nn::ReLU>(), shared});
  auto net = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{inner, std::make_shared<nn::Linear>(16, 16)});
  Loop loop(net, 16, 16);
  Profiler profiler(net, kCPU, every_step());
  const int64_t steps = 4;
  loop.run(profiler, 1, steps);
  const StepProfile p = profiler.profile();
  // named_modules lists the shared Linear once, under its first name.
  ASSERT_EQ(p.modules.size(), 4u);
  const ModuleProfile& container = row(p, "0");
  const ModuleProfile& reused = row(p, "0.0");
  const ModuleProfile& relu = row(p, "0.1");
  EXPECT_EQ(reused.calls, 2 * steps);
  EXPECT_EQ(reused.output_bytes, 2 * steps * kBatch * 16 * 4);
  EXPECT_EQ(container.calls, steps);
  EXPECT_NEAR(container.self_forward_seconds,
              container.forward_seconds - reused.forward_seconds - relu.forward_seconds, 1e-9);
  EXPECT_NEAR(container.self_backward_seconds,
              container.backward_seconds - reused.backward_seconds - relu.backward_seconds, 1e-9);
  EXPECT_GE(container.self_forward_seconds, 0);
}

// The first layer's inputs need no gradient, so its full backward hook runs before its weight's
// gradient is computed: its backward time is measured to its parameters' gradients. Here that
// gradient is a product as large as the forward's.
TEST(Profiler, TheFirstLayersBackwardLastsUntilItsWeightsGradient) {
  auto net = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(16, kWide), std::make_shared<nn::Linear>(kWide, 16)});
  Loop loop(net, 16, 16);
  Profiler profiler(net, kCPU, every_step());
  loop.run(profiler, 1, 40);
  const StepProfile p = profiler.profile();
  const ModuleProfile& first = row(p, "0");
  EXPECT_GT(first.backward_seconds, 0.2 * first.forward_seconds);
}

TEST(Profiler, HooksExistOnlyOnSampledSteps) {
  Loop loop(wide_net(), 16, 16);
  ProfilerOptions o = every_step();
  o.every = 2;
  Profiler profiler(loop.net, kCPU, o);
  const auto hooks = [&] {
    size_t n = 0;
    for (auto& [name, m] : loop.net->named_modules()) n += m->hook_count();
    return n;
  };
  profiler.begin_step(1);
  EXPECT_TRUE(profiler.sampling());
  // A forward pre-hook, a forward hook and the two full backward hooks on each of the six.
  EXPECT_EQ(hooks(), 24u);
  profiler.end_step();
  EXPECT_EQ(hooks(), 0u);
  profiler.begin_step(2);
  EXPECT_FALSE(profiler.sampling());
  EXPECT_EQ(hooks(), 0u);
  profiler.end_step();
  loop.run(profiler, 3, 6);
  EXPECT_EQ(hooks(), 0u);
  EXPECT_EQ(profiler.profile().steps, 3);  // steps 1, 3 and 5
  {
    Profiler dropped(loop.net, kCPU, every_step());
    dropped.begin_step(1);
    EXPECT_EQ(hooks(), 24u);
  }
  EXPECT_EQ(hooks(), 0u);
}

TEST(Profiler, ResetForgetsWhatWasMeasured) {
  Loop loop(wide_net(), 16, 16);
  Profiler profiler(loop.net, kCPU, every_step());
  loop.run(profiler, 1, 3);
  ASSERT_EQ(profiler.profile().steps, 3);
  profiler.reset();
  const StepProfile p = profiler.profile();
  EXPECT_EQ(p.steps, 0);
  EXPECT_EQ(p.step_seconds, 0);
  ASSERT_EQ(p.modules.size(), 6u);
  EXPECT_EQ(p.modules[2].module, "2");
  EXPECT_EQ(p.modules[2].calls, 0);
  EXPECT_EQ(p.modules[2].forward_seconds, 0);
}

TEST(Profiler, TheFirstSampledStepIsLeftOutByDefault) {
  Loop loop(wide_net(), 16, 16);
  ProfilerOptions o;  // the defaults but the budget: every step sampled
  o.max_overhead = 0;
  ASSERT_EQ(o.warmup, 1);
  Profiler profiler(loop.net, kCPU, o);
  loop.run(profiler, 1, 1);
  EXPECT_EQ(profiler.profile().steps, 0);
  EXPECT_EQ(profiler.profile().modules[0].calls, 0);
  loop.run(profiler, 2, 4);
  EXPECT_EQ(profiler.profile().steps, 3);
  EXPECT_EQ(profiler.profile().modules[0].calls, 3);
  // A reset warms up again: what comes after it may be another run's first step.
  profiler.reset();
  loop.run(profiler, 5, 6);
  EXPECT_EQ(profiler.profile().steps, 1);
}

TEST(Profiler, BadOptionsAreRefused) {
  ProfilerOptions o;
  o.every = 0;
  try {
    check_profiler_options(o);
    FAIL() << "every 0 was taken";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "profiler: every must be at least 1, got 0");
  }
  o.every = 1;
  o.max_overhead = 1.5;
  EXPECT_THROW(Profiler(wide_net(), kCPU, o), ValueError);
  o.max_overhead = 0;
  o.warmup = -1;
  EXPECT_THROW(Profiler(wide_net(), kCPU, o), ValueError);
}

// ---- In a session ---------------------------------------------------------------------------

std::unique_ptr<TrainingSession> spirals_session() {
  const std::string dir = std::string(NNS_SOURCE_DIR) + "/resources/examples";
  return make_session(graph::load_project(dir + "/spirals.nns"), dir);
}

std::vector<double> losses(TrainingSession& s) {
  std::vector<double> out;
  for (const StepMetrics& m : s.take_step_metrics()) out.push_back(m.loss);
  return out;
}

TEST(ProfilerSession, ProfilesWithinItsBudgetAndTurnsOff) {
  std::unique_ptr<TrainingSession> s = spirals_session();
  EXPECT_FALSE(s->profile().has_value());
  s->set_profiling(true);  // every step picked, within the default 5% budget
  const int64_t steps = 30;
  s->step(steps);
  ASSERT_TRUE(s->wait_idle(120s));
  ASSERT_EQ(s->status().state, RunState::Paused) << s->status().error;
  const std::optional<StepProfile> p = s->profile();
  ASSERT_TRUE(p.has_value());
  // The first pick is always sampled (and left out: the warm-up); every other is sampled or
  // skipped by the budget.
  EXPECT_GT(p->steps, 0);
  EXPECT_EQ(p->steps + p->skipped, steps - 1);
  EXPECT_GE(p->overhead, 0);
  EXPECT_TRUE(std::isfinite(p->overhead));
  std::vector<std::string> names(s->module_names().begin() + 1, s->module_names().end());
  ASSERT_EQ(p->modules.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(p->modules[i].module, names[i]);
    EXPECT_GT(p->modules[i].calls, 0) << names[i];
  }
  EXPECT_NEAR(p->accounted_seconds(), p->step_seconds, 0.15 * p->step_seconds);

  s->reset();
  ASSERT_TRUE(s->sync(60s));
  ASSERT_TRUE(s->profile().has_value());
  EXPECT_EQ(s->profile()->steps, 0);

  s->set_profiling(false);
  ASSERT_TRUE(s->sync(60s));
  EXPECT_FALSE(s->profile().has_value());
  EXPECT_THROW(s->set_profiling(true, ProfilerOptions{0, 0}), ValueError);
}

TEST(ProfilerSession, ProfilingNeverChangesTheLosses) {
  std::unique_ptr<TrainingSession> plain = spirals_session();
  std::unique_ptr<TrainingSession> profiled = spirals_session();
  profiled->set_profiling(true, every_step());
  const int64_t steps = 20;
  plain->step(steps);
  profiled->step(steps);
  ASSERT_TRUE(plain->wait_idle(120s));
  ASSERT_TRUE(profiled->wait_idle(120s));
  EXPECT_EQ(profiled->profile()->steps, steps);
  const std::vector<double> a = losses(*plain);
  const std::vector<double> b = losses(*profiled);
  ASSERT_EQ(a.size(), static_cast<size_t>(steps));
  EXPECT_EQ(a, b);  // bit for bit
}

}  // namespace
}  // namespace nns::train
