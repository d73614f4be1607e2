// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizers' update kernels on the CPU (engine/backend/optimizer_kernels.h).
#include <cmath>

#include "engine/cpu/cpu_kernels.h"

namespace nns::cpu {
namespace {

// One pass over a parameter: the scalars are cast to T as PyTorch's kernels cast them, and
// each operation rounds where PyTorch's does. Its add(other, alpha) and addcmul are fused
// multiply-adds in the vectorized CPU kernels (and in their scalar tails, which GCC contracts
// with the kernels' -mfma), so those are std::fma here.
template <class T>
void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
                 const AdamStep& step, const AdamStep* device_step, const float* found_inf) {
  if (found_inf != nullptr && *found_inf != 0.0f) return;
  const AdamStep& s = device_step != nullptr ? *device_step : step;
  const T beta1 = static_cast<T>(s.beta1);
  const T one_minus_beta1 = static_cast<T>(1.0 - s.beta1);
  const T beta2 = static_cast<T>(s.beta2);
  const T one_minus_beta2 = static_cast<T>(1.0 - s.beta2);
  const T weight_decay = static_cast<T>(s.weight_decay);
  const T bias_correction2_sqrt = static_cast<T>(s.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps);
  const T neg_step_size = static_cast<T>(-s.step_size);
  const T param_scale = static_cast<T>(s.param_scale);
  const bool coupled_decay = !s.decoupled && s.weight_decay != 0.0;
  for (int64_t i = 0; i < n; ++i) {
    T g = s.maximize ? -grad[i] : grad[i];
    T p = param[i];
    if (s.decoupled) p *= param_scale;
    if (coupled_decay) g = std::fma(p, weight_decay, g);
    const T m = std::fma(g, one_minus_beta1, exp_avg[i] * beta1);
    const T v = std::fma(one_minus_beta2 * g, g, exp_avg_sq[i] * beta2);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T v_used = v;
    if (max_exp_avg_sq != nullptr) {
      // torch.maximum: NaN wins.
      const T old = max_exp_avg_sq[i];
      v_used = (old < v || std::isnan(v)) ? v : old;
      max_exp_avg_sq[i] = v_used;
    }
    const T denom = std::sqrt(v_used) / bias_correction2_sqrt + eps;
    param[i] = p + neg_step_size * m / denom;
  }
}

}  // namespace

// SGD's and RMSprop's CPU passes live with their optimizers (engine/optim); the CPU never holds
// a found_inf flag of a graph, so there is no non-finite kernel here either.
const OptimizerKernels optimizer_kernels{&adam_kernel<float>,
                                         &adam_kernel<double>,
                                         nullptr,
                                         nullptr,
                                         nullptr,
                                         nullptr,
                                         nullptr,
                                         nullptr};

}  // namespace nns::cpu
