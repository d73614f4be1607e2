// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/sampling_budget.h"

#include <algorithm>
#include <cstdlib>

#include <fcntl.h>
#include <unistd.h>

namespace nns::train {
namespace {

// The seconds the calling thread (the one that trains) has waited, runnable, for a CPU: Linux's
// run delay, the second field of /proc/thread-self/schedstat. It is what the system took away
// from the steps (see fold). Not the thread's CPU time: a step that waits for a GPU, another
// process's collective or a thread pool is still training. The file stays open, one per thread
// (thread-self is the opener's), and a read of it is a system call of about a microsecond, made
// once per picked step. 0 where the system does not say (every step then counts whole).
class RunDelay {
 public:
  RunDelay() : fd_(open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) {}
  ~RunDelay() {
    if (fd_ >= 0) close(fd_);
  }
  RunDelay(const RunDelay&) = delete;
  RunDelay& operator=(const RunDelay&) = delete;

  double seconds() const {
    char text[128];
    const ssize_t n = fd_ >= 0 ? pread(fd_, text, sizeof text - 1, 0) : -1;
    if (n <= 0) return 0;
    text[n] = '\0';
    char* end = nullptr;
    std::strtoull(text, &end, 10);  // the CPU time
    return 1e-9 * static_cast<double>(std::strtoull(end, nullptr, 10));
  }

 private:
  int fd_;
};

double thread_run_delay_seconds() {
  static thread_local const RunDelay delay;
  return delay.seconds();
}

}  // namespace

void SamplingBudget::begin_step(int64_t step, bool measured) {
  if (step <= last_begun_) {
    cost_ = train_ = 0;
    window_wall_ = window_cost_ = 0;
    window_delay_begin_.reset();
    pending_.reset();
    cost_per_timed_second_ = 1;
  }
  last_begun_ = step;
  one_off_ = false;
  step_cost_ = 0;
  step_begin_.reset();
  if (measured) step_begin_ = Clock::now();
}

void SamplingBudget::end_step(bool sampled) {
  if (!step_begin_) return;
  const double span = std::chrono::duration<double>(Clock::now() - *step_begin_).count();
  step_begin_.reset();
  const double seen = step_cost_;
  step_cost_ = 0;
  // A sampler's first sample: its one-off costs are not what the next samples will cost, and
  // the step's training part cannot be told from them. It counts for nothing.
  if (sampled && one_off_) {
    pending_.reset();
    return;
  }
  window_wall_ += span;
  window_cost_ += sampled ? sample_charge(span, seen) : unsampled_charge(span, seen);
}

double SamplingBudget::unsampled_charge(double span, double seen) {
  if (pending_) {
    // The step after a sample runs on the caches the summaries evicted: the two steps'
    // excess over the unsampled ones is what the sample cost, here per second its timers saw.
    // One step's excess is noise as much as cost (a step the system descheduled; a two-process
    // step waits for the other process, whose steps vary by milliseconds), so it only moves
    // the learned figure a tenth of the way, within [1, kOutlierFactor]. Nor is this step an
    // unsampled step's length.
    const double excess = pending_->excess + span - unsampled_span_;
    const double ratio = std::clamp(excess / pending_->seen, 1.0, kOutlierFactor);
    pending_.reset();
    cost_per_timed_second_ += 0.1 * (ratio - cost_per_timed_second_);
    return seen;
  }
  unsampled_span_ = unsampled_span_ > 0 ? 0.9 * unsampled_span_ + 0.1 * span : span;
  return seen;
}

double SamplingBudget::sample_charge(double span, double seen) {
  pending_.reset();
  // The timers' figure, at most kOutlierFactor times the cheapest recent one (what a sample
  // costs when nothing takes the CPU from it: preemption only ever adds; it rises 5% a sample
  // to follow a real change), times what the samples have cost the run per second their
  // timers saw (learned in unsampled_charge: a sampled step also pays for what no timer sees,
  // the autograd nodes a full backward hook adds around its module).
  double timed = seen;
  if (cheapest_seen_ > 0) timed = std::min(timed, kOutlierFactor * cheapest_seen_);
  cheapest_seen_ = cheapest_seen_ > 0 ? std::min(seen, 1.05 * cheapest_seen_) : seen;
  if (unsampled_span_ > 0 && seen > 0) pending_ = Pending{span - unsampled_span_, seen};
  return std::min(timed * cost_per_timed_second_, span);
}

void SamplingBudget::fold() {
  const double delay = thread_run_delay_seconds();
  if (window_wall_ > 0) {
    // While the machine runs other processes the training thread waits for a CPU: the
    // window's time is scaled down by that wait, training and tool alike, so that steps the
    // system descheduled bank nothing that would let the tool run free afterwards (a sample
    // descheduled on its own is bounded above). The wait also counts time between steps (an
    // evaluation), so the scale is at least 0.
    const double waited = window_delay_begin_ ? delay - *window_delay_begin_ : 0.0;
    const double scale = std::max(0.0, window_wall_ - waited) / window_wall_;
    cost_ += window_cost_ * scale;
    train_ += std::max(0.0, window_wall_ - window_cost_) * scale;
  }
  window_delay_begin_ = delay;
  window_wall_ = 0;
  window_cost_ = 0;
}

bool SamplingBudget::takes(Schedule& s, int64_t step, int64_t every, double max_overhead) const {
  // The first pick of a run (a step at or before the last sampled one: the run was reset).
  if (s.last_sampled == 0 || step <= s.last_sampled) {
    s.last_sampled = 0;
    s.first_sampled = step;
    s.early_picked = 1;
    s.early_sampled = 0;
    return true;
  }
  const bool early = step - s.first_sampled < kFloorEarlySteps;
  if (early) ++s.early_picked;
  if (within(max_overhead)) return true;
  // The floor: a third of the picks early on, and no gap of kFloorGap picks after.
  return (early && 3 * s.early_sampled < s.early_picked) ||
         step - s.last_sampled >= kFloorGap * every;
}

SamplingBudget::Pick SamplingBudget::pick(Schedule& s, int64_t step, int64_t every,
                                          double max_overhead) {
  const bool budgeted = within(max_overhead);
  if (!takes(s, step, every, max_overhead)) return Pick::Skipped;
  const bool forced = s.last_sampled != 0 && !budgeted;
  s.interval = s.last_sampled == 0 ? 0 : step - s.last_sampled;
  s.last_sampled = step;
  if (step - s.first_sampled < kFloorEarlySteps) ++s.early_sampled;
  one_off_ = one_off_ || !s.sampled_ever;
  s.sampled_ever = true;
  return forced ? Pick::Forced : Pick::Sampled;
}

}  // namespace nns::train
