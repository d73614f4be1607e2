// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/profiler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>

#include "engine/backend/cuda_event.h"
#include "engine/tensor/error.h"
#include "engine/train/sampling_budget.h"

namespace nns::train {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kPhases = 5;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What a moment of a sampled step is: the step's begin and end, a phase's start, a module's
// forward or backward span beginning or ending, a parameter's gradient arriving.
// BackwardEndBeforeParams: the end of a module none of whose inputs needs a gradient (see
// effective_times).
enum class StampKind : uint8_t {
  Begin,
  Mark,
  ForwardBegin,
  ForwardEnd,
  BackwardBegin,
  BackwardEnd,
  BackwardEndBeforeParams,
  ParamGrad,
  End,
};

struct Stamp {
  StampKind kind;
  int32_t index;  // the phase, the module or the parameter
};

int64_t bytes_of(const std::vector<Tensor>& tensors) {
  int64_t bytes = 0;
  for (const Tensor& t : tensors) {
    if (t.defined()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  }
  return bytes;
}

// One sampled step's figures, before they join the profile's sums.
struct StepFigures {
  double step = 0;
  std::array<double, kPhases> phases{};
  double outside_forward = 0;
  double outside_backward = 0;
  std::vector<double> forward, backward, self_forward, self_backward;  // per module
};

// The moment each stamp stands for: its own, except the backward end of a module none of whose
// inputs needs a gradient (the model's first layer). Its full backward hook runs as soon as the
// gradients w.r.t. its outputs arrive, before its own backward (its weights' gradients) has
// run, so its span ends at the last of its parameters' first gradients after the span began.
std::vector<double> effective_times(const std::vector<Stamp>& stamps,
                                    const std::vector<double>& times,
                                    const std::vector<std::vector<int32_t>>& module_params,
                                    size_t param_count) {
  std::vector<double> out = times;
  std::vector<std::vector<size_t>> grads(param_count);  // each parameter's ParamGrad stamps
  for (size_t i = 0; i < stamps.size(); ++i) {
    if (stamps[i].kind == StampKind::ParamGrad) grads[stamps[i].index].push_back(i);
  }
  for (size_t j = 0; j < stamps.size(); ++j) {
    if (stamps[j].kind != StampKind::BackwardEndBeforeParams) continue;
    const int32_t m = stamps[j].index;
    size_t begin = j;
    const auto begins_it = [&](const Stamp& s) {
      return s.kind == StampKind::BackwardBegin && s.index == m;
    };
    while (begin > 0 && !begins_it(stamps[begin])) --begin;
    for (int32_t p : module_params[m]) {
      const auto first = std::upper_bound(grads[p].begin(), grads[p].end(), begin);
      if (first != grads[p].end()) out[j] = std::max(out[j], times[*first]);
    }
  }
  return out;
}

// The step's timeline cut at every stamp: each piece belongs to its phase and to the span begun
// last among those open (the innermost: a module's self time), or to no module (the phase's
// time outside them). The pieces partition the step, so the rows add up to it; for nested
// spans a module's self time is its time minus its children's.
StepFigures step_figures(const std::vector<Stamp>& stamps, const std::vector<double>& at,
                         size_t modules) {
  StepFigures f;
  f.forward.assign(modules, 0);
  f.backward.assign(modules, 0);
  f.self_forward.assign(modules, 0);
  f.self_backward.assign(modules, 0);
  std::vector<size_t> order(stamps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
  struct Open {
    int32_t module;
    bool backward;
    double begin;
  };
  std::vector<Open> open;
  const auto close = [&](int32_t m, bool backward, double now) {
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      if (it->module != m || it->backward != backward) continue;
      (backward ? f.backward : f.forward)[m] += now - it->begin;
      open.erase(std::next(it).base());
      return;
    }
  };
  int phase = -1;  // before the first mark: "other"
  for (size_t k = 0; k < order.size(); ++k) {
    const Stamp& s = stamps[order[k]];
    const double now = at[order[k]];
    switch (s.kind) {
      case StampKind::Mark:
        phase = s.index;
        break;
      case StampKind::ForwardBegin:
      case StampKind::BackwardBegin:
        open.push_back({s.index, s.kind == StampKind::BackwardBegin, now});
        break;
      case StampKind::ForwardEnd:
        close(s.index, false, now);
        break;
      case StampKind::BackwardEnd:
      case StampKind::BackwardEndBeforeParams:
        close(s.index, true, now);
        break;
      case StampKind::End:
        f.step = now;
        break;
      case StampKind::Begin:
      case StampKind::ParamGrad:
        break;
    }
    if (k + 1 == order.size()) break;
    const double piece = std::max(0.0, at[order[k + 1]] - now);
    if (phase >= 0) f.phases[static_cast<size_t>(phase)] += piece;
    if (!open.empty()) {
      const Open& inner = open.back();
      (inner.backward ? f.self_backward : f.self_forward)[inner.module] += piece;
    } else if (phase == static_cast<int>(ProfilePhase::Forward)) {
      f.outside_forward += piece;
    } else if (phase == static_cast<int>(ProfilePhase::Backward)) {
      f.outside_backward += piece;
    }
  }
  // A span that never ended (its module's output got no gradient) lasts to the step's end.
  for (const Open& o : open) (o.backward ? f.backward : f.forward)[o.module] += f.step - o.begin;
  // Sums of pieces and a difference of the same moments may differ in the last bit.
  for (size_t m = 0; m < modules; ++m) {
    f.self_forward[m] = std::min(f.self_forward[m], f.forward[m]);
    f.self_backward[m] = std::min(f.self_backward[m], f.backward[m]);
  }
  return f;
}

}  // namespace

double StepProfile::accounted_seconds() const {
  double s = outside_forward_seconds + outside_backward_seconds + data_seconds + loss_seconds +
             optimizer_seconds;
  for (const ModuleProfile& m : modules) s += m.self_forward_seconds + m.self_backward_seconds;
  return s;
}

void check_profiler_options(const ProfilerOptions& options) {
  if (options.every < 1) {
    throw ValueError("profiler: every must be at least 1, got " + std::to_string(options.every));
  }
  if (options.warmup < 0) {
    throw ValueError("profiler: warmup must be 0 or more steps, got " +
                     std::to_string(options.warmup));
  }
  if (!(options.max_overhead >= 0 && options.max_overhead <= 1)) {
    throw ValueError(
        "profiler: max_overhead must be a fraction in [0, 1] (0: sample every picked step), "
        "got " +
        std::to_string(options.max_overhead));
  }
}

struct Profiler::State {
  State(nn::ModulePtr model, Device device, ProfilerOptions options);
  void stamp(StampKind kind, int32_t index);
  void place_hooks();
  // The stamps' moments in seconds from the step's begin (on a GPU, waits for the last event).
  std::vector<double> stamp_times() const;
  void publish(const StepFigures& f);

  nn::ModulePtr model;
  Device device;
  ProfilerOptions options;
  std::vector<nn::ModulePtr> modules;  // named_modules order, the model left out
  std::vector<Tensor> params;          // the model's parameters that require grad
  // Per module, its tree's parameters that require grad (indices into params).
  std::vector<std::vector<int32_t>> module_params;

  // Training thread.
  SamplingBudget budget;
  SamplingBudget::Schedule schedule;
  bool sampling = false;
  uint64_t step_generation = 0;  // `generation` when the sampled step began
  std::vector<RemovableHandle> hooks;
  std::vector<Stamp> stamps;
  std::vector<Clock::time_point> at;                 // on the CPU, each stamp's moment
  std::vector<std::unique_ptr<cuda::Event>> events;  // on a GPU: stamp i is events[i]
  std::vector<int64_t> calls, output_bytes;          // the sampled step's, per module

  mutable std::mutex mutex;
  StepProfile profile;      // under mutex
  uint64_t generation = 0;  // under mutex: reset() calls, so that a step begun before one
                            // does not add to the fresh profile
  int64_t warming = 0;      // under mutex: sampled steps still to leave out (options.warmup)
};

Profiler::State::State(nn::ModulePtr model_, Device device_, ProfilerOptions options_)
    : model(std::move(model_)), device(device_), options(options_) {
  if (!model) throw ValueError("Profiler: the model is null; pass the model to profile");
  check_profiler_options(options);
  std::unordered_map<const TensorImpl*, int32_t> param_index;
  for (const Tensor& p : model->parameters()) {
    if (!p.requires_grad() || param_index.count(p.impl())) continue;
    param_index.emplace(p.impl(), static_cast<int32_t>(params.size()));
    params.push_back(p);
  }
  profile.device = device.str();
  profile.timer = device.is_cpu() ? "steady clock" : "CUDA events";
  for (auto& [name, m] : model->named_modules()) {
    if (m == model) continue;
    std::vector<int32_t> own;
    for (const Tensor& p : m->parameters()) {
      auto it = param_index.find(p.impl());
      if (it != param_index.end()) own.push_back(it->second);
    }
    modules.push_back(m);
    module_params.push_back(std::move(own));
    ModuleProfile mp;
    mp.module = name;
    mp.type = m->name();
    profile.modules.push_back(std::move(mp));
  }
  calls.assign(modules.size(), 0);
  output_bytes.assign(modules.size(), 0);
  warming = options.warmup;
}

void Profiler::State::stamp(StampKind kind, int32_t index) {
  const size_t i = stamps.size();
  stamps.push_back({kind, index});
  if (device.is_cpu()) {
    at.push_back(Clock::now());
    return;
  }
  // The events are kept from step to step: making one is a driver call.
  if (events.size() <= i) events.push_back(std::make_unique<cuda::Event>(device.index));
  events[i]->record();
}

void Profiler::State::place_hooks() {
  using Tensors = std::vector<Tensor>;
  using Replaced = std::optional<Tensors>;
  // The stamps come as close to the module's own work as the hook order allows: the pre-hooks
  // after other tools' pre-hooks, the hooks before theirs (a probe's summary is not the
  // module's time).
  for (size_t i = 0; i < modules.size(); ++i) {
    const auto m = static_cast<int32_t>(i);
    nn::Module& module = *modules[i];
    const bool has_params = !module_params[i].empty();
    hooks.push_back(module.register_forward_pre_hook([this, m](nn::Module&, const Tensors&) {
      const CostTimer timer(budget);
      ++calls[m];
      stamp(StampKind::ForwardBegin, m);
      return Replaced();
    }));
    hooks.push_back(module.register_forward_hook(
        [this, m](nn::Module&, const Tensors&, const Tensors& outputs) {
          const CostTimer timer(budget);
          stamp(StampKind::ForwardEnd, m);
          output_bytes[m] += bytes_of(outputs);
          return Replaced();
        },
        /*prepend=*/true, /*always_call=*/true));
    hooks.push_back(module.register_full_backward_pre_hook([this, m](nn::Module&, const Tensors&) {
      const CostTimer timer(budget);
      stamp(StampKind::BackwardBegin, m);
      return Replaced();
    }));
    hooks.push_back(module.register_full_backward_hook(
        [this, m, has_params](nn::Module&, const Tensors& grad_input, const Tensors&) {
          const CostTimer timer(budget);
          const bool no_inputs = std::none_of(grad_input.begin(), grad_input.end(),
                                              [](const Tensor& g) { return g.defined(); });
          stamp(
              no_inputs && has_params ? StampKind::BackwardEndBeforeParams : StampKind::BackwardEnd,
              m);
          return Replaced();
        },
        /*prepend=*/true));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const auto p = static_cast<int32_t>(i);
    hooks.push_back(
        params[i].register_hook(std::function<void(const Tensor&)>([this, p](const Tensor&) {
          const CostTimer timer(budget);
          stamp(StampKind::ParamGrad, p);
        })));
  }
}

std::vector<double> Profiler::State::stamp_times() const {
  std::vector<double> t(stamps.size(), 0.0);
  for (size_t i = 1; i < stamps.size(); ++i) {
    t[i] = device.is_cpu() ? std::chrono::duration<double>(at[i] - at[0]).count()
                           : cuda::Event::elapsed_seconds(*events[0], *events[i]);
  }
  return t;
}

void Profiler::State::publish(const StepFigures& f) {
  std::lock_guard<std::mutex> lock(mutex);
  if (generation != step_generation) return;  // reset() while the step ran
  if (warming > 0) {
    --warming;
    return;
  }
  StepProfile& p = profile;
  ++p.steps;
  p.step_seconds += f.step;
  p.data_seconds += f.phases[static_cast<size_t>(ProfilePhase::Data)];
  p.forward_seconds += f.phases[static_cast<size_t>(ProfilePhase::Forward)];
  p.loss_seconds += f.phases[static_cast<size_t>(ProfilePhase::Loss)];
  p.backward_seconds += f.phases[static_cast<size_t>(ProfilePhase::Backward)];
  p.optimizer_seconds += f.phases[static_cast<size_t>(ProfilePhase::Optimizer)];
  p.outside_forward_seconds += f.outside_forward;
  p.outside_backward_seconds += f.outside_backward;
  for (size_t m = 0; m < p.modules.size(); ++m) {
    ModuleProfile& mp = p.modules[m];
    mp.forward_seconds += f.forward[m];
    mp.backward_seconds += f.backward[m];
    mp.self_forward_seconds += f.self_forward[m];
    mp.self_backward_seconds += f.self_backward[m];
    mp.calls += calls[m];
    mp.output_bytes += output_bytes[m];
  }
}

Profiler::Profiler(nn::ModulePtr model, Device device, ProfilerOptions options)
    : state_(std::make_unique<State>(std::move(model), device, options)) {}

Profiler::~Profiler() {
  for (RemovableHandle& h : state_->hooks) h.remove();
}

void Profiler::begin_step(int64_t step) {
  State& s = *state_;
  if (s.sampling) {
    // The last sampled step never ended (an error the loop did not report here): dropped.
    for (RemovableHandle& h : s.hooks) h.remove();
    s.hooks.clear();
    s.sampling = false;
  }
  s.budget.begin_step(step, /*measured=*/true);
  if ((step - 1) % s.options.every != 0) return;
  s.budget.fold();
  const SamplingBudget::Pick pick =
      s.budget.pick(s.schedule, step, s.options.every, s.options.max_overhead);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.profile.overhead = s.budget.fraction();
    if (pick == SamplingBudget::Pick::Skipped) ++s.profile.skipped;
    s.step_generation = s.generation;
  }
  if (pick == SamplingBudget::Pick::Skipped) return;
  s.sampling = true;
  s.stamps.clear();
  s.at.clear();
  std::fill(s.calls.begin(), s.calls.end(), 0);
  std::fill(s.output_bytes.begin(), s.output_bytes.end(), 0);
  s.place_hooks();
  // The step's time starts after the hooks are placed: that is the profiler's cost, not the
  // step's.
  s.stamp(StampKind::Begin, 0);
  s.budget.add_cost(seconds_since(*s.budget.step_begin()));
}

void Profiler::mark(ProfilePhase phase) {
  State& s = *state_;
  if (!s.sampling) return;
  const CostTimer timer(s.budget);
  s.stamp(StampKind::Mark, static_cast<int32_t>(phase));
}

void Profiler::end_step() {
  State& s = *state_;
  if (!s.sampling) return s.budget.end_step(false);
  {
    const CostTimer timer(s.budget);
    s.stamp(StampKind::End, 0);
    s.sampling = false;
    // First, so that a device error in reading the events below leaves no hook behind.
    for (RemovableHandle& h : s.hooks) h.remove();
    s.hooks.clear();
  }
  // Waiting for the device to reach the last event is the step's work, not the profiler's.
  if (!s.device.is_cpu()) {
    cuda::Event::elapsed_seconds(*s.events.front(), *s.events[s.stamps.size() - 1]);
  }
  {
    const CostTimer timer(s.budget);
    const std::vector<double> at =
        effective_times(s.stamps, s.stamp_times(), s.module_params, s.params.size());
    s.publish(step_figures(s.stamps, at, s.modules.size()));
  }
  s.budget.end_step(true);
}

bool Profiler::sampling() const {
  return state_->sampling;
}

StepProfile Profiler::profile() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->profile;
}

void Profiler::reset() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  StepProfile& p = state_->profile;
  StepProfile fresh;
  fresh.device = p.device;
  fresh.timer = p.timer;
  for (const ModuleProfile& m : p.modules) {
    ModuleProfile mp;
    mp.module = m.module;
    mp.type = m.type;
    fresh.modules.push_back(std::move(mp));
  }
  p = std::move(fresh);
  ++state_->generation;
  state_->warming = state_->options.warmup;
}

}  // namespace nns::train
