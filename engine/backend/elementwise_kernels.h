// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The elementwise kernel family: pointwise math over operands that all have the output's
// sizes (broadcast operands carry stride 0, see broadcast_view). The op layer
// (engine/ops/elementwise.cpp) has already broadcast, promoted and converted: every
// floating operand has the output's dtype, so a kernel only dispatches on that one dtype.
//
//   Shape sb;
//   kernels<ElementwiseKernels>(out.device(), "add")
//       .binary(BinaryOp::Add, view_of(out), view_of(a), broadcast_view(b, out.sizes(), sb), 1, 0);
#include <cstdint>

#include "engine/backend/kernel_types.h"

namespace nns {

// out = f(a, b); alpha and beta are the op's parameters where it has any.
enum class BinaryOp : uint8_t {
  Add,  // a + alpha * b
  Sub,  // a - alpha * b
  Mul,
  Div,
  Pow,  // a ^ b (int64: by squaring; a negative exponent gives ATen's powi, 0, 1 or -1)
  // Fused backward formulas, out = f(grad, saved): one pass instead of several ops.
  ReluBackward,        // grad * (result > 0)
  TanhBackward,        // grad * (1 - result^2)
  SigmoidBackward,     // grad * result * (1 - result)
  SqrtBackward,        // grad / (2 * result)
  RsqrtBackward,       // grad * -0.5 * result^3
  SinBackward,         // grad * cos(input)
  CosBackward,         // grad * -sin(input)
  AbsBackward,         // grad * sgn(input)
  LeakyReluBackward,   // grad * (input > 0 ? 1 : alpha)
  GeluBackward,        // grad * gelu'(input), the erf form
  GeluTanhBackward,    // grad * gelu'(input), the tanh approximation
  ClampBackward,       // grad * (alpha <= input <= beta); NaN inputs get no gradient
  PowBackward,         // grad * alpha * input^(alpha - 1), zero when alpha == 0
  ReciprocalBackward,  // -grad * result^2
  SiluBackward,        // grad * s * (1 + input * (1 - s)), s = sigmoid(input)
  EluBackward,         // grad * (input <= 0 ? alpha * exp(input) : 1)
  // Not backward formulas: prelu(input, weight) = input > 0 ? input : weight * input, and
  // the summand of its weight's gradient, input > 0 ? 0 : input * grad (a = grad, b = input).
  Prelu,
  PreluBackwardWeight
};

// out = f(a) with the parameters alpha, beta.
enum class UnaryOp : uint8_t {
  Neg,
  Abs,
  Relu,
  Exp,
  Log,
  Sqrt,
  Rsqrt,  // 1 / sqrt(a)
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Reciprocal,
  LeakyRelu,  // alpha: negative slope
  Gelu,       // erf form
  GeluTanh,   // tanh approximation
  Clamp,      // min(max(a, alpha), beta); NaN stays NaN
  Pow,        // a ^ alpha
  Silu,       // a * sigmoid(a)
  Elu         // a <= 0 ? alpha * (exp(a) - 1) : a
};

enum class CompareOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

// out = self + value * a * b (Addcmul) or self + value * a / b (Addcdiv), and the two
// gradients of pow(x, e) with a tensor exponent, out = f(grad, x, e).
enum class TernaryOp : uint8_t {
  Addcmul,
  Addcdiv,
  PowBackwardSelf,      // grad * e * x^(e - 1), zero where e == 0
  PowBackwardExponent,  // grad * x^e * log(x), zero where x == 0 and e >= 0
  PreluBackwardSelf     // x > 0 ? grad : w * grad, out = f(grad, x, w)
};

struct ElementwiseKernels {
  // out, a, b share one dtype: float32, float64 or int64 (int64: Add, Sub, Mul, Pow only).
  void (*binary)(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
                 double alpha, double beta);
  // out = a op scalar, or scalar op a when scalar_first (Sub and Div only).
  void (*binary_scalar)(BinaryOp op, const TensorView& out, const TensorView& a, double scalar,
                        bool scalar_first);
  // out and a share one dtype; Neg, Abs and Relu also take int64, the rest float32/float64.
  void (*unary)(UnaryOp op, const TensorView& out, const TensorView& a, double alpha, double beta);
  // out is bool; a and b share one dtype (any but float16/bfloat16).
  void (*compare)(CompareOp op, const TensorView& out, const TensorView& a, const TensorView& b);
  void (*compare_scalar)(CompareOp op, const TensorView& out, const TensorView& a, double scalar);
  // out = condition ? a : b; condition is bool, out/a/b share one dtype.
  void (*where)(const TensorView& out, const TensorView& condition, const TensorView& a,
                const TensorView& b);
  // Floating dtypes only; all four share it.
  void (*ternary)(TernaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
                  const TensorView& c, double value);
  // out (bool) = a is neither NaN nor infinite.
  void (*isfinite)(const TensorView& out, const TensorView& a);
  // Whether any element is NaN or infinite; stops at the first one.
  bool (*any_non_finite)(const TensorView& a);

  static const ElementwiseKernels* for_device(DeviceType type);
};

}  // namespace nns
