// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/update.h"

#include <sstream>

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/error.h"

namespace nns::optim::detail {

void check_option(const char* optimizer, const std::string& what, double value, bool valid,
                  const char* rule) {
  if (valid) return;
  std::ostringstream msg;
  msg << optimizer << ": Invalid " << what << ": " << value << " (" << rule << ")";
  throw ValueError(msg.str());
}

OptionValue foreach_value(const std::optional<bool>& foreach) {
  if (foreach) return *foreach;
  return std::monostate{};
}

std::optional<bool> foreach_from(const OptionValue& value) {
  if (std::holds_alternative<std::monostate>(value)) return std::nullopt;
  return option_flag("foreach", value);
}

bool false_only(const char* optimizer, const std::string& name, const OptionValue& value) {
  // torch 2.x saves fused=None, its default (a fused kernel only where one exists): not fused.
  if (std::holds_alternative<std::monostate>(value)) return false;
  if (option_flag(name, value)) {
    throw ValueError(std::string(optimizer) + ": " + name +
                     "=True is not supported (it needs CUDA graphs or autograd through the "
                     "optimizer step); use False");
  }
  return false;
}

void check_parameters(const char* optimizer, const std::vector<ParamGroup>& groups,
                      bool any_device) {
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<Tensor>& params = groups[g].params;
    for (size_t i = 0; i < params.size(); ++i) {
      const Tensor& p = params[i];
      if (!p.grad().defined()) continue;
      const std::string where = std::string(optimizer) + ": parameter " + std::to_string(i) +
                                " of group " + std::to_string(g);
      if (p.dtype() != kFloat32 && p.dtype() != kFloat64) {
        throw DtypeError(where + " is " + dtype_name(p.dtype()) +
                         "; this optimizer updates float32 and float64 parameters only "
                         "(convert the model with .to(float32))");
      }
      if (!p.device().is_cpu() && !any_device) {
        throw DeviceError(where + " is on " + p.device().str() +
                          "; this optimizer updates CPU tensors only");
      }
    }
  }
}

Tensor& state_entry(const char* optimizer, ParamState& state, const std::string& key,
                    const Tensor* param) {
  Tensor* entry = state.find(key);
  if (entry == nullptr) {
    throw KeyError(std::string(optimizer) + ": a parameter's state has no '" + key +
                   "' (it was made with other options, e.g. before amsgrad, momentum or "
                   "centered were turned on); start from a fresh optimizer");
  }
  if (param != nullptr && (entry->sizes() != param->sizes() || entry->dtype() != param->dtype() ||
                           entry->device() != param->device())) {
    throw ValueError(std::string(optimizer) + ": state '" + key + "' is " +
                     dtype_name(entry->dtype()) + " " + shape_str(entry->sizes()) +
                     " but its parameter is " + dtype_name(param->dtype()) + " " +
                     shape_str(param->sizes()) + "; load a state made for this parameter");
  }
  if (!entry->is_contiguous()) *entry = entry->contiguous();
  return *entry;
}

double increment_step(Tensor& step) {
  if (step.numel() != 1 || !step.device().is_cpu()) {
    throw ValueError("optimizer state 'step' must be a one-element CPU tensor, got shape " +
                     shape_str(step.sizes()));
  }
  double value = 0;
  switch (step.dtype()) {
    case kFloat32:
      value = *step.data_ptr<float>() += 1.0f;
      break;
    case kFloat64:
      value = *step.data_ptr<double>() += 1.0;
      break;
    case kInt64:
      value = static_cast<double>(*step.data_ptr<int64_t>() += 1);
      break;
    default:
      throw DtypeError("optimizer state 'step' is " + dtype_name(step.dtype()) +
                       "; it must be float32, float64 or int64");
  }
  step.bump_version();
  return value;
}

Writable::Writable(const Tensor& param) : param_(param), work_(param.contiguous()) {}

void Writable::finish() {
  if (work_.is_same(param_)) {
    param_.bump_version();
    return;
  }
  NoGradGuard no_grad;
  Tensor param = param_;
  param.copy_(work_);
}

}  // namespace nns::optim::detail
