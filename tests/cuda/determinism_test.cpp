// SPDX-License-Identifier: GPL-3.0-or-later
// Sums on the GPU in a fixed order: the backward passes where windows overlap or indices
// repeat (max, average and adaptive pooling; index_select and embedding through index_add;
// gather through scatter_add) give the same bits on every run, and the CPU's values; and the
// formulas the two devices share agree where they used to differ. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"

namespace nns {
namespace {

using Fn = std::function<Tensor(const Tensor&)>;

// The gradient of sum(fn(x) * w) with respect to x, computed on device.
Tensor gradient(const Fn& fn, const Tensor& x, const Tensor& w, Device device) {
  Tensor leaf = x.to(device).detach().requires_grad_(true);
  (fn(leaf) * w.to(device)).sum().backward();
  return leaf.grad();
}

::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  const std::vector<double> va = a.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> vb = b.to(kCPU).to(kFloat64).contiguous().to_vector<double>();
  if (va.size() != vb.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::memcmp(&va[i], &vb[i], sizeof(double)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": " << va[i] << " vs " << vb[i];
  }
  return ::testing::AssertionSuccess();
}

// Twice on the GPU (the same bits) and once on the CPU (the same values, to rounding).
void check_gradient(const std::string& name, const Fn& fn, const Tensor& x) {
  SCOPED_TRACE(name + " " + dtype_name(x.dtype()));
  manual_seed(11);
  const Tensor w = randn(fn(x).sizes()).to(x.dtype());
  const Tensor cpu = gradient(fn, x, w, kCPU);
  const Tensor first = gradient(fn, x, w, test::kCuda0);
  const Tensor second = gradient(fn, x, w, test::kCuda0);
  ASSERT_EQ(first.device(), test::kCuda0);
  EXPECT_TRUE(same_bits(first, second));
  const bool f64 = x.dtype() == kFloat64;
  EXPECT_TRUE(test::close_on_cpu(first, cpu, f64 ? 1e-12 : 1e-5, f64 ? 1e-14 : 1e-6));
}

TEST(CudaDeterminism, PoolingBackwardsGiveTheSameBitsEveryRun) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(5);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    const Tensor x = randn({2, 3, 9, 11}).to(dtype);
    check_gradient(
        "max_pool2d 3x3 stride 1",
        [](const Tensor& t) {
          return max_pool2d(t, {3, 3}, {1, 1}, {1, 1});
        },
        x);
    check_gradient(
        "max_pool2d dilated, ceil mode",
        [](const Tensor& t) {
          return max_pool2d(t, {3, 2}, {2, 1}, {1, 1}, {2, 2}, true);
        },
        x);
    check_gradient(
        "avg_pool2d with padding",
        [](const Tensor& t) {
          return avg_pool2d(t, {3, 3}, {1, 2}, {1, 1});
        },
        x);
    check_gradient(
        "avg_pool2d without the padding's count, ceil mode",
        [](const Tensor& t) {
          return avg_pool2d(t, {3, 3}, {2, 2}, {1, 1}, true, false);
        },
        x);
    check_gradient(
        "adaptive_avg_pool2d",
        [](const Tensor& t) {
          return adaptive_avg_pool2d(t, {4, 5});
        },
        x);
  }
}

TEST(CudaDeterminism, ScatterAddsGiveTheSameBitsEveryRun) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(6);
  // Many repeats of few indices: each row of the gradient sums dozens of rows.
  const Tensor rows = randint(0, 20, {500});
  const Tensor columns = randint(0, 9, {300});
  const Tensor tokens = randint(0, 30, {16, 40});
  const Tensor picks = randint(0, 9, {6, 25});
  const Tensor picks_narrow = randint(0, 9, {25, 4});
  for (Dtype dtype : {kFloat32, kFloat64}) {
    check_gradient(
        "index_select dim 0",
        [&](const Tensor& t) { return index_select(t, 0, rows.to(t.device())); },
        randn({20, 7}).to(dtype));
    check_gradient(
        "index_select dim 1 of a transposed input",
        [&](const Tensor& t) { return index_select(t.t(), 1, columns.to(t.device())); },
        randn({9, 5}).to(dtype));
    check_gradient(
        "embedding", [&](const Tensor& t) { return embedding(t, tokens.to(t.device())); },
        randn({30, 8}).to(dtype));
    check_gradient(
        "embedding with a padding row",
        [&](const Tensor& t) { return embedding(t, tokens.to(t.device()), 3); },
        randn({30, 8}).to(dtype));
    check_gradient(
        "gather dim 1", [&](const Tensor& t) { return gather(t, 1, picks.to(t.device())); },
        randn({6, 9}).to(dtype));
    check_gradient(
        "gather dim 0, an index narrower than the input",
        [&](const Tensor& t) { return gather(t, 0, picks_narrow.to(t.device())); },
        randn({9, 6}).to(dtype));
  }
}

// ATen's powi on both devices: the integer part of 1 / base^-e.
TEST(CudaDeterminism, IntegerPowersWithNegativeExponentsMatchTheCpu) {
  NNS_SKIP_WITHOUT_CUDA();
  manual_seed(8);
  const Tensor base = randint(-3, 4, {200});
  const Tensor exponent = randint(-4, 5, {200});
  EXPECT_TRUE(test::close_on_cpu(pow(base.to(test::kCuda0), exponent.to(test::kCuda0)),
                                 pow(base, exponent), 0, 0));
}

// abs clears the sign bit on both devices (abs(-0) = 0), as PyTorch.
TEST(CudaDeterminism, AbsOfNegativeZeroIsPositiveZero) {
  NNS_SKIP_WITHOUT_CUDA();
  const Tensor x = from_vector(std::vector<float>{-0.0f, -1.5f, 2.0f}, {3});
  EXPECT_TRUE(same_bits(abs(x.to(test::kCuda0)), abs(x)));
  EXPECT_EQ(std::signbit(abs(x.to(test::kCuda0)).to(kCPU).to_vector<float>()[0]), false);
}

}  // namespace
}  // namespace nns
