// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizers' update kernels on CUDA (engine/backend/optimizer_kernels.h): one grid-stride
// pass per parameter with the CPU kernel's formula term by term (engine/cpu/optimizer.cpp),
// its fused multiply-adds as fma, so an Adam step is one launch per parameter instead of a
// dozen elementwise ones.
#include <cmath>

#include "engine/backend/optimizer_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

// The step's scalars cast to T on the host, as the CPU kernel casts them.
template <class T>
struct AdamScalars {
  T beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay, bias_correction2_sqrt, eps,
      neg_step_size, param_scale;
  bool maximize, decoupled, coupled_decay;
};

template <class T>
__global__ void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                            int64_t n, AdamScalars<T> s) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    T g = s.maximize ? -grad[i] : grad[i];
    T p = param[i];
    if (s.decoupled) p *= s.param_scale;
    if (s.coupled_decay) g = fma(p, s.weight_decay, g);
    const T m = fma(g, s.one_minus_beta1, exp_avg[i] * s.beta1);
    const T v = fma(s.one_minus_beta2 * g, g, exp_avg_sq[i] * s.beta2);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T v_used = v;
    if (max_exp_avg_sq != nullptr) {
      // torch.maximum: NaN wins.
      const T old = max_exp_avg_sq[i];
      v_used = (old < v || isnan(v)) ? v : old;
      max_exp_avg_sq[i] = v_used;
    }
    const T denom = sqrt(v_used) / s.bias_correction2_sqrt + s.eps;
    param[i] = p + s.neg_step_size * m / denom;
  }
}

template <class T>
void adam(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
          const AdamStep& step) {
  if (n == 0) return;
  const AdamScalars<T> s{static_cast<T>(step.beta1),
                         static_cast<T>(1.0 - step.beta1),
                         static_cast<T>(step.beta2),
                         static_cast<T>(1.0 - step.beta2),
                         static_cast<T>(step.weight_decay),
                         static_cast<T>(step.bias_correction2_sqrt),
                         static_cast<T>(step.eps),
                         static_cast<T>(-step.step_size),
                         static_cast<T>(step.param_scale),
                         step.maximize,
                         step.decoupled,
                         !step.decoupled && step.weight_decay != 0.0};
  set_device(device_of(param));
  adam_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(param)>>>(
      param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n, s);
  check_launch("Adam");
}

}  // namespace

const OptimizerKernels optimizer_kernels{&adam<float>, &adam<double>};

}  // namespace nns::cuda
