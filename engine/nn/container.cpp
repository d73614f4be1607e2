// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/container.h"

#include <algorithm>

namespace nns::nn {

namespace detail {

size_t wrap_index(int64_t index, size_t size, const std::string& container, bool for_insert) {
  const int64_t n = static_cast<int64_t>(size);
  const int64_t limit = for_insert ? n : n - 1;
  const int64_t wrapped = index < 0 ? index + n : index;
  if (wrapped < 0 || wrapped > limit) {
    throw IndexError(container + ": index " + std::to_string(index) + " is out of range for " +
                     std::to_string(size) + " entries (valid: " + std::to_string(-n) + " to " +
                     std::to_string(limit) + ")");
  }
  return static_cast<size_t>(wrapped);
}

}  // namespace detail

namespace {
// "torch.FloatTensor", as PyTorch's Tensor.type() names a tensor's type.
std::string legacy_type_name(const Tensor& t) {
  std::string base;
  switch (t.dtype()) {
    case kFloat32:
      base = "FloatTensor";
      break;
    case kFloat64:
      base = "DoubleTensor";
      break;
    case kFloat16:
      base = "HalfTensor";
      break;
    case kBFloat16:
      base = "BFloat16Tensor";
      break;
    case kInt64:
      base = "LongTensor";
      break;
    case kBool:
      base = "BoolTensor";
      break;
  }
  return t.device().is_cuda() ? "torch.cuda." + base : "torch." + base;
}

std::string size_text(const Tensor& t) {
  std::string out;
  for (size_t i = 0; i < t.sizes().size(); ++i) {
    if (i) out += "x";
    out += std::to_string(t.sizes()[i]);
  }
  return out;
}

std::string device_text(const Tensor& t) {
  return t.device().is_cuda() ? " (GPU " + std::to_string(t.device().index) + ")" : "";
}
}  // namespace

std::vector<Tensor> Sequential::forward(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> x = inputs;
  for (const auto& item : children_dict()) {
    if (item.value()) x = (*item.value())(x);
  }
  return x;
}

ModulePtr ModuleDict::pop(const std::string& key) {
  OrderedDict<ModulePtr> rest = children_dict();
  ModulePtr out = rest.pop(key);
  replace_children(std::move(rest));
  return out;
}

void ModuleDict::update(const NamedList<ModulePtr>& modules) {
  for (const auto& [key, module] : modules) register_module(key, module);
}

NamedList<ModulePtr> ModuleDict::items() const {
  NamedList<ModulePtr> out;
  for (const auto& item : children_dict()) out.emplace_back(item.key(), item.value());
  return out;
}

Tensor ParameterList::operator[](int64_t index) const {
  return parameters_dict().items()[detail::wrap_index(index, size(), name(), false)].value();
}

ParameterList& ParameterList::append(const Tensor& parameter) {
  register_parameter(std::to_string(size()), parameter);
  return *this;
}

ParameterList& ParameterList::extend(const std::vector<Tensor>& parameters) {
  for (const Tensor& p : parameters) append(p);
  return *this;
}

ParameterList& ParameterList::insert(int64_t index, const Tensor& parameter) {
  if (parameter.defined() && !parameter.is_leaf()) {
    throw ValueError(name() + ".insert: a parameter must be a leaf tensor");
  }
  std::vector<Tensor> values = parameters_dict().values();
  const size_t pos = detail::wrap_index(index, values.size(), name(), true);
  values.insert(values.begin() + static_cast<std::ptrdiff_t>(pos), parameter);
  replace_parameters(detail::renumbered(values, "Parameter"));
  return *this;
}

Tensor ParameterList::pop(int64_t index) {
  std::vector<Tensor> values = parameters_dict().values();
  const size_t pos = detail::wrap_index(index, values.size(), name(), false);
  Tensor out = values[pos];
  values.erase(values.begin() + static_cast<std::ptrdiff_t>(pos));
  replace_parameters(detail::renumbered(values, "Parameter"));
  return out;
}

// PyTorch 1.13's ParameterList.extra_repr.
std::string ParameterList::extra_repr() const {
  std::string out;
  for (const auto& item : parameters_dict()) {
    if (!item.value().defined()) continue;
    if (!out.empty()) out += "\n";
    out += "  (" + item.key() + "): Parameter containing: [" + dtype_name(item.value().dtype()) +
           " of size " + size_text(item.value()) + device_text(item.value()) + "]";
  }
  return out;
}

Tensor ParameterDict::pop(const std::string& key) {
  OrderedDict<Tensor> rest = parameters_dict();
  Tensor out = rest.pop(key);
  replace_parameters(std::move(rest));
  return out;
}

void ParameterDict::update(const NamedList<Tensor>& parameters) {
  for (const auto& [key, p] : parameters) register_parameter(key, p);
}

NamedList<Tensor> ParameterDict::items() const {
  NamedList<Tensor> out;
  for (const auto& item : parameters_dict()) out.emplace_back(item.key(), item.value());
  return out;
}

// PyTorch 1.13's ParameterDict.extra_repr.
std::string ParameterDict::extra_repr() const {
  std::string out;
  for (const auto& item : parameters_dict()) {
    if (!item.value().defined()) continue;
    if (!out.empty()) out += "\n";
    out += "  (" + item.key() + "): Parameter containing: [" + legacy_type_name(item.value()) +
           " of size " + size_text(item.value()) + device_text(item.value()) + "]";
  }
  return out;
}

}  // namespace nns::nn
