// SPDX-License-Identifier: GPL-3.0-or-later
// Events, pinned memory and the batches that cross to the GPU a step ahead (backend ABI 4):
// events time the kernels between them; a copy from pinned memory on the copy stream arrives
// bit for bit; data::DeviceBatches gives exactly the batches of the synchronous copy, across an
// epoch's end, a reset, a new batch size and a skipped batch; a session trains to the same
// losses, bit for bit, with and without it. Without a device, making an event says why; the
// rest skips there.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>

#include "cuda/cuda_test_util.h"
#include "engine/backend/cuda_event.h"
#include "engine/backend/cuda_graph.h"
#include "engine/data/device_batches.h"
#include "engine/graph/project.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/session.h"

namespace nns {
namespace {

TEST(CudaEvents, WithoutADeviceMakingOneSaysWhy) {
  if (cuda::device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  const std::string reason = cuda::unavailable_reason();
  ASSERT_FALSE(reason.empty());
  try {
    cuda::Event event(0);
    FAIL() << "an event without a device";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
}

TEST(CudaEvents, ElapsedTimeIsPositiveAndOrderedAroundKernels) {
  NNS_SKIP_WITHOUT_CUDA();
  EXPECT_THROW(cuda::Event(cuda::device_count()), DeviceError);
  manual_seed(1);
  const Tensor a = randn({2048, 2048}).to(test::kCuda0);
  const Tensor b = randn({2048, 2048}).to(test::kCuda0);
  cuda::synchronize(0);
  cuda::Event start(0), middle(0), end(0);
  const auto host_start = std::chrono::steady_clock::now();
  start.record();
  Tensor c = mm(a, b);
  middle.record();
  for (int i = 0; i < 3; ++i) c = mm(c, b);  // three times the first part's work
  end.record();
  const double first = cuda::Event::elapsed_seconds(start, middle);
  const double whole = cuda::Event::elapsed_seconds(start, end);
  const double host =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - host_start).count();
  const double second = cuda::Event::elapsed_seconds(middle, end);
  EXPECT_GT(first, 0);
  EXPECT_GT(second, first);  // three products against one
  EXPECT_NEAR(whole, first + second, 1e-5);
  // The device's time fits in the host's, which waited for it.
  EXPECT_LE(whole, host);
}

TEST(CudaEvents, MakingRecordingOrCopyingDuringACaptureIsRefusedByName) {
  NNS_SKIP_WITHOUT_CUDA();
  const CudaBackendTables& t = *cuda::backend();
  cuda::Event event(0);
  void* done = t.event_create(0);
  const Tensor dst = empty({4}, TensorOptions(kFloat32).device(test::kCuda0));
  const float src[4] = {1, 2, 3, 4};
  cuda::Graph graph(0);
  graph.capture_begin();
  EXPECT_THROW(event.record(), DeviceError);
  EXPECT_THROW(cuda::Event(0), DeviceError);
  EXPECT_THROW(t.copy_host_to_device_async(dst.raw_data(), src, sizeof src, done), DeviceError);
  EXPECT_THROW(t.compute_wait_event(done), DeviceError);
  graph.abort_capture();
  event.record();  // outside the capture again
  t.event_destroy(done);
}

TEST(CudaPinnedCopies, AnAsynchronousCopyFromPinnedMemoryArrivesBitForBit) {
  NNS_SKIP_WITHOUT_CUDA();
  const CudaBackendTables& t = *cuda::backend();
  constexpr int64_t n = (int64_t{3} << 20) + 7;  // not a multiple of anything
  auto* pinned = static_cast<float*>(t.host_alloc_pinned(n * sizeof(float)));
  ASSERT_NE(pinned, nullptr);
  manual_seed(4);
  const Tensor x = randn({n});
  std::memcpy(pinned, x.raw_data(), n * sizeof(float));
  pinned[5] = -0.0f;  // every bit, the sign of zero too
  void* done = t.event_create(0);
  const Tensor dst = empty({n}, TensorOptions(kFloat32).device(test::kCuda0));
  t.copy_host_to_device_async(dst.raw_data(), pinned, n * sizeof(float), done);
  t.compute_wait_event(done);
  const Tensor back = dst.to(kCPU);  // on the compute stream, after the wait
  EXPECT_EQ(std::memcmp(back.raw_data(), pinned, n * sizeof(float)), 0);
  t.event_synchronize(done);
  // A copy of nothing only records the event.
  t.copy_host_to_device_async(dst.raw_data(), pinned, 0, done);
  t.event_synchronize(done);
  t.event_destroy(done);
  t.host_free_pinned(pinned);
}

// The bytes of a batch's tensors on the host.
std::vector<char> bytes_of(const data::Batch& b) {
  std::vector<char> out;
  for (const Tensor& t : {b.inputs, b.targets}) {
    const Tensor c = t.to(kCPU).contiguous();
    const auto* p = static_cast<const char*>(c.raw_data());
    out.insert(out.end(), p, p + c.numel() * c.element_size());
  }
  return out;
}

TEST(CudaDeviceBatches, TheBatchesAreThoseOfTheSynchronousCopyAcrossEpochsAndResets) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(2);
  data::Dataset set;
  set.name = "rows";
  set.inputs = randn({50, 3, 5});
  set.targets = randint(0, 4, {50});
  set.num_classes = 4;
  const data::DataLoader loader(set, {.batch_size = 8, .shuffle = true, .seed = 5});  // 7 batches
  const data::DataLoader smaller(set, {.batch_size = 5, .shuffle = true, .seed = 5});
  data::DeviceBatches batches(test::kCuda0);
  int64_t taken = 0;
  const auto take = [&](const data::EpochBatches& epoch, int64_t b) {
    SCOPED_TRACE("batch " + std::to_string(b) + " of " + std::to_string(epoch.size()));
    const data::Batch expected = epoch[b];
    const data::Batch host = batches.host_batch(epoch, b);
    const data::Batch device = batches.on_device();
    EXPECT_EQ(device.inputs.device(), test::kCuda0);
    EXPECT_EQ(device.inputs.sizes(), expected.inputs.sizes());
    EXPECT_EQ(device.targets.dtype(), expected.targets.dtype());
    EXPECT_EQ(bytes_of(host), bytes_of(expected));
    // The synchronous copy's batch, bit for bit.
    EXPECT_EQ(bytes_of(device),
              bytes_of({expected.inputs.to(test::kCuda0), expected.targets.to(test::kCuda0)}));
    EXPECT_TRUE(batches.on_device().inputs.is_same(device.inputs)) << "the same tensors again";
    ++taken;
  };
  // Two epochs through their end, as the session takes them.
  for (int64_t e = 0; e < 2; ++e) {
    const data::EpochBatches epoch = loader.epoch(e);
    for (int64_t b = 0; b < epoch.size(); ++b) take(epoch, b);
  }
  // A reset mid-epoch: the same epoch made anew, from its first batch (batch 4 of the old one
  // was prefetched).
  const data::EpochBatches before = loader.epoch(2);
  for (int64_t b = 0; b < 4; ++b) take(before, b);
  const data::EpochBatches again = loader.epoch(2);
  for (int64_t b = 0; b < 3; ++b) take(again, b);
  // A new batch size, a skipped batch, a batch taken on the host only, then the same again.
  const data::EpochBatches small = smaller.epoch(0);
  take(small, 0);
  take(small, 2);
  (void)batches.host_batch(small, 3);
  take(small, 3);
  take(small, small.size() - 1);
  EXPECT_EQ(taken, 14 + 7 + 4);
  batches.clear();
  EXPECT_THROW(batches.on_device(), ValueError);
}

struct SessionRun {
  std::vector<double> losses;
  std::vector<double> test_losses;
  int64_t graph_replays = 0;
  std::string error;
};

// A session on the GPU with CUDA graphs and a probe (so steps replay and run eagerly), stepped,
// reset, restored to an earlier state and given a new batch size on the way.
SessionRun run_session() {
  graph::Project p =
      graph::load_project(NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples/spirals.nns");
  p.training.device = "cuda";
  p.training.epochs = 3;
  auto session = train::make_session(p, NNS_PATH(NNS_SOURCE_DIR) + "/resources/examples");
  session->add_probe(session->module_names().at(1), {.every = 3, .max_overhead = 0});
  SessionRun r;
  const auto run = [&](const std::function<void()>& command) {
    command();
    EXPECT_TRUE(session->wait_idle(std::chrono::minutes(2)));
    for (const train::StepMetrics& m : session->take_step_metrics()) r.losses.push_back(m.loss);
  };
  run([&] { session->step(5); });
  run([&] { session->reset(); });
  run([&] { session->step(4); });
  const train::TrainingState state = session->training_state();
  run([&] { session->step(3); });
  run([&] { session->restore(state); });
  run([&] { session->step(2); });
  run([&] { session->set_batch_size(17); });
  run([&] { session->start(); });
  for (const train::EpochMetrics& e : session->epoch_history())
    r.test_losses.push_back(e.test_loss);
  r.graph_replays = session->status().graph_replays;
  r.error = session->status().error;
  return r;
}

TEST(CudaDeviceBatches, ASessionTrainsToTheSameLossesAsWithTheSynchronousCopy) {
  NNS_SKIP_WITHOUT_CUDA();
  data::DeviceBatches::set_prefetch_for_testing(false);
  const SessionRun synchronous = run_session();
  data::DeviceBatches::set_prefetch_for_testing(true);
  const SessionRun prefetched = run_session();
  ASSERT_EQ(synchronous.error, "");
  ASSERT_EQ(prefetched.error, "");
  EXPECT_GT(prefetched.graph_replays, 0);
  ASSERT_GT(prefetched.losses.size(), 20u);
  EXPECT_EQ(prefetched.losses, synchronous.losses);  // bit for bit
  EXPECT_EQ(prefetched.test_losses, synchronous.test_losses);
}

}  // namespace
}  // namespace nns
