// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.optim.SGD, PyTorch 1.13's update for each parameter p with gradient g:
//   g = maximize ? -g : g;   g = g + weight_decay * p
//   momentum != 0: buf = clone(g) at the first step, else buf = momentum * buf + (1 - dampening) *
//   g;
//                  g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
#include <optional>

#include "engine/optim/optimizer.h"

namespace nns::optim {

struct SGDOptions : OptimizerOptions {
  SGDOptions() = default;
  explicit SGDOptions(double lr) : lr(lr) {}
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<SGDOptions>(*this);
  }
  double get_lr() const override { return lr; }
  void set_lr(double value) override { lr = value; }
  // lr, momentum, dampening, weight_decay, nesterov, maximize, foreach, differentiable, in
  // torch 1.13's order. foreach (None or a flag) only picks PyTorch's implementation, so it
  // is kept and the update is the same; differentiable must be false (no autograd through
  // the step here).
  OptionList items() const override;
  void set(const std::string& name, const OptionValue& value) override;

  double lr = 0.0;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
  std::optional<bool> foreach;
  bool differentiable = false;
};

class SGD : public Optimizer {
 public:
  // Options are checked as PyTorch checks them (ValueError): lr, momentum and weight_decay not
  // negative; nesterov needs a momentum and zero dampening. Groups without options take a
  // copy of these.
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  SGD(const std::vector<Tensor>& params, const SGDOptions& defaults)
      : SGD(std::vector<ParamGroup>{ParamGroup(params)}, defaults) {}

  void step() override;

 private:
  bool step_on_device(const Tensor& p, const Tensor& grad, size_t group, const SGDOptions& o);
};

}  // namespace nns::optim
