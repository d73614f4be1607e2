// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.optim.Adam and torch.optim.AdamW, PyTorch 1.13's single-tensor update for each
// parameter p with gradient g (t counts the parameter's steps):
//   g = maximize ? -g : g
//   Adam:  g = g + weight_decay * p          AdamW: p = p * (1 - lr * weight_decay)
//   m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//   amsgrad: v_max = max(v_max, v), used below in place of v
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// in the parameter's dtype, rounded as PyTorch's CPU kernels round (float64 results are
// PyTorch's bit for bit). The state per parameter is PyTorch's: "step" (a float32 scalar
// tensor), "exp_avg", "exp_avg_sq", and "max_exp_avg_sq" with amsgrad.
//
//   nns::optim::AdamOptions options(1e-3);
//   options.amsgrad = true;
//   nns::optim::Adam adam(net->parameters(), options);
#include <array>
#include <optional>

#include "engine/optim/optimizer.h"

namespace nns::optim {

struct AdamOptions : OptimizerOptions {
  AdamOptions() = default;
  explicit AdamOptions(double lr) : lr(lr) {}
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamOptions>(*this);
  }
  double get_lr() const override { return lr; }
  void set_lr(double value) override { lr = value; }
  // lr, betas, eps, weight_decay, amsgrad, maximize, foreach, capturable, differentiable,
  // fused: torch 1.13's keys in its order.
  OptionList items() const override;
  void set(const std::string& name, const OptionValue& value) override;

  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0.0;
  bool amsgrad = false;
  bool maximize = false;
  // PyTorch's choices of implementation, kept so a state dict round-trips: foreach (None,
  // or a flag) gives the same update up to rounding; capturable, differentiable and fused
  // need CUDA graphs or autograd through the step, which this engine does not have, so only
  // false is accepted.
  std::optional<bool> foreach;
  bool capturable = false;
  bool differentiable = false;
  bool fused = false;
};

// AdamW's options: Adam's with weight decay 1e-2 by default (decoupled from the gradient).
struct AdamWOptions : AdamOptions {
  AdamWOptions() { weight_decay = 1e-2; }
  explicit AdamWOptions(double lr) : AdamWOptions() { this->lr = lr; }
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<AdamWOptions>(*this);
  }
  // lr, betas, eps, weight_decay, amsgrad, foreach, maximize, capturable (torch 1.13's AdamW
  // has neither differentiable nor fused).
  OptionList items() const override;
  void set(const std::string& name, const OptionValue& value) override;
};

class Adam : public Optimizer {
 public:
  // Options are checked as PyTorch checks them (ValueError): lr, eps and weight_decay not
  // negative, each beta in [0, 1). Groups without options take a copy of these.
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults);
  Adam(const std::vector<Tensor>& params, const AdamOptions& defaults)
      : Adam(std::vector<ParamGroup>{ParamGroup(params)}, defaults) {}

  // Parameters must be float32 or float64 tensors on the CPU (a DtypeError/DeviceError
  // naming the parameter otherwise, before anything changes).
  void step() override;

 protected:
  Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults, bool decoupled);

 private:
  const char* name() const { return decoupled_ ? "AdamW" : "Adam"; }
  const AdamOptions& group_options(const ParamGroup& group) const;

  bool decoupled_;  // AdamW
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<ParamGroup> groups, const AdamWOptions& defaults)
      : Adam(std::move(groups), defaults, true) {}
  AdamW(const std::vector<Tensor>& params, const AdamWOptions& defaults)
      : AdamW(std::vector<ParamGroup>{ParamGroup(params)}, defaults) {}
};

}  // namespace nns::optim
