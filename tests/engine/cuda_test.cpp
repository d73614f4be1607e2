// SPDX-License-Identifier: GPL-3.0-or-later
// The CUDA backend, where there is one. Without a device (or in a CPU-only build) these tests
// skip, and asking for a CUDA tensor is a DeviceError, never a crash.
#include <gtest/gtest.h>

#include "engine/backend/dispatch.h"
#include "engine/ops/ops.h"

namespace nns {
namespace {

const Device kCuda0(DeviceType::CUDA, 0);

TEST(Cuda, WithoutADeviceEveryRequestIsAClearError) {
  if (device_available(kCuda0)) GTEST_SKIP() << "a CUDA device is present";
  try {
    zeros({2}).to(kCuda0);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
  }
}

TEST(Cuda, RoundTripKeepsValuesAndLayout) {
  if (!device_available(kCuda0)) GTEST_SKIP() << "no CUDA device on this machine";
  Tensor x = arange(12).view({3, 4}).t();
  Tensor on_gpu = x.to(kCuda0);
  EXPECT_EQ(on_gpu.device(), kCuda0);
  EXPECT_EQ(on_gpu.sizes(), (Shape{4, 3}));
  EXPECT_EQ(on_gpu.to(kCPU).to_vector<float>(), x.to_vector<float>());
}

}  // namespace
}  // namespace nns
