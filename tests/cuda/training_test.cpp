// SPDX-License-Identifier: GPL-3.0-or-later
// Training on the GPU: the session the window and nnstudio-cli drive (make_session with the
// project's device setting) trains every example on cuda:0 and on the CPU from the same seed
// and ends at the CPU's test accuracy within a point; a fixed seed gives the same run twice;
// an allocation larger than the GPU is a DeviceError naming the sizes; the caching allocator
// reuses freed blocks; TF32 stays off until asked for. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda/cuda_test_util.h"
#include "engine/graph/project.h"
#include "engine/ops/ops.h"
#include "engine/optim/factory.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/session.h"

namespace nns {
namespace {

struct RunResult {
  std::vector<train::EpochMetrics> epochs;
  std::string error;
};

RunResult train_example(const std::string& example, const std::string& device, int64_t epochs) {
  graph::Project p =
      graph::load_project(NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples/" + example);
  p.training.device = device;
  p.training.epochs = epochs;
  auto session = train::make_session(p, NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples");
  session->start();
  EXPECT_TRUE(session->wait_idle(std::chrono::minutes(5)));
  RunResult r;
  r.epochs = session->epoch_history();
  r.error = session->status().error;
  return r;
}

TEST(CudaTraining, EveryExampleTrainsOnTheGpuToTheCpusAccuracy) {
  NNS_SKIP_WITHOUT_CUDA();
  for (const char* example : {"spirals.nns", "residual_mlp.nns", "digits.nns", "sine_lstm.nns",
                              "reverse_transformer.nns", "dynamic_net.nns"}) {
    SCOPED_TRACE(example);
    const RunResult cpu = train_example(example, "cpu", 3);
    const RunResult gpu = train_example(example, "cuda", 3);
    ASSERT_EQ(gpu.error, "");
    ASSERT_EQ(gpu.epochs.size(), cpu.epochs.size());
    const train::EpochMetrics& a = gpu.epochs.back();
    const train::EpochMetrics& b = cpu.epochs.back();
    if (!std::isnan(b.test_accuracy)) {
      EXPECT_NEAR(a.test_accuracy, b.test_accuracy, 0.01);
    }
    EXPECT_NEAR(a.test_loss, b.test_loss, 0.05 * std::abs(b.test_loss) + 1e-3);
  }
}

TEST(CudaTraining, EveryOptimizerStepsAsOnTheCpu) {
  NNS_SKIP_WITHOUT_CUDA();
  const std::vector<std::pair<std::string, optim::OptionList>> cases = {
      {"SGD", {{"lr", 0.1}, {"momentum", 0.9}, {"weight_decay", 0.01}, {"nesterov", true}}},
      {"Adam", {{"lr", 0.01}, {"weight_decay", 0.01}}},
      {"Adam", {{"lr", 0.01}, {"amsgrad", true}}},
      {"AdamW", {{"lr", 0.01}, {"weight_decay", 0.1}}},
      {"RMSprop", {{"lr", 0.01}, {"momentum", 0.5}, {"centered", true}}},
      {"RMSprop", {{"lr", 0.01}, {"weight_decay", 0.1}}}};
  for (const auto& [name, options] : cases) {
    SCOPED_TRACE(name);
    manual_seed(1);
    Tensor p_cpu = randn({7, 5}).requires_grad_(true);
    Tensor p_gpu = p_cpu.detach().to(test::kCuda0).requires_grad_(true);
    auto cpu = optim::make_optimizer(name, {optim::ParamGroup({p_cpu})}, options);
    auto gpu = optim::make_optimizer(name, {optim::ParamGroup({p_gpu})}, options);
    for (int step = 0; step < 5; ++step) {
      const Tensor target = randn({7, 5});
      cpu->zero_grad();
      gpu->zero_grad();
      mse_loss(p_cpu, target).backward();
      mse_loss(p_gpu, target.to(test::kCuda0)).backward();
      cpu->step();
      gpu->step();
    }
    EXPECT_TRUE(test::close_on_cpu(p_gpu, p_cpu, 1e-5, 1e-6));
  }
}

TEST(CudaTraining, AFixedSeedGivesTheSameRunTwice) {
  NNS_SKIP_WITHOUT_CUDA();
  const RunResult a = train_example("spirals.nns", "cuda", 2);
  const RunResult b = train_example("spirals.nns", "cuda", 2);
  ASSERT_EQ(a.error, "");
  ASSERT_EQ(a.epochs.size(), b.epochs.size());
  for (size_t i = 0; i < a.epochs.size(); ++i) {
    EXPECT_EQ(a.epochs[i].train_loss, b.epochs[i].train_loss) << "epoch " << i + 1;
    EXPECT_EQ(a.epochs[i].test_loss, b.epochs[i].test_loss) << "epoch " << i + 1;
  }
}

TEST(CudaTraining, OutOfMemoryNamesTheSizeTheUseAndTheCache) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor kept = zeros({1 << 20}, TensorOptions(kFloat32).device(test::kCuda0));
  try {
    // 4 TiB: more than any GPU has.
    (void)empty({int64_t{1} << 40}, TensorOptions(kFloat32).device(test::kCuda0));
    FAIL() << "a 4 TiB allocation succeeded";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("CUDA out of memory: tried to allocate 4096.00 GiB"), std::string::npos)
        << what;
    EXPECT_NE(what.find("in use by tensors"), std::string::npos) << what;
    EXPECT_NE(what.find("cached by NN Studio's allocator"), std::string::npos) << what;
  }
  // Nothing is lost: the tensor made before is still there and usable.
  EXPECT_EQ(sum(kept).item(), 0.0);
}

TEST(CudaTraining, TheCachingAllocatorReusesFreedBlocks) {
  NNS_SKIP_WITHOUT_CUDA();
  cuda::synchronize();
  const CudaMemoryStats before = cuda::memory_stats();
  for (int i = 0; i < 100; ++i) {
    const Tensor t = randn({256, 64}).to(test::kCuda0);
    (void)mul(t, 2.0);
  }
  const CudaMemoryStats after = cuda::memory_stats();
  EXPECT_EQ(after.allocated, before.allocated);
  // 100 rounds of the same sizes take the driver's memory once.
  EXPECT_LE(after.reserved - before.reserved, size_t{4} << 20);
}

TEST(CudaTraining, Tf32IsOffUntilAskedFor) {
  NNS_SKIP_WITHOUT_CUDA();
  EXPECT_FALSE(cuda::allow_tf32());
  // A float32 product of 1 + 2^-12 (not representable in TF32's 10-bit mantissa) keeps it.
  const Tensor a = full({16, 16}, 1.0 + std::ldexp(1.0, -12)).to(test::kCuda0);
  std::vector<float> identity(256, 0.0f);
  for (int i = 0; i < 16; ++i) identity[i * 17] = 1.0f;
  const Tensor b = from_vector(identity, {16, 16}).to(test::kCuda0);
  EXPECT_EQ(mm(a, b).to(kCPU).to_vector<float>()[0],
            static_cast<float>(1.0 + std::ldexp(1.0, -12)));
  cuda::set_allow_tf32(true);
  EXPECT_TRUE(cuda::allow_tf32());
  (void)mm(a, b);
  cuda::set_allow_tf32(false);
}

}  // namespace
}  // namespace nns
