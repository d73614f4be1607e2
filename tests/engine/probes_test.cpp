// SPDX-License-Identifier: GPL-3.0-or-later
// Probes: summaries of tensors, hooks placed and removed (counts back to zero), sampling
// every N steps, update-to-weight ratios, the bounded queue, and the reservoir's re-binning.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/generator.h"
#include "engine/train/probes.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

size_t tensor_hooks(const Tensor& t) {
  const AutogradMeta* meta = t.impl()->autograd.get();
  return meta && meta->hooks ? meta->hooks->size() : 0;
}

std::shared_ptr<nn::Sequential> mlp() {
  manual_seed(0);
  return std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::Tanh>(),
                                 std::make_shared<nn::Linear>(8, 3)});
}

// One SGD step on fixed data, with the probes' calls where a training loop makes them.
struct Loop {
  std::shared_ptr<nn::Sequential> net = mlp();
  nn::CrossEntropyLoss loss;
  optim::SGD sgd{net->parameters(), optim::SGDOptions(0.5)};
  Tensor x = randn({16, 4});
  Tensor y = randint(0, 3, {16});

  double step(Probes& probes, int64_t n) {
    probes.begin_step(n);
    sgd.zero_grad();
    Tensor l = loss((*net)(x), y);
    l.backward();
    probes.before_optimizer_step();
    sgd.step();
    probes.end_step();
    return l.item();
  }
};

TEST(Probes, SummarizeCountsMomentsZerosNonFiniteAndHistogram) {
  const Tensor t = from_vector(
      std::vector<float>{0, 1, 2, 3, 0, static_cast<float>(kNaN), static_cast<float>(kInf), -4},
      {2, 4});
  const TensorStats s = summarize(t);
  EXPECT_EQ(s.numel, 8);
  EXPECT_EQ(s.nonfinite, 2);
  EXPECT_DOUBLE_EQ(s.mean, 2.0 / 6.0);
  // torch.tensor([0, 1, 2, 3, 0, -4.]).std() (unbiased)
  EXPECT_NEAR(s.std, 2.422120283277993, 1e-12);
  EXPECT_EQ(s.min, -4);
  EXPECT_EQ(s.max, 3);
  EXPECT_DOUBLE_EQ(s.norm, std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(s.zero_fraction, 2.0 / 6.0);
  EXPECT_TRUE(std::isnan(s.saturated_fraction));
  ASSERT_EQ(s.histogram.counts.size(), static_cast<size_t>(kHistogramBins));
  EXPECT_EQ(s.histogram.lo, -4);
  EXPECT_EQ(s.histogram.hi, 3);
  int64_t total = 0;
  for (int64_t c : s.histogram.counts) total += c;
  EXPECT_EQ(total, 6);
  EXPECT_EQ(s.histogram.counts.front(), 1);  // -4
  EXPECT_EQ(s.histogram.counts.back(), 1);   // 3, the top edge in the last bin
}

TEST(Probes, SaturationDependsOnTheActivation) {
  const Tensor t = from_vector(std::vector<double>{-0.99, -0.5, 0.01, 0.98}, {4});
  EXPECT_DOUBLE_EQ(summarize(t, Saturation::Tanh).saturated_fraction, 0.5);
  const Tensor p = from_vector(std::vector<double>{0.01, 0.5, 0.98, 0.2}, {4});
  EXPECT_DOUBLE_EQ(summarize(p, Saturation::Sigmoid).saturated_fraction, 0.5);
  EXPECT_EQ(saturation_of(nn::Tanh()), Saturation::Tanh);
  EXPECT_EQ(saturation_of(nn::Sigmoid()), Saturation::Sigmoid);
  EXPECT_EQ(saturation_of(nn::ReLU()), Saturation::None);
  const TensorStats constant = summarize(full({5}, 2.0));
  EXPECT_EQ(constant.histogram.counts, (std::vector<int64_t>{5}));
  EXPECT_EQ(constant.std, 0);
}

TEST(Probes, AddAndRemoveLeaveNoHooksBehind) {
  Loop loop;
  Probes probes(loop.net);
  const nn::ModulePtr fc = loop.net->get_submodule("0");
  const ProbeId id = probes.add("0");
  EXPECT_EQ(fc->hook_count(), 1u);
  EXPECT_EQ(probes.hook_count(id), 1u);
  probes.begin_step(1);  // sampled: backward and tensor hooks for this step
  EXPECT_EQ(fc->hook_count(), 2u);
  EXPECT_EQ(tensor_hooks(loop.net->get_parameter("0.weight")), 1u);
  EXPECT_EQ(probes.hook_count(id), 4u);
  probes.end_step();
  EXPECT_EQ(fc->hook_count(), 1u);
  EXPECT_EQ(tensor_hooks(loop.net->get_parameter("0.weight")), 0u);
  probes.begin_step(1);
  EXPECT_TRUE(probes.remove(id));  // in the middle of a step too
  EXPECT_EQ(fc->hook_count(), 0u);
  EXPECT_EQ(tensor_hooks(loop.net->get_parameter("0.weight")), 0u);
  EXPECT_EQ(tensor_hooks(loop.net->get_parameter("0.bias")), 0u);
  EXPECT_EQ(probes.hook_count(id), 0u);
  EXPECT_FALSE(probes.remove(id));
  probes.end_step();
  {
    Probes scoped(loop.net);
    for (auto& [name, m] : loop.net->named_modules()) scoped.add(name);
    EXPECT_EQ(loop.net->hook_count(), 1u);
  }
  for (auto& [name, m] : loop.net->named_modules()) EXPECT_EQ(m->hook_count(), 0u) << name;
}

TEST(Probes, UnknownModulesAndEmptyOptionsAreRefused) {
  Probes probes(mlp());
  try {
    probes.add("fc1");
    FAIL() << "expected KeyError";
  } catch (const KeyError& e) {
    EXPECT_NE(
        std::string(e.what()).find("no module named 'fc1'; its modules are '', '0', '1', '2'"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(probes.add("0", ProbeOptions{true, true, true, 0}), ValueError);
  EXPECT_THROW(probes.add("0", ProbeOptions{false, false, false, 1}), ValueError);
  EXPECT_THROW(Probes(nullptr), ValueError);
}

TEST(Probes, SamplesEveryNthStepWithEveryKind) {
  Loop loop;
  Probes probes(loop.net);
  // max_overhead 0: exactly every N steps, whatever the probes cost.
  const ProbeId id = probes.add("2", ProbeOptions{true, true, true, 3, 0});
  for (int64_t s = 1; s <= 7; ++s) loop.step(probes, s);
  std::set<int64_t> steps;
  std::map<std::pair<ProbeKind, std::string>, int> seen;
  for (const ProbeSample& p : probes.take_samples()) {
    EXPECT_EQ(p.probe, id);
    EXPECT_EQ(p.module, "2");
    steps.insert(p.step);
    ++seen[{p.kind, p.tensor}];
  }
  EXPECT_EQ(steps, (std::set<int64_t>{1, 4, 7}));
  using K = std::pair<ProbeKind, std::string>;
  EXPECT_EQ(seen, (std::map<K, int>{{{ProbeKind::Activation, "output"}, 3},
                                    {{ProbeKind::GradOutput, "output"}, 3},
                                    {{ProbeKind::GradInput, "input"}, 3},
                                    {{ProbeKind::ParamGrad, "weight"}, 3},
                                    {{ProbeKind::ParamGrad, "bias"}, 3}}));
  EXPECT_TRUE(probes.take_samples().empty());
}

TEST(Probes, SummariesMatchTheTensorsAndTheUpdateRatio) {
  Loop loop;
  Probes probes(loop.net);
  probes.add("1");  // Tanh: activations saturate
  probes.add("0", ProbeOptions{false, false, true, 1});
  const Tensor w = loop.net->get_parameter("0.weight");
  const Tensor before = w.detach().clone();
  // What the step will see, computed the plain way.
  Tensor h;
  {
    loop.net->zero_grad();
    h = (*loop.net->get_submodule("1"))((*loop.net->get_submodule("0"))(loop.x));
    loop.loss((*loop.net->get_submodule("2"))(h), loop.y).backward();
  }
  const Tensor grad = w.grad().clone();
  loop.step(probes, 1);
  bool act = false, pgrad = false;
  for (const ProbeSample& p : probes.take_samples()) {
    if (p.module == "1" && p.kind == ProbeKind::Activation) {
      act = true;
      const TensorStats expect = summarize(h, Saturation::Tanh);
      EXPECT_EQ(p.stats.mean, expect.mean);
      EXPECT_EQ(p.stats.std, expect.std);
      EXPECT_EQ(p.stats.histogram.counts, expect.histogram.counts);
      EXPECT_FALSE(std::isnan(p.stats.saturated_fraction));
    }
    if (p.module == "0" && p.tensor == "weight") {
      pgrad = true;
      EXPECT_NEAR(p.stats.norm, summarize(grad).norm, 1e-6);
      // Plain SGD: dw = lr * g.
      const double dw = 0.5 * summarize(grad).norm;
      EXPECT_NEAR(p.update_ratio, dw / summarize(w).norm, 1e-6);
      EXPECT_NE(w.to_vector<float>(), before.to_vector<float>());
    }
  }
  EXPECT_TRUE(act);
  EXPECT_TRUE(pgrad);
}

TEST(Probes, EvaluationPassesAreNotSampled) {
  Loop loop;
  Probes probes(loop.net);
  probes.add("0");
  (*loop.net)(loop.x);  // outside begin_step / end_step
  EXPECT_TRUE(probes.take_samples().empty());
}

TEST(Probes, TheQueueDropsTheOldestSamples) {
  Loop loop;
  Probes probes(loop.net, 4);
  probes.add("0", ProbeOptions{true, false, false, 1, 0});
  for (int64_t s = 1; s <= 10; ++s) loop.step(probes, s);
  const std::vector<ProbeSample> samples = probes.take_samples();
  ASSERT_EQ(samples.size(), 4u);
  EXPECT_EQ(samples.front().step, 7);
  EXPECT_EQ(samples.back().step, 10);
  EXPECT_EQ(probes.dropped(), 6);
  // Taken, the queue starts afresh, oldest first again.
  for (int64_t s = 11; s <= 15; ++s) loop.step(probes, s);
  const std::vector<ProbeSample> more = probes.take_samples();
  ASSERT_EQ(more.size(), 4u);
  for (size_t i = 0; i < more.size(); ++i) EXPECT_EQ(more[i].step, 12 + static_cast<int64_t>(i));
  EXPECT_EQ(probes.dropped(), 7);
}

TEST(Probes, TheReservoirKeepsRecentAndThinnedEarlyStepsAndRebins) {
  Loop loop;
  Probes probes(loop.net);
  const ProbeId id = probes.add("0", ProbeOptions{true, false, false, 1, 0});
  const int64_t n = 200;
  for (int64_t s = 1; s <= n; ++s) loop.step(probes, s);
  const std::vector<int64_t> kept = probes.kept_steps(id, ProbeKind::Activation, "output");
  EXPECT_LE(kept.size(), kRecentSteps + kEarlySteps);
  EXPECT_GT(kept.size(), kRecentSteps);
  EXPECT_EQ(kept.front(), 1);  // the first step stays
  EXPECT_EQ(kept.back(), n);
  EXPECT_TRUE(std::is_sorted(kept.begin(), kept.end()));
  // The last kRecentSteps are all there.
  for (size_t i = 0; i < kRecentSteps; ++i) {
    EXPECT_EQ(kept[kept.size() - 1 - i], n - static_cast<int64_t>(i));
  }

  // A small tensor is kept whole: re-binning reproduces its histogram at any zoom.
  const std::vector<ProbeSample> samples = probes.take_samples();
  const ProbeSample& last = samples.back();
  ASSERT_EQ(last.step, n);
  const Rebinned all = probes.rebin(id, ProbeKind::Activation, "output", n, n, last.stats.min,
                                    last.stats.max, kHistogramBins);
  ASSERT_EQ(all.steps, (std::vector<int64_t>{n}));
  for (int b = 0; b < kHistogramBins; ++b) {
    EXPECT_EQ(all.counts[0][static_cast<size_t>(b)],
              static_cast<double>(last.stats.histogram.counts[static_cast<size_t>(b)]));
  }
  const Rebinned zoom = probes.rebin(id, ProbeKind::Activation, "output", 1, n, 0, 0.1, 5);
  EXPECT_EQ(zoom.steps, kept);
  EXPECT_EQ(zoom.counts[0].size(), 5u);
  EXPECT_THROW(probes.rebin(id, ProbeKind::Activation, "output", 1, n, 1, 1, 5), ValueError);
  EXPECT_TRUE(probes.rebin(id, ProbeKind::GradInput, "input", 1, n, 0, 1, 5).steps.empty());
}

// What a series keeps of a 64 x 64 activation (the spirals example's): kKeptValues of its
// 4,096 values, a byte each, each standing for four; re-binned over the step's own range into
// the histogram's bins, they give a histogram whose total is the whole tensor's.
TEST(Probes, ASeriesKeepsAtMostKKeptValuesOfATensorEachStandingForItsShare) {
  auto net = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Identity>()});
  Probes probes(net);
  const ProbeId id = probes.add("0", ProbeOptions{true, false, false, 1});
  probes.begin_step(1);
  (*net)(randn({64, 64}));
  probes.end_step();
  const ProbeSample sample = probes.take_samples().at(0);
  ASSERT_EQ(sample.stats.numel, 4096);
  const Rebinned r = probes.rebin(id, ProbeKind::Activation, "output", 1, 1, sample.stats.min,
                                  sample.stats.max, kHistogramBins);
  ASSERT_EQ(r.counts.size(), 1u);
  const double share = 4096.0 / static_cast<double>(kKeptValues);
  double total = 0;
  for (double c : r.counts[0]) {
    EXPECT_EQ(std::fmod(c, share), 0.0) << c;  // whole kept values only
    total += c;
  }
  EXPECT_EQ(total, 4096.0);
}

TEST(Probes, ALargeTensorKeepsAStratifiedSampleScaledToItsSize) {
  auto net = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Identity>()});
  Probes probes(net);
  const ProbeId id = probes.add("0", ProbeOptions{true, false, false, 1});
  probes.begin_step(1);
  (*net)(rand({100, 1000}));
  probes.end_step();
  const Rebinned r = probes.rebin(id, ProbeKind::Activation, "output", 1, 1, 0, 1, 4);
  ASSERT_EQ(r.counts.size(), 1u);
  double total = 0;
  for (double c : r.counts[0]) {
    total += c;
    EXPECT_NEAR(c, 25000, 2500);  // uniform values: a quarter in each bin
  }
  EXPECT_NEAR(total, 100000, 1e-6);
}

}  // namespace
}  // namespace nns::train
