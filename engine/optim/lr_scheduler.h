// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.optim.lr_scheduler: a scheduler sets the learning rate of each parameter group of an
// optimizer, once per step(), following PyTorch 1.13's formulas (recursive where PyTorch's are,
// so get_last_lr() gives PyTorch's sequence to the last bit, and a learning rate changed from
// outside, e.g. by a running session, is taken up as PyTorch would).
//
//   nns::optim::StepLR scheduler(optimizer, /*step_size=*/30, /*gamma=*/0.1);
//   for (int epoch = 0; epoch < 100; ++epoch) {
//     train(...);           // optimizer.step() per batch
//     scheduler.step();
//   }
//
// The optimizer must outlive its scheduler. Like PyTorch's, constructing a scheduler records
// each group's starting learning rate as the group's "initial_lr" (kept if already there) and
// performs the first step (last_epoch becomes 0).
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/optim/optimizer.h"

namespace nns::optim {

// A plain value of a scheduler's options or state: a flag, an integer, a number, a list of
// numbers (one per group) or a string (OneCycleLR's anneal strategy).
using SchedulerValue = std::variant<bool, int64_t, double, std::vector<double>, std::string>;
using SchedulerValues = std::vector<std::pair<std::string, SchedulerValue>>;

// A value read as the kind a key needs, or a ValueError naming `where` (e.g. "StepLR") and the
// key. An integer passes for a number, an integral number for an integer, a number for a
// one-element list.
int64_t scheduler_int(const std::string& where, const std::string& key,
                      const SchedulerValue& value);
double scheduler_number(const std::string& where, const std::string& key,
                        const SchedulerValue& value);
bool scheduler_flag(const std::string& where, const std::string& key, const SchedulerValue& value);
std::vector<double> scheduler_list(const std::string& where, const std::string& key,
                                   const SchedulerValue& value);
std::string scheduler_string(const std::string& where, const std::string& key,
                             const SchedulerValue& value);

class LRScheduler {
 public:
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  virtual ~LRScheduler() = default;

  // last_epoch += 1, then every group's lr is set to the new value.
  void step();
  // The learning rates the last step() set, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  // PyTorch's state_dict() keys in its order, as plain values: the scheduler's own (e.g.
  // StepLR's "step_size", "gamma"), then "base_lrs", "last_epoch", "verbose", "_step_count",
  // "_get_lr_called_within_step", "_last_lr". (verbose and _get_lr_called_within_step are
  // always false here: the engine prints nothing and warns nowhere.)
  SchedulerValues state_dict() const;
  // Takes back what state_dict() gave (any subset of its keys): a KeyError for a key this
  // scheduler does not have, a ValueError for a value of the wrong kind; nothing changes then.
  // The groups' learning rates are the optimizer's (load its state dict too).
  void load_state_dict(const SchedulerValues& state);

 protected:
  explicit LRScheduler(Optimizer& optimizer);
  // PyTorch's _initial_step(): the derived constructor calls it last.
  void initial_step();
  // The learning rate of each group for last_epoch (already advanced).
  virtual std::vector<double> get_lr() = 0;
  virtual const char* name() const = 0;
  // The derived scheduler's own state entries, in PyTorch's order.
  virtual SchedulerValues own_state() const = 0;
  // Takes one of own_state()'s entries aside (a ValueError for a value of the wrong kind);
  // false when the key is not one of them. load_state_dict() first sets the pending copy to
  // the current settings (begin_load), then commits it once every key was accepted, so a
  // failed load changes nothing.
  virtual void begin_load() = 0;
  virtual bool load_own(const std::string& key, const SchedulerValue& value) = 0;
  virtual void commit_own() = 0;

  // The optimizer's group entries PyTorch's schedulers read (group['max_lr'], ...): a
  // KeyError naming the group and what to do when it is missing.
  double group_entry(size_t group, const std::string& key) const;

 private:
  Optimizer* optimizer_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  std::vector<double> last_lr_;
};

// Multiplies each group's lr by gamma every step_size steps.
class StepLR : public LRScheduler {
 public:
  // step_size must be at least 1 (a ValueError).
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  const char* name() const override { return "StepLR"; }
  SchedulerValues own_state() const override;
  void begin_load() override;
  bool load_own(const std::string& key, const SchedulerValue& value) override;
  void commit_own() override;

 private:
  struct Settings {
    int64_t step_size;
    double gamma;
  };
  Settings settings_;
  Settings pending_{};
};

// Cosine annealing from each group's initial lr down to eta_min over T_max steps, then back
// up (PyTorch's recursive form, not the restarts of SGDR).
class CosineAnnealingLR : public LRScheduler {
 public:
  // T_max must be at least 1 (a ValueError).
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  const char* name() const override { return "CosineAnnealingLR"; }
  SchedulerValues own_state() const override;
  void begin_load() override;
  bool load_own(const std::string& key, const SchedulerValue& value) override;
  void commit_own() override;

 private:
  struct Settings {
    int64_t T_max;
    double eta_min;
  };
  Settings settings_;
  Settings pending_{};
};

struct OneCycleLROptions {
  // One value per group, or a single value for all (max_lr is required).
  std::vector<double> max_lr;
  // total_steps, or epochs * steps_per_epoch when total_steps is 0.
  int64_t total_steps = 0;
  int64_t epochs = 0;
  int64_t steps_per_epoch = 0;
  double pct_start = 0.3;
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  bool cycle_momentum = true;
  std::vector<double> base_momentum = {0.85};
  std::vector<double> max_momentum = {0.95};
  double div_factor = 25.0;
  double final_div_factor = 1e4;
  bool three_phase = false;
};

// The 1cycle policy: the lr rises from max_lr / div_factor to max_lr over pct_start of the
// steps, then falls to initial_lr / final_div_factor (three_phase: back to the initial lr,
// then down); with cycle_momentum the momentum (SGD's and RMSprop's "momentum", Adam's and
// AdamW's beta1) moves the opposite way between max_momentum and base_momentum. Like PyTorch's,
// it writes "initial_lr", "max_lr", "min_lr" (and "max_momentum", "base_momentum") into each
// group. Stepping past total_steps is PyTorch's ValueError ("Tried to step ... times").
class OneCycleLR : public LRScheduler {
 public:
  // Checks the options with PyTorch's words (ValueError).
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lr() override;
  const char* name() const override { return "OneCycleLR"; }
  SchedulerValues own_state() const override;
  void begin_load() override;
  bool load_own(const std::string& key, const SchedulerValue& value) override;
  void commit_own() override;

 private:
  struct Phase {
    double end_step;
    const char* start_lr;
    const char* end_lr;
    const char* start_momentum;
    const char* end_momentum;
  };
  struct Settings {
    int64_t total_steps = 0;
    std::vector<Phase> phases;
    bool cos = true;
    bool cycle_momentum = false;
    bool use_beta1 = false;
  };
  static std::vector<Phase> make_phases(double pct_start, int64_t total_steps, bool three_phase);
  double anneal(double start, double end, double pct) const;
  void set_momentum(size_t group, double momentum);

  Settings settings_;
  Settings pending_;
};

}  // namespace nns::optim
