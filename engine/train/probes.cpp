#include "engine/train/probes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/error.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A float32 or float64 contiguous tensor with the same values (itself when it is one).
Tensor flat_values(const Tensor& tensor) {
  NoGradGuard no_grad;
  Tensor t = tensor.detach();
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64) t = t.to(kFloat32);
  return t.contiguous();
}

// One pass for the moments, extremes and counts, one for the histogram. Eight independent
// lanes let the compiler vectorize what a single accumulator would serialize; the first pass
// has no branches (a non-finite value adds zero and leaves the extremes alone) for the same
// reason, and the saturation rule is a template argument so that the loop holds no test of it.
template <Saturation S, class T>
TensorStats summarize_values(const T* x, int64_t n, int bins) {
  constexpr int L = 8;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double sum[L] = {}, sumsq[L] = {};
  double lo[L], hi[L];
  int64_t zeros[L] = {}, saturated[L] = {}, nonfinite[L] = {};
  std::fill(lo, lo + L, kInf);
  std::fill(hi, hi + L, -kInf);
  // |v| <= max is isfinite(v) in a form the vectorizer accepts, the tests combine with & and
  // | (&& and || would be branches), and the lambda is inlined so that the lane loop below is
  // one vector body. The tail goes to lane 0.
  constexpr double kMax = std::numeric_limits<double>::max();
  auto visit = [&](int l, double v) __attribute__((always_inline)) {
    const bool finite = std::abs(v) <= kMax;
    const double f = finite ? v : 0.0;
    nonfinite[l] += finite ? 0 : 1;
    sum[l] += f;
    sumsq[l] += f * f;
    lo[l] = std::min(lo[l], finite ? v : kInf);
    hi[l] = std::max(hi[l], finite ? v : -kInf);
    zeros[l] += v == 0 ? 1 : 0;
    if constexpr (S == Saturation::Tanh) {
      saturated[l] += finite & (std::abs(v) > 0.97) ? 1 : 0;
    } else if constexpr (S == Saturation::Sigmoid) {
      saturated[l] += finite & ((v < 0.03) | (v > 0.97)) ? 1 : 0;
    }
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int l = 0; l < L; ++l) visit(l, static_cast<double>(x[i + l]));
  }
  for (; i < n; ++i) visit(0, static_cast<double>(x[i]));

  TensorStats s;
  s.numel = n;
  double total = 0, total_sq = 0, mn = lo[0], mx = hi[0];
  int64_t z = 0, sat = 0;
  for (int l = 0; l < L; ++l) {
    total += sum[l];
    total_sq += sumsq[l];
    mn = std::min(mn, lo[l]);
    mx = std::max(mx, hi[l]);
    z += zeros[l];
    sat += saturated[l];
    s.nonfinite += nonfinite[l];
  }
  const int64_t finite = n - s.nonfinite;
  s.histogram.counts.assign(static_cast<size_t>(std::max(bins, 1)), 0);
  if (finite == 0) {
    s.mean = s.std = s.min = s.max = kNaN;
    s.zero_fraction = s.saturated_fraction = kNaN;
    return s;
  }
  const double count = static_cast<double>(finite);
  s.mean = total / count;
  s.std = finite > 1 ? std::sqrt(std::max(0.0, (total_sq - total * s.mean) / (count - 1))) : 0;
  s.min = mn;
  s.max = mx;
  s.norm = std::sqrt(total_sq);
  s.zero_fraction = static_cast<double>(z) / count;
  s.saturated_fraction = S == Saturation::None ? kNaN : static_cast<double>(sat) / count;
  s.histogram.lo = mn;
  s.histogram.hi = mx;
  const size_t nbins = s.histogram.counts.size();
  if (!(mx > mn)) {
    s.histogram.counts.assign(1, finite);
    return s;
  }
  const double scale = static_cast<double>(nbins) / (mx - mn);
  // Bin indices are computed a chunk at a time in a loop the compiler vectorizes (clamped
  // before the conversion so that it is defined for every value), then counted into four
  // partial histograms: runs of values in one bin (the zeros after a ReLU) would otherwise
  // wait on each other's increment. A non-finite value lands in an extra bin that is dropped.
  constexpr int H = 4;
  constexpr int64_t kChunk = 256;
  const auto last = static_cast<int64_t>(nbins) - 1;
  const size_t stride = nbins + 1;
  std::vector<int64_t> partial(H * stride, 0);
  int64_t index[kChunk];
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    for (int64_t j = 0; j < m; ++j) {
      const double v = static_cast<double>(x[begin + j]);
      const double at = (v - mn) * scale;
      // last when at is at or past it, or not a number.
      const double clamped = at < static_cast<double>(last) ? at : static_cast<double>(last);
      index[j] = std::abs(v) <= kMax ? static_cast<int64_t>(clamped) : last + 1;
    }
    int64_t j = 0;
    for (; j + H <= m; j += H) {
      for (int h = 0; h < H; ++h) ++partial[h * stride + static_cast<size_t>(index[j + h])];
    }
    for (; j < m; ++j) ++partial[static_cast<size_t>(index[j])];
  }
  for (size_t b = 0; b < nbins; ++b) {
    for (int h = 0; h < H; ++h) s.histogram.counts[b] += partial[h * stride + b];
  }
  return s;
}

template <class T>
TensorStats summarize_values(const T* x, int64_t n, Saturation saturation, int bins) {
  switch (saturation) {
    case Saturation::Tanh:
      return summarize_values<Saturation::Tanh>(x, n, bins);
    case Saturation::Sigmoid:
      return summarize_values<Saturation::Sigmoid>(x, n, bins);
    case Saturation::None:
      break;
  }
  return summarize_values<Saturation::None>(x, n, bins);
}

// splitmix64: the probes' own random numbers (never an nns generator, so that probing does
// not change a training run).
uint64_t next_random(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Up to kReservoirValues values: all of them for a small tensor, else one random value from
// each of kReservoirValues equal blocks (a stratified sample: every region is represented).
template <class T>
std::vector<float> sample_values(const T* x, int64_t n, uint64_t& rng) {
  std::vector<float> out;
  const auto k = static_cast<int64_t>(kReservoirValues);
  if (n <= k) {
    out.assign(x, x + n);
    return out;
  }
  out.resize(static_cast<size_t>(k));
  for (int64_t b = 0; b < k; ++b) {
    const int64_t begin = b * n / k;
    const int64_t end = (b + 1) * n / k;
    const int64_t at =
        begin + static_cast<int64_t>(next_random(rng) % static_cast<uint64_t>(end - begin));
    out[static_cast<size_t>(b)] = static_cast<float>(x[at]);
  }
  return out;
}

// A probe's summary of a flat tensor whose kept values are `values`. A tensor larger than the
// reservoir is summarized from that stratified sample (counts and the norm scaled up to the
// whole tensor): scanning every element of every probed tensor would cost more than the step.
template <class T>
TensorStats summarize_sampled(const T* x, int64_t n, Saturation saturation,
                              const std::vector<float>& values) {
  if (n <= static_cast<int64_t>(kReservoirValues)) {
    return summarize_values(x, n, saturation, kHistogramBins);
  }
  TensorStats s = summarize_values(values.data(), static_cast<int64_t>(values.size()), saturation,
                                   kHistogramBins);
  const double scale = static_cast<double>(n) / static_cast<double>(values.size());
  s.numel = n;
  s.nonfinite = static_cast<int64_t>(std::llround(static_cast<double>(s.nonfinite) * scale));
  s.norm *= std::sqrt(scale);
  for (int64_t& c : s.histogram.counts) {
    c = static_cast<int64_t>(std::llround(static_cast<double>(c) * scale));
  }
  return s;
}

std::string indexed_name(const char* base, size_t i, size_t count) {
  return count == 1 ? std::string(base) : std::string(base) + "." + std::to_string(i);
}

// ||after - before|| / ||after||.
double update_ratio(const Tensor& before, const Tensor& after) {
  const Tensor a = flat_values(after);
  const Tensor b = flat_values(before.to(a.dtype()));
  double diff = 0, norm = 0;
  auto accumulate = [&](const auto* pa, const auto* pb) {
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double d = static_cast<double>(pa[i]) - static_cast<double>(pb[i]);
      diff += d * d;
      norm += static_cast<double>(pa[i]) * static_cast<double>(pa[i]);
    }
  };
  if (a.dtype() == kFloat32) {
    accumulate(a.data_ptr<float>(), b.data_ptr<float>());
  } else {
    accumulate(a.data_ptr<double>(), b.data_ptr<double>());
  }
  return norm > 0 ? std::sqrt(diff) / std::sqrt(norm) : kNaN;
}

}  // namespace

std::string probe_kind_name(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::Activation:
      return "activation";
    case ProbeKind::GradOutput:
      return "grad_output";
    case ProbeKind::GradInput:
      return "grad_input";
    case ProbeKind::ParamGrad:
      return "param_grad";
  }
  return "?";
}

Saturation saturation_of(const nn::Module& module) {
  const std::string name = module.name();
  if (name == "Tanh" || name == "Hardtanh") return Saturation::Tanh;
  if (name == "Sigmoid" || name == "Hardsigmoid") return Saturation::Sigmoid;
  return Saturation::None;
}

TensorStats summarize(const Tensor& tensor, Saturation saturation, int bins) {
  const Tensor t = flat_values(tensor);
  if (t.dtype() == kFloat32) {
    return summarize_values(t.data_ptr<float>(), t.numel(), saturation, bins);
  }
  return summarize_values(t.data_ptr<double>(), t.numel(), saturation, bins);
}

struct Probes::Probe {
  ProbeInfo info;
  nn::ModulePtr module;
  Saturation saturation = Saturation::None;
  std::vector<std::pair<std::string, Tensor>> params;
  RemovableHandle forward;
  std::vector<RemovableHandle> step_hooks;
  bool sampling = false;
  // Per parameter, on a sampled step: its gradient's sample (waiting for the update ratio)
  // and its value before the optimizer's step.
  std::vector<std::optional<ProbeSample>> pending;
  std::vector<Tensor> before;
};

struct Probes::Series {
  struct Entry {
    int64_t step;
    int64_t numel;
    std::vector<float> values;
  };
  std::deque<Entry> recent;
  std::vector<Entry> early;
  int64_t evicted = 0;  // entries that left `recent` so far
  int64_t stride = 1;   // `early` keeps the evicted entries whose ordinal is a multiple of it
};

Probes::Probes(nn::ModulePtr model, size_t queue_capacity)
    : model_(std::move(model)), queue_capacity_(std::max<size_t>(queue_capacity, 1)) {
  if (!model_) throw ValueError("Probes: the model is null; pass the model to probe");
}

Probes::~Probes() {
  clear();
}

void check_probe(const std::vector<std::string>& module_names, const std::string& module_name,
                 const ProbeOptions& options) {
  if (std::find(module_names.begin(), module_names.end(), module_name) == module_names.end()) {
    std::string names;
    for (const std::string& name : module_names)
      names += (names.empty() ? "'" : ", '") + name + "'";
    throw KeyError("add_probe: the model has no module named '" + module_name +
                   "'; its modules are " + names);
  }
  if (options.every < 1) {
    throw ValueError("add_probe('" + module_name + "'): every must be at least 1, got " +
                     std::to_string(options.every));
  }
  if (!options.activations && !options.gradients && !options.parameters) {
    throw ValueError("add_probe('" + module_name +
                     "'): activations, gradients and parameters are all off; turn one on");
  }
}

ProbeId Probes::add(const std::string& module_name, const ProbeOptions& options, ProbeId id) {
  std::vector<std::string> names;
  nn::ModulePtr module;
  for (auto& [name, m] : model_->named_modules()) {
    if (name == module_name) module = m;
    names.push_back(name);
  }
  check_probe(names, module_name, options);
  if (id == 0) id = next_id_;
  if (probes_.count(id)) {
    throw ValueError("add_probe('" + module_name + "'): probe id " + std::to_string(id) +
                     " is taken");
  }
  next_id_ = std::max(next_id_, id + 1);
  auto probe = std::make_unique<Probe>();
  Probe* p = probe.get();
  p->info = {id, module_name, options};
  p->module = module;
  p->saturation = saturation_of(*module);
  if (options.parameters) {
    for (auto& [name, param] : module->named_parameters()) {
      if (param.requires_grad()) p->params.emplace_back(name, param);
    }
  }
  // The forward hook stays for the probe's life so that the probe is visibly on its module;
  // it costs one flag test on the steps it does not sample.
  p->forward = module->register_forward_hook(
      [this, p](nn::Module&, const std::vector<Tensor>&,
                const std::vector<Tensor>& outputs) -> std::optional<std::vector<Tensor>> {
        if (!p->sampling || !p->info.options.activations) return std::nullopt;
        for (size_t i = 0; i < outputs.size(); ++i) {
          record(*p, ProbeKind::Activation, indexed_name("output", i, outputs.size()), outputs[i],
                 p->saturation);
        }
        return std::nullopt;
      });
  // A probe added in the middle of a sampled step starts at the next step.
  probes_.emplace(id, std::move(probe));
  return id;
}

bool Probes::remove(ProbeId id) {
  auto it = probes_.find(id);
  if (it == probes_.end()) return false;
  Probe& p = *it->second;
  p.forward.remove();
  for (RemovableHandle& h : p.step_hooks) h.remove();
  probes_.erase(it);
  std::lock_guard<std::mutex> lock(series_mutex_);
  for (auto s = series_.begin(); s != series_.end();) {
    s = std::get<0>(s->first) == id ? series_.erase(s) : std::next(s);
  }
  return true;
}

void Probes::clear() {
  while (!probes_.empty()) remove(probes_.begin()->first);
}

std::vector<ProbeInfo> Probes::list() const {
  std::vector<ProbeInfo> out;
  for (const auto& [id, p] : probes_) out.push_back(p->info);
  return out;
}

size_t Probes::hook_count(ProbeId id) const {
  auto it = probes_.find(id);
  return it == probes_.end() ? 0 : 1 + it->second->step_hooks.size();
}

void Probes::install_step_hooks(Probe& probe) {
  Probe* p = &probe;
  if (p->info.options.gradients) {
    p->step_hooks.push_back(p->module->register_full_backward_hook(
        [this, p](nn::Module&, const std::vector<Tensor>& grad_input,
                  const std::vector<Tensor>& grad_output) -> std::optional<std::vector<Tensor>> {
          for (size_t i = 0; i < grad_output.size(); ++i) {
            record(*p, ProbeKind::GradOutput, indexed_name("output", i, grad_output.size()),
                   grad_output[i], Saturation::None);
          }
          for (size_t i = 0; i < grad_input.size(); ++i) {
            record(*p, ProbeKind::GradInput, indexed_name("input", i, grad_input.size()),
                   grad_input[i], Saturation::None);
          }
          return std::nullopt;
        }));
  }
  p->pending.assign(p->params.size(), std::nullopt);
  p->before.assign(p->params.size(), Tensor());
  for (size_t i = 0; i < p->params.size(); ++i) {
    p->step_hooks.push_back(p->params[i].second.register_hook(
        std::function<void(const Tensor&)>([this, p, i](const Tensor& grad) {
          if (!grad.defined()) return;
          const Tensor flat = flat_values(grad);
          ProbeSample sample;
          sample.probe = p->info.id;
          sample.module = p->info.module;
          sample.step = step_;
          sample.kind = ProbeKind::ParamGrad;
          sample.tensor = p->params[i].first;
          std::vector<float> values;
          if (flat.dtype() == kFloat32) {
            values = sample_values(flat.data_ptr<float>(), flat.numel(), rng_state_);
            sample.stats =
                summarize_sampled(flat.data_ptr<float>(), flat.numel(), Saturation::None, values);
          } else {
            values = sample_values(flat.data_ptr<double>(), flat.numel(), rng_state_);
            sample.stats =
                summarize_sampled(flat.data_ptr<double>(), flat.numel(), Saturation::None, values);
          }
          sample.update_ratio = kNaN;
          p->pending[i] = std::move(sample);
          keep({p->info.id, ProbeKind::ParamGrad, p->params[i].first}, step_, flat.numel(),
               std::move(values));
        })));
  }
}

void Probes::begin_step(int64_t step) {
  step_ = step;
  for (auto& [id, p] : probes_) {
    p->sampling = (step - 1) % p->info.options.every == 0;
    if (p->sampling) install_step_hooks(*p);
  }
}

void Probes::before_optimizer_step() {
  NoGradGuard no_grad;
  for (auto& [id, p] : probes_) {
    if (!p->sampling) continue;
    for (size_t i = 0; i < p->params.size(); ++i) {
      if (p->pending[i]) p->before[i] = p->params[i].second.detach().clone();
    }
  }
}

void Probes::end_step() {
  for (auto& [id, p] : probes_) {
    if (!p->sampling) continue;
    for (size_t i = 0; i < p->params.size(); ++i) {
      if (!p->pending[i]) continue;
      ProbeSample sample = std::move(*p->pending[i]);
      if (p->before[i].defined()) {
        sample.update_ratio = update_ratio(p->before[i], p->params[i].second);
      }
      publish(std::move(sample));
    }
    for (RemovableHandle& h : p->step_hooks) h.remove();
    p->step_hooks.clear();
    p->pending.clear();
    p->before.clear();
    p->sampling = false;
  }
}

void Probes::record(Probe& probe, ProbeKind kind, const std::string& tensor, const Tensor& value,
                    Saturation saturation) {
  if (!value.defined() || !value.is_floating_point()) return;
  const Tensor flat = flat_values(value);
  ProbeSample sample;
  sample.probe = probe.info.id;
  sample.module = probe.info.module;
  sample.step = step_;
  sample.kind = kind;
  sample.tensor = tensor;
  std::vector<float> values;
  if (flat.dtype() == kFloat32) {
    values = sample_values(flat.data_ptr<float>(), flat.numel(), rng_state_);
    sample.stats = summarize_sampled(flat.data_ptr<float>(), flat.numel(), saturation, values);
  } else {
    values = sample_values(flat.data_ptr<double>(), flat.numel(), rng_state_);
    sample.stats = summarize_sampled(flat.data_ptr<double>(), flat.numel(), saturation, values);
  }
  keep({probe.info.id, kind, tensor}, step_, flat.numel(), std::move(values));
  publish(std::move(sample));
}

void Probes::publish(ProbeSample sample) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (queue_.size() >= queue_capacity_) {
    queue_.pop_front();
    ++dropped_;
  }
  queue_.push_back(std::move(sample));
}

void Probes::keep(const SeriesKey& key, int64_t step, int64_t numel, std::vector<float> values) {
  std::lock_guard<std::mutex> lock(series_mutex_);
  std::unique_ptr<Series>& slot = series_[key];
  if (!slot) slot = std::make_unique<Series>();
  Series& s = *slot;
  // The same tensor seen twice in a step (a module called twice) keeps the last values.
  if (!s.recent.empty() && s.recent.back().step == step) s.recent.pop_back();
  s.recent.push_back({step, numel, std::move(values)});
  if (s.recent.size() <= kRecentSteps) return;
  Series::Entry old = std::move(s.recent.front());
  s.recent.pop_front();
  if (s.evicted++ % s.stride != 0) return;
  s.early.push_back(std::move(old));
  if (s.early.size() <= kEarlySteps) return;
  // Full: keep every other one and halve the rate at which later ones are taken, so the
  // early steps stay spread evenly over the whole history.
  std::vector<Series::Entry> thinned;
  for (size_t i = 0; i < s.early.size(); i += 2) thinned.push_back(std::move(s.early[i]));
  s.early = std::move(thinned);
  s.stride *= 2;
}

std::vector<ProbeSample> Probes::take_samples() {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  std::vector<ProbeSample> out(std::make_move_iterator(queue_.begin()),
                               std::make_move_iterator(queue_.end()));
  queue_.clear();
  return out;
}

int64_t Probes::dropped() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return dropped_;
}

Rebinned Probes::rebin(ProbeId id, ProbeKind kind, const std::string& tensor, int64_t first_step,
                       int64_t last_step, double lo, double hi, int bins) const {
  if (bins < 1 || !(hi > lo)) {
    throw ValueError("rebin: need bins >= 1 and hi > lo, got bins=" + std::to_string(bins) +
                     ", lo=" + std::to_string(lo) + ", hi=" + std::to_string(hi));
  }
  Rebinned out;
  std::lock_guard<std::mutex> lock(series_mutex_);
  auto it = series_.find({id, kind, tensor});
  if (it == series_.end()) return out;
  const double scale = bins / (hi - lo);
  auto add = [&](const Series::Entry& e) {
    if (e.step < first_step || e.step > last_step) return;
    std::vector<double> row(static_cast<size_t>(bins), 0.0);
    const double weight =
        e.values.empty() ? 0 : static_cast<double>(e.numel) / static_cast<double>(e.values.size());
    for (float v : e.values) {
      if (!(v >= lo && v <= hi)) continue;
      const auto b = std::min(static_cast<size_t>((v - lo) * scale), static_cast<size_t>(bins - 1));
      row[b] += weight;
    }
    out.steps.push_back(e.step);
    out.counts.push_back(std::move(row));
  };
  for (const Series::Entry& e : it->second->early) add(e);
  for (const Series::Entry& e : it->second->recent) add(e);
  return out;
}

std::vector<int64_t> Probes::kept_steps(ProbeId id, ProbeKind kind,
                                        const std::string& tensor) const {
  std::vector<int64_t> out;
  std::lock_guard<std::mutex> lock(series_mutex_);
  auto it = series_.find({id, kind, tensor});
  if (it == series_.end()) return out;
  for (const Series::Entry& e : it->second->early) out.push_back(e.step);
  for (const Series::Entry& e : it->second->recent) out.push_back(e.step);
  return out;
}

}  // namespace nns::train
