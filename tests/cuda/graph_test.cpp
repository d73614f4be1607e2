// SPDX-License-Identifier: GPL-3.0-or-later
// CUDA graphs and the GPU's dropout: a training step replayed as a graph (train::StepGraph)
// ends where the same steps run eagerly end, for every optimizer, with dropout drawing the
// same masks; a new batch shape or a replaced optimizer state is captured again; a step whose
// gradients are not finite changes nothing; the session replays the steps the probes do not
// sample and samples the others eagerly, and none with graphs off; Philox masks repeat for a
// seed. Skips without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "cuda/cuda_test_util.h"
#include "engine/graph/project.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/factory.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/probes.h"
#include "engine/train/session.h"
#include "engine/train/step_graph.h"

namespace nns {
namespace {

nn::ModulePtr mlp() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(6, 32), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Dropout>(0.25), std::make_shared<nn::Linear>(32, 3)});
}

struct Batches {
  std::vector<Tensor> inputs, targets;
};

Batches batches(int64_t n, int64_t batch) {
  manual_seed(7);
  Batches b;
  for (int64_t i = 0; i < n; ++i) {
    b.inputs.push_back(randn({batch, 6}));
    b.targets.push_back(randint(0, 3, {batch}));
  }
  return b;
}

Tensor cross_entropy_loss(const Tensor& output, const Tensor& targets) {
  return cross_entropy(output, targets);
}

const std::vector<std::pair<std::string, optim::OptionList>> kOptimizers = {
    {"SGD", {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}}},
    {"SGD", {{"lr", 0.1}}},
    {"Adam", {{"lr", 0.01}, {"amsgrad", true}}},
    {"AdamW", {{"lr", 0.01}, {"weight_decay", 0.1}}},
    {"RMSprop", {{"lr", 0.01}, {"momentum", 0.5}, {"centered", true}}}};

TEST(CudaGraphs, AReplayedStepEndsWhereTheEagerStepEnds) {
  NNS_SKIP_WITHOUT_CUDA();
  const Batches data = batches(6, 32);
  for (const auto& [name, options] : kOptimizers) {
    SCOPED_TRACE(name);
    manual_seed(3);
    const nn::ModulePtr eager_model = mlp();
    eager_model->to(test::kCuda0);
    const nn::ModulePtr graph_model = mlp();
    graph_model->load_state_dict(eager_model->state_dict());
    graph_model->to(test::kCuda0);
    auto eager_opt =
        optim::make_optimizer(name, {optim::ParamGroup(eager_model->parameters())}, options);
    auto graph_opt =
        optim::make_optimizer(name, {optim::ParamGroup(graph_model->parameters())}, options);
    const auto eager_step = [&](nn::Module& m, optim::Optimizer& opt, size_t i) {
      opt.zero_grad(false);
      cross_entropy_loss(m(data.inputs[i].to(test::kCuda0)), data.targets[i].to(test::kCuda0))
          .backward();
      opt.step();
    };
    manual_seed(11);  // the dropout masks' keys
    for (size_t i = 0; i < data.inputs.size(); ++i) eager_step(*eager_model, *eager_opt, i);
    manual_seed(11);
    // The warm-up runs the very function the graph captures, eagerly.
    const train::TrainStep step{*graph_model, *graph_opt, cross_entropy_loss, 0.0,
                                /*set_to_none=*/false};
    train::StepGraph graphs(step, test::kCuda0);
    const train::StepResult warm_up =
        train::train_step(step, data.inputs[0].to(test::kCuda0), data.targets[0].to(test::kCuda0));
    EXPECT_EQ(warm_up.found_inf.item(), 0.0);
    graphs.warmed_up();
    for (size_t i = 1; i < data.inputs.size(); ++i) {
      const auto r = graphs.step(data.inputs[i], data.targets[i]);
      ASSERT_TRUE(r.has_value()) << graphs.disabled_reason();
      EXPECT_EQ(r->found_inf.item(), 0.0);
    }
    EXPECT_EQ(graphs.captures(), 1);
    EXPECT_EQ(graphs.replays(), 5);
    EXPECT_GT(graphs.graph_nodes(), 10u);
    const auto a = eager_model->named_parameters();
    const auto b = graph_model->named_parameters();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(a[i].first);
      // The same kernels on the same values in the same order: equal to the bit.
      EXPECT_TRUE(test::close_on_cpu(b[i].second, a[i].second.to(kCPU), 0, 0));
    }
  }
}

TEST(CudaGraphs, ANewShapeOrAReplacedStateIsCapturedAgain) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(3);
  const nn::ModulePtr model = mlp();
  model->to(test::kCuda0);
  auto opt = optim::make_optimizer("Adam", {optim::ParamGroup(model->parameters())}, {});
  train::StepGraph graphs({*model, *opt, cross_entropy_loss, 1.0}, test::kCuda0);
  EXPECT_FALSE(graphs.step(randn({8, 6}), randint(0, 3, {8})).has_value())
      << "a graph before any eager step";
  opt->zero_grad(false);
  cross_entropy_loss((*model)(randn({8, 6}).to(test::kCuda0)), randint(0, 3, {8}).to(test::kCuda0))
      .backward();
  opt->step();
  graphs.warmed_up();
  for (int64_t batch : {32, 32, 16, 32, 16}) {
    ASSERT_TRUE(graphs.step(randn({batch, 6}), randint(0, 3, {batch})).has_value())
        << graphs.disabled_reason();
  }
  EXPECT_EQ(graphs.captures(), 2);  // one per shape
  // A state loaded from a checkpoint is new tensors: the graph that wrote the old is remade.
  opt->load_state_dict(opt->state_dict());
  ASSERT_TRUE(graphs.step(randn({32, 6}), randint(0, 3, {32})).has_value());
  EXPECT_EQ(graphs.captures(), 3);
  // Dropped gradients too.
  opt->zero_grad(true);
  ASSERT_TRUE(graphs.step(randn({32, 6}), randint(0, 3, {32})).has_value());
  EXPECT_EQ(graphs.captures(), 4);
  EXPECT_EQ(graphs.disabled_reason(), "");
}

TEST(CudaGraphs, AStepWithANonFiniteGradientChangesNothing) {
  NNS_SKIP_WITHOUT_CUDA();
  for (const auto& [name, options] : kOptimizers) {
    SCOPED_TRACE(name);
    manual_seed(3);
    const nn::ModulePtr model = mlp();
    model->to(test::kCuda0);
    auto opt = optim::make_optimizer(name, {optim::ParamGroup(model->parameters())}, options);
    train::StepGraph graphs({*model, *opt, cross_entropy_loss, 0.0}, test::kCuda0);
    opt->zero_grad(false);
    cross_entropy_loss((*model)(randn({16, 6}).to(test::kCuda0)),
                       randint(0, 3, {16}).to(test::kCuda0))
        .backward();
    opt->step();
    graphs.warmed_up();
    ASSERT_TRUE(graphs.step(randn({16, 6}), randint(0, 3, {16})).has_value());
    std::vector<Tensor> before;
    for (const Tensor& p : model->parameters()) before.push_back(p.detach().to(kCPU));
    // Every state tensor but the step counts (the host's, which move on); plain SGD has none.
    const auto state_tensors = [&] {
      std::vector<Tensor> tensors;
      for (const auto& [index, state] : opt->state_dict().state) {
        for (const auto& item : state) {
          if (item.key() != "step") tensors.push_back(item.value());
        }
      }
      return tensors;
    };
    for (const Tensor& t : state_tensors()) before.push_back(t.to(kCPU));
    Tensor bad = randn({16, 6});
    bad.data_ptr<float>()[5] = std::numeric_limits<float>::quiet_NaN();
    const auto r = graphs.step(bad, randint(0, 3, {16}));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->found_inf.item(), 1.0);
    EXPECT_TRUE(std::isnan(r->loss.item()));
    size_t i = 0;
    for (const Tensor& p : model->parameters()) {
      EXPECT_TRUE(test::close_on_cpu(p, before[i++], 0, 0)) << "parameter " << i;
    }
    ASSERT_EQ(before.size(), i + state_tensors().size());
    for (const Tensor& t : state_tensors()) {
      EXPECT_TRUE(test::close_on_cpu(t, before[i], 0, 0)) << "state tensor " << i;
      ++i;
    }
  }
}

TEST(CudaGraphs, TheSessionReplaysWhatNoProbeSamplesAndSamplesTheRestEagerly) {
  NNS_SKIP_WITHOUT_CUDA();
  graph::Project p =
      graph::load_project(NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples/spirals.nns");
  p.training.device = "cuda";
  p.training.epochs = 2;
  auto session = train::make_session(p, NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples");
  std::string probed;
  for (const auto& [name, module] : session->model()->named_modules()) {
    if (!name.empty()) {
      probed = name;
      break;
    }
  }
  session->add_probe(probed, {.every = 5, .max_overhead = 0});
  session->start();
  std::vector<train::ProbeSample> samples;
  for (bool done = false; !done;) {
    done = session->wait_idle(std::chrono::milliseconds(20));
    for (train::ProbeSample& s : session->take_probe_samples()) samples.push_back(std::move(s));
  }
  const train::SessionStatus st = session->status();
  ASSERT_EQ(st.error, "");
  EXPECT_EQ(st.graphs_off, "");
  // Every fifth step is sampled eagerly; the first runs eagerly to make the state; the others
  // replay.
  EXPECT_GT(st.graph_replays, st.step / 2) << st.step << " steps";
  EXPECT_LT(st.graph_replays, st.step);
  ASSERT_FALSE(samples.empty());
  for (const train::ProbeSample& s : samples) {
    EXPECT_EQ((s.step - 1) % 5, 0) << "a sample at step " << s.step;
    EXPECT_GT(s.stats.numel, 0);
  }
}

// training.cuda_graphs off (nnstudio-cli train --cuda-graphs off, the dock's check box): every
// step runs eagerly, and the status says why.
TEST(CudaGraphs, TheSessionRunsEveryStepEagerlyWithGraphsOff) {
  NNS_SKIP_WITHOUT_CUDA();
  graph::Project p =
      graph::load_project(NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples/spirals.nns");
  p.training.device = "cuda";
  p.training.cuda_graphs = false;
  auto session = train::make_session(p, NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples");
  session->step(20);
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(60)));
  const train::SessionStatus st = session->status();
  ASSERT_EQ(st.error, "");
  EXPECT_EQ(st.step, 20);
  EXPECT_EQ(st.graph_replays, 0);
  EXPECT_EQ(st.graphs_off, "turned off in the training settings");
}

// A probe on a GPU model reads the reservoir's values where they are (only those come back) and
// summarizes them as the CPU does: the same step on both devices gives the same summaries.
TEST(CudaProbes, AGpuModelsProbesSummarizeAsTheCpusDo) {
  NNS_SKIP_WITHOUT_CUDA();
  const auto probe_step = [](const Device& device) {
    manual_seed(3);
    const nn::ModulePtr model = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
        std::make_shared<nn::Linear>(96, 128), std::make_shared<nn::Tanh>(),
        std::make_shared<nn::Linear>(128, 3)});
    model->to(device);
    auto opt =
        optim::make_optimizer("SGD", {optim::ParamGroup(model->parameters())}, {{"lr", 0.1}});
    train::Probes probes(model);
    for (const char* module : {"0", "1"}) probes.add(module, {.every = 1, .max_overhead = 0});
    manual_seed(4);
    const Tensor x = randn({64, 96}).to(device);  // 64 x 128 = 8192 outputs: sampled
    const Tensor y = randint(0, 3, {64}).to(device);
    probes.begin_step(1);
    opt->zero_grad();
    cross_entropy((*model)(x), y).backward();
    probes.before_optimizer_step();
    opt->step();
    probes.end_step();
    return probes.take_samples();
  };
  const std::vector<train::ProbeSample> gpu = probe_step(test::kCuda0);
  const std::vector<train::ProbeSample> cpu = probe_step(kCPU);
  ASSERT_EQ(gpu.size(), cpu.size());
  ASSERT_FALSE(cpu.empty());
  for (size_t i = 0; i < cpu.size(); ++i) {
    SCOPED_TRACE(cpu[i].module + " " + cpu[i].tensor);
    EXPECT_EQ(gpu[i].tensor, cpu[i].tensor);
    EXPECT_EQ(gpu[i].stats.numel, cpu[i].stats.numel);
    for (const auto& [g, c] : {std::pair{gpu[i].stats.mean, cpu[i].stats.mean},
                               std::pair{gpu[i].stats.std, cpu[i].stats.std},
                               std::pair{gpu[i].stats.min, cpu[i].stats.min},
                               std::pair{gpu[i].stats.max, cpu[i].stats.max},
                               std::pair{gpu[i].stats.norm, cpu[i].stats.norm}}) {
      EXPECT_NEAR(g, c, 1e-4 * (std::abs(c) + 1e-3));
    }
    if (!std::isnan(cpu[i].update_ratio)) {
      EXPECT_NEAR(gpu[i].update_ratio, cpu[i].update_ratio, 1e-4 * cpu[i].update_ratio);
    }
  }
}

TEST(CudaDropout, PhiloxMasksRepeatForASeedAndDifferFromDrawToDraw) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor ones_gpu = ones({200000}).to(test::kCuda0);
  manual_seed(5);
  const std::vector<float> a = dropout(ones_gpu, 0.3, true).to(kCPU).to_vector<float>();
  const std::vector<float> b = dropout(ones_gpu, 0.3, true).to(kCPU).to_vector<float>();
  manual_seed(5);
  const std::vector<float> again = dropout(ones_gpu, 0.3, true).to(kCPU).to_vector<float>();
  EXPECT_EQ(a, again);
  EXPECT_NE(a, b);
  int64_t zeros = 0;
  for (float v : a) {
    if (v == 0.0f) {
      ++zeros;
    } else {
      ASSERT_EQ(v, 1.0f / 0.7f);
    }
  }
  // 200,000 draws with p = 0.3: the standard deviation of the fraction is 0.001.
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(a.size()), 0.3, 0.006);
}

}  // namespace
}  // namespace nns
