// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a training step's time goes, module by module: forward and backward time, calls and the
// memory of the outputs of every module of the model, and the rest of the step (the data, the
// loss, the optimizer, what runs outside any module) as rows of their own, so that the rows add
// up to the step. View > Profile in the window and `nnstudio-cli profile` show it.
//
//   nns::train::Profiler profiler(model, device);
//   for (...) {
//     profiler.begin_step(step);             // picks the step (or not) and places the hooks
//     profiler.mark(ProfilePhase::Data);     // each phase ends at the next mark
//     ... forward ...   profiler.mark(ProfilePhase::Loss);
//     ... loss ...      profiler.mark(ProfilePhase::Backward);
//     ... backward ...  profiler.mark(ProfilePhase::Optimizer);
//     ... step ...      profiler.end_step();
//   }
//   nns::train::StepProfile p = profiler.profile();   // any thread
//
// Forward times come from a forward pre-hook and a forward hook on every module; backward
// times from a full backward pre-hook and a full backward hook (the span between the gradient
// w.r.t. a module's outputs arriving and the one w.r.t. its inputs leaving; for a module none of
// whose inputs needs a gradient, the model's first layer, until its parameters' gradients have
// arrived, since its hook runs before its own backward). A module's time includes its
// children's; its self time does not: the step's timeline is cut at every hook and mark, and
// each piece is its phase's and belongs to the innermost module running then, or to none (the
// phase's time outside the modules). So the self times of every module, the forward and
// backward time outside them and the data, loss and optimizer rows add up to the step, less
// what runs before the first mark ("other"). On the CPU the clock is the steady clock; on a
// GPU each hook and mark records a CUDA event on the compute stream, read after the step (a
// sampled step runs eagerly, never as a CUDA graph), and every figure, the step's too, is the
// device's time between events.
//
// Sampling is the probes' (probes.h, the rule in sampling_budget.h): steps 1, 1 + every, ...; a
// picked step is skipped while the profiler has cost more than max_overhead of the training
// time so far, never below the probes' floor. The hooks exist only on sampled steps (the
// backward hooks add autograd nodes; a step without hooks takes the modules' fast path), so an
// unsampled step costs the budget's clock reads. With max_overhead 0 every picked step is
// sampled (the CLI samples every step after its warm-up). The profiler never changes the
// training's numbers.
//
// Threads: the step calls run on the thread that runs the model; profile() and reset() on any.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/nn/module.h"
#include "engine/tensor/device.h"

namespace nns::train {

struct ProfilerOptions {
  int64_t every = 1;           // pick every Nth step (>= 1)
  double max_overhead = 0.05;  // in [0, 1]; 0: every picked step is sampled
  // The first sampled steps after the profiler is made or reset are measured but not recorded:
  // they pay one-off costs (the first allocations, BLAS starting its threads in the first
  // product), which on a small model were most of the first layer's time in the window. (>= 0)
  int64_t warmup = 1;
};

// What each span of a step is, in the order a step runs them.
enum class ProfilePhase { Data, Forward, Loss, Backward, Optimizer };

// One module's figures, summed over the sampled steps (divide by StepProfile::steps for a
// step's).
struct ModuleProfile {
  std::string module;  // named_modules path ("fc1", "features.0"); the model itself is not one
  std::string type;    // its class name ("Linear")
  double forward_seconds = 0;        // with its children's
  double backward_seconds = 0;       // with its children's
  double self_forward_seconds = 0;   // without
  double self_backward_seconds = 0;  // without
  int64_t calls = 0;                 // forward calls
  int64_t output_bytes = 0;          // the bytes of its outputs, summed over its calls
};

struct StepProfile {
  std::string device;       // "cpu", "cuda:0"
  std::string timer;        // "steady clock" or "CUDA events"
  int64_t steps = 0;        // sampled steps the figures sum over
  int64_t skipped = 0;      // picked steps the budget skipped
  double overhead = 0;      // the profiler's cost / the training time, so far
  double step_seconds = 0;  // the sampled steps' wall time, begin_step to end_step
                            // (on a GPU: the device's, between their events)
  // The phases' wall time; forward and backward include the modules' time.
  double data_seconds = 0;
  double forward_seconds = 0;
  double loss_seconds = 0;
  double backward_seconds = 0;
  double optimizer_seconds = 0;
  // Forward and backward time outside every module of the model (the model's own functional
  // nodes and glue, autograd's bookkeeping).
  double outside_forward_seconds = 0;
  double outside_backward_seconds = 0;
  std::vector<ModuleProfile> modules;  // named_modules order

  // The modules' self times plus the rows outside them: equals step_seconds less what ran
  // before the step's first mark, which a table of the profile shows as "other".
  double accounted_seconds() const;
};

// ValueError when every < 1 or max_overhead is outside [0, 1].
void check_profiler_options(const ProfilerOptions& options);

class Profiler {
 public:
  // device: where the model runs (its CUDA device's events time it). ValueError for a null
  // model or bad options (check_profiler_options).
  Profiler(nn::ModulePtr model, Device device, ProfilerOptions options = {});
  ~Profiler();  // removes every hook
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // The training loop's calls, in this order, once per step. A phase may be marked again: its
  // spans add up (a session's zero_grad before the forward is the optimizer's).
  void begin_step(int64_t step);
  void mark(ProfilePhase phase);  // the phase that starts now
  void end_step();
  // Whether the step begun is sampled (its forward must run eagerly).
  bool sampling() const;

  // Any thread.
  StepProfile profile() const;
  void reset();  // forgets what was measured (a new run, or the model changed)

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace nns::train
