// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The overhead budget of a tool that samples training steps (the probes, probes.h; the
// profiler, profiler.h): of the steps a sampler's `every` picks (1, 1 + every, ...), which it
// samples, so that the tool costs at most max_overhead of the training time on average over
// the run, and never fewer than a floor that keeps its history readable however fast the
// model is (the rules are in probes.h, whose terms this file uses).
//
//   SamplingBudget budget;
//   SamplingBudget::Schedule schedule;  // one per sampler
//   for (int64_t step = 1; ...; ++step) {
//     budget.begin_step(step, /*measured=*/true);
//     bool sampled = false;
//     if ((step - 1) % every == 0) {
//       budget.fold();
//       sampled = budget.pick(schedule, step, every, max_overhead) !=
//       SamplingBudget::Pick::Skipped;
//     }
//     { const CostTimer timer(budget); ... the tool's own work ... }
//     ... the step ...
//     budget.end_step(sampled);
//   }
//
// What the budget counts is what the tool costs the run. A sampled step is charged what the tool's
// own timers (CostTimer) saw in it, times what samples have cost the run per second their timers
// saw: the excess of a sampled step and of the step after it (the caches the summaries evicted)
// over the recent unsampled steps also holds what no timer sees (placing and removing the step
// hooks, the autograd nodes of the backward hooks). That figure is learned slowly, within
// [1, kOutlierFactor]: one step's excess is noise as much as cost (a two-process PyTorch step waits
// for the other process, whose steps vary by milliseconds, and charged as it came, one slow step
// took a 60-step run's whole budget). A sample's timers count at most kOutlierFactor times the
// cheapest recent sample's, so that one slow sample (the process descheduled in it) does not
// silence the tool. A sampler's first sample pays one-off costs (the first allocations, the hooks
// placed for the first time): it is not charged (a short run's budget would go on it), and the
// aim below leaves room for it. The sampler aims at kBudgetAim of its budget: the budget is a
// limit on what a user measures from outside, which also holds what no clock of the sampler's sees
// (placed probes make every step a little slower: on spirals, 0.2-1.7% measured from outside with
// one sample in 3,000 steps), and both measures vary by about a point from run to run (with the
// sampler at 5.0% by its own figure, 4.2-5.4% from outside). The training time is the rest of each
// step, from begin_step to end_step (time between steps, a pause or an evaluation, counts for
// nothing); between two picked steps both are scaled down by the time the training thread waited
// for a CPU (the kernel's run delay), so that steps the system descheduled bank no credit, while a
// step's waits for a GPU or for other processes count as training. A step no sampler picks costs
// two reads of the steady clock and nothing else: the run delay (a read of a /proc file, about a
// microsecond) is read once per picked step.
//
// Threads: the training thread's; its owner publishes fraction() to other threads.
#include <chrono>
#include <cstdint>
#include <optional>

namespace nns::train {

// The floor under the budget (see probes.h).
constexpr int64_t kFloorEarlySteps = 1000;
constexpr int64_t kFloorGap = 10;
// What a sample costs per second its timers saw is at most this, and its timers count at most
// this many times the cheapest recent sample's (see above).
constexpr double kOutlierFactor = 3.0;
// The share of max_overhead a sampler aims at (see above).
constexpr double kBudgetAim = 0.8;

class SamplingBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // One sampler's place in the run, for the floor and its samples' intervals.
  struct Schedule {
    bool sampled_ever = false;  // its first sample (one-off costs) is behind it
    int64_t last_sampled = 0;   // the step it last sampled in this run (0: none yet)
    int64_t first_sampled = 0;  // its first sampled step in this run
    int64_t early_picked = 0;   // steps `every` picked within kFloorEarlySteps of first_sampled
    int64_t early_sampled = 0;  // ... and of those, the sampled ones
    int64_t interval = 0;       // steps between its last two samples (0 after its first)
  };
  // What pick() decided: Forced is sampled by the floor although the budget was spent.
  enum class Pick { Skipped, Sampled, Forced };

  // A step begins. measured: whether it counts (the tool has samplers; a step of a tool without
  // any is not measured). A step at or before the last one begun starts a new run (a reset
  // session counts from 1 again), measured afresh.
  void begin_step(int64_t step, bool measured);
  // When a sampler's `every` picks the step begun, before pick(): brings the run's cost and
  // training time up to date with the steps since the last picked one.
  void fold();
  // Whether the sampler samples the step begun, which its `every` picks; updates its schedule.
  Pick pick(Schedule& schedule, int64_t step, int64_t every, double max_overhead);
  // The tool's own time in the step begun (CostTimer adds it).
  void add_cost(double seconds) { step_cost_ += seconds; }
  // The step begun ends; sampled: whether a sampler sampled it.
  void end_step(bool sampled);

  // When the step begun began (nullopt: it is not measured).
  std::optional<Clock::time_point> step_begin() const { return step_begin_; }
  // The tool's charged cost / the training time, over the run so far (as of the last fold).
  double fraction() const { return train_ > 0 ? cost_ / train_ : 0; }
  // Whether the cost so far is within kBudgetAim x max_overhead of the training time (0: no
  // budget).
  bool within(double max_overhead) const {
    return max_overhead == 0 || cost_ <= kBudgetAim * max_overhead * train_;
  }

 private:
  bool takes(Schedule& schedule, int64_t step, int64_t every, double max_overhead) const;
  // What a step ending now is charged: one sampled, one not (span: its wall time; seen: the
  // tool's timers in it).
  double sample_charge(double span, double seen);
  double unsampled_charge(double span, double seen);

  // The step begun (none outside steps and when not measured) and the tool's time in it; the
  // steps since the last picked step (their wall time, the tool's cost in them, the thread's run
  // delay when the window began); the run's charged cost and training time.
  std::optional<Clock::time_point> step_begin_;
  double step_cost_ = 0;
  bool one_off_ = false;       // a sampler's first sample is in the step: not charged
  double unsampled_span_ = 0;  // running mean length of the unsampled steps
  // The sample in the step before: its excess over the unsampled steps, its timers' figure.
  struct Pending {
    double excess;
    double seen;
  };
  std::optional<Pending> pending_;
  double cheapest_seen_ = 0;          // the cheapest recent sample's timers (see sample_charge)
  double cost_per_timed_second_ = 1;  // what samples cost per second their timers saw
  double window_wall_ = 0;
  double window_cost_ = 0;
  std::optional<double> window_delay_begin_;
  double cost_ = 0;
  double train_ = 0;
  int64_t last_begun_ = 0;  // the step begun last (a smaller one: the run restarted)
};

// Adds the seconds of its scope to the step's cost: the tool's own time.
class CostTimer {
 public:
  explicit CostTimer(SamplingBudget& budget) : budget_(budget) {}
  ~CostTimer() {
    budget_.add_cost(std::chrono::duration<double>(SamplingBudget::Clock::now() - start_).count());
  }
  CostTimer(const CostTimer&) = delete;
  CostTimer& operator=(const CostTimer&) = delete;

 private:
  SamplingBudget& budget_;
  SamplingBudget::Clock::time_point start_ = SamplingBudget::Clock::now();
};

}  // namespace nns::train
