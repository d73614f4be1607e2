// SPDX-License-Identifier: GPL-3.0-or-later
// CPU elementwise kernels: the loops around the formulas of engine/backend/elementwise_formulas.h
// (the CUDA kernels run the same functors). The whole tensor is one run when every operand is
// contiguous, else for_each_run gives runs along the merged innermost dim. A run whose operands
// are contiguous or broadcast (one value) goes a SIMD vector at a time where the formula has
// a SIMD form (engine/cpu/vectorized.h), the rest one element at a time; float32 tanh goes
// through a float64 buffer, vectorized there.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/backend/elementwise_formulas.h"
#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/cpu/strided_loop.h"
#include "engine/cpu/vectorized.h"

namespace nns::cpu {

namespace {

// All-zero strides for a scalar seen as a tensor of any rank, without a heap allocation for
// the usual ranks.
class ZeroStrides {
 public:
  std::span<const int64_t> get(size_t ndim) {
    static constexpr std::array<int64_t, 16> kZeros{};
    if (ndim <= kZeros.size()) return {kZeros.data(), ndim};
    heap_.assign(ndim, 0);
    return heap_;
  }

 private:
  std::vector<int64_t> heap_;
};

bool all_zero(std::span<const int64_t> strides) {
  for (int64_t s : strides) {
    if (s != 0) return false;
  }
  return true;
}

template <size_t N>
StridedOperands<N> operands(const std::array<const TensorView*, N>& views,
                            const std::array<int64_t, N>& element_sizes) {
  StridedOperands<N> ops;
  for (size_t k = 0; k < N; ++k) {
    ops.data[k] = static_cast<char*>(views[k]->data);
    ops.strides[k] = views[k]->strides;
    ops.element_size[k] = element_sizes[k];
  }
  return ops;
}

// ---- the loops ----------------------------------------------------------------------------

// float32 tanh (ew::TanhFloat's formula) over a contiguous run, a chunk at a time through a
// float64 buffer: the widening and narrowing loops vectorize, and so does the float64 exp on
// the buffer, where one value at a time the float64 exp runs several times slower.
void tanh_float(const float* x, float* y, int64_t n) {
  using ew::TanhFloat;
  using V = Vectorized<double>;
  constexpr int64_t kChunk = 1024;
  alignas(64) double buf[kChunk];
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    const float* xs = x + begin;
    for (int64_t j = 0; j < m; ++j) buf[j] = TanhFloat::clamp(xs[j]);
    int64_t j = 0;
    if constexpr (has_vectorized<double>) {
      for (; j + V::kSize <= m; j += V::kSize)
        TanhFloat::tanh_core(V::load(buf + j)).store(buf + j);
    }
    for (; j < m; ++j) buf[j] = TanhFloat::tanh_core(buf[j]);
    for (j = 0; j < m; ++j) y[begin + j] = TanhFloat::finish(xs[j], buf[j]);
  }
}

// Whether formula F runs on SIMD vectors with these operand types: all one type that has them.
template <class F, class TO, class... TI>
constexpr bool kSimdLoop =
    std::conjunction_v<std::bool_constant<ew::simd_formula<F>>,
                       std::bool_constant<has_vectorized<TO>>, std::is_same<TO, TI>...>;

// out[i] = f(in...[i]) over the first len elements of contiguous operands, a vector at a time.
// Returns how many it did.
template <class T, class F, size_t N, size_t... I>
int64_t simd_contiguous(const F& f, T* out, const std::array<const char*, N>& in, int64_t len,
                        std::index_sequence<I...>) {
  using V = Vectorized<T>;
  constexpr int64_t K = V::kSize;
  const std::array<const T*, N> p{reinterpret_cast<const T*>(in[I])...};
  int64_t i = 0;
  for (; i + K <= len; i += K) f(V::load(p[I] + i)...).store(out + i);
  return i;
}

// The same where some operands are broadcast: each reads a vector of copies of its value
// instead of advancing.
template <class T, class F, size_t N, size_t... I>
int64_t simd_broadcast(const F& f, T* out, const std::array<const char*, N>& in,
                       const std::array<bool, N>& broadcast, int64_t len,
                       std::index_sequence<I...>) {
  using V = Vectorized<T>;
  constexpr int64_t K = V::kSize;
  alignas(64) T copies[N][K];
  std::array<const T*, N> p;
  std::array<int64_t, N> step;
  for (size_t k = 0; k < N; ++k) {
    p[k] = reinterpret_cast<const T*>(in[k]);
    step[k] = broadcast[k] ? 0 : K;
    if (broadcast[k]) {
      std::fill_n(copies[k], K, *p[k]);
      p[k] = copies[k];
    }
  }
  int64_t i = 0;
  for (; i + K <= len; i += K) {
    f(V::load(p[I])...).store(out + i);
    ((p[I] += step[I]), ...);
  }
  return i;
}

// out[i] = f(in...[i]) over one run of len elements, each input contiguous or broadcast.
template <class TO, class... TI, class F, size_t... I>
void contiguous_run(const F& f, TO* out, const std::array<const char*, sizeof...(TI)>& in,
                    const std::array<bool, sizeof...(TI)>& broadcast, int64_t len,
                    std::index_sequence<I...> seq) {
  if constexpr (std::is_same_v<F, ew::Tanh<float>>) {
    if (!broadcast[0]) return tanh_float(reinterpret_cast<const float*>(in[0]), out, len);
  }
  int64_t i = 0;
  if (!(broadcast[I] || ...)) {
    if constexpr (kSimdLoop<F, TO, TI...>) i = simd_contiguous<TO>(f, out, in, len, seq);
    const std::tuple<const TI*...> p{reinterpret_cast<const TI*>(in[I])...};
    for (; i < len; ++i) out[i] = f(std::get<I>(p)[i]...);
    return;
  }
  if constexpr (kSimdLoop<F, TO, TI...>) i = simd_broadcast<TO>(f, out, in, broadcast, len, seq);
  const std::array<int64_t, sizeof...(TI)> step{
      (broadcast[I] ? 0 : static_cast<int64_t>(sizeof(TI)))...};
  for (; i < len; ++i) out[i] = f(*reinterpret_cast<const TI*>(in[I] + i * step[I])...);
}

// The same over any byte strides.
template <class TO, class... TI, class F, size_t... I>
void strided_run(const F& f, char* out, int64_t out_stride,
                 const std::array<const char*, sizeof...(TI)>& in,
                 const std::array<int64_t, sizeof...(TI)>& strides, int64_t len,
                 std::index_sequence<I...>) {
  for (int64_t i = 0; i < len; ++i) {
    *reinterpret_cast<TO*>(out + i * out_stride) =
        f(*reinterpret_cast<const TI*>(in[I] + i * strides[I])...);
  }
}

// out = f(in...) elementwise; TO is out's element type, TI... the inputs' (given explicitly).
template <class TO, class... TI, class F, size_t... I>
void elementwise_impl(const F& f, const TensorView& out,
                      const std::array<const TensorView*, sizeof...(TI)>& in,
                      std::index_sequence<I...> seq) {
  const int64_t n = out.numel();
  if (n == 0) return;
  constexpr size_t N = sizeof...(TI);
  const auto data = [&](size_t k) { return static_cast<const char*>(in[k]->data); };
  if (out.is_contiguous() && ((in[I]->is_contiguous() || all_zero(in[I]->strides)) && ...)) {
    const std::array<bool, N> broadcast{(n > 1 && all_zero(in[I]->strides))...};
    contiguous_run<TO, TI...>(f, out.ptr<TO>(), {data(I)...}, broadcast, n, seq);
    return;
  }
  const auto ops = operands<N + 1>({&out, in[I]...}, {int64_t{sizeof(TO)}, int64_t{sizeof(TI)}...});
  for_each_run(out.sizes, ops,
               [&](std::array<char*, N + 1> p, std::array<int64_t, N + 1> s, int64_t len) {
                 const std::array<const char*, N> at{p[I + 1]...};
                 if (s[0] == sizeof(TO) && ((s[I + 1] == sizeof(TI) || s[I + 1] == 0) && ...)) {
                   contiguous_run<TO, TI...>(f, reinterpret_cast<TO*>(p[0]), at,
                                             {(s[I + 1] == 0)...}, len, seq);
                 } else {
                   strided_run<TO, TI...>(f, p[0], s[0], at, {s[I + 1]...}, len, seq);
                 }
               });
}

template <class TO, class... TI, class F, class... View>
void elementwise(const F& f, const TensorView& out, const View&... in) {
  elementwise_impl<TO, TI...>(f, out, {&in...}, std::index_sequence_for<TI...>{});
}

// ---- the kernels --------------------------------------------------------------------------

void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
            double alpha, double beta) {
  ew::dispatch_binary(op, out.dtype, alpha, beta, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    elementwise<T, T, T>(f, out, a, b);
  });
}

// The scalar, converted to the tensor's dtype as PyTorch does, as a broadcast operand.
void binary_scalar(BinaryOp op, const TensorView& out, const TensorView& a, double scalar,
                   bool scalar_first) {
  ew::dispatch_binary(op, out.dtype, 1, 0, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    const T value = static_cast<T>(scalar);
    ZeroStrides zeros;
    const TensorView sv{const_cast<T*>(&value), out.dtype, out.sizes, zeros.get(out.sizes.size())};
    if (scalar_first) {
      elementwise<T, T, T>(f, out, sv, a);
    } else {
      elementwise<T, T, T>(f, out, a, sv);
    }
  });
}

void unary(UnaryOp op, const TensorView& out, const TensorView& a, double alpha, double beta) {
  ew::dispatch_unary(op, out.dtype, alpha, beta, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    elementwise<T, T>(f, out, a);
  });
}

void compare(CompareOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  ew::dispatch_compare(op, a.dtype, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    elementwise<bool, T, T>(f, out, a, b);
  });
}

void compare_scalar(CompareOp op, const TensorView& out, const TensorView& a, double scalar) {
  ew::dispatch_compare(op, a.dtype, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    const T value = static_cast<T>(scalar);
    ZeroStrides zeros;
    const TensorView sv{const_cast<T*>(&value), a.dtype, out.sizes, zeros.get(out.sizes.size())};
    elementwise<bool, T, T>(f, out, a, sv);
  });
}

void where(const TensorView& out, const TensorView& condition, const TensorView& a,
           const TensorView& b) {
  dispatch_arithmetic(
      out.dtype, "where",
      [&](auto tag) {
        using T = decltype(tag);
        elementwise<T, bool, T, T>(ew::Where<T>{}, out, condition, a, b);
      },
      /*allow_bool=*/true);
}

void ternary(TernaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
             const TensorView& c, double value) {
  ew::dispatch_ternary(op, out.dtype, value, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    elementwise<T, T, T, T>(f, out, a, b, c);
  });
}

// ---- non-finite checks --------------------------------------------------------------------

void isfinite(const TensorView& out, const TensorView& a) {
  dispatch_floating(a.dtype, "isfinite", [&](auto tag) {
    using T = decltype(tag);
    elementwise<bool, T>(ew::IsFinite<T>{}, out, a);
  });
}

bool any_non_finite(const TensorView& a) {
  return dispatch_floating(a.dtype, "any_non_finite", [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = a.numel();
    if (a.is_contiguous()) {
      // Blocks of a loop the compiler vectorizes, stopping at the first block with a NaN or an
      // infinity: a value is not finite when its exponent bits are all ones, a test on the
      // bits that ORs together without branches (Eigen's isFinite() runs about ten times
      // slower, and a training session runs this over every gradient of every step).
      using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
      constexpr Bits kExponent =
          static_cast<Bits>(sizeof(T) == 4 ? 0x7F800000ull : 0x7FF0000000000000ull);
      constexpr int64_t kBlock = 4096;
      const T* p = a.ptr<const T>();
      for (int64_t i = 0; i < n; i += kBlock) {
        const int64_t m = std::min(kBlock, n - i);
        Bits bad = 0;
        for (int64_t j = 0; j < m; ++j) {
          bad |= static_cast<Bits>((std::bit_cast<Bits>(p[i + j]) & kExponent) == kExponent);
        }
        if (bad) return true;
      }
      return false;
    }
    bool found = false;
    const auto ops = operands<1>({&a}, {int64_t{sizeof(T)}});
    for_each_run(a.sizes, ops, [&](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t len) {
      for (int64_t i = 0; i < len && !found; ++i) {
        found = !ew::is_finite(*reinterpret_cast<const T*>(p[0] + i * s[0]));
      }
    });
    return found;
  });
}

}  // namespace

const ElementwiseKernels elementwise_kernels{&binary,  &binary_scalar,  &unary,
                                             &compare, &compare_scalar, &where,
                                             &ternary, &isfinite,       &any_non_finite};

}  // namespace nns::cpu
