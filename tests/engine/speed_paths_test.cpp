// SPDX-License-Identifier: GPL-3.0-or-later
// The fast paths of the training step give what the general paths give: the vectorized
// float32 tanh over contiguous memory, the weight gradient that linear's backward makes in the
// weight's own layout (taken by AccumulateGrad without a copy), SGD's one-pass momentum
// update, the probes' update ratio of a large parameter estimated from a sample, the column
// sums of a reduction over leading dims (bias gradients), the CPU allocator's reuse of freed
// blocks, and issue 20's kernels: the matrix products oneDNN and OpenBLAS share, the batched im2col
// convolution (with its shifted-plane im2col) and the 2x2 max pool, each against a plain
// double-precision loop written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "engine/cpu/threads.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/probes.h"

namespace nns {
namespace {

TEST(SpeedPaths, ContiguousTanhMatchesTheStridedPath) {
  manual_seed(0);
  Tensor x = randn({64, 40}) * 6;
  // The edges of the formula: tiny values (tanh(x) = x), the clamp at +-20, non-finite values.
  const float specials[] = {0.0f,
                            -0.0f,
                            5e-5f,
                            -5e-5f,
                            1e-4f,
                            25.0f,
                            -25.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  float* p = x.data_ptr<float>();
  for (size_t i = 0; i < std::size(specials); ++i) p[i * 7] = specials[i];
  const Tensor contiguous = x.tanh();
  // The transposed input takes the general (strided) kernel.
  const Tensor strided = x.t().tanh().t();
  ASSERT_FALSE(x.t().is_contiguous());
  const std::vector<float> a = contiguous.to_vector<float>();
  const std::vector<float> b = strided.contiguous().to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << i;
    } else {
      EXPECT_EQ(a[i], b[i]) << "at " << i << ", x = " << p[i];
    }
  }
}

TEST(SpeedPaths, LinearWeightGradientIsContiguousAndExact) {
  manual_seed(1);
  nn::Linear layer(5, 3);
  const Tensor x = randn({7, 5});
  const Tensor g = randn({7, 3});
  (layer(x) * g).sum().backward();
  const Tensor grad = layer.weight.grad();
  EXPECT_TRUE(grad.is_contiguous());
  EXPECT_FALSE(grad.impl()->is_view);
  EXPECT_EQ(grad.sizes(), (Shape{3, 5}));
  // grad_W = g^T @ x, computed here as a plain product.
  const Tensor want = mm(g.t(), x);
  const std::vector<float> got = grad.to_vector<float>();
  const std::vector<float> expected = want.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], expected[i]) << i;
  // A second backward accumulates into the taken buffer.
  (layer(x) * g).sum().backward();
  const std::vector<float> twice = layer.weight.grad().to_vector<float>();
  for (size_t i = 0; i < twice.size(); ++i) EXPECT_FLOAT_EQ(twice[i], 2 * expected[i]) << i;
}

TEST(SpeedPaths, MomentumStepOnContiguousAndStridedGradientsAgree) {
  // The one-pass update (contiguous gradient) and the tensor-op path (a strided gradient,
  // which the one-pass update does not take) follow the same roundings.
  manual_seed(2);
  const Tensor w0 = randn({6, 4});
  const Tensor g = randn({6, 4});
  optim::SGDOptions o(0.1);
  o.momentum = 0.9;
  o.dampening = 0.25;
  Tensor a = w0.clone().requires_grad_(true);
  Tensor b = w0.clone().requires_grad_(true);
  optim::SGD sa({a}, o), sb({b}, o);
  for (int step = 0; step < 3; ++step) {
    a.set_grad(g.clone());
    b.set_grad(g.t().contiguous().t());
    ASSERT_FALSE(b.grad().is_contiguous());
    sa.step();
    sb.step();
  }
  EXPECT_EQ(a.detach().to_vector<float>(), b.detach().to_vector<float>());
}

TEST(SpeedPaths, UpdateRatioOfALargeParameterIsEstimatedFromASample) {
  manual_seed(3);
  auto net = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(200, 100)});
  train::Probes probes(net);
  probes.add("0", train::ProbeOptions{false, false, true, 1});
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.5));
  const Tensor w = net->get_parameter("0.weight");
  const Tensor before = w.detach().clone();
  probes.begin_step(1);
  (*net)(randn({32, 200})).pow(2).mean().backward();
  probes.before_optimizer_step();
  sgd.step();
  probes.end_step();
  double diff = 0, norm = 0;
  const std::vector<float> after_values = w.detach().to_vector<float>();
  const std::vector<float> before_values = before.to_vector<float>();
  for (size_t i = 0; i < after_values.size(); ++i) {
    const double d = static_cast<double>(after_values[i]) - before_values[i];
    diff += d * d;
    norm += static_cast<double>(after_values[i]) * after_values[i];
  }
  const double exact = std::sqrt(diff) / std::sqrt(norm);
  bool seen = false;
  for (const train::ProbeSample& s : probes.take_samples()) {
    if (s.tensor != "weight") continue;
    seen = true;
    ASSERT_GT(w.numel(), static_cast<int64_t>(train::kReservoirValues));
    EXPECT_NEAR(s.update_ratio, exact, 0.05 * exact);
  }
  EXPECT_TRUE(seen);
}

// A contiguous input summed over its leading dims takes the register-blocked column sums; the
// same values in a transposed layout take the general strided loop, which adds each column's
// rows in the same order: the results are the same bits. The widths cover a tail only (3), whole
// blocks (64) and blocks plus a tail (70).
TEST(SpeedPaths, SumOverLeadingDimsMatchesTheStridedPath) {
  manual_seed(4);
  for (Dtype dtype : {kFloat32, kFloat64}) {
    for (const Shape& shape : {Shape{256, 3}, Shape{256, 64}, Shape{300, 70}, Shape{2, 33}}) {
      const Tensor x = (randn(shape) * 1000).to(dtype);
      const Tensor strided = x.t().contiguous().t();
      ASSERT_FALSE(strided.is_contiguous());
      EXPECT_EQ(x.sum({0}).to(kFloat64).to_vector<double>(),
                strided.sum({0}).to(kFloat64).to_vector<double>())
          << shape_str(shape);
      EXPECT_EQ(x.mean({0}, true).to(kFloat64).to_vector<double>(),
                strided.mean({0}, true).to(kFloat64).to_vector<double>())
          << shape_str(shape);
    }
    // Two leading dims of a 3-D input; the transposed copy visits its rows in the same order.
    const Tensor x3 = randn({4, 6, 40}).to(dtype);
    const Tensor strided3 = x3.transpose(0, 1).contiguous().transpose(0, 1);
    ASSERT_FALSE(strided3.is_contiguous());
    EXPECT_EQ(x3.sum({0, 1}).to(kFloat64).to_vector<double>(),
              strided3.sum({0, 1}).to(kFloat64).to_vector<double>());
  }
  const Tensor ints = randint(-1000, 1000, {50, 37});
  EXPECT_EQ(ints.sum({0}).to_vector<int64_t>(),
            ints.t().contiguous().t().sum({0}).to_vector<int64_t>());
  // An empty batch sums to zeros; a mean over it is NaN, as on the general path.
  const Tensor empty_rows = zeros({0, 5});
  EXPECT_EQ(empty_rows.sum({0}).to_vector<float>(), std::vector<float>(5, 0.0f));
  for (float v : empty_rows.mean({0}).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
}

// Freed blocks come back for the next allocation of the same size, 64-byte aligned, and a
// factory's fill still writes every element of a reused block.
TEST(SpeedPaths, AllocatorReusesFreedBlocksOfTheSameSize) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{5} << 20}) {
    const void* first = nullptr;
    {
      Tensor a = full({n}, 7.0f);
      first = a.raw_data();
    }
    Tensor b = zeros({n});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw_data()) % 64, 0u) << n;
    if (n > 0 && n * 4 <= (int64_t{16} << 20)) {
      EXPECT_EQ(b.raw_data(), first) << n;
    }
    for (float v : b.to_vector<float>()) ASSERT_EQ(v, 0.0f) << n;
  }
}

// ---- issue 20's kernels ----------------------------------------------------------------------

// op(x) [rows, cols] of a row-major buffer: x itself, or the transpose of its contents.
double at(const std::vector<double>& x, bool trans, int64_t rows, int64_t cols, int64_t r,
          int64_t c) {
  return trans ? x[static_cast<size_t>(c * rows + r)] : x[static_cast<size_t>(r * cols + c)];
}

// addmm(c, op(a), op(b), beta, alpha) against a double loop for every transpose, at shapes that
// take each path: oneDNN (thin and square), and OpenBLAS (B transposed with a long inner side,
// and every float64 product); float32 and float64. beta = 0 must not read C (NaN there stays out).
TEST(SpeedPaths, MatrixProductsOfEveryPathMatchADoubleLoop) {
  manual_seed(5);
  struct Case {
    int64_t m, n, k;
  };
  const Case cases[] = {{256, 64, 2},   {256, 3, 64}, {64, 2, 256}, {3, 64, 256}, {256, 64, 3},
                        {1, 1, 1},      {4, 4, 4},    {5, 1, 7},    {1, 9, 300},  {37, 29, 41},
                        {16, 72, 4096}, {8, 9, 2000}, {65, 33, 17}};
  for (Dtype dtype : {kFloat32, kFloat64}) {
    for (const Case& cs : cases) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = t & 1, tb = t & 2;
        // Stored as op's argument: [k, m] when A is transposed, and so on.
        const Tensor a = randn(ta ? Shape{cs.k, cs.m} : Shape{cs.m, cs.k}).to(dtype);
        const Tensor b = randn(tb ? Shape{cs.n, cs.k} : Shape{cs.k, cs.n}).to(dtype);
        const Tensor c = randn({cs.m, cs.n}).to(dtype);
        const auto av = a.to(kFloat64).to_vector<double>(), bv = b.to(kFloat64).to_vector<double>();
        const auto cv = c.to(kFloat64).to_vector<double>();
        const Tensor op_a = ta ? a.t() : a, op_b = tb ? b.t() : b;
        for (const auto& [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{0.5, 2.0}}) {
          const Tensor c_in = beta == 0 ? full({cs.m, cs.n}, std::nan("")).to(dtype) : c;
          const auto got = addmm(c_in, op_a, op_b, beta, alpha).to(kFloat64).to_vector<double>();
          const double tolerance = (dtype == kFloat32 ? 2e-6 : 1e-13) * std::sqrt(double(cs.k));
          for (int64_t i = 0; i < cs.m; ++i) {
            for (int64_t j = 0; j < cs.n; ++j) {
              double want = 0, scale = 0;
              for (int64_t p = 0; p < cs.k; ++p) {
                const double term = at(av, ta, cs.m, cs.k, i, p) * at(bv, tb, cs.k, cs.n, p, j);
                want += term;
                scale += std::abs(term);
              }
              want = alpha * want + beta * cv[static_cast<size_t>(i * cs.n + j)];
              ASSERT_NEAR(got[static_cast<size_t>(i * cs.n + j)], want,
                          tolerance * (scale + std::abs(want)) + 1e-30)
                  << dtype_name(dtype) << " " << cs.m << "x" << cs.n << "x" << cs.k << " ta " << ta
                  << " tb " << tb << " beta " << beta << " at " << i << "," << j;
            }
          }
        }
      }
    }
  }
}

// The same products on one thread and on two give the same values (oneDNN splits a large
// product over its OpenMP threads when set_num_threads allows).
TEST(SpeedPaths, LargeProductsAgreeOnOneAndTwoThreads) {
  manual_seed(6);
  const Tensor a = randn({128, 784}), b = randn({512, 784});
  const int before = get_num_threads();
  set_num_threads(1);
  const auto one = mm(a, b.t()).to_vector<float>();
  set_num_threads(2);
  const auto two = mm(a, b.t()).to_vector<float>();
  set_num_threads(before);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_NEAR(one[i], two[i], 1e-4f * (1.0f + std::abs(one[i]))) << i;
  }
}

// conv2d forward and backward against the definition, in double: geometries that take the
// shifted-plane im2col (stride 1, "same" width: 3x3 pad 1, 5x5 pad 2, 1x1) and those that do
// not (stride 2, dilation 2, no padding, a wide kernel), groups, and a batch split over several
// products (a col matrix of 160 x 128^2 per image, past the 16 MiB budget's 4M elements for two
// images).
TEST(SpeedPaths, BatchedConvolutionMatchesTheDefinition) {
  struct Geometry {
    int64_t n, cin, cout, h, w, kh, kw, stride, pad, dilation, groups;
  };
  const Geometry geometries[] = {
      {5, 1, 8, 16, 16, 3, 3, 1, 1, 1, 1}, {3, 8, 16, 8, 8, 3, 3, 1, 1, 1, 1},
      {2, 3, 4, 7, 9, 5, 5, 1, 2, 1, 1},   {2, 4, 6, 5, 6, 1, 1, 1, 0, 1, 1},
      {2, 3, 5, 9, 8, 3, 3, 2, 1, 1, 1},   {2, 2, 3, 9, 9, 3, 3, 1, 2, 2, 1},
      {2, 4, 4, 6, 7, 3, 2, 1, 0, 1, 2},   {3, 10, 2, 128, 128, 4, 4, 1, 0, 1, 1}};
  manual_seed(7);
  for (const Geometry& g : geometries) {
    const int64_t oh = (g.h + 2 * g.pad - g.dilation * (g.kh - 1) - 1) / g.stride + 1;
    const int64_t ow = (g.w + 2 * g.pad - g.dilation * (g.kw - 1) - 1) / g.stride + 1;
    const int64_t cin_g = g.cin / g.groups, cout_g = g.cout / g.groups;
    Tensor x = randn({g.n, g.cin, g.h, g.w}).requires_grad_(true);
    Tensor w = randn({g.cout, cin_g, g.kh, g.kw}).requires_grad_(true);
    Tensor b = randn({g.cout}).requires_grad_(true);
    const Tensor y =
        conv2d(x, w, b, {g.stride, g.stride}, {g.pad, g.pad}, {g.dilation, g.dilation}, g.groups);
    ASSERT_EQ(y.sizes(), (Shape{g.n, g.cout, oh, ow}));
    const Tensor gy = randn(y.sizes());
    y.backward(gy);
    const auto xv = x.to(kFloat64).to_vector<double>(), wv = w.to(kFloat64).to_vector<double>();
    const auto bv = b.to(kFloat64).to_vector<double>(), yv = y.to(kFloat64).to_vector<double>();
    const auto gyv = gy.to(kFloat64).to_vector<double>();
    std::vector<double> want_y(yv.size()), want_gx(xv.size()), want_gw(wv.size()),
        want_gb(bv.size());
    for (int64_t n = 0; n < g.n; ++n) {
      for (int64_t co = 0; co < g.cout; ++co) {
        const int64_t grp = co / cout_g;
        for (int64_t i = 0; i < oh; ++i) {
          for (int64_t j = 0; j < ow; ++j) {
            const size_t yi = static_cast<size_t>(((n * g.cout + co) * oh + i) * ow + j);
            double sum = bv[static_cast<size_t>(co)];
            want_gb[static_cast<size_t>(co)] += gyv[yi];
            for (int64_t c = 0; c < cin_g; ++c) {
              for (int64_t ki = 0; ki < g.kh; ++ki) {
                for (int64_t kj = 0; kj < g.kw; ++kj) {
                  const int64_t ih = i * g.stride - g.pad + ki * g.dilation;
                  const int64_t iw = j * g.stride - g.pad + kj * g.dilation;
                  if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                  const size_t xi =
                      static_cast<size_t>(((n * g.cin + grp * cin_g + c) * g.h + ih) * g.w + iw);
                  const size_t wi = static_cast<size_t>(((co * cin_g + c) * g.kh + ki) * g.kw + kj);
                  sum += xv[xi] * wv[wi];
                  want_gx[xi] += gyv[yi] * wv[wi];
                  want_gw[wi] += gyv[yi] * xv[xi];
                }
              }
            }
            want_y[yi] = sum;
          }
        }
      }
    }
    const auto close = [](const std::vector<double>& got, const std::vector<double>& want,
                          const char* what, double scale) {
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << what << " at " << i;
      }
    };
    const double depth = static_cast<double>(cin_g * g.kh * g.kw);
    const double reach = static_cast<double>(g.n * oh * ow);
    SCOPED_TRACE(::testing::Message()
                 << "geometry n" << g.n << " cin" << g.cin << " cout" << g.cout << " " << g.h << "x"
                 << g.w << " k" << g.kh << "x" << g.kw << " s" << g.stride << " p" << g.pad << " d"
                 << g.dilation << " g" << g.groups);
    close(yv, want_y, "output", 4 * std::sqrt(depth));
    close(x.grad().to(kFloat64).to_vector<double>(), want_gx, "grad_input",
          4 * std::sqrt(static_cast<double>(cout_g * g.kh * g.kw)));
    close(w.grad().to(kFloat64).to_vector<double>(), want_gw, "grad_weight", 4 * std::sqrt(reach));
    close(b.grad().to(kFloat64).to_vector<double>(), want_gb, "grad_bias", 4 * std::sqrt(reach));
  }
}

// max_pool2d's 2x2 windows (the vectorized path) against ATen's rule written out: the first
// maximum wins a tie and a NaN wins over everything, the last NaN of a window; with -inf, ties
// and NaNs planted, on an odd-sized input (the last row and column are dropped).
TEST(SpeedPaths, TwoByTwoMaxPoolFollowsATensRuleForTiesAndNaNs) {
  manual_seed(8);
  const int64_t h = 11, w = 13;
  Tensor x = randn({3, 4, h, w});
  std::vector<float> v = x.to_vector<float>();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  for (size_t i = 0; i < v.size(); i += 7) v[i] = v[i + 1];  // ties
  for (size_t i = 3; i < v.size(); i += 29) v[i] = nan;
  for (size_t i = 5; i < v.size(); i += 31) v[i] = -inf;
  v[0] = v[1] = v[13] = v[14] = -inf;  // the first window: -inf only
  x = from_vector(v, {3, 4, h, w}).requires_grad_(true);
  const Tensor y = max_pool2d(x, {2, 2});
  ASSERT_EQ(y.sizes(), (Shape{3, 4, h / 2, w / 2}));
  y.backward(ones_like(y));
  const auto got = y.to_vector<float>(), grad = x.grad().to_vector<float>();
  std::vector<float> want_grad(v.size(), 0.0f);
  for (int64_t p = 0; p < 12; ++p) {
    for (int64_t i = 0; i < h / 2; ++i) {
      for (int64_t j = 0; j < w / 2; ++j) {
        size_t best = static_cast<size_t>((p * h + 2 * i) * w + 2 * j);
        float best_value = v[best];
        for (int64_t di = 0; di < 2; ++di) {
          for (int64_t dj = 0; dj < 2; ++dj) {
            const size_t k = static_cast<size_t>((p * h + 2 * i + di) * w + 2 * j + dj);
            if (v[k] > best_value || std::isnan(v[k])) best_value = v[best = k];
          }
        }
        const float value = got[static_cast<size_t>((p * (h / 2) + i) * (w / 2) + j)];
        if (std::isnan(best_value)) {
          EXPECT_TRUE(std::isnan(value)) << p << " " << i << " " << j;
        } else {
          EXPECT_EQ(value, best_value) << p << " " << i << " " << j;
        }
        want_grad[best] += 1.0f;
      }
    }
  }
  EXPECT_EQ(grad, want_grad);
}

}  // namespace
}  // namespace nns
