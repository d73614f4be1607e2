// SPDX-License-Identifier: GPL-3.0-or-later
// Random fills that reproduce PyTorch 1.13's CPU kernels number for number: the same draws
// from the Mersenne Twister, consumed in the same order, turned into values by the same
// arithmetic. The references are ATen's DistributionsHelper.h / TransformationHelper.h
// (how one draw becomes a number) and native/cpu/DistributionTemplates.h (how a tensor is
// filled). PyTorch is compiled by GCC with floating-point contraction on, so where its
// source writes `a * b + c` the machine computes fma(a, b, c); std::fma below stands for
// exactly those fused operations. No other product here feeds an addition, so the results
// do not depend on how this file itself is compiled.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>

#include <Eigen/Core>

#include "engine/autograd/grad_mode.h"
#include "engine/backend/cuda_graph.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/nn_kernels.h"
#include "engine/tensor/factories.h"

namespace nns {
namespace {

constexpr double kPi = 3.14159265358979323846;

Generator& pick(Generator* generator) {
  return generator != nullptr ? *generator : default_generator();
}

std::string num(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// at::uniform_real_distribution keeps as many low bits of one draw as the type's mantissa
// holds (24 for float, 11 for half, 8 for bfloat16), so every value is exact in that type.
float uniform_float(Generator& g, int digits) {
  const uint32_t mask = (uint32_t{1} << digits) - 1;
  return static_cast<float>(g.random() & mask) * (1.0f / static_cast<float>(uint32_t{1} << digits));
}

double uniform_double(Generator& g) {
  constexpr uint64_t kMask = (uint64_t{1} << 53) - 1;
  return static_cast<double>(g.random64() & kMask) * (1.0 / static_cast<double>(uint64_t{1} << 53));
}

int mantissa_digits(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float16:
      return 11;
    case Dtype::BFloat16:
      return 8;
    default:
      return 24;
  }
}

// v rounded to a float16/bfloat16 tensor's type (unchanged for float32).
float round_to(Dtype dtype, float v) {
  switch (dtype) {
    case Dtype::Float16:
      return static_cast<float>(Eigen::half(v));
    case Dtype::BFloat16:
      return static_cast<float>(Eigen::bfloat16(v));
    default:
      return v;
  }
}

// at::normal_distribution<double>: Box-Muller on two doubles; the sine half of the pair is
// kept on the generator for the next call.
double standard_normal(Generator& g) {
  if (g.next_double_normal_sample) {
    const double cached = *g.next_double_normal_sample;
    g.next_double_normal_sample.reset();
    return cached;
  }
  const double u1 = uniform_double(g);
  const double u2 = uniform_double(g);
  const double r = std::sqrt(-2.0 * std::log(1.0 - u2));
  const double theta = 2.0 * kPi * u1;
  g.next_double_normal_sample = r * std::sin(theta);
  return r * std::cos(theta);
}

// PyTorch's AVX2 float32 normal fill does not call libm: it uses the Cephes-style
// polynomial log and sincos of avx_mathfun.h. These scalar versions evaluate the same
// polynomials with the same roundings, so the results agree bit for bit on every machine.
float cephes_log(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  // Split x into a mantissa in [0.5, 1) and an exponent; the inputs here are in (0, 1], so
  // neither denormals nor non-positive values occur.
  const int exponent = static_cast<int>(bits >> 23) - 0x7f;
  bits = (bits & ~0x7f800000u) | 0x3f000000u;
  float m;
  std::memcpy(&m, &bits, sizeof m);
  float e = static_cast<float>(exponent) + 1.0f;
  if (m < 0.707106781186547524f) {
    e = e - 1.0f;
    m = (m - 1.0f) + m;
  } else {
    m = m - 1.0f;
  }
  const float z = m * m;
  float y = std::fma(7.0376836292e-2f, m, -1.1514610310e-1f);
  y = std::fma(y, m, 1.1676998740e-1f);
  y = std::fma(y, m, -1.2420140846e-1f);
  y = std::fma(y, m, 1.4249322787e-1f);
  y = std::fma(y, m, -1.6668057665e-1f);
  y = std::fma(y, m, 2.0000714765e-1f);
  y = std::fma(y, m, -2.4999993993e-1f);
  y = std::fma(y, m, 3.3333331174e-1f);
  y = y * m;
  y = std::fma(y, z, e * -2.12194440e-4f);
  y = std::fma(-z, 0.5f, y);
  return std::fma(e, 0.693359375f, m + y);
}

void cephes_sincos(float x, float& sin_out, float& cos_out) {
  const bool negative = std::signbit(x);
  x = std::fabs(x);
  // Octant j (made even) of x, then x reduced to [-pi/4, pi/4] in three exact-ish steps.
  int32_t j = static_cast<int32_t>(x * 1.27323954473516f);
  j = (j + 1) & ~1;
  const float y = static_cast<float>(j);
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  const float z = x * x;
  float c = std::fma(2.443315711809948e-5f, z, -1.388731625493765e-3f);
  c = std::fma(c, z, 4.166664568298827e-2f);
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = std::fma(-1.9515295891e-4f, z, 8.3321608736e-3f);
  s = std::fma(s, z, -1.6666654611e-1f);
  s = s * z;
  s = std::fma(s, x, x);
  const bool swap_polynomials = (j & 2) != 0;
  float sine = swap_polynomials ? c : s;
  float cosine = swap_polynomials ? s : c;
  if (negative != ((j & 4) != 0)) sine = -sine;
  if (((j - 2) & 4) == 0) cosine = -cosine;
  sin_out = sine;
  cos_out = cosine;
}

// One block of 16 uniforms becomes 16 normals: element j and j + 8 are a Box-Muller pair.
void normal_fill_16(float* data, float mean, float std) {
  const float two_pi = static_cast<float>(2.0 * kPi);
  for (int j = 0; j < 8; ++j) {
    const float radius = std::sqrt(-2.0f * cephes_log(1.0f - data[j]));
    float sine, cosine;
    cephes_sincos(two_pi * data[j + 8], sine, cosine);
    data[j] = std::fma(radius * cosine, std, mean);
    data[j + 8] = std::fma(radius * sine, std, mean);
  }
}

void normal_fill_16(double* data, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - data[j]));
    const double theta = 2.0 * kPi * data[j + 8];
    data[j] = std::fma(radius * std::cos(theta), std, mean);
    data[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}

// float16 / bfloat16: PyTorch computes this block in the storage type; we compute it in
// float32 with libm and round once, so the draws match but the last bit may not.
void normal_fill_16_low_precision(float* data, float mean, float std) {
  const float two_pi = static_cast<float>(2.0 * kPi);
  for (int j = 0; j < 8; ++j) {
    const float radius = std::sqrt(-2.0f * std::log(1.0f - data[j]));
    const float theta = two_pi * data[j + 8];
    data[j] = std::fma(radius * std::cos(theta), std, mean);
    data[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}

// PyTorch's normal_fill: all n uniforms first, then the blocks of 16; when n is not a
// multiple of 16, the last 16 elements are drawn again and transformed as one more block.
template <class T, class Draw, class Block>
void chunked_normal(T* data, int64_t n, Draw draw, Block block) {
  for (int64_t i = 0; i < n; ++i) data[i] = draw();
  for (int64_t i = 0; i + 16 <= n; i += 16) block(data + i);
  if (n % 16 != 0) {
    T* tail = data + n - 16;
    for (int i = 0; i < 16; ++i) tail[i] = draw();
    block(tail);
  }
}

template <class T>
constexpr Dtype dtype_of() {
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  if constexpr (std::is_same_v<T, double>) return kFloat64;
  if constexpr (std::is_same_v<T, int64_t>) return kInt64;
}

// Writes `produce(T* out, n)` into t in the order PyTorch's TensorIterator visits an output:
// memory order (dims by decreasing stride), which is the logical order for a contiguous
// tensor. Values are produced in T and converted to t's dtype on the way in.
template <class T, class Produce>
void fill_in_memory_order(Tensor& t, const char* op, Produce produce) {
  const int64_t n = t.numel();
  if (n == 0) return;
  if (!t.device().is_cpu()) {
    Tensor host = empty(t.sizes(), TensorOptions(t.dtype()));
    fill_in_memory_order<T>(host, op, produce);
    NoGradGuard no_grad;
    t.copy_(host);
    return;
  }
  if (t.dtype() == dtype_of<T>() && t.is_contiguous()) {
    produce(t.data_ptr<T>(), n);
    t.bump_version();
    return;
  }
  Shape order(static_cast<size_t>(t.dim()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  Shape sizes, strides;
  for (int64_t d : order) {
    sizes.push_back(t.size(d));
    strides.push_back(t.stride(d));
  }
  Tensor buffer = empty(sizes, TensorOptions(dtype_of<T>()));
  produce(buffer.data_ptr<T>(), n);
  TensorView dst;
  dst.data = t.raw_data();
  dst.dtype = t.dtype();
  dst.sizes = sizes;
  dst.strides = strides;
  kernels<CopyKernels>(t.device(), op).copy(dst, view_of(buffer));
  t.bump_version();
}

void check_fillable(const Tensor& t, const char* op) {
  if (!t.defined()) throw ValueError(std::string(op) + ": the tensor is undefined");
  if (!t.is_floating_point()) {
    throw DtypeError(std::string(op) + ": expected a floating point tensor, got " +
                     dtype_name(t.dtype()) + "; convert it with .to(kFloat32) first");
  }
  if (GradMode::is_enabled() && t.requires_grad()) {
    throw AutogradError(std::string(op) +
                        ": the tensor requires grad, so filling it in place would hide the "
                        "fill from autograd; do it under NoGradGuard (as nn::init does)");
  }
}

void check_floating_dtype(Dtype dtype, const char* op, const char* hint) {
  if (!is_floating_point(dtype)) {
    throw DtypeError(std::string(op) + ": expected a floating point dtype, got " +
                     dtype_name(dtype) + "; " + hint);
  }
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor& uniform_(Tensor& t, double from, double to, Generator* generator) {
  check_fillable(t, "uniform_");
  if (!(from <= to)) {
    throw ValueError("uniform_: expects from <= to, got from=" + num(from) + " and to=" + num(to));
  }
  Generator& g = pick(generator);
  std::lock_guard<std::mutex> lock(g.mutex);
  if (t.dtype() == kFloat64) {
    fill_in_memory_order<double>(t, "uniform_", [&](double* out, int64_t n) {
      for (int64_t i = 0; i < n; ++i) out[i] = std::fma(uniform_double(g), to - from, from);
    });
  } else {
    // PyTorch casts from and to to the tensor's type and subtracts them in it (c10::Half
    // arithmetic rounds its result to half), then draws in float.
    const int digits = mantissa_digits(t.dtype());
    const float lo = round_to(t.dtype(), static_cast<float>(from));
    const float span = round_to(t.dtype(), round_to(t.dtype(), static_cast<float>(to)) - lo);
    fill_in_memory_order<float>(t, "uniform_", [&](float* out, int64_t n) {
      for (int64_t i = 0; i < n; ++i) out[i] = std::fma(uniform_float(g, digits), span, lo);
    });
  }
  return t;
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* generator) {
  check_fillable(t, "normal_");
  if (!(std >= 0)) throw ValueError("normal_: expects std >= 0.0, got std=" + num(std));
  Generator& g = pick(generator);
  std::lock_guard<std::mutex> lock(g.mutex);
  const int64_t n = t.numel();
  // PyTorch fills big contiguous tensors in Box-Muller blocks of 16 and everything else one
  // element at a time from at::normal_distribution<double>.
  if (n >= 16 && t.is_contiguous()) {
    if (t.dtype() == kFloat64) {
      fill_in_memory_order<double>(t, "normal_", [&](double* out, int64_t count) {
        chunked_normal(
            out, count, [&] { return uniform_double(g); },
            [&](double* block) { normal_fill_16(block, mean, std); });
      });
    } else {
      const int digits = mantissa_digits(t.dtype());
      const float m = static_cast<float>(mean);
      const float s = static_cast<float>(std);
      const bool exact = t.dtype() == kFloat32;
      fill_in_memory_order<float>(t, "normal_", [&](float* out, int64_t count) {
        chunked_normal(
            out, count, [&] { return uniform_float(g, digits); },
            [&](float* block) {
              if (exact) {
                normal_fill_16(block, m, s);
              } else {
                normal_fill_16_low_precision(block, m, s);
              }
            });
      });
    }
  } else {
    fill_in_memory_order<double>(t, "normal_", [&](double* out, int64_t count) {
      for (int64_t i = 0; i < count; ++i) out[i] = std::fma(standard_normal(g), std, mean);
    });
  }
  return t;
}

Tensor rand(const Shape& shape, TensorOptions options, Generator* generator) {
  check_floating_dtype(options.dtype(), "rand", "use randint for integers");
  Tensor t = empty(shape, TensorOptions(options.dtype()).device(options.device()));
  uniform_(t, 0, 1, generator);
  return finish(t, options);
}

Tensor randn(const Shape& shape, TensorOptions options, Generator* generator) {
  check_floating_dtype(options.dtype(), "randn", "pass kFloat32 or kFloat64");
  Tensor t = empty(shape, TensorOptions(options.dtype()).device(options.device()));
  normal_(t, 0, 1, generator);
  return finish(t, options);
}

Tensor rand_like(const Tensor& t, Generator* generator) {
  return rand(t.sizes(), TensorOptions(t.dtype()).device(t.device()), generator);
}

Tensor randn_like(const Tensor& t, Generator* generator) {
  return randn(t.sizes(), TensorOptions(t.dtype()).device(t.device()), generator);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options,
               Generator* generator) {
  if (low >= high) {
    throw ValueError("randint: low (" + std::to_string(low) + ") must be less than high (" +
                     std::to_string(high) + ")");
  }
  if (options.dtype() == kBool) {
    throw DtypeError("randint: torch.bool cannot hold integers in [" + std::to_string(low) + ", " +
                     std::to_string(high) + "); use kInt64 or a floating dtype");
  }
  if (options.requires_grad()) {
    throw AutogradError("randint: integers cannot require grad; drop requires_grad(true)");
  }
  Tensor t = empty(shape, TensorOptions(options.dtype()).device(options.device()));
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  Generator& g = pick(generator);
  std::lock_guard<std::mutex> lock(g.mutex);
  // Ranges that fit in 32 bits use one draw per value, wider ones two (random64).
  const bool wide = range >= (uint64_t{1} << 32);
  fill_in_memory_order<int64_t>(t, "randint", [&](int64_t* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t draw = wide ? g.random64() : g.random();
      out[i] = static_cast<int64_t>(draw % range + static_cast<uint64_t>(low));
    }
  });
  return t;
}

Tensor randperm(int64_t n, Generator* generator) {
  if (n < 0) throw ValueError("randperm: n must be non-negative, got " + std::to_string(n));
  Tensor t = empty({n}, TensorOptions(kInt64));
  int64_t* p = t.data_ptr<int64_t>();
  std::iota(p, p + n, int64_t{0});
  Generator& g = pick(generator);
  std::lock_guard<std::mutex> lock(g.mutex);
  // PyTorch 1.13's CPU randperm: a forward Fisher-Yates with one 32-bit draw per swap.
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t z = static_cast<int64_t>(g.random() % static_cast<uint64_t>(n - i));
    std::swap(p[i], p[i + z]);
  }
  return t;
}

Tensor bernoulli_mask(const Shape& shape, double p_keep, TensorOptions options,
                      Generator* generator) {
  if (!(p_keep >= 0 && p_keep <= 1)) {
    throw ValueError("bernoulli_mask: the keep probability must be in [0, 1], got " + num(p_keep));
  }
  Tensor t = empty(shape, TensorOptions(options.dtype()).device(options.device()));
  Generator& g = pick(generator);
  std::lock_guard<std::mutex> lock(g.mutex);
  if (!t.device().is_cpu() && t.is_floating_point()) {
    // On a GPU the mask is drawn there, by a counter-based generator (Philox) keyed by one
    // draw of this generator: the same seed gives the same masks, and inside a CUDA graph
    // each replay draws its key as this call would have.
    const uint64_t seed = g.random64();
    const uint64_t* device_seed = cuda::Graph::scalars<uint64_t>(seed, [&g] {
      std::lock_guard<std::mutex> replay_lock(g.mutex);
      return g.random64();
    });
    kernels<NNKernels>(t.device(), "dropout")
        .bernoulli_philox(view_of(t), p_keep, seed, device_seed);
    t.bump_version();
    return t;
  }
  // PyTorch's bernoulli_(p) compares one double uniform per element with p, whatever the
  // dtype of the tensor. Dropout makes a float32 mask every step: write those directly.
  auto produce = [&](auto* out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = uniform_double(g) < p_keep ? 1 : 0;
  };
  if (t.dtype() == kFloat32) {
    fill_in_memory_order<float>(t, "bernoulli_mask", produce);
  } else {
    fill_in_memory_order<double>(t, "bernoulli_mask", produce);
  }
  return t;
}

}  // namespace nns
