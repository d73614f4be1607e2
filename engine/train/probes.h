// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Probes: hooks placed on a model's modules by name that summarize what flows through them
// while it trains (the inspection core of NN Studio).
//
//   nns::train::Probes probes(model);
//   nns::train::ProbeId id = probes.add("features.0", {});   // every 10 steps by default
//   for (int64_t step = 1; ...; ++step) {
//     probes.begin_step(step);          // before forward
//     ... forward, loss.backward() ...
//     probes.before_optimizer_step();
//     optimizer.step();
//     probes.end_step();
//   }
//   for (const nns::train::ProbeSample& s : probes.take_samples()) { ... }  // any thread
//   probes.remove(id);                  // every hook it placed is gone
//
// A probe places a forward hook on its module for as long as it exists (activation
// summaries; on a module with MultiheadAttention in its tree the attention maps of the
// sampled steps' first sequence, attention_maps.h; on an RNN, LSTM or GRU its gates'
// activations, "gates.forget" and so on, with their saturation), and, on the steps it samples only,
// a full backward hook (gradients w.r.t. the module's outputs and inputs) and a tensor hook on each
// of the module's parameters that require grad (gradient norm and histogram, then the
// update-to-weight ratio ||dw|| / ||w|| after the optimizer's step). The backward and tensor hooks
// exist only on sampled steps because a registered full backward hook adds two autograd nodes
// around the module on every call; the forward hook returns at once on other steps and in
// evaluation passes.
//
// A probe samples steps 1, 1 + every, 1 + 2 * every, ... (steps count from 1) within an
// overhead budget, the way a sampling profiler bounds its cost, and never below a floor that
// keeps its history readable however fast the model is:
// - the budget: a picked step is skipped while the probes' cost so far in the run is above
//   kBudgetAim x max_overhead x the training time so far, so that the budget holds on average
//   over the run (a costly sample is paid back by the steps after it, never by starving the
//   probe) with room for what varies between runs;
// - the floor: over a probe's first kFloorEarlySteps steps it samples at least a third of the
//   steps `every` picks, and after them at least one step in every kFloorGap x `every`; a
//   probe's first pick is always sampled (early steps are kept).
// What the budget counts is what the probes cost the run, measured as sampling_budget.h says
// (SamplingBudget: the rule the profiler shares).
//
// The cost compared is that of all the probes together, since the limit is on what probing
// costs the run; a probe's own max_overhead says how much of it that probe tolerates, so a
// probe with max_overhead 0 samples exactly every N steps and its cost still counts against
// the budgeted ones. With max_overhead 0 the sampled steps are deterministic; with a budget
// they depend on timing (never on the training's numbers, which probes do not change).
// overhead() reports the measured fraction, the steps skipped and what each kind of summary
// costs, and each sample its interval, so that a window can show "sampling every ~N steps
// (budget 5%)". The forward hooks that stay on the modules (a flag test per call) are in the
// measure through the unsampled steps' length only as far as the training time includes them.
//
// The hooks reduce on the thread that trains; the samples wait in a bounded queue that drops
// the oldest when full, so a slow reader never holds training up. Each sampled tensor also
// leaves up to kKeptValues of its values (a stratified random sample), a byte each (Kept), in
// a series that keeps the kRecentSteps most recent sampled steps and a thinned set of
// kEarlySteps older ones, so that rebin() can redraw a histogram over any range and zoom later.
//
// Threads: add, remove and the step calls touch the model's hook tables, so they run on the
// thread that runs the model (TrainingSession does that for you); take_samples, dropped,
// rebin and series run on any thread. Probes draw no numbers from nns generators, so they
// never change a training run.
#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/nn/module.h"
#include "engine/train/attention_maps.h"
#include "engine/train/sampling_budget.h"

namespace nns::train {

using ProbeId = int64_t;

struct ProbeOptions {
  bool activations = true;  // forward hook: the module's outputs
  bool gradients = true;    // full backward hook: gradients w.r.t. outputs and inputs
  bool parameters = true;   // tensor hooks: parameter gradients and update-to-weight ratio
  int64_t every = 10;       // sample every N steps (>= 1)
  // Skip a step `every` picks while all probes cost more than this fraction of the training
  // time (see above); 0: sample exactly every N steps. In [0, 1].
  double max_overhead = 0.05;
};

// What a sample describes.
enum class ProbeKind {
  Activation,  // a module output ("output", or "output.1", ... for several)
  GradOutput,  // gradient w.r.t. a module output ("output", ...)
  GradInput,   // gradient w.r.t. a module input ("input", "input.1", ...)
  ParamGrad,   // gradient of a parameter, named as in the module's named_parameters ("weight")
  // The attention weights per head of a MultiheadAttention in the module's tree (the module
  // itself, or a Transformer layer's self_attn), named by its path below the module ("" or
  // "self_attn"); ProbeSample::attention holds the map of the batch's first sequence.
  Attention,
};
constexpr int kProbeKinds = 5;
// "activation", "grad_output", "grad_input", "param_grad", "attention".
std::string probe_kind_name(ProbeKind kind);

// The probes' measured cost (any thread).
struct ProbeOverhead {
  double fraction = 0;  // probe time / training time, over the run so far
  int64_t sampled = 0;  // steps sampled, summed over the probes
  int64_t skipped = 0;  // steps `every` picked that the budget skipped, summed over the probes
  int64_t forced = 0;   // of the sampled, those the floor took although the budget was spent
  // What summarizing a tensor costs, per kind of sample: tensors summarized (a sample's
  // statistics, histogram and kept values) and the seconds they took.
  struct KindCost {
    int64_t tensors = 0;
    double seconds = 0;
  };
  std::array<KindCost, kProbeKinds> kinds{};
};

constexpr int kHistogramBins = 32;
constexpr size_t kReservoirValues = 4096;
// What a series keeps of a sampled tensor for rebin(): kKeptValues of its values at most, each
// as one of kKeptCodes levels over the step's range (see Probes::Kept).
constexpr size_t kKeptValues = 1024;
constexpr size_t kKeptCodes = 256;
constexpr size_t kRecentSteps = 32;
constexpr size_t kEarlySteps = 32;

// counts[i] values in [lo + i * w, lo + (i + 1) * w), w = (hi - lo) / bins; the last bin
// includes hi. lo and hi are the finite minimum and maximum (one bin when they are equal).
struct Histogram {
  double lo = 0;
  double hi = 0;
  std::vector<int64_t> counts;
};

// What counts as saturated for a module's outputs (see TensorStats): chosen from the
// module's class by saturation_of().
enum class Saturation { None, Tanh, Sigmoid };
Saturation saturation_of(const nn::Module& module);

// A summary of one tensor. A probe summarizes a tensor of more than kReservoirValues
// elements from its kept sample (see Probes): the moments, fractions and extremes are then
// estimates, and the counts (histogram, nonfinite) and the norm are scaled to the whole tensor.
// summarize() always reads every element. Non-finite values are counted in `nonfinite` and left out
// of everything else. std is the unbiased one (torch.std). saturated_fraction depends on the
// module: for Tanh and Hardtanh outputs the fraction with |x| > 0.97, for Sigmoid and
// Hardsigmoid outputs the fraction below 0.03 or above 0.97 (within 3% of the ends of the
// range); NaN for anything else (no bounded range to saturate).
struct TensorStats {
  int64_t numel = 0;
  int64_t nonfinite = 0;
  double mean = 0;
  double std = 0;
  double min = 0;
  double max = 0;
  double norm = 0;           // L2 norm of the finite values
  double zero_fraction = 0;  // exact zeros (dead ReLU-like units)
  double saturated_fraction = 0;
  Histogram histogram;
};

struct ProbeSample {
  ProbeId probe = 0;
  std::string module;  // the probed module's name in the model
  int64_t step = 0;
  ProbeKind kind = ProbeKind::Activation;
  std::string tensor;  // "output", "input.1", "weight", ...
  TensorStats stats;
  // ParamGrad only: ||w_after - w_before|| / ||w_after|| over the optimizer's step (NaN when
  // the step did not change the parameter's storage or ||w|| is 0). For a parameter of more
  // than kReservoirValues elements, estimated over a stratified sample of that many.
  double update_ratio = 0;
  // Steps since this probe's previous sampled step (0 for its first): `every`, or a multiple
  // of it when the overhead budget skipped steps.
  int64_t interval = 0;
  // Attention only: the weights per head for the first sequence of the sampled batch.
  AttentionMap attention;
};

// A histogram re-binned from the reservoir: one row per kept step in the range.
struct Rebinned {
  std::vector<int64_t> steps;
  // counts[row][bin]: the kept values in the bin, scaled by numel / kept values so that a
  // row estimates the whole tensor's histogram.
  std::vector<std::vector<double>> counts;
};

struct ProbeInfo {
  ProbeId id = 0;
  std::string module;
  ProbeOptions options;
};

class Probes {
 public:
  // queue_capacity: samples kept for take_samples() before the oldest are dropped.
  explicit Probes(nn::ModulePtr model, size_t queue_capacity = 4096);
  ~Probes();
  Probes(const Probes&) = delete;
  Probes& operator=(const Probes&) = delete;

  // module_name as in model->named_modules() ("" is the model itself); checked by
  // check_probe(). id 0 takes the next free id; a caller that hands out ids itself (a
  // session, whose add_probe answers before the hooks are placed) passes its own.
  ProbeId add(const std::string& module_name, const ProbeOptions& options = {}, ProbeId id = 0);
  // Removes every hook the probe placed and its kept values; false for an unknown id.
  bool remove(ProbeId id);
  void clear();
  std::vector<ProbeInfo> list() const;
  // Hooks a probe has placed right now (its forward hook, plus the backward and tensor hooks
  // of a sampled step); 0 for an unknown id.
  size_t hook_count(ProbeId id) const;

  // The training loop's calls, in this order, once per step.
  void begin_step(int64_t step);
  void before_optimizer_step();
  void end_step();
  // Whether a probe samples the step begun (its hooks then read the step's tensors).
  bool sampling() const { return any_sampling_; }

  // Any thread.
  std::vector<ProbeSample> take_samples();
  int64_t dropped() const;
  ProbeOverhead overhead() const;
  // Kept steps in [first_step, last_step] of one series, re-binned into `bins` bins over
  // [lo, hi] (values outside are left out). Empty for an unknown series.
  Rebinned rebin(ProbeId id, ProbeKind kind, const std::string& tensor, int64_t first_step,
                 int64_t last_step, double lo, double hi, int bins) const;
  // The steps a series keeps values for, oldest first.
  std::vector<int64_t> kept_steps(ProbeId id, ProbeKind kind, const std::string& tensor) const;

  // What a series keeps of one sampled tensor: up to kKeptValues of its values (all of a small
  // tensor, else a stratified sample), each as the index of its kKeptCodes-th of [lo, hi], the
  // summary's range. A byte a value keeps a small model's whole history within a few
  // megabytes: the first touch of fresh memory costs more than the summaries.
  // looked: the values the codes stand for, non-finite ones (not coded) included.
  struct Kept {
    double lo = 0;
    double hi = 0;
    int64_t looked = 0;
    std::vector<uint8_t> codes;
  };

 private:
  struct Probe;
  struct ParamBefore;
  struct Series;
  using SeriesKey = std::tuple<ProbeId, ProbeKind, std::string>;

  void install_step_hooks(Probe& probe);
  void record(Probe& probe, ProbeKind kind, const std::string& tensor, const Tensor& value,
              Saturation saturation);
  // Not "emit": Qt defines that word as a macro, and the window includes this header.
  void publish(ProbeSample sample);
  // A tensor's series, made at its first sample. Only the training thread (remove()) drops
  // one, so the reference holds while a hook works with it.
  Series& series_of(const SeriesKey& key);
  void keep(Series& series, int64_t step, int64_t numel, Kept kept);
  // Storage for a series' next codes: those of an entry that left the series (keep() gives
  // them back), else some the probe made when it was placed, so that a sampled step
  // allocates nothing.
  std::vector<uint8_t> spare_codes(Probe& probe, Series& series);
  // Adds a tensor summarized since `start` to its kind's cost.
  void count_kind(ProbeKind kind, std::chrono::steady_clock::time_point start);

  nn::ModulePtr model_;
  std::map<ProbeId, std::unique_ptr<Probe>> probes_;
  ProbeId next_id_ = 1;
  int64_t step_ = 0;
  uint64_t rng_state_ = 0x9E3779B97F4A7C15ULL;

  // The overhead budget (training thread, see above) and whether a probe samples the step.
  SamplingBudget budget_;
  bool any_sampling_ = false;
  std::array<ProbeOverhead::KindCost, kProbeKinds> kinds_{};  // copied to overhead_

  mutable std::mutex queue_mutex_;
  // The samples not taken yet, oldest first from queue_oldest_ on (a ring once it holds
  // queue_capacity_). take_samples swaps it with taken_ (under take_mutex_) and empties that
  // on its own thread: two buffers that keep their storage, so that publishing allocates
  // neither a node per sample nor, once they have grown, fresh memory.
  std::vector<ProbeSample> queue_;
  size_t queue_oldest_ = 0;
  std::mutex take_mutex_;
  std::vector<ProbeSample> taken_;
  size_t queue_capacity_;
  int64_t dropped_ = 0;
  ProbeOverhead overhead_;  // under queue_mutex_

  std::vector<float> scratch_;  // a large tensor's reservoir (training thread)
  std::vector<double> after_;   // a parameter's values after the optimizer's step
  // The gradients summarized in the sampled step (see record()), held until its end, with the
  // series that kept their codes first.
  struct Seen {
    Tensor tensor;
    TensorStats stats;
    const Series* series;
  };
  std::vector<Seen> seen_;

  mutable std::mutex series_mutex_;
  std::map<SeriesKey, std::unique_ptr<Series>> series_;
};

// KeyError naming the module and listing module_names for a name not among them; ValueError
// when every < 1, max_overhead is outside [0, 1] or the options probe nothing.
void check_probe(const std::vector<std::string>& module_names, const std::string& module_name,
                 const ProbeOptions& options);

// The summary a probe makes of a tensor (any floating dtype, any layout).
TensorStats summarize(const Tensor& tensor, Saturation saturation = Saturation::None,
                      int bins = kHistogramBins);

}  // namespace nns::train
