// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Optimizer: the base of torch.optim's optimizers. It holds parameter groups (each its
// parameters and its own options, e.g. a learning rate) and a state per parameter (a
// name -> tensor dict such as {"momentum_buffer": ...}), and updates the parameters in place
// in step(), so the tensors a module holds stay the ones optimized.
//
//   nns::optim::SGDOptions options(1e-4);
//   options.momentum = 0.9;
//   nns::optim::SGD sgd(net->parameters(), options);
//   sgd.zero_grad();
//   loss.backward();
//   sgd.step();
//
// Parameters whose grad is undefined are skipped by step() (a frozen parameter never gets
// one). The state is keyed by parameter; PyTorch's state_dict layout numbers the parameters
// in group order ("state": {index: {...}}, "param_groups": [{"params": [indices], options}]).
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "engine/nn/ordered_dict.h"
#include "engine/tensor/tensor.h"

namespace nns::optim {

// An option's value as PyTorch's param_group dict holds it: a flag, a number, a tuple of
// numbers (Adam's betas), or None (std::monostate: the "foreach" of torch 1.13's groups).
using OptionValue = std::variant<bool, double, std::vector<double>, std::monostate>;
using OptionList = std::vector<std::pair<std::string, OptionValue>>;

// The options of one parameter group. Each optimizer derives its own struct; the learning
// rate is reachable through the base so schedulers and a running session can change it, and
// every option by name for the state dict.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // The options in PyTorch's param_group key order.
  virtual OptionList items() const = 0;
  // One option by name: a KeyError for a name this optimizer does not have, a ValueError for
  // a value of the wrong kind.
  virtual void set(const std::string& name, const OptionValue& value) = 0;

  // The numbers PyTorch's LR schedulers add to a param group ("initial_lr"; OneCycleLR's
  // "max_lr", "min_lr", "max_momentum", "base_momentum"), in the order they were added. They
  // belong to the group as in PyTorch, so state_dict() lists them after the optimizer's own
  // options and load_state_dict() takes them back (a checkpoint saved by PyTorch with a
  // scheduler attached has them).
  static bool is_scheduler_entry(const std::string& name);
  const OptionList& scheduler_entries() const { return scheduler_entries_; }
  // The entry's value, or nullptr when the group has none.
  const double* scheduler_entry(const std::string& name) const;
  // Replaces the entry's value in place, or appends it.
  void set_scheduler_entry(const std::string& name, double value);
  void clear_scheduler_entries() { scheduler_entries_.clear(); }

 private:
  OptionList scheduler_entries_;
};

// An option's value as a number / a flag, or a ValueError naming the option (for set()).
double option_number(const std::string& name, const OptionValue& value);
bool option_flag(const std::string& name, const OptionValue& value);

// A group of parameters optimized with the same options. Without options, add_param_group
// gives it a copy of the optimizer's defaults.
class ParamGroup {
 public:
  ParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options = nullptr)
      : params(std::move(params)), options_(std::move(options)) {}
  ParamGroup(const ParamGroup& other)
      : params(other.params), options_(other.options_ ? other.options_->clone() : nullptr) {}
  ParamGroup& operator=(const ParamGroup& other);
  ParamGroup(ParamGroup&&) = default;
  ParamGroup& operator=(ParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() { return *options_; }
  const OptimizerOptions& options() const { return *options_; }
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }

  std::vector<Tensor> params;

 private:
  std::unique_ptr<OptimizerOptions> options_;
};

// A parameter's state: name -> tensor, in the order the optimizer created the entries.
using ParamState = nn::OrderedDict<Tensor>;

// Optimizer.state_dict() in PyTorch's layout: the parameters are numbered 0, 1, ... through
// the groups in order; "state" holds only parameters that have state.
struct OptimizerStateDict {
  struct Group {
    OptionList options;
    std::vector<int64_t> params;
  };
  std::map<int64_t, ParamState> state;
  std::vector<Group> param_groups;
};

class Optimizer {
 public:
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // Checks the group as PyTorch does (leaf tensors only, no parameter in two groups, at
  // least one parameter) and fills in missing options from the defaults; a ValueError
  // otherwise, and the optimizer is left as it was.
  void add_param_group(ParamGroup group);
  // Drops every gradient (set_to_none), or zeroes it in place, detached from any graph. The
  // default is PyTorch 2's (1.13 zeroed by default), as for Module::zero_grad.
  void zero_grad(bool set_to_none = true);
  // One update of every parameter that has a gradient.
  virtual void step() = 0;
  // A one-element float32 flag on the parameters' GPU (PyTorch's found_inf), or undefined
  // (the default) for none. While it is set, the GPU's update kernels leave every parameter
  // and its state as they were where the flag is not 0: a training step captured as a CUDA
  // graph points it at the step's non-finite check, so a step whose gradients were not finite
  // changes no weight, without the host reading the flag before the update.
  void set_found_inf(Tensor flag) { found_inf_ = std::move(flag); }

  std::vector<ParamGroup>& param_groups() { return param_groups_; }
  const std::vector<ParamGroup>& param_groups() const { return param_groups_; }
  const OptimizerOptions& defaults() const { return *defaults_; }
  // The state of a parameter (empty until a step created it).
  ParamState& state(const Tensor& param);
  const ParamState* find_state(const Tensor& param) const;

  // The state tensors are the optimizer's own (not copies), as in PyTorch.
  OptimizerStateDict state_dict() const;
  // Takes the groups' options and the state (copied, floating-point tensors converted to
  // their parameter's dtype and device, except "step"). The groups must match in number and
  // size, every state tensor but "step" must have its parameter's shape and every option
  // must be known: otherwise a ValueError/ShapeError/KeyError, and nothing changes.
  void load_state_dict(const OptimizerStateDict& state_dict);

 protected:
  // Adds each group in turn (add_param_group); defaults are the derived optimizer's options.
  Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  // The found_inf flag's memory for a device kernel, or nullptr.
  const float* found_inf() const {
    return found_inf_.defined() ? static_cast<const float*>(found_inf_.raw_data()) : nullptr;
  }

 private:
  std::vector<ParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  Tensor found_inf_;
  // Keyed by the parameter's TensorImpl: the groups hold the tensors, so the keys stay valid.
  std::unordered_map<const TensorImpl*, ParamState> state_;
};

}  // namespace nns::optim
