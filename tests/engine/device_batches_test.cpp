// SPDX-License-Identifier: GPL-3.0-or-later
// data::DeviceBatches on the CPU: the batches pass through as the epoch makes them, the device
// batch is the host batch itself (no copy), and asking for a device batch before a batch is an
// error. (The GPU's prefetching is tested in tests/cuda/async_copy_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>

#include "engine/data/device_batches.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(),
                     static_cast<size_t>(a.numel()) * a.element_size()) == 0;
}

TEST(DeviceBatches, OnTheCpuTheBatchesPassThroughUnchanged) {
  manual_seed(6);
  Dataset set;
  set.name = "rows";
  set.inputs = randn({10, 3});
  set.targets = randint(0, 2, {10});
  set.num_classes = 2;
  const DataLoader loader(set, {.batch_size = 4, .shuffle = true, .seed = 3});
  DeviceBatches batches(kCPU);
  EXPECT_THROW(batches.on_device(), ValueError);
  for (int64_t e = 0; e < 2; ++e) {
    const EpochBatches epoch = loader.epoch(e);
    for (int64_t b = 0; b < epoch.size(); ++b) {
      SCOPED_TRACE("epoch " + std::to_string(e) + ", batch " + std::to_string(b));
      const Batch expected = epoch[b];
      const Batch host = batches.host_batch(epoch, b);
      EXPECT_TRUE(same_bits(host.inputs, expected.inputs));
      EXPECT_TRUE(same_bits(host.targets, expected.targets));
      const Batch device = batches.on_device();
      EXPECT_TRUE(device.inputs.is_same(host.inputs));
      EXPECT_TRUE(device.targets.is_same(host.targets));
    }
  }
  // A batch out of the epoch is the epoch's IndexError.
  EXPECT_THROW(batches.host_batch(loader.epoch(0), 3), IndexError);
}

}  // namespace
}  // namespace nns::data
