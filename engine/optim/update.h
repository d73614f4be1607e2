// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the adaptive optimizers (Adam, AdamW, RMSprop) share: they update each parameter in one
// pass over raw float32/float64 memory, rounding as PyTorch's kernels round, instead of a
// chain of tensor ops (each a pass over memory and a temporary). These helpers check the
// operands of such a pass and give it contiguous memory.
#include <optional>
#include <string>

#include "engine/optim/optimizer.h"

namespace nns::optim::detail {

// PyTorch's option check and words: "<optimizer>: Invalid <what>: <value> (<rule>)", a
// ValueError (NaN fails too).
void check_option(const char* optimizer, const std::string& what, double value, bool valid,
                  const char* rule);
inline void check_not_negative(const char* optimizer, const std::string& what, double value) {
  check_option(optimizer, what, value, value >= 0.0, "it must not be negative");
}

// torch 1.13's "foreach" group key: None (std::monostate) or a flag.
OptionValue foreach_value(const std::optional<bool>& foreach);
std::optional<bool> foreach_from(const OptionValue& value);
// For capturable, differentiable and fused, which select what this engine does not have
// (CUDA graphs, autograd through the step): false (or None, torch 2.x's default for fused),
// or a ValueError naming the option. The optimizers take these keys from the groups of torch
// 2.x's checkpoints too where torch 1.13's groups lack them (SGD's fused, RMSprop's
// capturable, AdamW's differentiable and fused), so that a train.py run by a newer PyTorch
// resumes here.
bool false_only(const char* optimizer, const std::string& name, const OptionValue& value);

// Checks every parameter of every group that has a gradient: a float32/float64 tensor on
// the CPU (set_grad already gives a gradient the parameter's shape, dtype and device).
// Throws a DtypeError / DeviceError naming the optimizer, the group and the parameter
// otherwise, so a bad parameter is found before anything is updated.
// With any_device, a parameter on a GPU passes too (the optimizer has a tensor-op path there).
void check_parameters(const char* optimizer, const std::vector<ParamGroup>& groups,
                      bool any_device = false);

// The state entry `key` (which the step created or load_state_dict loaded), made contiguous
// in place if it is not; a KeyError naming the optimizer when the state lacks it (e.g.
// amsgrad turned on after the state was made, as in PyTorch). With `param`, the entry must
// have the parameter's shape and dtype (state() is writable, so it is checked before the
// pass writes through raw memory).
Tensor& state_entry(const char* optimizer, ParamState& state, const std::string& key,
                    const Tensor* param = nullptr);

// Adds one to the parameter's step count (a one-element tensor: PyTorch 1.13 keeps Adam's as
// float32, RMSprop's as an integer) in its own dtype, as PyTorch's `step += 1`, and returns
// the new count.
double increment_step(Tensor& step);

// The memory a one-pass update writes: the parameter itself when contiguous, otherwise a
// contiguous copy that finish() writes back. finish() also bumps the version counter, as an
// in-place op does.
class Writable {
 public:
  explicit Writable(const Tensor& param);
  // The contiguous memory to update, on the parameter's device (a GPU's memory too: the
  // kernel given it runs there); the parameter's dtype is T (checked by check_parameters).
  template <class T>
  T* data() const {
    return static_cast<T*>(work_.raw_data());
  }
  void finish();

 private:
  Tensor param_;
  Tensor work_;
};

}  // namespace nns::optim::detail
