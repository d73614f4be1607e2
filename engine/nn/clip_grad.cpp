// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/clip_grad.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "engine/nn/layers.h"
#include "engine/ops/indexing.h"
#include "engine/ops/reduction.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

namespace {

// Folds |x| of each element into a p-norm accumulator (in float64), as torch.norm's cases.
struct NormAccumulator {
  double p;
  double acc;
  explicit NormAccumulator(double p) : p(p), acc(std::isinf(p) && p < 0 ? kInfNorm : 0.0) {}
  void add(double x) {
    const double a = std::abs(x);
    if (std::isnan(a)) {
      acc = a;
    } else if (std::isnan(acc)) {
      // NaN stays
    } else if (p == kInfNorm) {
      acc = std::max(acc, a);
    } else if (p == -kInfNorm) {
      acc = std::min(acc, a);
    } else if (p == 0.0) {
      acc += a != 0.0 ? 1.0 : 0.0;
    } else if (p == 1.0) {
      acc += a;
    } else if (p == 2.0) {
      acc += a * a;
    } else {
      acc += std::pow(a, p);
    }
  }
  double result() const {
    if (std::isinf(p) || p == 0.0 || p == 1.0) return acc;
    if (p == 2.0) return std::sqrt(acc);
    return std::pow(acc, 1.0 / p);
  }
};

template <class T>
void accumulate(NormAccumulator& norm, const Tensor& t) {
  const T* x = t.data_ptr<T>();
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) norm.add(static_cast<double>(x[i]));
}

// torch.norm(g, p) rounded to the dtype T of the total (PyTorch computes each gradient's norm
// in its dtype, then the norm of those).
double grad_norm(const Tensor& grad, double p) {
  // A GPU's gradient is summed on the host (a copy per gradient; a device-side norm would
  // bring back one number).
  Tensor g = grad.to(kCPU).contiguous();
  if (g.dtype() != kFloat32 && g.dtype() != kFloat64) g = g.to(kFloat64);
  NormAccumulator norm(p);
  if (g.dtype() == kFloat32) {
    accumulate<float>(norm, g);
  } else {
    accumulate<double>(norm, g);
  }
  return norm.result();
}

double round_to(Dtype dtype, double x) {
  return dtype == kFloat32 ? static_cast<double>(static_cast<float>(x)) : x;
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  std::vector<Tensor> grads;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return scalar_tensor(0.0, kFloat32);
  const Dtype dtype = grads[0].dtype();
  if (!is_floating_point(dtype)) {
    throw DtypeError("clip_grad_norm_: gradients must be floating point, got " + dtype_name(dtype));
  }
  if (!grads[0].device().is_cpu() && norm_type == 2.0 && !error_if_nonfinite) {
    // On a GPU, PyTorch's own formula in tensor ops, so nothing comes back to the host (a
    // training step captured as a CUDA graph clips too): the norm of the gradients' norms,
    // max_norm / (norm + 1e-6) clamped at 1, each gradient scaled by it.
    NoGradGuard no_grad;
    std::vector<Tensor> norms;
    for (const Tensor& g : grads) norms.push_back(sqrt(sum(g.detach() * g.detach())));
    const Tensor stacked = stack(norms);
    const Tensor total_norm = sqrt(sum(stacked * stacked));
    const Tensor coef = clamp(max_norm / (total_norm + 1e-6), std::nullopt, 1.0);
    for (const Tensor& g : grads) g.detach().mul_(coef);
    return total_norm;
  }
  // The total is computed in float64 from the per-gradient norms rounded to the dtype, then
  // rounded itself (float16/bfloat16 ones to float32 until the result is returned).
  const Dtype total_dtype = dtype == kFloat64 ? kFloat64 : kFloat32;
  NormAccumulator total(norm_type);
  for (const Tensor& g : grads) total.add(round_to(total_dtype, grad_norm(g, norm_type)));
  const double total_norm = round_to(total_dtype, total.result());
  if (error_if_nonfinite && !std::isfinite(total_norm)) {
    throw ValueError("clip_grad_norm_: The total norm of order " + python_float(norm_type) +
                     " for gradients from `parameters` is non-finite, so it cannot be clipped. "
                     "To disable this error and scale the gradients by the non-finite norm "
                     "anyway, set `error_if_nonfinite=False`");
  }
  // PyTorch: clip_coef = max_norm / (total_norm + 1e-6), where float / tensor is
  // tensor.reciprocal() * float; then clamp(max=1.0) (NaN stays NaN). All in the total's dtype.
  double coef;
  if (total_dtype == kFloat32) {
    const float c = (1.0f / (static_cast<float>(total_norm) + static_cast<float>(1e-6))) *
                    static_cast<float>(max_norm);
    coef = c > 1.0f ? 1.0 : static_cast<double>(c);
  } else {
    const double c = (1.0 / (total_norm + 1e-6)) * max_norm;
    coef = c > 1.0 ? 1.0 : c;
  }
  NoGradGuard no_grad;
  for (const Tensor& g : grads) g.detach().mul_(coef);
  return scalar_tensor(total_norm, TensorOptions(dtype).device(grads[0].device()));
}

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : parameters) {
    if (p.defined() && p.grad().defined()) p.grad().detach().clamp_(-clip_value, clip_value);
  }
}

}  // namespace nns::nn
