// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the CUDA tests share: the skip without a device (with the reason, so that a log of a
// machine without a GPU says why nothing ran), and comparisons of a GPU result with the CPU's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/tensor/tensor.h"

#define NNS_SKIP_WITHOUT_CUDA()                                                \
  do {                                                                         \
    if (::nns::cuda::device_count() == 0)                                      \
      GTEST_SKIP() << "no CUDA device: " << ::nns::cuda::unavailable_reason(); \
  } while (0)

namespace nns::test {

inline const Device kCuda0{DeviceType::CUDA, 0};

// A path the build compiled in (NNS_CLI, NNS_SOURCE_DIR, ...), or the environment variable of
// the same name: on the GPU machine the programs run from an unpacked bundle
// (tests/gpu/device_check.sh), not from the build tree.
inline std::string path_of(const char* name, const char* built) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' ? env : built;
}
#define NNS_PATH(name) ::nns::test::path_of(#name, name)

// |a - b| <= atol + rtol * |b| elementwise (NaN equal to NaN), after moving both to the CPU
// as float64; the message names the first element that differs.
inline ::testing::AssertionResult close_on_cpu(const Tensor& gpu, const Tensor& cpu, double rtol,
                                               double atol) {
  if (gpu.sizes() != cpu.sizes())
    return ::testing::AssertionFailure()
           << "sizes " << shape_str(gpu.sizes()) << " vs " << shape_str(cpu.sizes());
  const std::vector<double> a = gpu.detach().to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> b = cpu.detach().to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (!(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i])))
      return ::testing::AssertionFailure() << "element " << i << ": GPU " << a[i] << ", CPU "
                                           << b[i] << " (rtol " << rtol << ", atol " << atol << ")";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace nns::test
