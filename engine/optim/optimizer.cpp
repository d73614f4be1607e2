// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/optimizer.h"

#include <string>
#include <unordered_set>

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/error.h"

namespace nns::optim {

double option_number(const std::string& name, const OptionValue& value) {
  if (const double* v = std::get_if<double>(&value)) return *v;
  throw ValueError("optimizer option '" + name + "' must be a number");
}

bool option_flag(const std::string& name, const OptionValue& value) {
  if (const bool* v = std::get_if<bool>(&value)) return *v;
  throw ValueError("optimizer option '" + name + "' must be true or false");
}

bool OptimizerOptions::is_scheduler_entry(const std::string& name) {
  return name == "initial_lr" || name == "max_lr" || name == "min_lr" || name == "max_momentum" ||
         name == "base_momentum";
}

const double* OptimizerOptions::scheduler_entry(const std::string& name) const {
  for (const auto& [key, value] : scheduler_entries_) {
    if (key == name) return std::get_if<double>(&value);
  }
  return nullptr;
}

void OptimizerOptions::set_scheduler_entry(const std::string& name, double value) {
  for (auto& [key, existing] : scheduler_entries_) {
    if (key == name) {
      existing = value;
      return;
    }
  }
  scheduler_entries_.emplace_back(name, value);
}

ParamGroup& ParamGroup::operator=(const ParamGroup& other) {
  if (this != &other) {
    params = other.params;
    options_ = other.options_ ? other.options_->clone() : nullptr;
  }
  return *this;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  if (groups.empty()) throw ValueError("optimizer got an empty parameter list");
  for (ParamGroup& group : groups) add_param_group(std::move(group));
}

void Optimizer::add_param_group(ParamGroup group) {
  std::unordered_set<const TensorImpl*> seen;
  for (const Tensor& p : group.params) {
    if (!p.defined()) throw ValueError("optimizer: got an undefined tensor as a parameter");
    if (!p.is_leaf()) throw ValueError("can't optimize a non-leaf Tensor");
    if (!seen.insert(p.impl()).second) {
      throw ValueError(
          "optimizer: a parameter group lists the same parameter twice; list each parameter "
          "once");
    }
  }
  for (const ParamGroup& existing : param_groups_) {
    for (const Tensor& p : existing.params) {
      if (seen.count(p.impl()) != 0) {
        throw ValueError("some parameters appear in more than one parameter group");
      }
    }
  }
  if (group.params.empty()) throw ValueError("optimizer got an empty parameter list");
  if (!group.has_options()) group.set_options(defaults_->clone());
  param_groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  for (const ParamGroup& group : param_groups_) {
    for (const Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
        continue;
      }
      // A gradient made with create_graph is cut from its graph before it is zeroed.
      if (g.grad_fn() != nullptr) {
        g = g.detach();
        p.set_grad(g);
      }
      NoGradGuard no_grad;
      g.zero_();
    }
  }
}

ParamState& Optimizer::state(const Tensor& param) {
  auto it = state_.find(param.impl());
  if (it == state_.end()) it = state_.emplace(param.impl(), ParamState("State")).first;
  return it->second;
}

const ParamState* Optimizer::find_state(const Tensor& param) const {
  auto it = state_.find(param.impl());
  return it == state_.end() ? nullptr : &it->second;
}

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict out;
  int64_t index = 0;
  for (const ParamGroup& group : param_groups_) {
    OptimizerStateDict::Group saved{group.options().items(), {}};
    const OptionList& entries = group.options().scheduler_entries();
    saved.options.insert(saved.options.end(), entries.begin(), entries.end());
    for (const Tensor& p : group.params) {
      if (const ParamState* st = find_state(p); st != nullptr && !st->empty()) {
        out.state.emplace(index, *st);
      }
      saved.params.push_back(index++);
    }
    out.param_groups.push_back(std::move(saved));
  }
  return out;
}

void Optimizer::load_state_dict(const OptimizerStateDict& state_dict) {
  if (state_dict.param_groups.size() != param_groups_.size()) {
    throw ValueError(
        "optimizer load_state_dict: loaded state dict has a different number of "
        "parameter groups (" +
        std::to_string(state_dict.param_groups.size()) + " vs " +
        std::to_string(param_groups_.size()) + ")");
  }
  // Everything is built aside first, so a bad entry leaves the optimizer as it was.
  std::map<int64_t, Tensor> param_of;
  std::vector<std::unique_ptr<OptimizerOptions>> options;
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    const auto& saved = state_dict.param_groups[g];
    const ParamGroup& group = param_groups_[g];
    if (saved.params.size() != group.params.size()) {
      throw ValueError(
          "optimizer load_state_dict: loaded state dict contains a parameter group "
          "that doesn't match the size of optimizer's group (group " +
          std::to_string(g) + ": " + std::to_string(saved.params.size()) + " vs " +
          std::to_string(group.params.size()) + " parameters)");
    }
    for (size_t i = 0; i < saved.params.size(); ++i) {
      if (!param_of.emplace(saved.params[i], group.params[i]).second) {
        throw ValueError("optimizer load_state_dict: parameter index " +
                         std::to_string(saved.params[i]) + " appears twice in param_groups");
      }
    }
    options.push_back(group.options().clone());
    // As in PyTorch, the loaded group replaces the scheduler's entries too.
    options.back()->clear_scheduler_entries();
    for (const auto& [name, value] : saved.options) {
      if (OptimizerOptions::is_scheduler_entry(name)) {
        options.back()->set_scheduler_entry(name, option_number(name, value));
      } else {
        options.back()->set(name, value);
      }
    }
  }
  std::unordered_map<const TensorImpl*, ParamState> state;
  for (const auto& [index, saved] : state_dict.state) {
    auto it = param_of.find(index);
    if (it == param_of.end()) {
      throw KeyError("optimizer load_state_dict: state for parameter " + std::to_string(index) +
                     ", which no parameter group lists");
    }
    const Tensor& p = it->second;
    ParamState& st = state.emplace(p.impl(), ParamState("State")).first->second;
    for (const auto& item : saved) {
      const std::string& key = item.key();
      Tensor v = item.value().detach().clone();
      if (key != "step") {
        if (v.sizes() != p.sizes()) {
          throw ShapeError("optimizer load_state_dict: state '" + key + "' of parameter " +
                           std::to_string(index) + " has shape " + shape_str(v.sizes()) +
                           ", but the parameter has shape " + shape_str(p.sizes()));
        }
        if (p.is_floating_point()) v = v.to(p.dtype());
        v = v.to(p.device());
      }
      st.insert(key, v);
    }
  }
  for (size_t g = 0; g < param_groups_.size(); ++g) {
    param_groups_[g].set_options(std::move(options[g]));
  }
  state_ = std::move(state);
}

}  // namespace nns::optim
