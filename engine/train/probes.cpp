// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/probes.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include <Eigen/Core>

#include "engine/autograd/grad_mode.h"
#include "engine/nn/rnn.h"
#include "engine/ops/indexing.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A float32 or float64 contiguous CPU tensor with the same values (itself when it is one). A
// GPU tensor is copied to the host whole; summarizing on the device and bringing back only the
// summary would copy less.
// A tensor's values on the host, flat, float32 or float64: all of them, or only those at the
// flat positions `at`, picked where the tensor lives (a GPU's large activation does not cross
// to the host whole: only the reservoir's values do).
Tensor flat_values(const Tensor& tensor, const std::vector<int64_t>* at = nullptr) {
  NoGradGuard no_grad;
  Tensor t = tensor.detach();
  if (at != nullptr) {
    const Tensor positions =
        from_vector(*at, {static_cast<int64_t>(at->size())}, TensorOptions(kInt64));
    t = index_select(t.reshape({-1}), 0, positions.to(t.device()));
  }
  t = t.to(kCPU);
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64) t = t.to(kFloat32);
  return t.contiguous();
}

// Whether a tensor's values can be read where they are: a contiguous float tensor on the host
// (most of what a CPU run probes); anything else goes through flat_values, whose tensor
// operations cost more than the summary of a small activation.
bool readable_in_place(const Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.is_contiguous() &&
         (tensor.dtype() == kFloat32 || tensor.dtype() == kFloat64);
}

// A parameter's values as float64 into `out` (whose storage is reused), all of them or those
// at the flat positions `at`: read in place where it can be (readable_in_place), through
// flat_values otherwise.
void param_values(const Tensor& param, const std::vector<int64_t>* at, std::vector<double>& out) {
  const auto read = [&](const auto* x) {
    if (at == nullptr) {
      out.resize(static_cast<size_t>(param.numel()));
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
      Eigen::Map<Eigen::ArrayXd>(out.data(), param.numel()) =
          Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x, param.numel())
              .template cast<double>();
    } else {
      out.clear();
      for (int64_t i : *at) out.push_back(static_cast<double>(x[i]));
    }
  };
  if (!readable_in_place(param)) {
    out = flat_values(param, at).to(kFloat64).to_vector<double>();
  } else if (param.dtype() == kFloat32) {
    read(param.data_ptr<float>());
  } else {
    read(param.data_ptr<double>());
  }
}

// The first pass's figures: sums, extremes and counts of the finite values.
struct Moments {
  double total = 0;
  double total_sq = 0;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  int64_t zeros = 0;
  int64_t saturated = 0;
  int64_t nonfinite = 0;
};

// Values within 3% of the ends of a saturating activation's range (see TensorStats).
template <Saturation S, class A>
int64_t count_saturated(const A& a) {
  if constexpr (S == Saturation::Tanh) {
    return (a.abs() > 0.97).count();
  } else if constexpr (S == Saturation::Sigmoid) {
    return ((a < 0.03) || (a > 0.97)).count();
  } else {
    return 0;
  }
}

// Values a chunk at a time, as float64 (their sums are kept in float64).
constexpr int64_t kChunk = 256;
template <class T>
Eigen::Map<const Eigen::ArrayXd> as_doubles(const T* x, int64_t n, double* buffer) {
  if constexpr (std::is_same_v<T, double>) {
    return Eigen::Map<const Eigen::ArrayXd>(x, n);
  } else {
    for (int64_t j = 0; j < n; ++j) buffer[j] = static_cast<double>(x[j]);
    return Eigen::Map<const Eigen::ArrayXd>(buffer, n);
  }
}

// The usual case, every value finite, through Eigen's vectorized reductions (a pass each over
// a chunk already in the cache; extremes and zeros are exact in the values' own type);
// nullopt when a value is not finite, or the squares overflow. Eigen vectorizes at any
// optimization level, the loop below only at -O3.
template <Saturation S, class T>
std::optional<Moments> finite_moments(const T* x, int64_t n) {
  Moments m;
  double buffer[kChunk];
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const auto d = as_doubles(x + begin, std::min(kChunk, n - begin), buffer);
    m.total += d.sum();
    m.total_sq += d.square().sum();
    m.saturated += count_saturated<S>(d);
  }
  if (!std::isfinite(m.total) || !std::isfinite(m.total_sq)) return std::nullopt;
  const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> a(x, n);
  m.lo = static_cast<double>(a.minCoeff());
  m.hi = static_cast<double>(a.maxCoeff());
  m.zeros = (a == T(0)).count();
  return m;
}

// Any values, non-finite ones counted and left out. Eight independent lanes let the compiler
// vectorize what a single accumulator would serialize; the pass has no branches (a non-finite
// value adds zero and leaves the extremes alone) for the same reason.
template <Saturation S, class T>
Moments moments_of_finite(const T* x, int64_t n) {
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
  Moments m;
  for (int l = 0; l < L; ++l) {
    m.total += sum[l];
    m.total_sq += sumsq[l];
    m.lo = std::min(m.lo, lo[l]);
    m.hi = std::max(m.hi, hi[l]);
    m.zeros += zeros[l];
    m.saturated += saturated[l];
    m.nonfinite += nonfinite[l];
  }
  return m;
}

// One pass for the moments, extremes and counts (see above), one for the histogram. The
// saturation rule is a template argument so that the loops hold no test of it.
template <Saturation S, class T>
TensorStats summarize_values(const T* x, int64_t n, int bins) {
  constexpr double kMax = std::numeric_limits<double>::max();
  std::optional<Moments> fast = finite_moments<S>(x, n);
  const Moments m = fast ? *fast : moments_of_finite<S>(x, n);
  TensorStats s;
  s.numel = n;
  s.nonfinite = m.nonfinite;
  const int64_t finite = n - s.nonfinite;
  s.histogram.counts.assign(static_cast<size_t>(std::max(bins, 1)), 0);
  if (finite == 0) {
    s.mean = s.std = s.min = s.max = kNaN;
    s.zero_fraction = s.saturated_fraction = kNaN;
    return s;
  }
  const double count = static_cast<double>(finite);
  const double mn = m.lo;
  const double mx = m.hi;
  s.mean = m.total / count;
  s.std = finite > 1 ? std::sqrt(std::max(0.0, (m.total_sq - m.total * s.mean) / (count - 1))) : 0;
  s.min = mn;
  s.max = mx;
  s.norm = std::sqrt(m.total_sq);
  s.zero_fraction = static_cast<double>(m.zeros) / count;
  s.saturated_fraction = S == Saturation::None ? kNaN : static_cast<double>(m.saturated) / count;
  s.histogram.lo = mn;
  s.histogram.hi = mx;
  const size_t nbins = s.histogram.counts.size();
  if (!(mx > mn)) {
    s.histogram.counts.assign(1, finite);
    return s;
  }
  const double scale = static_cast<double>(nbins) / (mx - mn);
  // Bin indices are computed a chunk at a time (through Eigen when every value is finite,
  // else in a loop that sends a non-finite value to an extra bin that is dropped), clamped
  // before the conversion so that it is defined for every value, then counted into four
  // partial histograms: runs of values in one bin (the zeros after a ReLU) would otherwise
  // wait on each other's increment.
  constexpr int H = 4;
  const auto last = static_cast<int32_t>(nbins) - 1;
  const size_t stride = nbins + 1;
  // On the stack for the usual bin counts: a sample's allocations land on fresh memory.
  constexpr size_t kOnStack = H * (kHistogramBins + 1);
  std::array<int64_t, kOnStack> stack_partial{};
  std::vector<int64_t> heap_partial;
  int64_t* partial = stack_partial.data();
  if (H * stride > stack_partial.size()) {
    heap_partial.assign(H * stride, 0);
    partial = heap_partial.data();
  }
  int32_t index[kChunk];
  double buffer[kChunk];
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m_chunk = std::min(kChunk, n - begin);
    if (fast) {
      Eigen::Map<Eigen::Array<int32_t, Eigen::Dynamic, 1>>(index, m_chunk) =
          ((as_doubles(x + begin, m_chunk, buffer) - mn) * scale)
              .min(static_cast<double>(last))
              .template cast<int32_t>();
    } else {
      for (int64_t j = 0; j < m_chunk; ++j) {
        const double v = static_cast<double>(x[begin + j]);
        const double at = (v - mn) * scale;
        // last when at is at or past it, or not a number.
        const double clamped = at < static_cast<double>(last) ? at : static_cast<double>(last);
        index[j] = std::abs(v) <= kMax ? static_cast<int32_t>(clamped) : last + 1;
      }
    }
    int64_t j = 0;
    for (; j + H <= m_chunk; j += H) {
      for (int h = 0; h < H; ++h) ++partial[h * stride + static_cast<size_t>(index[j + h])];
    }
    for (; j < m_chunk; ++j) ++partial[static_cast<size_t>(index[j])];
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

// Calls f(b, i) for b = 0 .. K - 1 with i one random position in block b of K equal blocks
// of [0, n) (n > K): a stratified sample, every region represented. This runs for every large
// tensor of a sampled step, so it is written to vectorize: block b is [b * n / K, (b + 1) * n /
// K) with K a power of two (a shift, not a division), and its offset comes from a hash of
// (seed, b) mapped onto the block by a multiply and a shift, so that no position depends on
// the one before.
template <size_t K, class F>
void for_each_sampled(int64_t n, uint64_t seed, F&& f) {
  static_assert((K & (K - 1)) == 0, "a power of two");
  constexpr int kShift = std::countr_zero(K);
  const auto un = static_cast<uint64_t>(n);
  for (int64_t b = 0; b < static_cast<int64_t>(K); ++b) {
    const auto ub = static_cast<uint64_t>(b);
    const uint64_t begin = (ub * un) >> kShift;
    const uint64_t len = (((ub + 1) * un) >> kShift) - begin;
    uint64_t z = (seed + ub) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 32)) * 0xD6E8FEB86659FD93ULL;
    f(b, static_cast<int64_t>(begin + (((z >> 32) * len) >> 32)));
  }
}

// The reservoir's positions in a tensor of n > kReservoirValues elements: one random position
// in each of kReservoirValues equal blocks (for_each_sampled).
std::vector<int64_t> sampled_positions(int64_t n, uint64_t& rng) {
  std::vector<int64_t> at(kReservoirValues);
  for_each_sampled<kReservoirValues>(n, next_random(rng),
                                     [&](int64_t b, int64_t i) { at[static_cast<size_t>(b)] = i; });
  return at;
}

// A probe's summary of a tensor and what its series keeps of it (see Probes::Series).
struct ProbeValues {
  TensorStats stats;
  Probes::Kept kept;
  int64_t numel = 0;
};

// The values at one random position in each of kReservoirValues equal blocks of x[0, n),
// written into `values`.
template <class T>
void sampled_values(const T* x, int64_t n, uint64_t& rng, std::vector<float>& values) {
  values.resize(kReservoirValues);
  for_each_sampled<kReservoirValues>(n, next_random(rng), [&](int64_t b, int64_t i) {
    values[static_cast<size_t>(b)] = static_cast<float>(x[i]);
  });
}

// The codes of x[0, m) (all of them, or a stratified sample of kKeptValues) over [lo, hi], the
// range of the summary made from the same values. A code is the bin of 256 over that range,
// computed as the summary's histogram computes its bins (256 is a multiple of its bins, and
// the scale differs by a power of two, which rounds alike), so that re-binning the codes over
// [lo, hi] gives the histogram back exactly. Non-finite values are counted, not coded.
template <class T>
void encode_kept(const T* x, int64_t m, double lo, double hi, uint64_t& rng, Probes::Kept& kept) {
  kept.lo = lo;
  kept.hi = hi;
  kept.codes.clear();
  const double scale = hi > lo ? static_cast<double>(kKeptCodes) / (hi - lo) : 0.0;
  constexpr double kLast = static_cast<double>(kKeptCodes - 1);
  const auto code = [&](T v) {
    const double d = static_cast<double>(v);
    if (!(std::abs(d) <= std::numeric_limits<double>::max())) return;
    kept.codes.push_back(static_cast<uint8_t>(std::min((d - lo) * scale, kLast)));
  };
  if (m <= static_cast<int64_t>(kKeptValues)) {
    kept.looked = m;
    kept.codes.reserve(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) code(x[i]);
  } else {
    kept.looked = static_cast<int64_t>(kKeptValues);
    kept.codes.reserve(kKeptValues);
    for_each_sampled<kKeptValues>(m, next_random(rng), [&](int64_t, int64_t i) { code(x[i]); });
  }
}

// The summary of x[0, m) and what is kept of it.
template <class T>
void summarize_and_keep(const T* x, int64_t m, Saturation saturation, uint64_t& rng,
                        ProbeValues& r) {
  r.stats = summarize_values(x, m, saturation, kHistogramBins);
  encode_kept(x, m, r.stats.min, r.stats.max, rng, r.kept);
}

// `codes`: storage for the kept codes (a spare one of an earlier step, so that a sampled step
// allocates nothing); `scratch`: for the reservoir of a large tensor.
ProbeValues probe_values(const Tensor& tensor, Saturation saturation, uint64_t& rng,
                         std::vector<uint8_t> codes, std::vector<float>& scratch) {
  ProbeValues r;
  r.numel = tensor.numel();
  r.kept.codes = std::move(codes);
  const bool in_place = readable_in_place(tensor);
  if (r.numel <= static_cast<int64_t>(kReservoirValues)) {
    const Tensor flat = in_place ? tensor : flat_values(tensor);
    if (flat.dtype() == kFloat32) {
      summarize_and_keep(flat.data_ptr<float>(), r.numel, saturation, rng, r);
    } else {
      summarize_and_keep(flat.data_ptr<double>(), r.numel, saturation, rng, r);
    }
    return r;
  }
  if (!in_place) {
    const std::vector<int64_t> at = sampled_positions(r.numel, rng);
    const Tensor picked = flat_values(tensor, &at).to(kFloat32);
    const float* x = picked.data_ptr<float>();
    scratch.assign(x, x + picked.numel());
  } else if (tensor.dtype() == kFloat32) {
    sampled_values(tensor.data_ptr<float>(), r.numel, rng, scratch);
  } else {
    sampled_values(tensor.data_ptr<double>(), r.numel, rng, scratch);
  }
  summarize_and_keep(scratch.data(), static_cast<int64_t>(scratch.size()), saturation, rng, r);
  const double scale = static_cast<double>(r.numel) / static_cast<double>(scratch.size());
  r.stats.numel = r.numel;
  r.stats.nonfinite =
      static_cast<int64_t>(std::llround(static_cast<double>(r.stats.nonfinite) * scale));
  r.stats.norm *= std::sqrt(scale);
  for (int64_t& c : r.stats.histogram.counts) {
    c = static_cast<int64_t>(std::llround(static_cast<double>(c) * scale));
  }
  return r;
}

std::string indexed_name(const char* base, size_t i, size_t count) {
  return count == 1 ? std::string(base) : std::string(base) + "." + std::to_string(i);
}

// ||after - before|| / ||after|| over the captured elements.
double update_ratio(const std::vector<double>& after, const std::vector<double>& before) {
  const auto n = static_cast<Eigen::Index>(before.size());
  const Eigen::Map<const Eigen::ArrayXd> a(after.data(), n);
  const Eigen::Map<const Eigen::ArrayXd> b(before.data(), n);
  const double norm = a.square().sum();
  return norm > 0 ? std::sqrt((a - b).square().sum()) / std::sqrt(norm) : kNaN;
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
    case ProbeKind::Attention:
      return "attention";
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

// A parameter's values before the optimizer's step: all of them for a parameter of up to
// kReservoirValues elements, else those at `at`, a stratified sample. Copying and comparing
// whole parameters on every sampled step cost more than the training step of a large model;
// the ratio over a stratified sample estimates the whole one (both norms scale alike).
// Kept from step to step (valid only in a sampled one), so that its storage is reused.
struct Probes::ParamBefore {
  bool valid = false;
  int64_t numel = 0;
  std::vector<int64_t> at;
  std::vector<double> values;
};

struct Probes::Probe {
  ProbeInfo info;
  nn::ModulePtr module;
  Saturation saturation = Saturation::None;
  std::vector<std::pair<std::string, Tensor>> params;
  RemovableHandle forward;
  std::vector<RemovableHandle> step_hooks;
  // The attention modules in the probed module's tree, recording on sampled steps only.
  AttentionModules attention;
  std::unique_ptr<AttentionRecording> recording;
  // A probed RNN, LSTM or GRU, whose gates record on sampled steps only.
  std::shared_ptr<nn::RNNBase> recurrent;
  bool sampling = false;
  // Its place in the run's sampling; schedule.interval is the sampled step's
  // ProbeSample::interval.
  SamplingBudget::Schedule schedule;
  // Per parameter, on a sampled step: its gradient's sample (waiting for the update ratio)
  // and its value before the optimizer's step.
  std::vector<std::optional<ProbeSample>> pending;
  std::vector<ParamBefore> before;
  // Code storage made when the probe is placed, for its series' entries until they recycle
  // their own (see spare_codes()).
  std::vector<std::vector<uint8_t>> placed_codes;
};

struct Probes::Series {
  struct Entry {
    int64_t step;
    int64_t numel;
    Kept kept;
  };
  std::deque<Entry> recent;
  std::vector<Entry> early;
  // Code storage of entries that left the series, for the next steps' (see spare_codes()).
  std::vector<std::vector<uint8_t>> spare;
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
  if (!(options.max_overhead >= 0 && options.max_overhead <= 1)) {
    throw ValueError(
        "add_probe('" + module_name + "'): max_overhead must be a fraction in [0, 1] " +
        "(0: sample exactly every N steps), got " + std::to_string(options.max_overhead));
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
  p->attention = attention_modules(module);
  p->recurrent = std::dynamic_pointer_cast<nn::RNNBase>(module);
  if (options.parameters) {
    for (auto& [name, param] : module->named_parameters()) {
      if (param.requires_grad()) p->params.emplace_back(name, param);
    }
  }
  // What its series will keep, allocated and touched now rather than a page at a time in the
  // sampled steps (a fresh page costs microseconds: 9-16 us each on this project's 2-core VM,
  // 2026-11-28): every entry a series holds (recent, early and the one being written) for its
  // output, the two gradients and each parameter, up to kPlacedSeries series (a module with
  // many parameters would hold megabytes it may never fill). Others allocate as they go.
  constexpr size_t kPlacedSeries = 16;
  const size_t series = std::min(kPlacedSeries, (options.activations ? 1 : 0) +
                                                    (options.gradients ? 2 : 0) + p->params.size());
  p->placed_codes.resize(series * (kRecentSteps + kEarlySteps + 1));
  for (std::vector<uint8_t>& codes : p->placed_codes) {
    codes.assign(kKeptValues, 0);
    codes.clear();
  }
  // The queue's two buffers likewise, for as many samples as a reader polling ten times a
  // second takes at a time from a fast model's probes (they grow beyond if need be).
  {
    std::scoped_lock lock(take_mutex_, queue_mutex_);
    const size_t placed = std::min<size_t>(queue_capacity_, 1024);
    for (std::vector<ProbeSample>* buffer : {&queue_, &taken_}) {
      if (buffer->capacity() >= placed) continue;
      buffer->resize(placed);
      buffer->clear();
    }
  }
  // The forward hook stays for the probe's life so that the probe is visibly on its module;
  // it costs one flag test on the steps it does not sample.
  p->forward = module->register_forward_hook(
      [this, p](nn::Module&, const std::vector<Tensor>&,
                const std::vector<Tensor>& outputs) -> std::optional<std::vector<Tensor>> {
        if (!p->sampling || !p->info.options.activations) return std::nullopt;
        const CostTimer timer(budget_);
        for (size_t i = 0; i < outputs.size(); ++i) {
          record(*p, ProbeKind::Activation, indexed_name("output", i, outputs.size()), outputs[i],
                 p->saturation);
        }
        if (p->recurrent && p->recurrent->record_gates) {
          // Gate saturation: the sigmoid gates near 0 or 1, the cell (new) gate near -1 or 1.
          for (const auto& [gate, value] : p->recurrent->last_gates) {
            const bool squashed = gate == "cell" || gate == "new";
            record(*p, ProbeKind::Activation, "gates." + gate, value,
                   squashed ? Saturation::Tanh : Saturation::Sigmoid);
          }
          p->recurrent->record_gates = false;
          p->recurrent->last_gates.clear();
        }
        if (p->recording) {
          for (AttentionMap& map : p->recording->maps(0)) {
            const Clock::time_point start = Clock::now();
            ProbeSample sample;
            sample.probe = p->info.id;
            sample.module = p->info.module;
            sample.step = step_;
            sample.kind = ProbeKind::Attention;
            sample.tensor = map.module;
            sample.stats = summarize(from_vector(map.weights, {map.heads, map.queries, map.keys}),
                                     Saturation::None);
            sample.interval = p->schedule.interval;
            sample.attention = std::move(map);
            publish(std::move(sample));
            count_kind(ProbeKind::Attention, start);
          }
          p->recording.reset();
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
          const CostTimer timer(budget_);
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
  p->before.resize(p->params.size());
  for (ParamBefore& b : p->before) b.valid = false;
  for (size_t i = 0; i < p->params.size(); ++i) {
    p->step_hooks.push_back(p->params[i].second.register_hook(
        std::function<void(const Tensor&)>([this, p, i](const Tensor& grad) {
          if (!grad.defined()) return;
          const CostTimer timer(budget_);
          const Clock::time_point start = Clock::now();
          Series& series = series_of({p->info.id, ProbeKind::ParamGrad, p->params[i].first});
          ProbeValues v =
              probe_values(grad, Saturation::None, rng_state_, spare_codes(*p, series), scratch_);
          ProbeSample sample;
          sample.probe = p->info.id;
          sample.module = p->info.module;
          sample.step = step_;
          sample.kind = ProbeKind::ParamGrad;
          sample.tensor = p->params[i].first;
          sample.stats = std::move(v.stats);
          sample.update_ratio = kNaN;
          sample.interval = p->schedule.interval;
          p->pending[i] = std::move(sample);
          keep(series, step_, v.numel, std::move(v.kept));
          count_kind(ProbeKind::ParamGrad, start);
        })));
  }
}

void Probes::begin_step(int64_t step) {
  step_ = step;
  seen_.clear();  // a step that never ended (an exception in its backward) holds none
  any_sampling_ = false;
  budget_.begin_step(step, /*measured=*/!probes_.empty());
  if (probes_.empty()) return;
  bool picked = false;
  for (auto& [id, p] : probes_) {
    p->sampling = false;
    picked = picked || (step - 1) % p->info.options.every == 0;
  }
  if (!picked) return;
  budget_.fold();
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    overhead_.fraction = budget_.fraction();
  }
  int64_t sampled = 0;
  int64_t skipped = 0;
  int64_t forced = 0;
  for (auto& [id, p] : probes_) {
    const ProbeOptions& o = p->info.options;
    if ((step - 1) % o.every != 0) continue;
    const SamplingBudget::Pick pick = budget_.pick(p->schedule, step, o.every, o.max_overhead);
    if (pick == SamplingBudget::Pick::Skipped) {
      ++skipped;
      continue;
    }
    if (pick == SamplingBudget::Pick::Forced) ++forced;
    p->sampling = true;
    ++sampled;
    install_step_hooks(*p);
    if (o.activations && !p->attention.empty()) {
      p->recording = std::make_unique<AttentionRecording>(p->attention);
    }
    if (o.activations && p->recurrent) p->recurrent->record_gates = true;
  }
  any_sampling_ = sampled > 0;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    overhead_.sampled += sampled;
    overhead_.skipped += skipped;
    overhead_.forced += forced;
  }
  budget_.add_cost(seconds_since(*budget_.step_begin()));
}

void Probes::before_optimizer_step() {
  if (!any_sampling_) return;
  const CostTimer timer(budget_);
  NoGradGuard no_grad;
  for (auto& [id, p] : probes_) {
    if (!p->sampling) continue;
    for (size_t i = 0; i < p->params.size(); ++i) {
      if (!p->pending[i]) continue;
      const Tensor& param = p->params[i].second;
      ParamBefore& before = p->before[i];
      before.valid = true;
      before.numel = param.numel();
      before.at.clear();
      if (before.numel > static_cast<int64_t>(kReservoirValues)) {
        before.at = sampled_positions(before.numel, rng_state_);
      }
      param_values(param, before.at.empty() ? nullptr : &before.at, before.values);
    }
  }
}

void Probes::end_step() {
  const bool sampled = any_sampling_;
  if (sampled) {
    any_sampling_ = false;
    const CostTimer timer(budget_);
    for (auto& [id, p] : probes_) {
      if (!p->sampling) continue;
      for (size_t i = 0; i < p->params.size(); ++i) {
        if (!p->pending[i]) continue;
        ProbeSample sample = std::move(*p->pending[i]);
        const Tensor& param = p->params[i].second;
        ParamBefore& b = p->before[i];
        if (b.valid && b.numel == param.numel()) {
          param_values(param, b.at.empty() ? nullptr : &b.at, after_);
          sample.update_ratio = update_ratio(after_, b.values);
        }
        b.valid = false;
        publish(std::move(sample));
      }
      for (RemovableHandle& h : p->step_hooks) h.remove();
      p->step_hooks.clear();
      p->recording.reset();
      if (p->recurrent) {
        p->recurrent->record_gates = false;
        p->recurrent->last_gates.clear();
      }
      p->pending.clear();
      p->sampling = false;
    }
    seen_.clear();
    std::lock_guard<std::mutex> lock(queue_mutex_);
    overhead_.kinds = kinds_;
  }
  budget_.end_step(sampled);
}

void Probes::record(Probe& probe, ProbeKind kind, const std::string& tensor, const Tensor& value,
                    Saturation saturation) {
  if (!value.defined() || !value.is_floating_point()) return;
  const Clock::time_point start = Clock::now();
  Series& series = series_of({probe.info.id, kind, tensor});
  ProbeValues v;
  // A module's grad_input is the grad_output of the module before it (the same tensor): it is
  // summarized once a step.
  const bool gradient = kind == ProbeKind::GradOutput || kind == ProbeKind::GradInput;
  const auto seen = gradient ? std::find_if(seen_.begin(), seen_.end(),
                                            [&](const Seen& s) { return s.tensor.is_same(value); })
                             : seen_.end();
  if (seen != seen_.end()) {
    // Its codes are those its first series kept this step (the last entry there).
    const Kept& first = seen->series->recent.back().kept;
    v.numel = value.numel();
    v.stats = seen->stats;
    v.kept = {first.lo, first.hi, first.looked, spare_codes(probe, series)};
    v.kept.codes.assign(first.codes.begin(), first.codes.end());
  } else {
    v = probe_values(value, saturation, rng_state_, spare_codes(probe, series), scratch_);
    if (gradient) seen_.push_back({value, v.stats, &series});
  }
  ProbeSample sample;
  sample.probe = probe.info.id;
  sample.module = probe.info.module;
  sample.step = step_;
  sample.kind = kind;
  sample.tensor = tensor;
  sample.interval = probe.schedule.interval;
  sample.stats = std::move(v.stats);
  keep(series, step_, v.numel, std::move(v.kept));
  publish(std::move(sample));
  count_kind(kind, start);
}

void Probes::count_kind(ProbeKind kind, Clock::time_point start) {
  ProbeOverhead::KindCost& k = kinds_[static_cast<size_t>(kind)];
  ++k.tensors;
  k.seconds += seconds_since(start);
}

void Probes::publish(ProbeSample sample) {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (queue_.size() < queue_capacity_) return queue_.push_back(std::move(sample));
  // Full: the oldest sample gives its place to this one.
  queue_[queue_oldest_] = std::move(sample);
  queue_oldest_ = (queue_oldest_ + 1) % queue_.size();
  ++dropped_;
}

Probes::Series& Probes::series_of(const SeriesKey& key) {
  std::lock_guard<std::mutex> lock(series_mutex_);
  std::unique_ptr<Series>& slot = series_[key];
  if (!slot) slot = std::make_unique<Series>();
  return *slot;
}

void Probes::keep(Series& s, int64_t step, int64_t numel, Kept kept) {
  std::lock_guard<std::mutex> lock(series_mutex_);
  // The same tensor seen twice in a step (a module called twice) keeps the last values.
  if (!s.recent.empty() && s.recent.back().step == step) {
    s.spare.push_back(std::move(s.recent.back().kept.codes));
    s.recent.pop_back();
  }
  s.recent.push_back({step, numel, std::move(kept)});
  if (s.recent.size() <= kRecentSteps) return;
  Series::Entry old = std::move(s.recent.front());
  s.recent.pop_front();
  if (s.evicted++ % s.stride != 0) return s.spare.push_back(std::move(old.kept.codes));
  s.early.push_back(std::move(old));
  if (s.early.size() <= kEarlySteps) return;
  // Full: keep every other one and halve the rate at which later ones are taken, so the
  // early steps stay spread evenly over the whole history.
  std::vector<Series::Entry> thinned;
  for (size_t i = 0; i < s.early.size(); ++i) {
    if (i % 2 == 0) {
      thinned.push_back(std::move(s.early[i]));
    } else {
      s.spare.push_back(std::move(s.early[i].kept.codes));
    }
  }
  s.early = std::move(thinned);
  s.stride *= 2;
}

std::vector<uint8_t> Probes::spare_codes(Probe& probe, Series& s) {
  std::vector<uint8_t> out;
  std::lock_guard<std::mutex> lock(series_mutex_);
  std::vector<std::vector<uint8_t>>& from = s.spare.empty() ? probe.placed_codes : s.spare;
  if (from.empty()) return out;
  out = std::move(from.back());
  from.pop_back();
  return out;
}

std::vector<ProbeSample> Probes::take_samples() {
  std::lock_guard<std::mutex> taking(take_mutex_);
  size_t oldest = 0;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    queue_.swap(taken_);
    std::swap(oldest, queue_oldest_);
  }
  // The samples are copied out here, on the caller's thread, and both buffers keep their
  // storage: the training thread's publish() then writes into memory it has used before.
  std::vector<ProbeSample> out;
  out.reserve(taken_.size());
  const auto from = taken_.begin() + static_cast<std::ptrdiff_t>(oldest);
  out.insert(out.end(), std::make_move_iterator(from), std::make_move_iterator(taken_.end()));
  out.insert(out.end(), std::make_move_iterator(taken_.begin()), std::make_move_iterator(from));
  taken_.clear();
  return out;
}

int64_t Probes::dropped() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return dropped_;
}

ProbeOverhead Probes::overhead() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return overhead_;
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
    // Each code stands for the middle of its 256th of the entry's range, and for numel /
    // looked of the tensor's values.
    std::array<int64_t, kKeptCodes> per_code{};
    for (uint8_t c : e.kept.codes) ++per_code[c];
    const double weight =
        e.kept.looked == 0 ? 0 : static_cast<double>(e.numel) / static_cast<double>(e.kept.looked);
    const double width = (e.kept.hi - e.kept.lo) / static_cast<double>(kKeptCodes);
    std::vector<double> row(static_cast<size_t>(bins), 0.0);
    for (size_t c = 0; c < kKeptCodes; ++c) {
      if (per_code[c] == 0) continue;
      const double v = e.kept.lo + (static_cast<double>(c) + 0.5) * width;
      if (!(v >= lo && v <= hi)) continue;
      const auto b = std::min(static_cast<size_t>((v - lo) * scale), static_cast<size_t>(bins - 1));
      row[b] += weight * static_cast<double>(per_code[c]);
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
