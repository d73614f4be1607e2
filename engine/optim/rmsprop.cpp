// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/rmsprop.h"

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

// PyTorch's checks and words (torch/optim/rmsprop.py).
void check_options(const RMSpropOptions& o) {
  detail::check_not_negative("RMSprop", "learning rate", o.lr);
  detail::check_not_negative("RMSprop", "epsilon value", o.eps);
  detail::check_not_negative("RMSprop", "momentum value", o.momentum);
  detail::check_not_negative("RMSprop", "weight_decay value", o.weight_decay);
  detail::check_not_negative("RMSprop", "alpha value", o.alpha);
}

const RMSpropOptions& rmsprop_options(const ParamGroup& group) {
  const auto* options = dynamic_cast<const RMSpropOptions*>(&group.options());
  if (options == nullptr) {
    throw ValueError(
        "RMSprop: a parameter group has options of another optimizer; give it "
        "RMSpropOptions or none (the defaults)");
  }
  return *options;
}

std::vector<ParamGroup> checked(std::vector<ParamGroup> groups) {
  for (const ParamGroup& group : groups) {
    if (group.has_options()) check_options(rmsprop_options(group));
  }
  return groups;
}

const RMSpropOptions& checked(const RMSpropOptions& defaults) {
  check_options(defaults);
  return defaults;
}

// One pass over a parameter, rounding as PyTorch's CPU kernels do (see adam.cpp's kernel:
// add(other, alpha) and addcmul are fused multiply-adds there; addcdiv divides after the
// product, so it is not).
template <class T>
void rmsprop_kernel(T* param, const T* grad, T* square_avg, T* momentum_buffer, T* grad_avg,
                    int64_t n, const RMSpropOptions& o) {
  const T alpha = static_cast<T>(o.alpha);
  const T one_minus_alpha = static_cast<T>(1.0 - o.alpha);
  const T weight_decay = static_cast<T>(o.weight_decay);
  const T eps = static_cast<T>(o.eps);
  const T momentum = static_cast<T>(o.momentum);
  const T neg_lr = static_cast<T>(-o.lr);
  const bool decay = o.weight_decay != 0.0;
  for (int64_t i = 0; i < n; ++i) {
    T g = o.maximize ? -grad[i] : grad[i];
    const T p = param[i];
    if (decay) g = std::fma(p, weight_decay, g);
    const T v = std::fma(one_minus_alpha * g, g, square_avg[i] * alpha);
    square_avg[i] = v;
    T avg;
    if (grad_avg != nullptr) {
      const T a = std::fma(g, one_minus_alpha, grad_avg[i] * alpha);
      grad_avg[i] = a;
      avg = std::sqrt(std::fma(-a, a, v));  // square_avg.addcmul(grad_avg, grad_avg, value=-1)
    } else {
      avg = std::sqrt(v);
    }
    avg += eps;
    if (momentum_buffer != nullptr) {
      const T buf = momentum_buffer[i] * momentum + g / avg;
      momentum_buffer[i] = buf;
      param[i] = std::fma(buf, neg_lr, p);
    } else {
      param[i] = p + neg_lr * g / avg;
    }
  }
}

// The scalars of a step on a GPU.
RmspropStep rmsprop_step(const RMSpropOptions& o) {
  return RmspropStep{o.lr, o.alpha, o.eps, o.weight_decay, o.momentum, o.maximize};
}

}  // namespace

OptionList RMSpropOptions::items() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"alpha", alpha},
          {"eps", eps},
          {"centered", centered},
          {"weight_decay", weight_decay},
          {"foreach", detail::foreach_value(foreach)},
          {"maximize", maximize},
          {"differentiable", differentiable}};
}

void RMSpropOptions::set(const std::string& name, const OptionValue& value) {
  if (name == "lr") {
    lr = option_number(name, value);
  } else if (name == "momentum") {
    momentum = option_number(name, value);
  } else if (name == "alpha") {
    alpha = option_number(name, value);
  } else if (name == "eps") {
    eps = option_number(name, value);
  } else if (name == "centered") {
    centered = option_flag(name, value);
  } else if (name == "weight_decay") {
    weight_decay = option_number(name, value);
  } else if (name == "foreach") {
    foreach
      = detail::foreach_from(value);
  } else if (name == "maximize") {
    maximize = option_flag(name, value);
  } else if (name == "differentiable") {
    differentiable = detail::false_only("RMSprop", name, value);
  } else if (name == "capturable") {
    detail::false_only("RMSprop", name, value);  // torch 2.x's key
  } else {
    throw KeyError("RMSprop has no option '" + name +
                   "' (it has lr, momentum, alpha, eps, centered, weight_decay, foreach, "
                   "maximize, differentiable, capturable)");
  }
}

RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& defaults)
    : Optimizer(checked(std::move(groups)), checked(defaults).clone()) {}

void RMSprop::step() {
  // Everything is checked before any parameter changes.
  for (const ParamGroup& group : param_groups()) check_options(rmsprop_options(group));
  detail::check_parameters("RMSprop", param_groups(), /*any_device=*/true);
  NoGradGuard no_grad;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const RMSpropOptions& o = rmsprop_options(param_groups()[g]);
    for (const Tensor& p : param_groups()[g].params) {
      const Tensor grad = p.grad().defined() ? p.grad().contiguous() : Tensor();
      if (!grad.defined()) continue;
      ParamState& st = state(p);
      if (st.empty()) {
        st.insert("step", scalar_tensor(0.0, kInt64));
        st.insert("square_avg", zeros_like(p));
        if (o.momentum > 0.0) st.insert("momentum_buffer", zeros_like(p));
        if (o.centered) st.insert("grad_avg", zeros_like(p));
      }
      Tensor step_count = detail::state_entry("RMSprop", st, "step");
      detail::increment_step(step_count);
      Tensor& square_avg = detail::state_entry("RMSprop", st, "square_avg", &p);
      Tensor* momentum_buffer =
          o.momentum > 0.0 ? &detail::state_entry("RMSprop", st, "momentum_buffer", &p) : nullptr;
      Tensor* grad_avg = o.centered ? &detail::state_entry("RMSprop", st, "grad_avg", &p) : nullptr;
      if (!p.device().is_cpu()) {
        // One kernel on the GPU; inside a CUDA graph it reads the scalars from the graph's
        // memory, and each replay counts the step as this call does.
        const RmspropStep s = rmsprop_step(o);
        const RmspropStep* device_step =
            cuda::Graph::scalars<RmspropStep>(s, [this, g, step_count] {
              Tensor count = step_count;
              detail::increment_step(count);
              return rmsprop_step(rmsprop_options(param_groups()[g]));
            });
        const OptimizerKernels& k = kernels<OptimizerKernels>(p.device(), "RMSprop");
        detail::Writable param(p);
        const auto update = [&](auto tag) {
          using T = decltype(tag);
          const auto at = [](const Tensor* t) {
            return t != nullptr ? static_cast<T*>(t->raw_data()) : nullptr;
          };
          k.rmsprop<T>()(param.data<T>(), at(&grad), at(&square_avg), at(momentum_buffer),
                         at(grad_avg), p.numel(), s, device_step, found_inf());
        };
        if (p.dtype() == kFloat32) {
          update(float());
        } else {
          update(double());
        }
        param.finish();
        continue;
      }
      detail::Writable param(p);
      if (p.dtype() == kFloat32) {
        rmsprop_kernel(param.data<float>(), grad.data_ptr<float>(), square_avg.data_ptr<float>(),
                       momentum_buffer ? momentum_buffer->data_ptr<float>() : nullptr,
                       grad_avg ? grad_avg->data_ptr<float>() : nullptr, p.numel(), o);
      } else {
        rmsprop_kernel(param.data<double>(), grad.data_ptr<double>(), square_avg.data_ptr<double>(),
                       momentum_buffer ? momentum_buffer->data_ptr<double>() : nullptr,
                       grad_avg ? grad_avg->data_ptr<double>() : nullptr, p.numel(), o);
      }
      param.finish();
    }
  }
}

}  // namespace nns::optim
