// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/adam.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "engine/backend/cuda_graph.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/optim/update.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::optim {

namespace {

// PyTorch's checks and words (torch/optim/adam.py, adamw.py).
void check_options(const char* name, const AdamOptions& o) {
  detail::check_not_negative(name, "learning rate", o.lr);
  detail::check_not_negative(name, "epsilon value", o.eps);
  for (int i = 0; i < 2; ++i) {
    detail::check_option(name, "beta parameter at index " + std::to_string(i), o.betas[i],
                         o.betas[i] >= 0.0 && o.betas[i] < 1.0, "it must be in [0, 1)");
  }
  detail::check_not_negative(name, "weight_decay value", o.weight_decay);
}

// Sets an option both Adam and AdamW have; false for a name neither has.
bool set_common(const char* optimizer, AdamOptions& o, const std::string& name,
                const OptionValue& value) {
  if (name == "lr") {
    o.lr = option_number(name, value);
  } else if (name == "betas") {
    const auto* betas = std::get_if<std::vector<double>>(&value);
    if (betas == nullptr || betas->size() != 2) {
      throw ValueError(std::string(optimizer) +
                       ": option 'betas' must be a pair of numbers (beta1, beta2)");
    }
    o.betas = {(*betas)[0], (*betas)[1]};
  } else if (name == "eps") {
    o.eps = option_number(name, value);
  } else if (name == "weight_decay") {
    o.weight_decay = option_number(name, value);
  } else if (name == "amsgrad") {
    o.amsgrad = option_flag(name, value);
  } else if (name == "maximize") {
    o.maximize = option_flag(name, value);
  } else if (name == "foreach") {
    o.foreach = detail::foreach_from(value);
  } else if (name == "capturable") {
    o.capturable = detail::false_only(optimizer, name, value);
  } else if (name == "decoupled_weight_decay") {
    // torch 2.x's groups have it: false for Adam, true for AdamW (which is Adam with it on).
    const bool adamw = std::string(optimizer) == "AdamW";
    if (option_flag(name, value) != adamw) {
      throw ValueError(
          std::string(optimizer) + ": decoupled_weight_decay=" + (adamw ? "False" : "True") +
          " is " + (adamw ? "Adam" : "AdamW") + "'s update; choose " + (adamw ? "Adam" : "AdamW"));
    }
  } else {
    return false;
  }
  return true;
}

}  // namespace

OptionList AdamOptions::items() const {
  return {{"lr", lr},
          {"betas", std::vector<double>{betas[0], betas[1]}},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"amsgrad", amsgrad},
          {"maximize", maximize},
          {"foreach", detail::foreach_value(foreach)},
          {"capturable", capturable},
          {"differentiable", differentiable},
          {"fused", fused}};
}

void AdamOptions::set(const std::string& name, const OptionValue& value) {
  if (set_common("Adam", *this, name, value)) return;
  if (name == "differentiable") {
    differentiable = detail::false_only("Adam", name, value);
  } else if (name == "fused") {
    fused = detail::false_only("Adam", name, value);
  } else {
    throw KeyError("Adam has no option '" + name +
                   "' (it has lr, betas, eps, weight_decay, amsgrad, maximize, foreach, "
                   "capturable, differentiable, fused, decoupled_weight_decay)");
  }
}

OptionList AdamWOptions::items() const {
  return {{"lr", lr},
          {"betas", std::vector<double>{betas[0], betas[1]}},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"amsgrad", amsgrad},
          {"foreach", detail::foreach_value(foreach)},
          {"maximize", maximize},
          {"capturable", capturable}};
}

void AdamWOptions::set(const std::string& name, const OptionValue& value) {
  if (set_common("AdamW", *this, name, value)) return;
  if (name == "differentiable" || name == "fused") {
    detail::false_only("AdamW", name, value);  // torch 2.x's keys
    return;
  }
  throw KeyError("AdamW has no option '" + name +
                 "' (it has lr, betas, eps, weight_decay, amsgrad, foreach, maximize, "
                 "capturable, differentiable, fused, decoupled_weight_decay)");
}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults)
    : Adam(std::move(groups), defaults, false) {}

Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& defaults, bool decoupled)
    : Optimizer(std::move(groups), defaults.clone()), decoupled_(decoupled) {
  // The base added the groups before decoupled_ was known; check them all now.
  for (const ParamGroup& group : param_groups()) check_options(name(), group_options(group));
}

const AdamOptions& Adam::group_options(const ParamGroup& group) const {
  const auto* options = dynamic_cast<const AdamOptions*>(&group.options());
  const bool adamw = dynamic_cast<const AdamWOptions*>(&group.options()) != nullptr;
  if (options == nullptr || adamw != decoupled_) {
    throw ValueError(std::string(name()) +
                     ": a parameter group has options of another "
                     "optimizer; give it " +
                     (decoupled_ ? "AdamWOptions" : "AdamOptions") + " or none (the defaults)");
  }
  return *options;
}

namespace {
// The step's scalars at step count t, in float64 as PyTorch's Python code computes them.
AdamStep adam_step(const AdamOptions& o, double t, bool decoupled) {
  return AdamStep{o.betas[0],
                  o.betas[1],
                  o.eps,
                  o.weight_decay,
                  o.lr / (1.0 - std::pow(o.betas[0], t)),
                  std::sqrt(1.0 - std::pow(o.betas[1], t)),
                  1.0 - o.lr * o.weight_decay,
                  o.maximize,
                  decoupled};
}
}  // namespace

void Adam::step() {
  // Everything is checked before any parameter changes.
  for (const ParamGroup& group : param_groups()) check_options(name(), group_options(group));
  detail::check_parameters(name(), param_groups(), /*any_device=*/true);
  NoGradGuard no_grad;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const ParamGroup& group = param_groups()[g];
    const AdamOptions& o = group_options(group);
    for (const Tensor& p : group.params) {
      const Tensor grad = p.grad().defined() ? p.grad().contiguous() : Tensor();
      if (!grad.defined()) continue;
      ParamState& st = state(p);
      if (st.empty()) {
        st.insert("step", scalar_tensor(0.0, kFloat32));
        st.insert("exp_avg", zeros_like(p));
        st.insert("exp_avg_sq", zeros_like(p));
        if (o.amsgrad) st.insert("max_exp_avg_sq", zeros_like(p));
      }
      Tensor step_count = detail::state_entry(name(), st, "step");
      const AdamStep s = adam_step(o, detail::increment_step(step_count), decoupled_);
      // Inside a CUDA graph the kernel reads the scalars from the graph's memory, and each
      // replay counts the step and works them out again, as this call does.
      const AdamStep* device_step = cuda::Graph::scalars<AdamStep>(s, [this, g, step_count] {
        Tensor count = step_count;
        return adam_step(group_options(param_groups()[g]), detail::increment_step(count),
                         decoupled_);
      });
      Tensor& exp_avg = detail::state_entry(name(), st, "exp_avg", &p);
      Tensor& exp_avg_sq = detail::state_entry(name(), st, "exp_avg_sq", &p);
      Tensor* max_exp_avg_sq =
          o.amsgrad ? &detail::state_entry(name(), st, "max_exp_avg_sq", &p) : nullptr;
      // One pass over the parameter on its device (one launch on a GPU). The dtypes were
      // checked above (check_parameters, state_entry), so the memory is read as T directly.
      const OptimizerKernels& k = kernels<OptimizerKernels>(p.device(), name());
      detail::Writable param(p);
      const auto update = [&](auto tag) {
        using T = decltype(tag);
        const auto at = [](const Tensor& t) { return static_cast<T*>(t.raw_data()); };
        k.adam<T>()(param.data<T>(), at(grad), at(exp_avg), at(exp_avg_sq),
                    max_exp_avg_sq ? at(*max_exp_avg_sq) : nullptr, p.numel(), s, device_step,
                    found_inf());
      };
      if (p.dtype() == kFloat32) {
        update(float());
      } else {
        update(double());
      }
      param.finish();
    }
  }
}

}  // namespace nns::optim
