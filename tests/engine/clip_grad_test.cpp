// SPDX-License-Identifier: GPL-3.0-or-later
// clip_grad_norm_ and clip_grad_value_ against PyTorch 1.13 (optim_adaptive fixtures
// "clip.*"): 2-, 1-, 3- and inf-norms in float32 and float64, a parameter without a gradient,
// no clipping below max_norm, non-finite norms.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"
#include "support/test_util.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("optim_adaptive");
}

struct Params {
  Tensor a, b, c;  // c never has a gradient
};

// make_fixtures' _clip_params with the gradients the case recorded.
Params clip_params(const std::string& name, Dtype dtype) {
  Params p{zeros({4, 5}, TensorOptions(dtype).requires_grad(true)),
           zeros({3}, TensorOptions(dtype).requires_grad(true)),
           zeros({2}, TensorOptions(dtype).requires_grad(true))};
  p.a.set_grad(fx().tensor("clip." + name + ".grad.a").to_tensor());
  p.b.set_grad(fx().tensor("clip." + name + ".grad.b").to_tensor());
  return p;
}

TEST(ClipGradTest, ClipGradNormMatchesPyTorch) {
  const std::tuple<const char*, double, double, Dtype> cases[] = {
      {"l2", 1.0, 2.0, kFloat32},
      {"l2_small", 100.0, 2.0, kFloat32},
      {"inf", 0.5, nn::kInfNorm, kFloat32},
      {"l1", 2.0, 1.0, kFloat32},
      {"l3", 0.7, 3.0, kFloat32},
      {"l2_f64", 1.0, 2.0, kFloat64},
      {"inf_f64", 0.25, nn::kInfNorm, kFloat64},
  };
  for (const auto& [name, max_norm, norm_type, dtype] : cases) {
    SCOPED_TRACE(name);
    Params p = clip_params(name, dtype);
    const Tensor grad_a = p.a.grad();
    const Tensor norm = nn::clip_grad_norm_({p.a, p.b, p.c}, max_norm, norm_type);
    const std::string prefix = std::string("clip.") + name + ".";
    // The norm is summed in another order than PyTorch's vectorized reduction: within a
    // rounding or two of float32 (float64 exactly here).
    const double rtol = dtype == kFloat32 ? 3e-7 : 1e-15;
    EXPECT_TRUE(all_close(norm, fx().tensor(prefix + "norm"), rtol, 0));
    EXPECT_TRUE(all_close(p.a.grad(), fx().tensor(prefix + "a"), rtol, 0));
    EXPECT_TRUE(all_close(p.b.grad(), fx().tensor(prefix + "b"), rtol, 0));
    EXPECT_FALSE(p.c.grad().defined());
    // In place: the same gradient tensors.
    EXPECT_TRUE(p.a.grad().is_same(grad_a));
  }
}

TEST(ClipGradTest, BelowMaxNormLeavesGradientsAlone) {
  Params p = clip_params("l2_small", kFloat32);
  nn::clip_grad_norm_({p.a, p.b, p.c}, 100.0);
  EXPECT_TRUE(exactly_equal(p.a.grad(), fx().tensor("clip.l2_small.grad.a")));
  EXPECT_TRUE(exactly_equal(p.b.grad(), fx().tensor("clip.l2_small.grad.b")));
}

TEST(ClipGradTest, ClipGradValueMatchesPyTorch) {
  Params p = clip_params("l2", kFloat32);
  nn::clip_grad_value_({p.a, p.b, p.c}, 0.3);
  EXPECT_TRUE(exactly_equal(p.a.grad(), fx().tensor("clip.value.a")));
  EXPECT_TRUE(exactly_equal(p.b.grad(), fx().tensor("clip.value.b")));
  EXPECT_FALSE(p.c.grad().defined());
}

TEST(ClipGradTest, NonFiniteNorm) {
  Params p = clip_params("l2", kFloat32);
  Tensor gb = p.b.grad();
  {
    NoGradGuard no_grad;
    gb.select(0, 1).fill_(std::numeric_limits<double>::infinity());
  }
  const std::vector<double> before = values(p.a.grad());
  // PyTorch's words (a RuntimeError there), and nothing is scaled.
  EXPECT_NE(error_of<ValueError>([&] {
              nn::clip_grad_norm_({p.a, p.b, p.c}, 1.0, 2.0, true);
            }).find(fx().string("clip.nonfinite.error")),
            std::string::npos);
  EXPECT_EQ(values(p.a.grad()), before);
  // Without the check the gradients are scaled by 1 / inf as in PyTorch.
  const Tensor norm = nn::clip_grad_norm_({p.a, p.b, p.c}, 1.0);
  EXPECT_TRUE(exactly_equal(norm, fx().tensor("clip.nonfinite.norm")));
  EXPECT_TRUE(exactly_equal(p.a.grad(), fx().tensor("clip.nonfinite.a")));
}

TEST(ClipGradTest, NoGradientsGiveAZeroNorm) {
  Tensor c = zeros({2}, TensorOptions(kFloat64).requires_grad(true));
  EXPECT_TRUE(exactly_equal(nn::clip_grad_norm_({c}, 1.0), fx().tensor("clip.none.norm")));
  EXPECT_TRUE(exactly_equal(nn::clip_grad_norm_({}, 1.0), fx().tensor("clip.none.norm")));
}

TEST(ClipGradTest, OtherNorms) {
  // torch.norm's p = 0 (non-zeros) and -inf (smallest |g|), over all gradients together.
  Tensor a = zeros({3}, TensorOptions().requires_grad(true));
  Tensor b = zeros({2}, TensorOptions().requires_grad(true));
  a.set_grad(tensor({0.0, -2.0, 4.0}));
  b.set_grad(tensor({-0.5, 3.0}));
  EXPECT_EQ(nn::clip_grad_norm_({a, b}, 100.0, 0.0).item(), 2.0);
  EXPECT_EQ(nn::clip_grad_norm_({a, b}, 100.0, -nn::kInfNorm).item(), 0.0);
  EXPECT_FLOAT_EQ(
      static_cast<float>(nn::clip_grad_norm_({a, b}, 100.0, 4.0).item()),
      static_cast<float>(std::pow(
          std::pow(std::pow(16 + 256, 0.25), 4) + std::pow(std::pow(0.0625 + 81, 0.25), 4), 0.25)));
}

}  // namespace
}  // namespace nns::test
