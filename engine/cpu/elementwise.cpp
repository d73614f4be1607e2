// SPDX-License-Identifier: GPL-3.0-or-later
// CPU elementwise kernels. Each op is an Eigen array expression over maps of the operands:
// the whole tensor at once when every operand is contiguous, else run by run along the merged
// innermost dim of for_each_run. Contiguous runs get plain maps (SIMD), a broadcast operand
// becomes a constant, anything else a strided map. The formulas follow PyTorch's CPU kernels
// term by term, so that results agree with it to the last bit where the math is exact.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/cpu/exp_op.h"
#include "engine/cpu/strided_loop.h"

namespace nns::cpu {

namespace {

template <class T>
using Vec = Eigen::Array<T, Eigen::Dynamic, 1>;
template <class T>
using Map = Eigen::Map<Vec<T>>;
template <class T>
using CMap = Eigen::Map<const Vec<T>>;
using Stride = Eigen::InnerStride<Eigen::Dynamic>;
template <class T>
using SMap = Eigen::Map<Vec<T>, 0, Stride>;
template <class T>
using CSMap = Eigen::Map<const Vec<T>, 0, Stride>;

template <class T>
T* at(char* p) {
  return reinterpret_cast<T*>(p);
}

template <class T>
Stride stride_of(int64_t byte_stride) {
  return Stride(byte_stride / static_cast<int64_t>(sizeof(T)));
}

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

// out = f(in...) where f maps Eigen array expressions to an expression. TO is out's element
// type, TI... the inputs' (given explicitly).
template <class TO, class... TI, class F, size_t... I>
void pointwise_impl(std::index_sequence<I...>, const TensorView& out, const F& f,
                    const std::array<const TensorView*, sizeof...(TI)>& in) {
  const int64_t n = out.numel();
  if (n == 0) return;
  if (out.is_contiguous() && (in[I]->is_contiguous() && ...)) {
    Map<TO>(out.ptr<TO>(), n) = f(CMap<TI>(in[I]->template ptr<const TI>(), n)...);
    return;
  }
  constexpr size_t N = 1 + sizeof...(TI);
  const auto ops = operands<N>({&out, in[I]...}, {int64_t{sizeof(TO)}, int64_t{sizeof(TI)}...});
  for_each_run(out.sizes, ops, [&](std::array<char*, N> p, std::array<int64_t, N> s, int64_t len) {
    if (s[0] == sizeof(TO) && ((s[I + 1] == sizeof(TI)) && ...)) {
      Map<TO>(at<TO>(p[0]), len) = f(CMap<TI>(at<const TI>(p[I + 1]), len)...);
    } else {
      SMap<TO>(at<TO>(p[0]), len, stride_of<TO>(s[0])) =
          f(CSMap<TI>(at<const TI>(p[I + 1]), len, stride_of<TI>(s[I + 1]))...);
    }
  });
}

template <class TO, class... TI, class F, class... V>
void pointwise(const TensorView& out, const F& f, const V&... in) {
  pointwise_impl<TO, TI...>(std::index_sequence_for<TI...>{}, out, f, {&in...});
}

// pointwise for two inputs, with the broadcast-scalar cases (x + 2, bias rows, 1 - x) kept on
// the vectorized path through a constant expression.
template <class TO, class TI, class F>
void binary_loop(const TensorView& out, const TensorView& a, const TensorView& b, const F& f) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const bool out_c = out.is_contiguous();
  if (out_c && a.is_contiguous()) {
    if (b.is_contiguous()) {
      Map<TO>(out.ptr<TO>(), n) = f(CMap<TI>(a.ptr<const TI>(), n), CMap<TI>(b.ptr<const TI>(), n));
      return;
    }
    if (all_zero(b.strides)) {
      Map<TO>(out.ptr<TO>(), n) =
          f(CMap<TI>(a.ptr<const TI>(), n), Vec<TI>::Constant(n, *b.ptr<const TI>()));
      return;
    }
  }
  if (out_c && b.is_contiguous() && all_zero(a.strides)) {
    Map<TO>(out.ptr<TO>(), n) =
        f(Vec<TI>::Constant(n, *a.ptr<const TI>()), CMap<TI>(b.ptr<const TI>(), n));
    return;
  }
  constexpr int64_t so = sizeof(TO), si = sizeof(TI);
  const auto ops = operands<3>({&out, &a, &b}, {so, si, si});
  for_each_run(out.sizes, ops, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t len) {
    const TI* pa = at<const TI>(p[1]);
    const TI* pb = at<const TI>(p[2]);
    if (s[0] == so && s[1] == si && s[2] == si) {
      Map<TO>(at<TO>(p[0]), len) = f(CMap<TI>(pa, len), CMap<TI>(pb, len));
    } else if (s[0] == so && s[1] == si && s[2] == 0) {
      Map<TO>(at<TO>(p[0]), len) = f(CMap<TI>(pa, len), Vec<TI>::Constant(len, *pb));
    } else if (s[0] == so && s[1] == 0 && s[2] == si) {
      Map<TO>(at<TO>(p[0]), len) = f(Vec<TI>::Constant(len, *pa), CMap<TI>(pb, len));
    } else {
      SMap<TO>(at<TO>(p[0]), len, stride_of<TO>(s[0])) =
          f(CSMap<TI>(pa, len, stride_of<TI>(s[1])), CSMap<TI>(pb, len, stride_of<TI>(s[2])));
    }
  });
}

// Element by element with a scalar function, for formulas Eigen has no array form of.
template <class T, size_t N, class F>
void scalar_loop(const std::array<const TensorView*, N>& views, const F& f) {
  std::array<int64_t, N> sizes;
  sizes.fill(sizeof(T));
  for_each_run(views[0]->sizes, operands<N>(views, sizes),
               [&](std::array<char*, N> p, std::array<int64_t, N> s, int64_t len) {
                 for (int64_t i = 0; i < len; ++i) {
                   f(p, i, s);
                 }
               });
}

template <class T>
T& element(char* base, int64_t i, int64_t byte_stride) {
  return *reinterpret_cast<T*>(base + i * byte_stride);
}

// Functors for the formulas that pick between values (relu, clamp, masks). Eigen 3.4 does not
// vectorize select(), so each has a packet form built from compares and bit masks that gives
// the same bits as its scalar form, NaN and -0 included.
template <class T>
struct ReluOp {
  T operator()(T x) const { return x < T(0) ? T(0) : x; }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    return pandnot(x, pcmp_lt(x, pzero(x)));
  }
};

template <class T>
struct LeakyReluOp {
  T slope;
  T operator()(T x) const { return x > T(0) ? x : x * slope; }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(pzero(x), x), x, pmul(x, pset1<P>(slope)));
  }
};

// min(max(x, lo), hi) with std::max/std::min's tie rules; NaN stays NaN (no compare holds).
template <class T>
struct ClampOp {
  T lo, hi;
  T operator()(T x) const {
    const T v = x < lo ? lo : x;
    return hi < v ? hi : v;
  }
  template <class P>
  P packetOp(const P& x) const {
    using namespace Eigen::internal;
    const P l = pset1<P>(lo), h = pset1<P>(hi);
    const P v = pselect(pcmp_lt(x, l), l, x);
    return pselect(pcmp_lt(h, v), h, v);
  }
};

// grad where the result is positive, else 0 (even for a NaN grad), as threshold_backward.
template <class T>
struct ReluBackwardOp {
  T operator()(T g, T r) const { return r <= T(0) ? T(0) : g; }
  template <class P>
  P packetOp(const P& g, const P& r) const {
    using namespace Eigen::internal;
    return pandnot(g, pcmp_le(r, pzero(r)));
  }
};

template <class T>
struct LeakyReluBackwardOp {
  T slope;
  T operator()(T g, T x) const { return x > T(0) ? g : g * slope; }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(pzero(x), x), g, pmul(g, pset1<P>(slope)));
  }
};

template <class T>
struct ClampBackwardOp {
  T lo, hi;
  T operator()(T g, T x) const { return x >= lo && x <= hi ? g : T(0); }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    return pand(g, pand(pcmp_le(pset1<P>(lo), x), pcmp_le(x, pset1<P>(hi))));
  }
};

// grad * sgn(x), with sgn(0) = sgn(NaN) = 0.
template <class T>
struct AbsBackwardOp {
  T operator()(T g, T x) const { return g * static_cast<T>((T(0) < x) - (x < T(0))); }
  template <class P>
  P packetOp(const P& g, const P& x) const {
    using namespace Eigen::internal;
    const P zero = pzero(x), one = pset1<P>(T(1));
    return pmul(g, psub(pand(pcmp_lt(zero, x), one), pand(pcmp_lt(x, zero), one)));
  }
};

// Picks x itself where |x| < 1e-4, where tanh(x) = x to float precision and the formula of
// tanh_float() would lose digits.
struct TanhSmallOp {
  float operator()(float x, float t) const { return std::abs(x) < 1e-4f ? x : t; }
  template <class P>
  P packetOp(const P& x, const P& t) const {
    using namespace Eigen::internal;
    return pselect(pcmp_lt(pabs(x), pset1<P>(1e-4f)), x, t);
  }
};

}  // namespace
}  // namespace nns::cpu

namespace Eigen::internal {
template <>
struct functor_traits<nns::cpu::TanhSmallOp> {
  enum { Cost = 3, PacketAccess = packet_traits<float>::HasCmp };
};
// Vectorized where the dtype has SIMD compares (float32, float64); int64 runs the scalar form.
#define NNS_PACKET_FUNCTOR(Op)                                                          \
  template <class T>                                                                    \
  struct functor_traits<nns::cpu::Op<T>> {                                              \
    enum { Cost = 3 * NumTraits<T>::AddCost, PacketAccess = packet_traits<T>::HasCmp }; \
  };
NNS_PACKET_FUNCTOR(ReluOp)
NNS_PACKET_FUNCTOR(LeakyReluOp)
NNS_PACKET_FUNCTOR(ClampOp)
NNS_PACKET_FUNCTOR(ReluBackwardOp)
NNS_PACKET_FUNCTOR(LeakyReluBackwardOp)
NNS_PACKET_FUNCTOR(ClampBackwardOp)
NNS_PACKET_FUNCTOR(AbsBackwardOp)
#undef NNS_PACKET_FUNCTOR
}  // namespace Eigen::internal

namespace nns::cpu {
namespace {

// tanh; for float32 as 1 - 2 / (exp(2x) + 1) in float64, vectorized: correctly rounded (checked
// against tanh in float64 on a million normal samples), where the C library's tanhf is
// scalar, slower and a unit in the last place off about every seventh value.
template <class X>
auto tanh_expr(const X& x) {
  if constexpr (std::is_same_v<typename X::Scalar, float>) {
    const auto d = x.template cast<double>().unaryExpr(ClampOp<double>{-20.0, 20.0});
    return x.binaryExpr((1.0 - 2.0 / ((2.0 * d).exp() + 1.0)).template cast<float>(),
                        TanhSmallOp{});
  } else {
    return x.tanh();
  }
}

// tanh_expr's float32 tanh over contiguous memory, a chunk at a time through a float64
// buffer: the widening and narrowing loops vectorize, and so does Eigen's float64 exp on the
// buffer, where the expression form (whose float-to-double cast Eigen evaluates one value at
// a time) runs scalar and several times slower.
void tanh_float(const float* x, float* y, int64_t n) {
  constexpr int64_t kChunk = 1024;
  alignas(64) double buf[kChunk];
  const ClampOp<double> clamp{-20.0, 20.0};
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t m = std::min(kChunk, n - begin);
    const float* xs = x + begin;
    for (int64_t j = 0; j < m; ++j) buf[j] = clamp(static_cast<double>(xs[j]));
    Eigen::Map<Eigen::ArrayXd> d(buf, m);
    d = 1.0 - 2.0 / ((2.0 * d).exp() + 1.0);
    const TanhSmallOp small;
    for (int64_t j = 0; j < m; ++j) y[begin + j] = small(xs[j], static_cast<float>(buf[j]));
  }
}

// Calls f with an expression maker for x^e, using PyTorch's special cases for a scalar
// exponent (x*x, sqrt, 1/x, ...: exact and vectorized) and std::pow otherwise.
template <class T, class F>
void with_pow(double e, const F& f) {
  if (e == 2) return f([](const auto& x) { return x * x; });
  if (e == 3) return f([](const auto& x) { return x * x * x; });
  if (e == 0.5) return f([](const auto& x) { return x.sqrt(); });
  if (e == -0.5) return f([](const auto& x) { return x.sqrt().inverse(); });
  if (e == -1) return f([](const auto& x) { return x.inverse(); });
  if (e == -2) return f([](const auto& x) { return (x * x).inverse(); });
  if (e == 1) return f([](const auto& x) { return x; });
  if (e == 0) return f([](const auto& x) { return x.unaryExpr([](T) { return T(1); }); });
  const T exponent = static_cast<T>(e);
  f([exponent](const auto& x) {
    return x.unaryExpr([exponent](T v) { return std::pow(v, exponent); });
  });
}

// 1 + erf(x / sqrt(2)), as erfc(-x / sqrt(2)): the same value without the cancellation that
// costs 1 + erf its precision for negative x (where gelu and its gradient are small).
template <class T>
T erfc_cdf(T x) {
  return std::erfc(-x * static_cast<T>(M_SQRT1_2));
}

// Integer power by squaring; overflow wraps around as in PyTorch (unsigned arithmetic keeps
// that defined).
int64_t ipow(int64_t base, int64_t exp) {
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  while (exp) {
    if (exp & 1) result *= b;
    exp >>= 1;
    b *= b;
  }
  return static_cast<int64_t>(result);
}

// ---- binary -------------------------------------------------------------------------------

template <class T>
void binary_typed(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
                  double alpha, double beta) {
  const T al = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::Add:
      if (alpha == 1)
        return binary_loop<T, T>(out, a, b, [](const auto& x, const auto& y) { return x + y; });
      return binary_loop<T, T>(out, a, b,
                               [al](const auto& x, const auto& y) { return x + al * y; });
    case BinaryOp::Sub:
      if (alpha == 1)
        return binary_loop<T, T>(out, a, b, [](const auto& x, const auto& y) { return x - y; });
      return binary_loop<T, T>(out, a, b,
                               [al](const auto& x, const auto& y) { return x - al * y; });
    case BinaryOp::Mul:
      return binary_loop<T, T>(out, a, b, [](const auto& x, const auto& y) { return x * y; });
    case BinaryOp::Pow:
      if constexpr (std::is_same_v<T, int64_t>) {
        return scalar_loop<T, 3>({&out, &a, &b}, [](auto p, int64_t i, auto s) {
          const int64_t e = element<const T>(p[2], i, s[2]);
          if (e < 0) {
            throw ValueError(
                "pow: Integers to negative integer powers are not allowed; convert "
                "the tensors with .to(nns::kFloat32) first");
          }
          element<T>(p[0], i, s[0]) = ipow(element<const T>(p[1], i, s[1]), e);
        });
      } else {
        return binary_loop<T, T>(out, a, b, [](const auto& x, const auto& y) {
          return x.binaryExpr(y, [](T u, T v) { return std::pow(u, v); });
        });
      }
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T be = static_cast<T>(beta);
    switch (op) {
      case BinaryOp::Div:
        return binary_loop<T, T>(out, a, b, [](const auto& x, const auto& y) { return x / y; });
      case BinaryOp::ReluBackward:
        return binary_loop<T, T>(out, a, b, [](const auto& g, const auto& r) {
          return g.binaryExpr(r, ReluBackwardOp<T>{});
        });
      case BinaryOp::TanhBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& r) { return g * (T(1) - r * r); });
      case BinaryOp::SigmoidBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& r) { return g * (T(1) - r) * r; });
      case BinaryOp::SqrtBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& r) { return g / (T(2) * r); });
      case BinaryOp::RsqrtBackward:
        // As PyTorch: -0.5 * grad * result^3.
        return binary_loop<T, T>(
            out, a, b, [](const auto& g, const auto& r) { return T(-0.5) * g * (r * r * r); });
      case BinaryOp::SinBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& x) { return g * x.cos(); });
      case BinaryOp::CosBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& x) { return g * -x.sin(); });
      case BinaryOp::AbsBackward:
        return binary_loop<T, T>(out, a, b, [](const auto& g, const auto& x) {
          return g.binaryExpr(x, AbsBackwardOp<T>{});
        });
      case BinaryOp::LeakyReluBackward:
        return binary_loop<T, T>(out, a, b, [al](const auto& g, const auto& x) {
          return g.binaryExpr(x, LeakyReluBackwardOp<T>{al});
        });
      case BinaryOp::GeluBackward:
        return binary_loop<T, T>(out, a, b, [](const auto& g, const auto& x) {
          const T beta_pdf = static_cast<T>(M_2_SQRTPI * M_SQRT1_2 * 0.5);
          const auto cdf = T(0.5) * x.unaryExpr([](T v) { return erfc_cdf(v); });
          const auto pdf = beta_pdf * (x * x * T(-0.5)).exp();
          return g * (cdf + x * pdf);
        });
      case BinaryOp::GeluTanhBackward:
        return binary_loop<T, T>(out, a, b, [](const auto& g, const auto& x) {
          const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
          const T k_kappa = static_cast<T>(0.044715);
          return g.binaryExpr(x, [=](T gv, T xv) {
            const T x_sq = xv * xv;
            const T inner = k_beta * (xv + k_kappa * x_sq * xv);
            const T tanh_inner = std::tanh(inner);
            const T left = T(0.5) * xv;
            const T right = T(1) + tanh_inner;
            const T left_derivative = T(0.5) * right;
            const T right_derivative =
                left * (T(1) - tanh_inner * tanh_inner) * k_beta * (T(1) + T(3) * k_kappa * x_sq);
            return gv * (left_derivative + right_derivative);
          });
        });
      case BinaryOp::ClampBackward:
        return binary_loop<T, T>(out, a, b, [al, be](const auto& g, const auto& x) {
          return g.binaryExpr(x, ClampBackwardOp<T>{al, be});
        });
      case BinaryOp::PowBackward:
        if (alpha == 0) {
          // PyTorch's zeros, not grad * 0 (which would give -0 and NaN).
          return binary_loop<T, T>(out, a, b, [](const auto& g, const auto&) {
            return g.unaryExpr([](T) { return T(0); });
          });
        }
        // PyTorch's grad * (e * x^(e - 1)), the power with its special cases.
        return with_pow<T>(alpha - 1, [&](const auto& power) {
          binary_loop<T, T>(out, a, b, [al, &power](const auto& g, const auto& x) {
            return g * (al * power(x));
          });
        });
      case BinaryOp::ReciprocalBackward:
        return binary_loop<T, T>(out, a, b,
                                 [](const auto& g, const auto& r) { return -g * (r * r); });
      case BinaryOp::SiluBackward:
        // PyTorch's formula with s = 1 / (1 + exp(-x)), term by term.
        return binary_loop<T, T>(out, a, b, [](const auto& g, const auto& x) {
          const auto s = (T(1) + (-x).exp()).inverse();
          return g * s * (T(1) + x * (T(1) - s));
        });
      case BinaryOp::EluBackward:
        return binary_loop<T, T>(out, a, b, [al](const auto& g, const auto& x) {
          return (x <= T(0)).select(g * al * x.exp(), g);
        });
      case BinaryOp::Prelu:
        return binary_loop<T, T>(
            out, a, b, [](const auto& x, const auto& w) { return (x > T(0)).select(x, w * x); });
      case BinaryOp::PreluBackwardWeight:
        return binary_loop<T, T>(
            out, a, b, [](const auto& g, const auto& x) { return (x > T(0)).select(T(0), x * g); });
      default:
        break;
    }
  }
  throw DtypeError("elementwise: binary op " + std::to_string(static_cast<int>(op)) +
                   " does not support " + dtype_name(out.dtype));
}

void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
            double alpha, double beta) {
  dispatch_arithmetic(out.dtype, "binary", [&](auto tag) {
    // dispatch_arithmetic also instantiates bool, which it rejects at run time.
    if constexpr (!std::is_same_v<decltype(tag), bool>) {
      binary_typed<decltype(tag)>(op, out, a, b, alpha, beta);
    }
  });
}

void binary_scalar(BinaryOp op, const TensorView& out, const TensorView& a, double scalar,
                   bool scalar_first) {
  dispatch_arithmetic(out.dtype, "binary_scalar", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      // The scalar, converted to the tensor's dtype as PyTorch does, as a broadcast operand.
      const T value = static_cast<T>(scalar);
      ZeroStrides zeros;
      const TensorView sv{const_cast<T*>(&value), out.dtype, out.sizes,
                          zeros.get(out.sizes.size())};
      if (scalar_first) {
        binary_typed<T>(op, out, sv, a, 1, 0);
      } else {
        binary_typed<T>(op, out, a, sv, 1, 0);
      }
    }
  });
}

// ---- unary --------------------------------------------------------------------------------

template <class T>
void unary_typed(UnaryOp op, const TensorView& out, const TensorView& a, double alpha,
                 double beta) {
  switch (op) {
    case UnaryOp::Neg:
      return pointwise<T, T>(
          out, [](const auto& x) { return -x; }, a);
    case UnaryOp::Abs:
      return pointwise<T, T>(
          out, [](const auto& x) { return x.abs(); }, a);
    case UnaryOp::Relu:
      // NaN and -0 pass through unchanged, as in PyTorch.
      return pointwise<T, T>(
          out, [](const auto& x) { return x.unaryExpr(ReluOp<T>{}); }, a);
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T al = static_cast<T>(alpha);
    const T be = static_cast<T>(beta);
    switch (op) {
      case UnaryOp::Exp:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.unaryExpr(ExpOp<T>{}); }, a);
      case UnaryOp::Log:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.log(); }, a);
      case UnaryOp::Sqrt:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.sqrt(); }, a);
      case UnaryOp::Rsqrt:
        // Eigen's exact form (EIGEN_FAST_MATH=0): 1 / sqrt, as PyTorch's CPU kernel.
        return pointwise<T, T>(
            out, [](const auto& x) { return x.sqrt().inverse(); }, a);
      case UnaryOp::Sin:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.sin(); }, a);
      case UnaryOp::Cos:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.cos(); }, a);
      case UnaryOp::Tanh:
        if constexpr (std::is_same_v<T, float>) {
          if (out.is_contiguous() && a.is_contiguous()) {
            return tanh_float(a.ptr<const float>(), out.ptr<float>(), out.numel());
          }
        }
        return pointwise<T, T>(
            out, [](const auto& x) { return tanh_expr(x); }, a);
      case UnaryOp::Sigmoid:
        return pointwise<T, T>(
            out, [](const auto& x) { return (T(1) + (-x).exp()).inverse(); }, a);
      case UnaryOp::Reciprocal:
        return pointwise<T, T>(
            out, [](const auto& x) { return x.inverse(); }, a);
      case UnaryOp::LeakyRelu:
        return pointwise<T, T>(
            out, [al](const auto& x) { return x.unaryExpr(LeakyReluOp<T>{al}); }, a);
      case UnaryOp::Gelu:
        return pointwise<T, T>(
            out,
            [](const auto& x) { return x * T(0.5) * x.unaryExpr([](T v) { return erfc_cdf(v); }); },
            a);
      case UnaryOp::GeluTanh:
        return pointwise<T, T>(
            out,
            [](const auto& x) {
              const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
              const T k_kappa = static_cast<T>(0.044715);
              return T(0.5) * x * (T(1) + tanh_expr(k_beta * (x + k_kappa * (x * x * x))));
            },
            a);
      case UnaryOp::Clamp:
        return pointwise<T, T>(
            out,
            [al, be](const auto& x) {
              return x.unaryExpr(ClampOp<T>{al, be});
            },
            a);
      case UnaryOp::Pow:
        return with_pow<T>(alpha, [&](const auto& power) { pointwise<T, T>(out, power, a); });
      case UnaryOp::Silu:
        return pointwise<T, T>(
            out, [](const auto& x) { return x / (T(1) + (-x).exp()); }, a);
      case UnaryOp::Elu:
        // As ATen's vectorized kernel: expm1 on the non-positive side, computed only there
        // (a select would run expm1 on every element).
        return pointwise<T, T>(
            out,
            [al](const auto& x) {
              return x.unaryExpr([al](T v) { return v <= T(0) ? std::expm1(v) * al : v; });
            },
            a);
      default:
        break;
    }
  }
  throw DtypeError("elementwise: unary op " + std::to_string(static_cast<int>(op)) +
                   " does not support " + dtype_name(out.dtype));
}

void unary(UnaryOp op, const TensorView& out, const TensorView& a, double alpha, double beta) {
  dispatch_arithmetic(out.dtype, "unary", [&](auto tag) {
    if constexpr (!std::is_same_v<decltype(tag), bool>) {
      unary_typed<decltype(tag)>(op, out, a, alpha, beta);
    }
  });
}

// ---- comparisons, where, ternary ----------------------------------------------------------

template <class F>
void compare_with(CompareOp op, const F& run) {
  switch (op) {
    case CompareOp::Eq:
      return run([](const auto& x, const auto& y) { return x == y; });
    case CompareOp::Ne:
      return run([](const auto& x, const auto& y) { return x != y; });
    case CompareOp::Lt:
      return run([](const auto& x, const auto& y) { return x < y; });
    case CompareOp::Le:
      return run([](const auto& x, const auto& y) { return x <= y; });
    case CompareOp::Gt:
      return run([](const auto& x, const auto& y) { return x > y; });
    case CompareOp::Ge:
      return run([](const auto& x, const auto& y) { return x >= y; });
  }
}

void compare(CompareOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  dispatch_arithmetic(
      a.dtype, "compare",
      [&](auto tag) {
        using T = decltype(tag);
        compare_with(op, [&](const auto& f) { binary_loop<bool, T>(out, a, b, f); });
      },
      /*allow_bool=*/true);
}

void compare_scalar(CompareOp op, const TensorView& out, const TensorView& a, double scalar) {
  dispatch_arithmetic(
      a.dtype, "compare",
      [&](auto tag) {
        using T = decltype(tag);
        const T value = static_cast<T>(scalar);
        ZeroStrides zeros;
        const TensorView sv{const_cast<T*>(&value), a.dtype, out.sizes,
                            zeros.get(out.sizes.size())};
        compare_with(op, [&](const auto& f) { binary_loop<bool, T>(out, a, sv, f); });
      },
      /*allow_bool=*/true);
}

void where(const TensorView& out, const TensorView& condition, const TensorView& a,
           const TensorView& b) {
  dispatch_arithmetic(
      out.dtype, "where",
      [&](auto tag) {
        using T = decltype(tag);
        pointwise<T, bool, T, T>(
            out, [](const auto& c, const auto& x, const auto& y) { return c.select(x, y); },
            condition, a, b);
      },
      /*allow_bool=*/true);
}

void ternary(TernaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
             const TensorView& c, double value) {
  dispatch_floating(out.dtype, "ternary", [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    switch (op) {
      case TernaryOp::Addcmul:
        return pointwise<T, T, T, T>(
            out, [v](const auto& s, const auto& x, const auto& y) { return s + v * x * y; }, a, b,
            c);
      case TernaryOp::Addcdiv:
        return pointwise<T, T, T, T>(
            out, [v](const auto& s, const auto& x, const auto& y) { return s + v * x / y; }, a, b,
            c);
      case TernaryOp::PowBackwardSelf:
        return scalar_loop<T, 4>({&out, &a, &b, &c}, [](auto p, int64_t i, auto s) {
          const T g = element<const T>(p[1], i, s[1]);
          const T x = element<const T>(p[2], i, s[2]);
          const T e = element<const T>(p[3], i, s[3]);
          element<T>(p[0], i, s[0]) = e == T(0) ? T(0) : g * (e * std::pow(x, e - T(1)));
        });
      case TernaryOp::PowBackwardExponent:
        return scalar_loop<T, 4>({&out, &a, &b, &c}, [](auto p, int64_t i, auto s) {
          const T g = element<const T>(p[1], i, s[1]);
          const T x = element<const T>(p[2], i, s[2]);
          const T e = element<const T>(p[3], i, s[3]);
          element<T>(p[0], i, s[0]) =
              x == T(0) && e >= T(0) ? T(0) : g * (std::pow(x, e) * std::log(x));
        });
      case TernaryOp::PreluBackwardSelf:
        return pointwise<T, T, T, T>(
            out,
            [](const auto& g, const auto& x, const auto& w) { return (x > T(0)).select(g, w * g); },
            a, b, c);
    }
  });
}

// ---- non-finite checks --------------------------------------------------------------------

void isfinite(const TensorView& out, const TensorView& a) {
  dispatch_floating(a.dtype, "isfinite", [&](auto tag) {
    using T = decltype(tag);
    pointwise<bool, T>(
        out, [](const auto& x) { return x.isFinite(); }, a);
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
      if (!found) found = !CSMap<T>(at<const T>(p[0]), len, stride_of<T>(s[0])).isFinite().all();
    });
    return found;
  });
}

}  // namespace

const ElementwiseKernels elementwise_kernels{&binary,  &binary_scalar,  &unary,
                                             &compare, &compare_scalar, &where,
                                             &ternary, &isfinite,       &any_non_finite};

}  // namespace nns::cpu
