// SPDX-License-Identifier: GPL-3.0-or-later
// Elementwise ops: values, dtypes and gradients against PyTorch (fixtures "elementwise"),
// gradients against finite differences, broadcasting, and the typed errors of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/ops.h"
#include "support/gradcheck.h"
#include "support/op_case.h"

namespace nns {
namespace {

using test::check_op_case;
using testing::gradcheck;
using V = std::vector<Tensor>;

// Tolerances for formulas whose last bits depend on the math library (exp, tanh, erf, pow):
// PyTorch uses Sleef, the engine Eigen's and the C library's. Arithmetic is compared exactly.
constexpr double kRtolF32 = 4e-6, kAtolF32 = 1e-7;
constexpr double kRtolF64 = 1e-12, kAtolF64 = 1e-15;

// PyTorch's float32 gelu loses precision to 1 + erf(x) for negative x (absolute error up to
// ~2e-7); the engine computes it as erfc(-x), so the two agree only to that.
constexpr double kGeluAtolF32 = 3e-7;

struct OpCase {
  std::string name;
  test::OpFunction fn;
  bool exact;
  double atol_f32 = kAtolF32;
};

void check_both_dtypes(const OpCase& c) {
  for (const char* tag : {"f32", "f64"}) {
    const bool f32 = std::string(tag) == "f32";
    const double rtol = c.exact ? 0 : (f32 ? kRtolF32 : kRtolF64);
    const double atol = c.exact ? 0 : (f32 ? c.atol_f32 : kAtolF64);
    check_op_case("elementwise", c.name + "." + tag, c.fn, rtol, atol);
  }
}

// Exact where no sum is involved; broadcasting sums gradients, in an order that differs from
// PyTorch's, and add/sub with alpha is one fused multiply-add in PyTorch's AVX2 build.
TEST(Elementwise, ArithmeticMatchesPyTorch) {
  const std::vector<OpCase> cases = {
      {"add", [](const V& x) { return x[0] + x[1]; }, true},
      {"add.broadcast_row", [](const V& x) { return add(x[0], x[1]); }, false},
      {"add.broadcast_both", [](const V& x) { return x[0] + x[1]; }, false},
      {"add.broadcast_3d", [](const V& x) { return x[0] + x[1]; }, false},
      {"add.scalar_tensor", [](const V& x) { return x[0] + x[1]; }, false},
      {"add.alpha", [](const V& x) { return x[0].add(x[1], 2.5); }, false},
      {"add.scalar", [](const V& x) { return x[0] + 2.5; }, true},
      {"add.transposed", [](const V& x) { return x[0].t() + x[1]; }, true},
      {"sub", [](const V& x) { return x[0] - x[1]; }, false},
      {"sub.alpha", [](const V& x) { return sub(x[0], x[1], 0.5); }, false},
      {"sub.scalar", [](const V& x) { return x[0] - 1.5; }, true},
      {"rsub.scalar", [](const V& x) { return 3.0 - x[0]; }, true},
      {"mul", [](const V& x) { return x[0] * x[1]; }, true},
      {"mul.broadcast", [](const V& x) { return x[0].mul(x[1]); }, false},
      {"mul.scalar", [](const V& x) { return x[0] * 0.3; }, true},
      {"mul.strided", [](const V& x) { return x[0].slice(1, 0, 8, 2) * x[1].t(); }, true},
      {"div", [](const V& x) { return x[0] / x[1]; }, true},
      {"div.broadcast", [](const V& x) { return x[0].div(x[1]); }, false},
      {"div.scalar", [](const V& x) { return x[0] / 0.7; }, true},
      {"rdiv.scalar", [](const V& x) { return 2.0 / x[0]; }, true},
      {"neg", [](const V& x) { return -x[0]; }, true},
      {"where", [](const V& x) { return where(x[0], x[1], x[2]); }, false},
  };
  for (const OpCase& c : cases) check_both_dtypes(c);
}

TEST(Elementwise, PowMatchesPyTorch) {
  const std::vector<std::pair<std::string, double>> exponents = {
      {"2", 2},   {"3", 3}, {"0.5", 0.5}, {"-0.5", -0.5}, {"-1", -1},
      {"-2", -2}, {"1", 1}, {"0", 0},     {"2.7", 2.7},   {"-1.3", -1.3}};
  for (const auto& [text, e] : exponents) {
    // Exact where PyTorch's special cases apply (x*x, sqrt, 1/x, ...), close for std::pow.
    const bool exact = e != 2.7 && e != -1.3;
    check_both_dtypes({"pow." + text, [e = e](const V& x) { return x[0].pow(e); }, exact});
  }
  check_both_dtypes({"pow.2.negative_base", [](const V& x) { return x[0].pow(2); }, true});
  check_both_dtypes({"pow.tensor", [](const V& x) { return x[0].pow(x[1]); }, false});
  check_both_dtypes({"pow.tensor_broadcast", [](const V& x) { return pow(x[0], x[1]); }, false});
}

TEST(Elementwise, UnaryMatchesPyTorch) {
  const std::vector<OpCase> cases = {
      {"exp", [](const V& x) { return x[0].exp(); }, false},
      {"log", [](const V& x) { return x[0].log(); }, false},
      {"sqrt", [](const V& x) { return x[0].sqrt(); }, false},
      {"abs", [](const V& x) { return x[0].abs(); }, true},
      {"clamp", [](const V& x) { return x[0].clamp(-0.5, 0.5); }, true},
      {"clamp.min", [](const V& x) { return x[0].clamp(0.1, std::nullopt); }, true},
      {"clamp.max", [](const V& x) { return clamp(x[0], std::nullopt, -0.1); }, true},
      {"tanh", [](const V& x) { return x[0].tanh(); }, false},
      {"sigmoid", [](const V& x) { return x[0].sigmoid(); }, false},
      {"relu", [](const V& x) { return x[0].relu(); }, true},
      {"leaky_relu", [](const V& x) { return leaky_relu(x[0], 0.1); }, true},
      {"leaky_relu.default", [](const V& x) { return leaky_relu(x[0]); }, true},
      {"gelu", [](const V& x) { return gelu(x[0]); }, false, kGeluAtolF32},
      {"gelu.tanh", [](const V& x) { return gelu(x[0], "tanh"); }, false, kGeluAtolF32},
      {"chain", [](const V& x) { return ((x[0] * x[1] + x[0].exp()) / (x[1] * x[1] + 1)).tanh(); },
       false},
      {"exp.transposed", [](const V& x) { return x[0].t().exp(); }, false},
      {"exp.large", [](const V& x) { return x[0].exp(); }, false},
      {"log.large", [](const V& x) { return x[0].log(); }, false},
      {"tanh.large", [](const V& x) { return x[0].tanh(); }, false},
      {"sigmoid.large", [](const V& x) { return x[0].sigmoid(); }, false},
      {"gelu.large", [](const V& x) { return gelu(x[0]); }, false, kGeluAtolF32},
      {"sqrt.large", [](const V& x) { return x[0].sqrt(); }, false},
  };
  for (const OpCase& c : cases) check_both_dtypes(c);
}

// NaN, infinities, -0 and huge values: forward and backward follow PyTorch's formulas.
TEST(Elementwise, SpecialValuesMatchPyTorch) {
  const std::vector<OpCase> cases = {
      {"relu.special", [](const V& x) { return x[0].relu(); }, true},
      {"abs.special", [](const V& x) { return x[0].abs(); }, true},
      {"neg.special", [](const V& x) { return -x[0]; }, true},
      {"clamp.special", [](const V& x) { return x[0].clamp(-1, 1); }, true},
      {"leaky_relu.special", [](const V& x) { return leaky_relu(x[0]); }, true},
      {"exp.special", [](const V& x) { return x[0].exp(); }, false},
      {"tanh.special", [](const V& x) { return x[0].tanh(); }, false},
      {"sigmoid.special", [](const V& x) { return x[0].sigmoid(); }, false},
      {"gelu.special", [](const V& x) { return gelu(x[0]); }, false, kGeluAtolF32},
      {"log.special", [](const V& x) { return x[0].log(); }, false},
      {"sqrt.special", [](const V& x) { return x[0].sqrt(); }, false},
  };
  for (const OpCase& c : cases) check_both_dtypes(c);
}

TEST(Elementwise, ComparisonsMatchPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"eq.broadcast", [](const V& x) { return eq(x[0], x[1]); }},
      {"ne.broadcast", [](const V& x) { return ne(x[0], x[1]); }},
      {"lt.broadcast", [](const V& x) { return lt(x[0], x[1]); }},
      {"le.broadcast", [](const V& x) { return le(x[0], x[1]); }},
      {"gt.broadcast", [](const V& x) { return gt(x[0], x[1]); }},
      {"ge.broadcast", [](const V& x) { return ge(x[0], x[1]); }},
      {"gt.scalar", [](const V& x) { return gt(x[0], 0.25); }},
      {"lt.scalar", [](const V& x) { return lt(x[0], -0.25); }},
      {"gt.int_vs_scalar", [](const V& x) { return gt(x[0], 0.5); }},
      {"eq.int_vs_float", [](const V& x) { return eq(x[0], x[1]); }},
      {"eq.bool", [](const V& x) { return eq(x[0], x[1]); }},
      {"isfinite", [](const V& x) { return isfinite(x[0]); }},
  };
  for (const auto& [name, fn] : cases) check_op_case("elementwise", name, fn);
}

TEST(Elementwise, TypePromotionMatchesPyTorch) {
  const std::vector<std::pair<std::string, test::OpFunction>> cases = {
      {"promote.int_add_float32", [](const V& x) { return x[0] + x[1]; }},
      {"promote.int_mul_scalar", [](const V& x) { return x[0] * 2.5; }},
      {"promote.int_div_int", [](const V& x) { return x[0] / x[1]; }},
      {"promote.int_div_scalar", [](const V& x) { return x[0] / 2.0; }},
      {"promote.f32_add_f64_zero_dim", [](const V& x) { return x[0] + x[1]; }},
      {"promote.f32_add_f64", [](const V& x) { return x[0] + x[1]; }},
      {"promote.int_add_bool", [](const V& x) { return x[0] + x[1]; }},
      {"promote.int_pow_int", [](const V& x) { return x[0].pow(x[1]); }},
      {"promote.int_neg", [](const V& x) { return -x[0]; }},
      {"promote.int_abs", [](const V& x) { return x[0].abs(); }},
      {"promote.int_relu", [](const V& x) { return x[0].relu(); }},
      {"promote.int_add", [](const V& x) { return x[0] + x[1]; }},
      {"promote.int_mul", [](const V& x) { return x[0] * x[1]; }},
      {"promote.int_sub", [](const V& x) { return x[0] - x[1]; }},
      {"promote.int_clamp", [](const V& x) { return x[0].clamp(-1.5, 2.5); }},
      {"promote.where_mixed", [](const V& x) { return where(x[0], x[1], x[2]); }},
  };
  for (const auto& [name, fn] : cases) check_op_case("elementwise", name, fn);
  // The zero-dim operand's gradient is a sum.
  check_op_case(
      "elementwise", "promote.int_add_f64_zero_dim", [](const V& x) { return x[0] + x[1]; },
      kRtolF64, kAtolF64);
  // Float math on integers runs in float32.
  check_op_case(
      "elementwise", "promote.int_sqrt", [](const V& x) { return x[0].sqrt(); }, kRtolF32,
      kAtolF32);
  check_op_case(
      "elementwise", "promote.int_exp", [](const V& x) { return x[0].exp(); }, kRtolF32, kAtolF32);
  check_op_case(
      "elementwise", "promote.int_sigmoid", [](const V& x) { return x[0].sigmoid(); }, kRtolF32,
      kAtolF32);
  check_op_case(
      "elementwise", "promote.int_pow_scalar", [](const V& x) { return x[0].pow(0.5); }, kRtolF32,
      kAtolF32);
}

// int64 to negative int64 powers, as ATen's powi: the integer part of 1 / base^-e (1 for base
// 1, +-1 for base -1, else 0, base 0 included), where PyTorch's CPU and CUDA kernels agree.
TEST(Elementwise, IntegerPowerWithNegativeExponentsMatchesPyTorch) {
  check_op_case("elementwise", "promote.int_pow_negative",
                [](const V& x) { return x[0].pow(x[1]); });
  const Tensor strided = from_vector(std::vector<int64_t>{-1, 9, 1, 9, 2, 9}, {3, 2}).select(1, 0);
  EXPECT_EQ(strided.pow(full({3}, -5, kInt64)).to_vector<int64_t>(),
            (std::vector<int64_t>{-1, 1, 0}));
}

// ---- Gradients against finite differences -------------------------------------------------

Tensor r64(const Shape& shape) {
  return randn(shape, kFloat64);
}
// Away from 0, for log, sqrt, division and non-integer powers.
Tensor pos64(const Shape& shape) {
  return rand(shape, kFloat64) + 0.5;
}
// Away from the kinks of relu, abs, clamp and leaky_relu, where differences are one-sided.
Tensor away_from(const Shape& shape, std::vector<double> kinks) {
  Tensor t = r64(shape);
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v) {
    for (double k : kinks) {
      if (std::abs(x - k) < 0.05) x = k + 0.1;
    }
  }
  return from_vector(v, shape);
}

TEST(Elementwise, GradcheckBinaryWithBroadcasting) {
  manual_seed(3);
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 4}, {3, 4}}, {{3, 4}, {4}},
                                                       {{3, 1}, {1, 4}}, {{2, 1, 4}, {3, 1}},
                                                       {{3, 4}, {}},     {{}, {2, 3}}};
  for (const auto& [sa, sb] : shapes) {
    SCOPED_TRACE(shape_str(sa) + " with " + shape_str(sb));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0] + x[1]; }, {r64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0].add(x[1], -1.5); }, {r64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0] - x[1]; }, {r64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0].sub(x[1], 2.0); }, {r64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0] * x[1]; }, {r64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0] / x[1]; }, {r64(sa), pos64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return x[0].pow(x[1]); }, {pos64(sa), r64(sb)}));
    EXPECT_TRUE(gradcheck([](const V& x) { return where(gt(x[2], 0.0), x[0], x[1]); },
                          {r64(sa), r64(sb), r64(sa)}));
  }
}

TEST(Elementwise, GradcheckScalarOperands) {
  manual_seed(4);
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] + 2.0; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 2.0 + x[0]; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] - 2.0; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 2.0 - x[0]; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] * -3.0; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 0.5 * x[0]; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0] / 4.0; }, {r64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return 3.0 / x[0]; }, {pos64({2, 3})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return -x[0]; }, {r64({2, 3})}));
}

TEST(Elementwise, GradcheckUnary) {
  manual_seed(5);
  const Shape s = {3, 4};
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].exp(); }, {r64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].log(); }, {pos64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].sqrt(); }, {pos64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].abs(); }, {away_from(s, {0})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].tanh(); }, {r64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].sigmoid(); }, {r64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].relu(); }, {away_from(s, {0})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return leaky_relu(x[0], 0.2); }, {away_from(s, {0})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return gelu(x[0]); }, {r64(s)}));
  EXPECT_TRUE(gradcheck([](const V& x) { return gelu(x[0], "tanh"); }, {r64(s)}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return x[0].clamp(-0.5, 0.7); }, {away_from(s, {-0.5, 0.7})}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return x[0].clamp(-0.5, std::nullopt); }, {away_from(s, {-0.5})}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return x[0].clamp(std::nullopt, 0.3); }, {away_from(s, {0.3})}));
  for (double e : {2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 1.0, 0.0, 2.7, -1.3}) {
    SCOPED_TRACE("pow " + std::to_string(e));
    EXPECT_TRUE(gradcheck([e](const V& x) { return x[0].pow(e); }, {pos64(s)}));
  }
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].pow(3.0); }, {r64(s)}));
}

TEST(Elementwise, GradcheckStridedInputs) {
  manual_seed(6);
  EXPECT_TRUE(
      gradcheck([](const V& x) { return x[0].t().sigmoid() * x[1]; }, {r64({4, 3}), r64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return x[0].slice(1, 0, 6, 2).tanh() + x[1].t(); },
                        {r64({3, 6}), r64({3, 3})}));
  EXPECT_TRUE(gradcheck(
      [](const V& x) {
        return x[0].expand({2, 3, 4}) * x[1];
      },
      {r64({3, 1}), r64({2, 3, 4})}));
}

TEST(Elementwise, GradcheckInPlaceOnNonLeaves) {
  manual_seed(7);
  EXPECT_TRUE(
      gradcheck([](const V& x) { return (x[0] * 1.0).add_(x[1], 0.5); }, {r64({3, 4}), r64({4})}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return (x[0] * 1.0).sub_(x[1]); }, {r64({3, 4}), r64({3, 1})}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return (x[0] * 1.0).mul_(x[1]); }, {r64({3, 4}), r64({4})}));
  EXPECT_TRUE(
      gradcheck([](const V& x) { return (x[0] * 1.0).div_(x[1]); }, {r64({3, 4}), pos64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).add_(2.0).mul_(3.0).div_(0.5); },
                        {r64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).clamp_(-0.5, 0.5); },
                        {away_from({3, 4}, {-0.5, 0.5})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).relu_(); }, {away_from({3, 4}, {0})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).addcmul_(x[1], x[2], 0.5); },
                        {r64({3, 4}), r64({3, 4}), r64({4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).addcdiv_(x[1], x[2], -2.0); },
                        {r64({3, 4}), r64({3, 1}), pos64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).copy_(x[1]) * x[0]; },
                        {r64({3, 4}), r64({4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).zero_() + x[0]; }, {r64({3, 4})}));
  EXPECT_TRUE(gradcheck([](const V& x) { return (x[0] * 1.0).fill_(2.0) * x[0]; }, {r64({3})}));
}

// ---- grad_fn names, as PyTorch 1.13 prints them -------------------------------------------

TEST(Elementwise, GradFnNamesMatchPyTorch) {
  const Tensor a = randn({3}, TensorOptions().requires_grad(true));
  const Tensor b = randn({3}, TensorOptions().requires_grad(true));
  auto name = [](const Tensor& t) { return t.grad_fn()->name(); };
  EXPECT_EQ(name(a + b), "AddBackward0");
  EXPECT_EQ(name(a + 2), "AddBackward0");  // Python wraps the scalar: AddBackward0 too
  EXPECT_EQ(name(a - b), "SubBackward0");
  EXPECT_EQ(name(a - 2), "SubBackward0");
  EXPECT_EQ(name(2 - a), "RsubBackward1");
  EXPECT_EQ(name(a * b), "MulBackward0");
  EXPECT_EQ(name(a * 2), "MulBackward0");
  EXPECT_EQ(name(a / b), "DivBackward0");
  EXPECT_EQ(name(a / 2), "DivBackward0");
  const Tensor q = 2 / a;  // a.reciprocal() * 2
  EXPECT_EQ(name(q), "MulBackward0");
  EXPECT_EQ(q.grad_fn()->next_edges[0].function->name(), "ReciprocalBackward0");
  EXPECT_EQ(name(-a), "NegBackward0");
  EXPECT_EQ(name(a.pow(2)), "PowBackward0");
  EXPECT_EQ(name(a.pow(b)), "PowBackward1");
  EXPECT_EQ(name(a.exp()), "ExpBackward0");
  EXPECT_EQ(name(a.log()), "LogBackward0");
  EXPECT_EQ(name(a.sqrt()), "SqrtBackward0");
  EXPECT_EQ(name(a.abs()), "AbsBackward0");
  EXPECT_EQ(name(a.clamp(0, 1)), "ClampBackward1");
  EXPECT_EQ(name(a.tanh()), "TanhBackward0");
  EXPECT_EQ(name(a.sigmoid()), "SigmoidBackward0");
  EXPECT_EQ(name(a.relu()), "ReluBackward0");
  EXPECT_EQ(name(leaky_relu(a)), "LeakyReluBackward0");
  EXPECT_EQ(name(gelu(a)), "GeluBackward0");
  EXPECT_EQ(name(gelu(a, "tanh")), "GeluBackward0");
  EXPECT_EQ(name(where(gt(a, 0.0), a, b)), "WhereBackward0");
  // Comparisons and isfinite are not differentiable.
  EXPECT_FALSE(gt(a, b).requires_grad());
  EXPECT_FALSE(isfinite(a).requires_grad());
}

TEST(Elementwise, OnlyNeededGradientsAreComputedAndSaved) {
  const Tensor a = randn({3}, TensorOptions().requires_grad(true));
  Tensor b = randn({3});
  Tensor y = a * b;      // saves b (for a's gradient), not a
  a.detach().mul_(2.0);  // a is not saved: modifying it breaks nothing
  y.sum().backward();
  EXPECT_EQ(a.grad().to_vector<float>(), b.to_vector<float>());
}

// ---- Broadcasting and bad input --------------------------------------------------------------

TEST(Elementwise, BroadcastShapes) {
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}, "t"), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {3}, "t"), (Shape{3}));
  EXPECT_EQ(broadcast_shapes({0, 1}, {1, 5}, "t"), (Shape{0, 5}));
  EXPECT_EQ((ones({2, 1}) + ones({3})).sizes(), (Shape{2, 3}));
  EXPECT_EQ((ones({0, 3}) * ones({3})).sizes(), (Shape{0, 3}));
}

TEST(Elementwise, MismatchedShapesThrowShapeError) {
  try {
    ones({2, 3}) + ones({4});
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "add: shapes [2, 3] and [4] cannot be broadcast (dimension 1: 3 vs 4); sizes "
                 "must match or be 1, aligned from the last dimension");
  }
  EXPECT_THROW(ones({2, 3}) * ones({3, 2}), ShapeError);
  EXPECT_THROW(where(ones({2}, kBool), ones({3}), ones({2})), ShapeError);
  EXPECT_THROW(eq(ones({2}), ones({3})), ShapeError);
  try {
    Tensor t = ones({2, 3});
    t.add_(ones({4, 2, 3}));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "add_: output with shape [2, 3] doesn't match the broadcast shape [4, 2, 3]"),
              std::string::npos)
        << e.what();
  }
  Tensor t = ones({3});
  EXPECT_THROW(t.copy_(ones({2, 3})), ShapeError);
}

TEST(Elementwise, BadDtypesThrowDtypeError) {
  const Tensor h = ones({2}).to(kFloat16);
  try {
    h + h;
    FAIL() << "expected DtypeError";
  } catch (const DtypeError& e) {
    EXPECT_NE(std::string(e.what()).find("add: torch.float16 is a storage type"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(h.exp(), DtypeError);
  // float16 with float32 promotes to float32 and works.
  EXPECT_EQ((h + ones({2})).dtype(), kFloat32);
  const Tensor m = ones({2}, kBool);
  EXPECT_THROW(m - m, DtypeError);
  EXPECT_THROW(-m, DtypeError);
  EXPECT_THROW(m.relu(), DtypeError);
  EXPECT_THROW(where(ones({2}), ones({2}), ones({2})), DtypeError);
  EXPECT_THROW(leaky_relu(ones({2}, kInt64)), DtypeError);
  EXPECT_THROW(gelu(ones({2}, kInt64)), DtypeError);
  Tensor i = ones({2}, kInt64);
  try {
    i.add_(1.5);
    FAIL() << "expected DtypeError";
  } catch (const DtypeError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "add_: result type torch.float32 can't be cast to the desired output type "
                  "torch.int64"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(i.add_(ones({2})), DtypeError);
  EXPECT_THROW(i.div_(2.0), DtypeError);
  i.add_(3.0);  // a whole number keeps an int64 tensor int64, like num_batches_tracked += 1
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 4}));
}

TEST(Elementwise, BadArgumentsThrowValueError) {
  EXPECT_THROW(ones({2}).clamp(std::nullopt, std::nullopt), ValueError);
  EXPECT_THROW(gelu(ones({2}), "fast"), ValueError);
  Tensor e = ones({1}).expand({3});
  EXPECT_THROW(e.add_(1.0), ValueError);
}

// ---- Non-finite checks ---------------------------------------------------------------------

TEST(Elementwise, AnyNonFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(any_non_finite(ones({3, 4})));
  EXPECT_FALSE(any_non_finite(ones({0})));
  EXPECT_FALSE(any_non_finite(ones({3}, kInt64)));
  for (double bad : {nan, inf, -inf}) {
    for (Dtype dtype : {kFloat32, kFloat64, kFloat16}) {
      Tensor t = zeros({5000}, dtype);  // more than one block of the contiguous scan
      t.narrow(0, 4321, 1).fill_(bad);
      EXPECT_TRUE(any_non_finite(t)) << bad << " " << dtype_name(dtype);
      // Strided: the bad value in a transposed view, and outside a slice's elements.
      Tensor m = zeros({40, 30}, dtype);
      m.select(0, 7).select(0, 29).fill_(bad);
      EXPECT_TRUE(any_non_finite(m.t()));
      EXPECT_FALSE(any_non_finite(m.slice(0, 8, 40)));
    }
  }
  EXPECT_EQ(isfinite(tensor({1.0, nan, inf})).to_vector<bool>(),
            (std::vector<bool>{true, false, false}));
  EXPECT_EQ(isfinite(ones({2}, kInt64)).to_vector<bool>(), (std::vector<bool>{true, true}));
}

// Eigen's SSE exp clamps its input at -88.38 (float) and -709.4 (double), which made exp(-inf)
// 2.9e-39, and a softmax over masked (-inf) scores leave those entries above 0, in builds
// without AVX. PyTorch gives 0.
TEST(Elementwise, ExpFarBelowZeroIsZero) {
  const double inf = std::numeric_limits<double>::infinity();
  for (Dtype dtype : {kFloat32, kFloat64}) {
    const Tensor x = tensor({-inf, -1000, -750, 0, 1}, dtype);
    const std::vector<double> e = x.exp().to(kFloat64).to_vector<double>();
    EXPECT_EQ(e[0], 0.0);
    EXPECT_EQ(e[1], 0.0);
    EXPECT_EQ(e[2], 0.0);
    EXPECT_EQ(e[3], 1.0);
    EXPECT_NEAR(e[4], std::exp(1.0), 1e-6);
    const std::vector<double> s =
        tensor({0.5, -inf, 1.0, -inf}, dtype).softmax(0).to(kFloat64).to_vector<double>();
    EXPECT_EQ(s[1], 0.0);
    EXPECT_EQ(s[3], 0.0);
    EXPECT_NEAR(s[0] + s[2], 1.0, 1e-6);
  }
}

}  // namespace
}  // namespace nns
