// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/lr_scheduler.h"

#include <cmath>
#include <numbers>

#include "engine/nn/layers.h"
#include "engine/tensor/error.h"

namespace nns::optim {

namespace {

[[noreturn]] void wrong_kind(const std::string& where, const std::string& key, const char* kind) {
  throw ValueError(where + ": '" + key + "' must be " + kind);
}

// The value of an option or group entry named in an optimizer's items(), or nullptr.
const OptionValue* find_option(const OptionList& items, const std::string& name) {
  for (const auto& [key, value] : items) {
    if (key == name) return &value;
  }
  return nullptr;
}

}  // namespace

int64_t scheduler_int(const std::string& where, const std::string& key,
                      const SchedulerValue& value) {
  if (const auto* v = std::get_if<int64_t>(&value)) return *v;
  if (const auto* v = std::get_if<double>(&value);
      v != nullptr && std::floor(*v) == *v && std::abs(*v) < 9.007199254740992e15) {
    return static_cast<int64_t>(*v);
  }
  wrong_kind(where, key, "an integer");
}

double scheduler_number(const std::string& where, const std::string& key,
                        const SchedulerValue& value) {
  if (const auto* v = std::get_if<double>(&value)) return *v;
  if (const auto* v = std::get_if<int64_t>(&value)) return static_cast<double>(*v);
  wrong_kind(where, key, "a number");
}

bool scheduler_flag(const std::string& where, const std::string& key, const SchedulerValue& value) {
  if (const auto* v = std::get_if<bool>(&value)) return *v;
  wrong_kind(where, key, "true or false");
}

std::vector<double> scheduler_list(const std::string& where, const std::string& key,
                                   const SchedulerValue& value) {
  if (const auto* v = std::get_if<std::vector<double>>(&value)) return *v;
  if (std::holds_alternative<double>(value) || std::holds_alternative<int64_t>(value)) {
    return {scheduler_number(where, key, value)};
  }
  wrong_kind(where, key, "a number or a list of numbers");
}

std::string scheduler_string(const std::string& where, const std::string& key,
                             const SchedulerValue& value) {
  if (const auto* v = std::get_if<std::string>(&value)) return *v;
  wrong_kind(where, key, "a string");
}

// ---- LRScheduler ---------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {}

void LRScheduler::initial_step() {
  // PyTorch: group.setdefault('initial_lr', group['lr']); base_lrs are those.
  for (ParamGroup& group : optimizer_->param_groups()) {
    OptimizerOptions& options = group.options();
    if (options.scheduler_entry("initial_lr") == nullptr) {
      options.set_scheduler_entry("initial_lr", options.get_lr());
    }
    base_lrs_.push_back(*options.scheduler_entry("initial_lr"));
  }
  step_count_ = 0;
  step();
}

void LRScheduler::step() {
  // As in PyTorch, the counters advance before get_lr(), which may throw (OneCycleLR past
  // its last step).
  ++step_count_;
  ++last_epoch_;
  const std::vector<double> lrs = get_lr();
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  if (lrs.size() != groups.size()) {
    throw ValueError(std::string(name()) + ": the optimizer has " + std::to_string(groups.size()) +
                     " parameter groups but the scheduler was "
                     "made for " +
                     std::to_string(lrs.size()) + "; make a new scheduler after adding groups");
  }
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
  last_lr_ = lrs;
}

double LRScheduler::group_entry(size_t group, const std::string& key) const {
  const double* value = optimizer_->param_groups().at(group).options().scheduler_entry(key);
  if (value == nullptr) {
    throw KeyError(std::string(name()) + ": param_groups[" + std::to_string(group) + "] has no '" +
                   key +
                   "' (the scheduler writes it when constructed; load the optimizer's state "
                   "dict saved with this scheduler, or make a new scheduler)");
  }
  return *value;
}

SchedulerValues LRScheduler::state_dict() const {
  SchedulerValues out = own_state();
  out.emplace_back("base_lrs", base_lrs_);
  out.emplace_back("last_epoch", last_epoch_);
  out.emplace_back("verbose", false);
  out.emplace_back("_step_count", step_count_);
  out.emplace_back("_get_lr_called_within_step", false);
  out.emplace_back("_last_lr", last_lr_);
  return out;
}

void LRScheduler::load_state_dict(const SchedulerValues& state) {
  const std::string where = std::string(name()) + " load_state_dict";
  std::vector<double> base_lrs = base_lrs_;
  int64_t last_epoch = last_epoch_;
  int64_t step_count = step_count_;
  std::vector<double> last_lr = last_lr_;
  begin_load();
  for (const auto& [key, value] : state) {
    if (key == "base_lrs") {
      base_lrs = scheduler_list(where, key, value);
    } else if (key == "last_epoch") {
      last_epoch = scheduler_int(where, key, value);
    } else if (key == "_step_count") {
      step_count = scheduler_int(where, key, value);
    } else if (key == "_last_lr") {
      last_lr = scheduler_list(where, key, value);
    } else if (key == "verbose" || key == "_get_lr_called_within_step") {
      scheduler_flag(where, key, value);  // checked, and without effect here
    } else if (!load_own(key, value)) {
      SchedulerValues known = state_dict();
      std::string names;
      for (const auto& item : known) names += (names.empty() ? "" : ", ") + item.first;
      throw KeyError(where + ": unknown key '" + key + "' (a " + name() + " has " + names + ")");
    }
  }
  commit_own();
  base_lrs_ = std::move(base_lrs);
  last_epoch_ = last_epoch;
  step_count_ = step_count;
  last_lr_ = std::move(last_lr);
}

// ---- StepLR ----------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), settings_{step_size, gamma} {
  if (step_size < 1) {
    throw ValueError("StepLR: step_size must be a positive integer, got " +
                     std::to_string(step_size));
  }
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs;
  const bool decay = last_epoch() != 0 && last_epoch() % settings_.step_size == 0;
  for (const ParamGroup& group : optimizer().param_groups()) {
    const double lr = group.options().get_lr();
    lrs.push_back(decay ? lr * settings_.gamma : lr);
  }
  return lrs;
}

SchedulerValues StepLR::own_state() const {
  return {{"step_size", settings_.step_size}, {"gamma", settings_.gamma}};
}

void StepLR::begin_load() {
  pending_ = settings_;
}

bool StepLR::load_own(const std::string& key, const SchedulerValue& value) {
  if (key == "step_size") {
    pending_.step_size = scheduler_int("StepLR load_state_dict", key, value);
    if (pending_.step_size < 1) {
      throw ValueError("StepLR load_state_dict: step_size must be a positive integer, got " +
                       std::to_string(pending_.step_size));
    }
  } else if (key == "gamma") {
    pending_.gamma = scheduler_number("StepLR load_state_dict", key, value);
  } else {
    return false;
  }
  return true;
}

void StepLR::commit_own() {
  settings_ = pending_;
}

// ---- CosineAnnealingLR -----------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), settings_{T_max, eta_min} {
  if (T_max < 1) {
    throw ValueError("CosineAnnealingLR: T_max must be a positive integer, got " +
                     std::to_string(T_max));
  }
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  // PyTorch's recursive form, each expression evaluated in its order (so the values are its
  // own to the last bit). (Its branch for a scheduler constructed with last_epoch > 0 does
  // not arise: schedulers here start at -1 and resume through load_state_dict.)
  const double pi = std::numbers::pi;
  const double T_max = static_cast<double>(settings_.T_max);
  const double eta_min = settings_.eta_min;
  const int64_t epoch = last_epoch();
  std::vector<double> lrs;
  const std::vector<ParamGroup>& groups = optimizer().param_groups();
  for (size_t i = 0; i < groups.size(); ++i) {
    const double lr = groups[i].options().get_lr();
    if (epoch == 0) {
      lrs.push_back(lr);
    } else if ((epoch - 1 - settings_.T_max) % (2 * settings_.T_max) == 0) {
      lrs.push_back(lr + (base_lrs().at(i) - eta_min) * (1 - std::cos(pi / T_max)) / 2);
    } else {
      const double e = static_cast<double>(epoch);
      lrs.push_back((1 + std::cos(pi * e / T_max)) / (1 + std::cos(pi * (e - 1) / T_max)) *
                        (lr - eta_min) +
                    eta_min);
    }
  }
  return lrs;
}

SchedulerValues CosineAnnealingLR::own_state() const {
  return {{"T_max", settings_.T_max}, {"eta_min", settings_.eta_min}};
}

void CosineAnnealingLR::begin_load() {
  pending_ = settings_;
}

bool CosineAnnealingLR::load_own(const std::string& key, const SchedulerValue& value) {
  const char* where = "CosineAnnealingLR load_state_dict";
  if (key == "T_max") {
    pending_.T_max = scheduler_int(where, key, value);
    if (pending_.T_max < 1) {
      throw ValueError(std::string(where) + ": T_max must be a positive integer, got " +
                       std::to_string(pending_.T_max));
    }
  } else if (key == "eta_min") {
    pending_.eta_min = scheduler_number(where, key, value);
  } else {
    return false;
  }
  return true;
}

void CosineAnnealingLR::commit_own() {
  settings_ = pending_;
}

// ---- OneCycleLR ------------------------------------------------------------------------------

std::vector<OneCycleLR::Phase> OneCycleLR::make_phases(double pct_start, int64_t total_steps,
                                                       bool three_phase) {
  const double total = static_cast<double>(total_steps);
  if (three_phase) {
    return {{pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
            {2 * pct_start * total - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
            {total - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  }
  return {{pct_start * total - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
          {total - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o) : LRScheduler(optimizer) {
  // PyTorch's checks, in its order and words.
  if (o.total_steps == 0 && o.epochs == 0 && o.steps_per_epoch == 0) {
    throw ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)");
  }
  if (o.total_steps != 0) {
    if (o.total_steps < 0) {
      throw ValueError("Expected positive integer total_steps, but got " +
                       std::to_string(o.total_steps));
    }
    settings_.total_steps = o.total_steps;
  } else {
    if (o.epochs <= 0) {
      throw ValueError("Expected positive integer epochs, but got " + std::to_string(o.epochs));
    }
    if (o.steps_per_epoch <= 0) {
      throw ValueError("Expected positive integer steps_per_epoch, but got " +
                       std::to_string(o.steps_per_epoch));
    }
    settings_.total_steps = o.epochs * o.steps_per_epoch;
  }
  settings_.phases = make_phases(o.pct_start, settings_.total_steps, o.three_phase);
  if (!(o.pct_start >= 0 && o.pct_start <= 1)) {
    throw ValueError("Expected float between 0 and 1 pct_start, but got " +
                     nn::python_float(o.pct_start));
  }
  if (o.anneal_strategy != "cos" && o.anneal_strategy != "linear") {
    throw ValueError("anneal_strategy must by one of 'cos' or 'linear', instead got " +
                     o.anneal_strategy);
  }
  settings_.cos = o.anneal_strategy == "cos";

  std::vector<ParamGroup>& groups = optimizer.param_groups();
  // PyTorch's _format_param: one value for all groups, or one per group.
  auto per_group = [&](const char* what, const std::vector<double>& values) {
    if (values.size() == 1) return std::vector<double>(groups.size(), values[0]);
    if (values.size() != groups.size()) {
      throw ValueError("expected " + std::to_string(groups.size()) + " values for " + what +
                       ", got " + std::to_string(values.size()));
    }
    return values;
  };
  const std::vector<double> max_lrs = per_group("max_lr", o.max_lr);
  std::vector<double> max_momentums, base_momentums;
  settings_.cycle_momentum = o.cycle_momentum;
  if (o.cycle_momentum) {
    const OptionList defaults = optimizer.defaults().items();
    const bool has_momentum = find_option(defaults, "momentum") != nullptr;
    settings_.use_beta1 = find_option(defaults, "betas") != nullptr;
    if (!has_momentum && !settings_.use_beta1) {
      throw ValueError("optimizer must support momentum with `cycle_momentum` option enabled");
    }
    max_momentums = per_group("max_momentum", o.max_momentum);
    base_momentums = per_group("base_momentum", o.base_momentum);
  }
  // Everything is checked: now the groups get their entries, as PyTorch writes them.
  for (size_t i = 0; i < groups.size(); ++i) {
    OptimizerOptions& options = groups[i].options();
    const double initial_lr = max_lrs[i] / o.div_factor;
    options.set_scheduler_entry("initial_lr", initial_lr);
    options.set_scheduler_entry("max_lr", max_lrs[i]);
    options.set_scheduler_entry("min_lr", initial_lr / o.final_div_factor);
  }
  if (o.cycle_momentum) {
    for (size_t i = 0; i < groups.size(); ++i) {
      set_momentum(i, max_momentums[i]);
      groups[i].options().set_scheduler_entry("max_momentum", max_momentums[i]);
      groups[i].options().set_scheduler_entry("base_momentum", base_momentums[i]);
    }
  }
  initial_step();
}

void OneCycleLR::set_momentum(size_t group, double momentum) {
  OptimizerOptions& options = optimizer().param_groups().at(group).options();
  if (!settings_.use_beta1) {
    options.set("momentum", momentum);
    return;
  }
  // group['betas'] = (momentum, *group['betas'][1:])
  const OptionList items = options.items();
  std::vector<double> betas = std::get<std::vector<double>>(*find_option(items, "betas"));
  betas[0] = momentum;
  options.set("betas", betas);
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (settings_.cos) {
    const double cos_out = std::cos(std::numbers::pi * pct) + 1;
    return end + (start - end) / 2.0 * cos_out;
  }
  return (end - start) * pct + start;
}

std::vector<double> OneCycleLR::get_lr() {
  const int64_t step_num = last_epoch();
  if (step_num > settings_.total_steps) {
    throw ValueError("Tried to step " + std::to_string(step_num + 1) +
                     " times. The specified number of total steps is " +
                     std::to_string(settings_.total_steps));
  }
  const double step = static_cast<double>(step_num);
  std::vector<double> lrs;
  for (size_t g = 0; g < optimizer().param_groups().size(); ++g) {
    double start_step = 0;
    double computed_lr = 0, computed_momentum = 0;
    for (size_t i = 0; i < settings_.phases.size(); ++i) {
      const Phase& phase = settings_.phases[i];
      if (step <= phase.end_step || i + 1 == settings_.phases.size()) {
        const double pct = (step - start_step) / (phase.end_step - start_step);
        // Read in PyTorch's order, so a missing entry is named as PyTorch would name it.
        const double start_lr = group_entry(g, phase.start_lr);
        computed_lr = anneal(start_lr, group_entry(g, phase.end_lr), pct);
        if (settings_.cycle_momentum) {
          const double start_momentum = group_entry(g, phase.start_momentum);
          computed_momentum = anneal(start_momentum, group_entry(g, phase.end_momentum), pct);
        }
        break;
      }
      start_step = phase.end_step;
    }
    lrs.push_back(computed_lr);
    if (settings_.cycle_momentum) set_momentum(g, computed_momentum);
  }
  return lrs;
}

SchedulerValues OneCycleLR::own_state() const {
  // PyTorch's _schedule_phases (dicts naming group entries) and anneal_func (a bound method)
  // are not plain values: the phases' end steps and the strategy's name say the same.
  std::vector<double> end_steps;
  for (const Phase& phase : settings_.phases) end_steps.push_back(phase.end_step);
  SchedulerValues out = {{"total_steps", settings_.total_steps},
                         {"_schedule_phases", end_steps},
                         {"anneal_func", std::string(settings_.cos ? "cos" : "linear")},
                         {"cycle_momentum", settings_.cycle_momentum}};
  if (settings_.cycle_momentum) out.emplace_back("use_beta1", settings_.use_beta1);
  return out;
}

void OneCycleLR::begin_load() {
  pending_ = settings_;
}

bool OneCycleLR::load_own(const std::string& key, const SchedulerValue& value) {
  const char* where = "OneCycleLR load_state_dict";
  if (key == "total_steps") {
    pending_.total_steps = scheduler_int(where, key, value);
  } else if (key == "_schedule_phases") {
    const std::vector<double> end_steps = scheduler_list(where, key, value);
    if (end_steps.size() != 2 && end_steps.size() != 3) {
      throw ValueError(std::string(where) +
                       ": '_schedule_phases' must list the end steps of 2 or 3 phases, got " +
                       std::to_string(end_steps.size()));
    }
    // The phases' entry names depend only on their number; the end steps are the saved ones.
    pending_.phases = make_phases(0.0, 0, end_steps.size() == 3);
    for (size_t i = 0; i < end_steps.size(); ++i) pending_.phases[i].end_step = end_steps[i];
  } else if (key == "anneal_func") {
    const std::string strategy = scheduler_string(where, key, value);
    if (strategy != "cos" && strategy != "linear") {
      throw ValueError(std::string(where) + ": 'anneal_func' must be 'cos' or 'linear', got '" +
                       strategy + "'");
    }
    pending_.cos = strategy == "cos";
  } else if (key == "cycle_momentum") {
    pending_.cycle_momentum = scheduler_flag(where, key, value);
  } else if (key == "use_beta1") {
    pending_.use_beta1 = scheduler_flag(where, key, value);
  } else {
    return false;
  }
  return true;
}

void OneCycleLR::commit_own() {
  settings_ = pending_;
}

}  // namespace nns::optim
