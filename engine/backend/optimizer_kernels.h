// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The optimizers' update kernels of a device backend: one pass over a parameter and its state
// per step (PyTorch's single-tensor formulas, rounded as its kernels round), so that an update
// on a GPU is one launch per parameter, not a chain of tensor ops.
//
//   const OptimizerKernels& k = kernels<OptimizerKernels>(p.device(), "Adam");
//   k.adam<float>()(param, grad, exp_avg, exp_avg_sq, nullptr, n, step);
#include <cstdint>
#include <type_traits>

#include "engine/tensor/device.h"

namespace nns {

// The scalars of one parameter's Adam/AdamW update, in float64 as PyTorch's Python code
// computes them; the kernels cast them to the parameter's dtype as PyTorch's kernels do.
struct AdamStep {
  double beta1, beta2, eps, weight_decay;
  double step_size;  // lr / (1 - beta1^t)
  double bias_correction2_sqrt;
  double param_scale;  // AdamW: 1 - lr * weight_decay
  bool maximize, decoupled;
};

// SGD's (momentum_buffer is nullptr without momentum; it exists already otherwise: the first
// step's buffer is a copy of the gradient, made by the optimizer).
struct SgdStep {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

// RMSprop's (momentum_buffer nullptr without momentum, grad_avg nullptr unless centered).
struct RmspropStep {
  double lr, alpha, eps, weight_decay, momentum;
  bool maximize;
};

// Every update kernel takes its scalars twice: by value, and as device memory that a CUDA
// graph rewrites before each replay (device_step, nullptr outside graphs: the value is used).
// found_inf (nullptr: none) is a one-element float32 flag on the device; where it is not 0 the
// kernel changes nothing, so a step whose gradients were not finite leaves the weights as
// they were without the host reading the flag first (PyTorch's fused optimizers' found_inf).
//
// param, exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad, else nullptr) are updated in
// place from grad; all contiguous, n elements, on the backend's device.
template <class T>
using AdamFn = void (*)(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                        int64_t n, const AdamStep& s, const AdamStep* device_step,
                        const float* found_inf);
template <class T>
using SgdFn = void (*)(T* param, const T* grad, T* momentum_buffer, int64_t n, const SgdStep& s,
                       const SgdStep* device_step, const float* found_inf);
template <class T>
using RmspropFn = void (*)(T* param, const T* grad, T* square_avg, T* momentum_buffer, T* grad_avg,
                           int64_t n, const RmspropStep& s, const RmspropStep* device_step,
                           const float* found_inf);
// Sets *found_inf to 1 when one of the n values is NaN or infinite (leaves it otherwise).
template <class T>
using NonFiniteFn = void (*)(const T* x, int64_t n, float* found_inf);

struct OptimizerKernels {
  AdamFn<float> adam_f32;
  AdamFn<double> adam_f64;
  // The CPU's SGD and RMSprop passes live with their optimizers (engine/optim): these are
  // nullptr there.
  SgdFn<float> sgd_f32;
  SgdFn<double> sgd_f64;
  RmspropFn<float> rmsprop_f32;
  RmspropFn<double> rmsprop_f64;
  NonFiniteFn<float> non_finite_f32;
  NonFiniteFn<double> non_finite_f64;

  template <class T>
  AdamFn<T> adam() const {
    if constexpr (std::is_same_v<T, float>)
      return adam_f32;
    else
      return adam_f64;
  }
  template <class T>
  SgdFn<T> sgd() const {
    if constexpr (std::is_same_v<T, float>)
      return sgd_f32;
    else
      return sgd_f64;
  }
  template <class T>
  RmspropFn<T> rmsprop() const {
    if constexpr (std::is_same_v<T, float>)
      return rmsprop_f32;
    else
      return rmsprop_f64;
  }
  template <class T>
  NonFiniteFn<T> non_finite() const {
    if constexpr (std::is_same_v<T, float>)
      return non_finite_f32;
    else
      return non_finite_f64;
  }
  static const OptimizerKernels* for_device(DeviceType type);
};

}  // namespace nns
