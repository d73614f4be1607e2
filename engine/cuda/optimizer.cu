// SPDX-License-Identifier: GPL-3.0-or-later
// The optimizers' update kernels on CUDA (engine/backend/optimizer_kernels.h): one grid-stride
// pass per parameter with the CPU kernels' formulas term by term (engine/cpu/optimizer.cpp for
// Adam, engine/optim/sgd.cpp and rmsprop.cpp for the others), their fused multiply-adds as fma,
// so a step is one launch per parameter instead of a dozen elementwise ones. The scalars come
// by value, or from device memory inside a CUDA graph (rewritten before each replay), and are
// cast to T in the kernel as the CPU casts them on the host; found_inf skips the update.
#include <cmath>

#include "engine/backend/optimizer_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

__device__ inline bool skipped(const float* found_inf) {
  return found_inf != nullptr && *found_inf != 0.0f;
}

template <class T>
__global__ void adam_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                            int64_t n, AdamStep by_value, const AdamStep* device_step,
                            const float* found_inf) {
  if (skipped(found_inf)) return;
  const AdamStep& s = device_step != nullptr ? *device_step : by_value;
  const T beta1 = static_cast<T>(s.beta1), one_minus_beta1 = static_cast<T>(1.0 - s.beta1);
  const T beta2 = static_cast<T>(s.beta2), one_minus_beta2 = static_cast<T>(1.0 - s.beta2);
  const T weight_decay = static_cast<T>(s.weight_decay);
  const T bias_correction2_sqrt = static_cast<T>(s.bias_correction2_sqrt);
  const T eps = static_cast<T>(s.eps), neg_step_size = static_cast<T>(-s.step_size);
  const T param_scale = static_cast<T>(s.param_scale);
  const bool coupled_decay = !s.decoupled && s.weight_decay != 0.0;
  NNS_GRID_STRIDE_LOOP(i, n) {
    T g = s.maximize ? -grad[i] : grad[i];
    T p = param[i];
    if (s.decoupled) p *= param_scale;
    if (coupled_decay) g = fma(p, weight_decay, g);
    const T m = fma(g, one_minus_beta1, exp_avg[i] * beta1);
    const T v = fma(one_minus_beta2 * g, g, exp_avg_sq[i] * beta2);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    T v_used = v;
    if (max_exp_avg_sq != nullptr) {
      // torch.maximum: NaN wins.
      const T old = max_exp_avg_sq[i];
      v_used = (old < v || isnan(v)) ? v : old;
      max_exp_avg_sq[i] = v_used;
    }
    const T denom = sqrt(v_used) / bias_correction2_sqrt + eps;
    param[i] = p + neg_step_size * m / denom;
  }
}

// PyTorch's single-tensor SGD with the momentum buffer made already: decay, momentum with
// dampening, Nesterov, maximize.
template <class T>
__global__ void sgd_kernel(T* param, const T* grad, T* momentum_buffer, int64_t n, SgdStep by_value,
                           const SgdStep* device_step, const float* found_inf) {
  if (skipped(found_inf)) return;
  const SgdStep& s = device_step != nullptr ? *device_step : by_value;
  const T weight_decay = static_cast<T>(s.weight_decay), momentum = static_cast<T>(s.momentum);
  const T one_minus_dampening = static_cast<T>(1.0 - s.dampening);
  const T neg_lr = static_cast<T>(-s.lr);
  NNS_GRID_STRIDE_LOOP(i, n) {
    T d_p = s.maximize ? -grad[i] : grad[i];
    const T p = param[i];
    if (s.weight_decay != 0.0) d_p = fma(p, weight_decay, d_p);
    if (momentum_buffer != nullptr) {
      const T b = fma(d_p, one_minus_dampening, momentum_buffer[i] * momentum);
      momentum_buffer[i] = b;
      d_p = s.nesterov ? fma(b, momentum, d_p) : b;
    }
    param[i] = fma(d_p, neg_lr, p);
  }
}

template <class T>
__global__ void rmsprop_kernel(T* param, const T* grad, T* square_avg, T* momentum_buffer,
                               T* grad_avg, int64_t n, RmspropStep by_value,
                               const RmspropStep* device_step, const float* found_inf) {
  if (skipped(found_inf)) return;
  const RmspropStep& s = device_step != nullptr ? *device_step : by_value;
  const T alpha = static_cast<T>(s.alpha), one_minus_alpha = static_cast<T>(1.0 - s.alpha);
  const T weight_decay = static_cast<T>(s.weight_decay), eps = static_cast<T>(s.eps);
  const T momentum = static_cast<T>(s.momentum), neg_lr = static_cast<T>(-s.lr);
  NNS_GRID_STRIDE_LOOP(i, n) {
    T g = s.maximize ? -grad[i] : grad[i];
    const T p = param[i];
    if (s.weight_decay != 0.0) g = fma(p, weight_decay, g);
    const T v = fma(one_minus_alpha * g, g, square_avg[i] * alpha);
    square_avg[i] = v;
    T avg;
    if (grad_avg != nullptr) {
      const T a = fma(g, one_minus_alpha, grad_avg[i] * alpha);
      grad_avg[i] = a;
      avg = sqrt(fma(-a, a, v));  // square_avg.addcmul(grad_avg, grad_avg, value=-1)
    } else {
      avg = sqrt(v);
    }
    avg += eps;
    if (momentum_buffer != nullptr) {
      const T buf = momentum_buffer[i] * momentum + g / avg;
      momentum_buffer[i] = buf;
      param[i] = fma(buf, neg_lr, p);
    } else {
      param[i] = p + neg_lr * g / avg;
    }
  }
}

template <class T>
__global__ void non_finite_kernel(const T* x, int64_t n, float* found_inf) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    if (!isfinite(x[i])) *found_inf = 1.0f;  // every writer writes the same value
  }
}

// One grid-stride launch over n elements on the stream of `out`'s device, checked.
template <class Kernel, class... Args>
void launch(const char* what, Kernel kernel, int64_t n, const void* out, Args... args) {
  if (n == 0) return;
  kernel<<<blocks_for(n), kThreads, 0, stream_for(out)>>>(args...);
  check_launch(what);
}

template <class T>
void adam(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
          const AdamStep& step, const AdamStep* device_step, const float* found_inf) {
  launch("Adam", adam_kernel<T>, n, param, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, n,
         step, device_step, found_inf);
}

template <class T>
void sgd(T* param, const T* grad, T* momentum_buffer, int64_t n, const SgdStep& step,
         const SgdStep* device_step, const float* found_inf) {
  launch("SGD", sgd_kernel<T>, n, param, param, grad, momentum_buffer, n, step, device_step,
         found_inf);
}

template <class T>
void rmsprop(T* param, const T* grad, T* square_avg, T* momentum_buffer, T* grad_avg, int64_t n,
             const RmspropStep& step, const RmspropStep* device_step, const float* found_inf) {
  launch("RMSprop", rmsprop_kernel<T>, n, param, param, grad, square_avg, momentum_buffer, grad_avg,
         n, step, device_step, found_inf);
}

template <class T>
void non_finite(const T* x, int64_t n, float* found_inf) {
  launch("non-finite check", non_finite_kernel<T>, n, found_inf, x, n, found_inf);
}

}  // namespace

const OptimizerKernels optimizer_kernels{
    &adam<float>,    &adam<double>,    &sgd<float>,        &sgd<double>,
    &rmsprop<float>, &rmsprop<double>, &non_finite<float>, &non_finite<double>,
};

}  // namespace nns::cuda
