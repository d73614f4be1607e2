// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Elementwise operations with broadcasting (torch.add, mul, exp, relu, where, ...). Two
// tensor operands broadcast as in NumPy/PyTorch and promote as torch.result_type does
// (promote_types, except that a zero-dim tensor next to one with dims only counts when it is
// of a higher category: float32 [3] + float64 zero-dim stays float32). A double scalar acts
// as a Python float: with an integer or bool tensor the result is float32 (to stay integral,
// pass a zero-dim int64 tensor instead). Float math (exp, log, sqrt, tanh, sigmoid) on integers
// gives float32; division is true division.
//
//   Tensor y = nns::relu(x * w + b);                  // b [out] broadcasts over the rows
//   Tensor m = nns::where(nns::gt(x, 0.0), x, 0.1 * x);
#include <optional>

#include "engine/tensor/tensor.h"

namespace nns {

Tensor add(const Tensor& a, const Tensor& b, double alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, double alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor rsub(const Tensor& a, double b);  // b - a
Tensor rdiv(const Tensor& a, double b);  // b / a
Tensor neg(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);
Tensor pow(const Tensor& a, const Tensor& exponent);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);  // 1 / sqrt(a)
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor leaky_relu(const Tensor& a, double negative_slope = 0.01);
// approximate: "none" (erf) or "tanh", as torch.nn.functional.gelu.
Tensor gelu(const Tensor& a, const std::string& approximate = "none");
// x * sigmoid(x), as torch.nn.functional.silu.
Tensor silu(const Tensor& a);
// x <= 0 ? alpha * (exp(x) - 1) : x, as torch.nn.functional.elu.
Tensor elu(const Tensor& a, double alpha = 1.0);
// x > 0 ? x : weight * x, with weight 1-D of 1 element (shared) or one per channel (dim 1 of
// a), as torch.nn.functional.prelu; the weight gets a gradient too.
Tensor prelu(const Tensor& a, const Tensor& weight);
// Comparisons give bool tensors and no gradient.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
// condition (bool) ? a : b, all three broadcast.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
// isfinite: true where an element is neither NaN nor +-Inf (torch.isfinite). any_non_finite:
// whether any element is NaN or +-Inf, the quick whole-tensor check that stops training.
Tensor isfinite(const Tensor& a);
bool any_non_finite(const Tensor& a);

}  // namespace nns
