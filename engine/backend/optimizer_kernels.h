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

// param, exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad, else nullptr) are updated in
// place from grad; all contiguous, n elements, on the backend's device.
template <class T>
using AdamFn = void (*)(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                        int64_t n, const AdamStep& s);

struct OptimizerKernels {
  AdamFn<float> adam_f32;
  AdamFn<double> adam_f64;

  template <class T>
  AdamFn<T> adam() const {
    if constexpr (std::is_same_v<T, float>) {
      return adam_f32;
    } else {
      return adam_f64;
    }
  }
  static const OptimizerKernels* for_device(DeviceType type);
};

}  // namespace nns
