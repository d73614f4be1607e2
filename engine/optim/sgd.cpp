// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/sgd.h"

#include <cmath>
#include <sstream>

#include "engine/autograd/grad_mode.h"
#include "engine/backend/cuda_graph.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/optim/update.h"
#include "engine/tensor/error.h"

namespace nns::optim {

namespace {

// PyTorch's checks and words (torch/optim/sgd.py).
void check_options(const SGDOptions& o) {
  auto fail = [](const char* what, double value) {
    std::ostringstream msg;
    msg << "SGD: Invalid " << what << ": " << value << " (it must not be negative)";
    throw ValueError(msg.str());
  };
  if (o.lr < 0.0) fail("learning rate", o.lr);
  if (o.momentum < 0.0) fail("momentum value", o.momentum);
  if (o.weight_decay < 0.0) fail("weight_decay value", o.weight_decay);
  if (o.nesterov && (o.momentum <= 0.0 || o.dampening != 0.0)) {
    std::ostringstream msg;
    msg << "SGD: Nesterov momentum requires a momentum and zero dampening (got momentum="
        << o.momentum << ", dampening=" << o.dampening << ")";
    throw ValueError(msg.str());
  }
}

const SGDOptions& sgd_options(const ParamGroup& group) {
  const auto* options = dynamic_cast<const SGDOptions*>(&group.options());
  if (options == nullptr) {
    throw ValueError(
        "SGD: a parameter group has options of another optimizer; give it "
        "SGDOptions or none (the defaults)");
  }
  return *options;
}

std::vector<ParamGroup> checked(std::vector<ParamGroup> groups) {
  for (const ParamGroup& group : groups) {
    if (group.has_options()) check_options(sgd_options(group));
  }
  return groups;
}

const SGDOptions& checked(const SGDOptions& defaults) {
  check_options(defaults);
  return defaults;
}

// The momentum update of a step after the first, in one pass over memory instead of three
// tensor ops (buf.mul_(momentum).add_(grad, 1 - dampening), then param.add_(buf, -lr)), each
// of which reads and writes the whole parameter. It rounds as those ops' kernels do: where the
// target has FMA (__FMA__) the compiler contracts their `x + alpha * y` into a multiply-add,
// as ATen's vectorized kernels compute it; without FMA the product and the sum round apart
// (and nothing can be contracted here either).
template <class T>
void momentum_kernel(T* param, const T* grad, T* buf, int64_t n, double momentum,
                     double one_minus_dampening, double lr) {
  const T m = static_cast<T>(momentum);
  const T a = static_cast<T>(one_minus_dampening);
  const T neg_lr = static_cast<T>(-lr);
  for (int64_t i = 0; i < n; ++i) {
#ifdef __FMA__
    const T b = std::fma(grad[i], a, buf[i] * m);
    param[i] = std::fma(b, neg_lr, param[i]);
#else
    const T b = buf[i] * m + grad[i] * a;
    param[i] = param[i] + b * neg_lr;
#endif
    buf[i] = b;
  }
}

// Whether momentum_kernel can take the step: plain momentum (no decay, Nesterov or maximize)
// on CPU float tensors whose gradient and buffer are contiguous and shaped like the parameter.
bool fusable(const SGDOptions& o, const Tensor& p, const Tensor& grad, const Tensor& buf) {
  return !o.maximize && o.weight_decay == 0.0 && !o.nesterov && p.device().is_cpu() &&
         (p.dtype() == kFloat32 || p.dtype() == kFloat64) && grad.dtype() == p.dtype() &&
         buf.dtype() == p.dtype() && grad.device() == p.device() && buf.device() == p.device() &&
         grad.sizes() == p.sizes() && buf.sizes() == p.sizes() && grad.is_contiguous() &&
         buf.is_contiguous();
}

SgdStep sgd_step(const SGDOptions& o) {
  return SgdStep{o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize};
}

}  // namespace

// A GPU parameter's step as one kernel (false where it is not one: a dtype the kernel lacks, or
// momentum's first step, which makes the buffer from the gradient). Inside a CUDA graph the
// kernel reads the scalars from the graph's memory, refilled from the group before each replay.
bool SGD::step_on_device(const Tensor& p, const Tensor& grad, size_t group, const SGDOptions& o) {
  if ((p.dtype() != kFloat32 && p.dtype() != kFloat64) || grad.dtype() != p.dtype()) return false;
  Tensor* buf = nullptr;
  if (o.momentum != 0.0) {
    ParamState& st = state(p);
    if (st.find("momentum_buffer") == nullptr) return false;
    buf = &detail::state_entry("SGD", st, "momentum_buffer", &p);
  }
  const Tensor g = grad.contiguous();
  const SgdStep s = sgd_step(o);
  const SgdStep* device_step = cuda::Graph::scalars<SgdStep>(
      s, [this, group] { return sgd_step(sgd_options(param_groups()[group])); });
  const OptimizerKernels& k = kernels<OptimizerKernels>(p.device(), "SGD");
  detail::Writable param(p);
  const auto update = [&](auto tag) {
    using T = decltype(tag);
    k.sgd<T>()(param.data<T>(), static_cast<const T*>(g.raw_data()),
               buf != nullptr ? static_cast<T*>(buf->raw_data()) : nullptr, p.numel(), s,
               device_step, found_inf());
  };
  if (p.dtype() == kFloat32) {
    update(float());
  } else {
    update(double());
  }
  if (buf != nullptr) buf->bump_version();
  param.finish();
  return true;
}

OptionList SGDOptions::items() const {
  return {{"lr", lr},
          {"momentum", momentum},
          {"dampening", dampening},
          {"weight_decay", weight_decay},
          {"nesterov", nesterov},
          {"maximize", maximize},
          {"foreach", detail::foreach_value(foreach)},
          {"differentiable", differentiable}};
}

void SGDOptions::set(const std::string& name, const OptionValue& value) {
  if (name == "lr") {
    lr = option_number(name, value);
  } else if (name == "momentum") {
    momentum = option_number(name, value);
  } else if (name == "dampening") {
    dampening = option_number(name, value);
  } else if (name == "weight_decay") {
    weight_decay = option_number(name, value);
  } else if (name == "nesterov") {
    nesterov = option_flag(name, value);
  } else if (name == "maximize") {
    maximize = option_flag(name, value);
  } else if (name == "foreach") {
    foreach
      = detail::foreach_from(value);
  } else if (name == "differentiable") {
    differentiable = detail::false_only("SGD", name, value);
  } else if (name == "fused") {
    detail::false_only("SGD", name, value);  // torch 2.x's key
  } else {
    throw KeyError("SGD has no option '" + name +
                   "' (it has lr, momentum, dampening, weight_decay, nesterov, maximize, "
                   "foreach, differentiable, fused)");
  }
}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults)
    : Optimizer(checked(std::move(groups)), checked(defaults).clone()) {}

void SGD::step() {
  // Groups added or edited after construction are checked before anything changes.
  for (const ParamGroup& group : param_groups()) check_options(sgd_options(group));
  NoGradGuard no_grad;
  for (size_t g = 0; g < param_groups().size(); ++g) {
    const SGDOptions& o = sgd_options(param_groups()[g]);
    for (const Tensor& p : param_groups()[g].params) {
      Tensor d_p = p.grad();
      if (!d_p.defined()) continue;
      if (!p.device().is_cpu() && step_on_device(p, d_p, g, o)) continue;
      if (o.maximize) d_p = d_p.neg();
      if (o.weight_decay != 0.0) d_p = d_p.add(p, o.weight_decay);
      if (o.momentum != 0.0) {
        ParamState& st = state(p);
        Tensor* buf = st.find("momentum_buffer");
        if (buf == nullptr) {
          buf = &st.insert("momentum_buffer", d_p.clone());
        } else if (fusable(o, p, d_p, *buf)) {
          detail::Writable param(p);
          if (p.dtype() == kFloat32) {
            momentum_kernel(param.data<float>(), d_p.data_ptr<float>(), buf->data_ptr<float>(),
                            p.numel(), o.momentum, 1.0 - o.dampening, o.lr);
          } else {
            momentum_kernel(param.data<double>(), d_p.data_ptr<double>(), buf->data_ptr<double>(),
                            p.numel(), o.momentum, 1.0 - o.dampening, o.lr);
          }
          buf->bump_version();
          param.finish();
          continue;
        } else {
          buf->mul_(o.momentum).add_(d_p, 1.0 - o.dampening);
        }
        d_p = o.nesterov ? d_p.add(*buf, o.momentum) : *buf;
      }
      Tensor param = p;
      param.add_(d_p, -o.lr);
    }
  }
}

}  // namespace nns::optim
