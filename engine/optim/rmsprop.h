// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.optim.RMSprop, PyTorch 1.13's single-tensor update for each parameter p with
// gradient g:
//   g = maximize ? -g : g;   g = g + weight_decay * p
//   v = alpha * v + (1 - alpha) * g * g                           ("square_avg")
//   centered: a = alpha * a + (1 - alpha) * g; avg = sqrt(v - a * a) + eps   ("grad_avg")
//   otherwise avg = sqrt(v) + eps
//   momentum > 0: buf = momentum * buf + g / avg; p = p - lr * buf   ("momentum_buffer")
//   otherwise p = p - lr * g / avg
// in the parameter's dtype, rounded as PyTorch's CPU kernels round. The state per parameter
// is PyTorch's, in its order: "step" (an int64 scalar tensor: a Python int in 1.13),
// "square_avg", "momentum_buffer" when momentum > 0, "grad_avg" when centered.
#include <optional>

#include "engine/optim/optimizer.h"

namespace nns::optim {

struct RMSpropOptions : OptimizerOptions {
  RMSpropOptions() = default;
  explicit RMSpropOptions(double lr) : lr(lr) {}
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<RMSpropOptions>(*this);
  }
  double get_lr() const override { return lr; }
  void set_lr(double value) override { lr = value; }
  // lr, momentum, alpha, eps, centered, weight_decay, foreach, maximize, differentiable:
  // torch 1.13's keys in its order.
  OptionList items() const override;
  void set(const std::string& name, const OptionValue& value) override;

  double lr = 1e-2;
  double momentum = 0.0;
  double alpha = 0.99;
  double eps = 1e-8;
  bool centered = false;
  double weight_decay = 0.0;
  // As for Adam: foreach (None or a flag) is kept for the state dict; differentiable must be
  // false.
  std::optional<bool> foreach;
  bool maximize = false;
  bool differentiable = false;
};

class RMSprop : public Optimizer {
 public:
  // Options are checked as PyTorch checks them (ValueError): lr, eps, momentum,
  // weight_decay and alpha not negative.
  RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults);
  RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& defaults)
      : RMSprop(std::vector<ParamGroup>{ParamGroup(params)}, defaults) {}

  // Parameters must be float32 or float64 tensors on the CPU (see Adam::step).
  void step() override;
};

}  // namespace nns::optim
