// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The containers of torch.nn: Sequential (chains its modules), ModuleList, ModuleDict,
// ParameterList and ParameterDict (hold and register, no forward). Their members are the
// container's own children or parameters, so names ("0", "1", "relu", ...) and
// named_parameters() follow every insert and removal; the list-like ones renumber their
// keys "0".."n-1" after an insert or removal, as PyTorch's del does.
//
//   auto net = std::make_shared<nns::nn::Sequential>(std::vector<nns::nn::ModulePtr>{
//       std::make_shared<nns::nn::Linear>(4, 3), std::make_shared<nns::nn::ReLU>()});
//   net->append(std::make_shared<nns::nn::Linear>(3, 1));
//   nns::Tensor y = (*net)(x);   // Linear -> ReLU -> Linear
//   (*net)[-1];                  // the last Linear
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "engine/nn/module.h"

namespace nns::nn {

namespace detail {
// Wraps a negative index and checks it against size (IndexError naming the container).
size_t wrap_index(int64_t index, size_t size, const std::string& container, bool for_insert);
// Keys "0".."n-1" over values, in order.
template <class V>
OrderedDict<V> renumbered(const std::vector<V>& values, const std::string& description) {
  OrderedDict<V> out(description);
  for (size_t i = 0; i < values.size(); ++i) out.insert(std::to_string(i), values[i]);
  return out;
}
}  // namespace detail

// The shared list behaviour of ModuleList and Sequential; Derived is what slices give.
template <class Derived>
class ModuleSequence : public Module {
 public:
  ModuleSequence() = default;
  // Registers directly: append() returns the Derived, which is not constructed yet here (a
  // cast to it now is undefined behaviour, as UBSan's vptr check reports).
  explicit ModuleSequence(const std::vector<ModulePtr>& modules) {
    for (const ModulePtr& m : modules) push(m);
  }
  explicit ModuleSequence(const NamedList<ModulePtr>& named) {
    for (const auto& [key, module] : named) register_module(key, module);
  }

  size_t size() const { return children_dict().size(); }
  bool empty() const { return children_dict().empty(); }
  // Negative indices count from the end.
  ModulePtr operator[](int64_t index) const {
    return children_dict().items()[detail::wrap_index(index, size(), name(), false)].value();
  }
  // Python's [start:end:step] (end clamped, negative values from the end); keys are kept.
  std::shared_ptr<Derived> slice(int64_t start, int64_t end, int64_t step = 1) const {
    if (step <= 0)
      throw ValueError(name() + ".slice: step must be positive, got " + std::to_string(step));
    const int64_t n = static_cast<int64_t>(size());
    auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n); };
    NamedList<ModulePtr> picked;
    for (int64_t i = clamp(start); i < clamp(end); i += step) {
      const auto& item = children_dict().items()[static_cast<size_t>(i)];
      picked.emplace_back(item.key(), item.value());
    }
    return std::make_shared<Derived>(picked);
  }
  Derived& append(ModulePtr module) {
    push(std::move(module));
    return static_cast<Derived&>(*this);
  }
  Derived& extend(const std::vector<ModulePtr>& modules) {
    for (const ModulePtr& m : modules) append(m);
    return static_cast<Derived&>(*this);
  }
  // Inserts before position index (size() appends); keys are renumbered.
  Derived& insert(int64_t index, ModulePtr module) {
    std::vector<ModulePtr> values = children_dict().values();
    const size_t pos = detail::wrap_index(index, values.size(), name(), true);
    values.insert(values.begin() + static_cast<std::ptrdiff_t>(pos), std::move(module));
    replace_children(detail::renumbered(values, "Submodule"));
    return static_cast<Derived&>(*this);
  }
  // Removes and returns the module at index; keys are renumbered.
  ModulePtr pop(int64_t index = -1) {
    std::vector<ModulePtr> values = children_dict().values();
    const size_t pos = detail::wrap_index(index, values.size(), name(), false);
    ModulePtr out = values[pos];
    values.erase(values.begin() + static_cast<std::ptrdiff_t>(pos));
    replace_children(detail::renumbered(values, "Submodule"));
    return out;
  }
  void erase(int64_t index) { pop(index); }

  auto begin() const { return children_dict().begin(); }
  auto end() const { return children_dict().end(); }

 private:
  void push(ModulePtr module) { register_module(std::to_string(size()), std::move(module)); }
};

// Holds modules by index; has no forward (call them one by one).
class ModuleList : public ModuleSequence<ModuleList> {
 public:
  using ModuleSequence::ModuleSequence;
  ModuleList(std::initializer_list<ModulePtr> modules)
      : ModuleSequence(std::vector<ModulePtr>(modules)) {}
};

// Feeds its input through its modules in order.
class Sequential : public ModuleSequence<Sequential> {
 public:
  using ModuleSequence::ModuleSequence;
  Sequential(std::initializer_list<ModulePtr> modules)
      : ModuleSequence(std::vector<ModulePtr>(modules)) {}
  using Module::forward;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;
};

// Modules by name, in insertion order; has no forward.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  explicit ModuleDict(const NamedList<ModulePtr>& modules) { update(modules); }

  size_t size() const { return children_dict().size(); }
  bool contains(const std::string& key) const { return children_dict().contains(key); }
  ModulePtr operator[](const std::string& key) const { return children_dict()[key]; }
  // Adds or replaces (PyTorch's d[key] = module).
  void insert(const std::string& key, ModulePtr module) { register_module(key, std::move(module)); }
  ModulePtr pop(const std::string& key);
  void clear() { replace_children(OrderedDict<ModulePtr>("Submodule")); }
  void update(const NamedList<ModulePtr>& modules);
  std::vector<std::string> keys() const { return children_dict().keys(); }
  std::vector<ModulePtr> values() const { return children_dict().values(); }
  NamedList<ModulePtr> items() const;
};

// Parameters by index, registered as "0", "1", ...; has no forward.
class ParameterList : public Module {
 public:
  ParameterList() = default;
  explicit ParameterList(const std::vector<Tensor>& parameters) { extend(parameters); }

  size_t size() const { return parameters_dict().size(); }
  Tensor operator[](int64_t index) const;
  ParameterList& append(const Tensor& parameter);
  ParameterList& extend(const std::vector<Tensor>& parameters);
  // Inserts before position index; keys are renumbered.
  ParameterList& insert(int64_t index, const Tensor& parameter);
  Tensor pop(int64_t index = -1);
  std::string extra_repr() const override;
};

// Parameters by name, in insertion order; has no forward. (PyTorch adds the entries of a
// plain Python dict in sorted key order; pass them sorted to match it.)
class ParameterDict : public Module {
 public:
  ParameterDict() = default;
  explicit ParameterDict(const NamedList<Tensor>& parameters) { update(parameters); }

  size_t size() const { return parameters_dict().size(); }
  bool contains(const std::string& key) const { return parameters_dict().contains(key); }
  Tensor operator[](const std::string& key) const { return parameters_dict()[key]; }
  void insert(const std::string& key, const Tensor& parameter) {
    register_parameter(key, parameter);
  }
  Tensor pop(const std::string& key);
  void update(const NamedList<Tensor>& parameters);
  std::vector<std::string> keys() const { return parameters_dict().keys(); }
  std::vector<Tensor> values() const { return parameters_dict().values(); }
  NamedList<Tensor> items() const;
  std::string extra_repr() const override;
};

}  // namespace nns::nn
