// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/optim/factory.h"

#include <algorithm>
#include <cctype>

#include "engine/optim/adam.h"
#include "engine/optim/rmsprop.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/error.h"

namespace nns::optim {

namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The PyTorch spelling of `name` among `known` (case-insensitive), or a KeyError.
const std::string& canonical(const std::string& kind, const std::string& name,
                             const std::vector<std::string>& known) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  for (const std::string& k : known) {
    if (lower(k) == lower(name)) return k;
  }
  throw KeyError("unknown " + kind + " '" + name + "' (known: " + join(known) + ")");
}

template <class Options>
std::unique_ptr<OptimizerOptions> with(const OptionList& options) {
  auto out = std::make_unique<Options>();
  for (const auto& [key, value] : options) out->set(key, value);
  return out;
}

}  // namespace

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = {"SGD", "Adam", "AdamW", "RMSprop"};
  return names;
}

const std::vector<std::string>& scheduler_names() {
  static const std::vector<std::string> names = {"StepLR", "CosineAnnealingLR", "OneCycleLR"};
  return names;
}

const std::string& canonical_optimizer_name(const std::string& name) {
  return canonical("optimizer", name, optimizer_names());
}

std::unique_ptr<OptimizerOptions> make_optimizer_options(const std::string& name,
                                                         const OptionList& options) {
  const std::string& n = canonical_optimizer_name(name);
  if (n == "SGD") {
    const bool has_lr = std::any_of(options.begin(), options.end(),
                                    [](const auto& item) { return item.first == "lr"; });
    if (!has_lr) {
      throw ValueError(
          "SGD needs a learning rate: give the option 'lr' (PyTorch's SGD has no "
          "default for it)");
    }
    return with<SGDOptions>(options);
  }
  if (n == "Adam") return with<AdamOptions>(options);
  if (n == "AdamW") return with<AdamWOptions>(options);
  return with<RMSpropOptions>(options);
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const OptionList& options) {
  const std::unique_ptr<OptimizerOptions> defaults = make_optimizer_options(name, options);
  if (const auto* o = dynamic_cast<const SGDOptions*>(defaults.get())) {
    return std::make_unique<SGD>(std::move(groups), *o);
  }
  if (const auto* o = dynamic_cast<const AdamWOptions*>(defaults.get())) {
    return std::make_unique<AdamW>(std::move(groups), *o);
  }
  if (const auto* o = dynamic_cast<const AdamOptions*>(defaults.get())) {
    return std::make_unique<Adam>(std::move(groups), *o);
  }
  return std::make_unique<RMSprop>(std::move(groups),
                                   dynamic_cast<const RMSpropOptions&>(*defaults));
}

std::unique_ptr<LRScheduler> make_scheduler(const std::string& name, Optimizer& optimizer,
                                            const SchedulerValues& options) {
  const std::string& n = canonical("LR scheduler", name, scheduler_names());
  auto unknown = [&](const std::string& key, const char* known) {
    throw KeyError(n + " has no option '" + key + "' (it has " + known + ")");
  };
  auto required = [&](bool given, const char* key) {
    if (!given) throw ValueError(n + " needs the option '" + std::string(key) + "'");
  };
  if (n == "StepLR") {
    int64_t step_size = 0;
    double gamma = 0.1;
    bool has_step_size = false;
    for (const auto& [key, value] : options) {
      if (key == "step_size") {
        step_size = scheduler_int(n, key, value);
        has_step_size = true;
      } else if (key == "gamma") {
        gamma = scheduler_number(n, key, value);
      } else {
        unknown(key, "step_size, gamma");
      }
    }
    required(has_step_size, "step_size");
    return std::make_unique<StepLR>(optimizer, step_size, gamma);
  }
  if (n == "CosineAnnealingLR") {
    int64_t T_max = 0;
    double eta_min = 0.0;
    bool has_T_max = false;
    for (const auto& [key, value] : options) {
      if (key == "T_max") {
        T_max = scheduler_int(n, key, value);
        has_T_max = true;
      } else if (key == "eta_min") {
        eta_min = scheduler_number(n, key, value);
      } else {
        unknown(key, "T_max, eta_min");
      }
    }
    required(has_T_max, "T_max");
    return std::make_unique<CosineAnnealingLR>(optimizer, T_max, eta_min);
  }
  OneCycleLROptions o;
  for (const auto& [key, value] : options) {
    if (key == "max_lr") {
      o.max_lr = scheduler_list(n, key, value);
    } else if (key == "total_steps") {
      o.total_steps = scheduler_int(n, key, value);
    } else if (key == "epochs") {
      o.epochs = scheduler_int(n, key, value);
    } else if (key == "steps_per_epoch") {
      o.steps_per_epoch = scheduler_int(n, key, value);
    } else if (key == "pct_start") {
      o.pct_start = scheduler_number(n, key, value);
    } else if (key == "anneal_strategy") {
      o.anneal_strategy = scheduler_string(n, key, value);
    } else if (key == "cycle_momentum") {
      o.cycle_momentum = scheduler_flag(n, key, value);
    } else if (key == "base_momentum") {
      o.base_momentum = scheduler_list(n, key, value);
    } else if (key == "max_momentum") {
      o.max_momentum = scheduler_list(n, key, value);
    } else if (key == "div_factor") {
      o.div_factor = scheduler_number(n, key, value);
    } else if (key == "final_div_factor") {
      o.final_div_factor = scheduler_number(n, key, value);
    } else if (key == "three_phase") {
      o.three_phase = scheduler_flag(n, key, value);
    } else {
      unknown(key,
              "max_lr, total_steps, epochs, steps_per_epoch, pct_start, anneal_strategy, "
              "cycle_momentum, base_momentum, max_momentum, div_factor, final_div_factor, "
              "three_phase");
    }
  }
  required(!o.max_lr.empty(), "max_lr");
  return std::make_unique<OneCycleLR>(optimizer, o);
}

}  // namespace nns::optim
