// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Every elementwise formula, written once: a functor per op that the CPU loops
// (engine/cpu/elementwise.cpp) and the CUDA kernels (engine/cuda/elementwise.cu) both
// instantiate, as PyTorch's C10_HOST_DEVICE functors; and the one table from an op to its
// functor, with the one dtype check, that both backends call:
//
//   ew::dispatch_unary(op, out.dtype, alpha, beta, [&](auto tag, auto formula) {
//     using T = decltype(tag);
//     ... out[i] = formula(a[i]) over the backend's loop ...
//   });
//
// The formulas follow PyTorch's CPU kernels term by term, so that results agree with it to the
// last bit where the math is exact. A functor with kSimd = true has a generic operator() that
// also takes the CPU's SIMD vectors (engine/cpu/vectorized.h): its formula uses only + - * /,
// comparisons with select, abs, exp, log and sqrt. The math functions are each device's own
// (CUDA's float32 transcendentals are 1-2 units in the last place, as PyTorch's CUDA kernels).
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "engine/backend/dtype_dispatch.h"
#include "engine/backend/elementwise_kernels.h"

#if defined(__CUDACC__)
#define NNS_HOST_DEVICE __host__ __device__
#else
#define NNS_HOST_DEVICE
#endif

namespace nns::ew {

// ---- math on one value, host and device --------------------------------------------------

// name(float) and name(double): the C library's on the host, CUDA's on the device.
#define NNS_MATH_FUNCTION(name, float_name)      \
  NNS_HOST_DEVICE inline float name(float x) {   \
    return ::float_name(x);                      \
  }                                              \
  NNS_HOST_DEVICE inline double name(double x) { \
    return ::name(x);                            \
  }
NNS_MATH_FUNCTION(exp, expf)
NNS_MATH_FUNCTION(log, logf)
NNS_MATH_FUNCTION(sqrt, sqrtf)
NNS_MATH_FUNCTION(sin, sinf)
NNS_MATH_FUNCTION(cos, cosf)
NNS_MATH_FUNCTION(erfc, erfcf)
NNS_MATH_FUNCTION(expm1, expm1f)
#undef NNS_MATH_FUNCTION

NNS_HOST_DEVICE inline float pow(float x, float e) {
  return ::powf(x, e);
}
NNS_HOST_DEVICE inline double pow(double x, double e) {
  return ::pow(x, e);
}
// |x| clears the sign bit (-0 and -NaN included), as PyTorch's abs.
NNS_HOST_DEVICE inline float abs(float x) {
  return ::fabsf(x);
}
NNS_HOST_DEVICE inline double abs(double x) {
  return ::fabs(x);
}
NNS_HOST_DEVICE inline int64_t abs(int64_t x) {
  return x < 0 ? -x : x;
}

template <class T>
NNS_HOST_DEVICE T select(bool condition, T a, T b) {
  return condition ? a : b;
}

template <class T>
NNS_HOST_DEVICE bool is_finite(T x) {
#if defined(__CUDA_ARCH__)
  return isfinite(x);
#else
  return std::isfinite(x);
#endif
}

// float32 tanh on the host, correctly rounded (checked against tanh in float64 on a million
// normal samples; the C library's tanhf is a unit in the last place off about every seventh
// value): 1 - 2 / (exp(2x) + 1) in float64 of x clamped to [-20, 20], where tanh is +-1 in
// float32, and x itself below 1e-4 in magnitude, where the formula would lose digits. The
// CPU's contiguous loop runs tanh_core over a float64 buffer, vectorized.
struct TanhFloat {
  static double clamp(float x) {
    const double v = x < -20.0f ? -20.0 : static_cast<double>(x);
    return 20.0 < v ? 20.0 : v;  // NaN stays NaN
  }
  template <class V>
  static V tanh_core(V d) {
    return V(1.0) - V(2.0) / (exp(V(2.0) * d) + V(1.0));
  }
  static float finish(float x, double t) { return abs(x) < 1e-4f ? x : static_cast<float>(t); }
};

NNS_HOST_DEVICE inline float tanh(float x) {
#if defined(__CUDA_ARCH__)
  return ::tanhf(x);
#else
  return TanhFloat::finish(x, TanhFloat::tanh_core(TanhFloat::clamp(x)));
#endif
}
NNS_HOST_DEVICE inline double tanh(double x) {
  return ::tanh(x);
}

// Integer power with PyTorch's semantics (ATen's powi): by squaring, overflow wrapping around
// (unsigned arithmetic keeps that defined); a negative exponent gives the integer part of
// 1 / base^-exp: 1 for base 1, +-1 for base -1, else 0 (base 0 included).
NNS_HOST_DEVICE inline int64_t ipow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if (base == -1) return (exp & 1) ? -1 : 1;
    return 0;
  }
  uint64_t result = 1, b = static_cast<uint64_t>(base);
  while (exp) {
    if (exp & 1) result *= b;
    exp >>= 1;
    b *= b;
  }
  return static_cast<int64_t>(result);
}

// ---- unary formulas: out = f(x) -----------------------------------------------------------

template <class T>
struct Neg {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return -x;
  }
};

template <class T>
struct Abs {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return abs(x);
  }
};

// NaN and -0 pass through unchanged, as in PyTorch.
template <class T>
struct Relu {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return select(x < V(0), V(0), x);
  }
};

template <class T>
struct Exp {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return exp(x);
  }
};

template <class T>
struct Log {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return log(x);
  }
};

template <class T>
struct Sqrt {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return sqrt(x);
  }
};

// 1 / sqrt, as PyTorch's CPU kernel (not an rsqrt estimate).
template <class T>
struct Rsqrt {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return V(1) / sqrt(x);
  }
};

template <class T>
struct Sin {
  NNS_HOST_DEVICE T operator()(T x) const { return sin(x); }
};

template <class T>
struct Cos {
  NNS_HOST_DEVICE T operator()(T x) const { return cos(x); }
};

template <class T>
struct Tanh {
  NNS_HOST_DEVICE T operator()(T x) const { return tanh(x); }
};

template <class T>
struct Sigmoid {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return V(1) / (V(1) + exp(-x));
  }
};

template <class T>
struct Reciprocal {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return V(1) / x;
  }
};

template <class T>
struct LeakyRelu {
  T slope;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return select(V(0) < x, x, x * V(slope));
  }
};

// 1 + erf(x / sqrt(2)), as erfc(-x / sqrt(2)): the same value without the cancellation that
// costs 1 + erf its precision for negative x (where gelu and its gradient are small).
template <class T>
NNS_HOST_DEVICE T erfc_cdf(T x) {
  return erfc(-x * static_cast<T>(M_SQRT1_2));
}

template <class T>
struct Gelu {
  NNS_HOST_DEVICE T operator()(T x) const { return x * T(0.5) * erfc_cdf(x); }
};

template <class T>
struct GeluTanh {
  NNS_HOST_DEVICE T operator()(T x) const {
    const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
    const T k_kappa = static_cast<T>(0.044715);
    return T(0.5) * x * (T(1) + tanh(k_beta * (x + k_kappa * (x * x * x))));
  }
};

// min(max(x, lo), hi) with std::max/std::min's tie rules; NaN stays NaN (no compare holds).
template <class T>
struct Clamp {
  T lo, hi;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    const V v = select(x < V(lo), V(lo), x);
    return select(V(hi) < v, V(hi), v);
  }
};

template <class T>
struct Silu {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return x / (V(1) + exp(-x));
  }
};

// expm1 on the non-positive side, as ATen's kernel.
template <class T>
struct Elu {
  T alpha;
  NNS_HOST_DEVICE T operator()(T x) const { return x <= T(0) ? expm1(x) * alpha : x; }
};

// ---- x ^ e for a constant e: PyTorch's special cases (exact, and SIMD), else pow ----------

template <class T>
struct Square {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return x * x;
  }
};

template <class T>
struct Cube {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return x * x * x;
  }
};

template <class T>
struct InverseSquare {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return V(1) / (x * x);
  }
};

template <class T>
struct Identity {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x) const {
    return x;
  }
};

// x ^ 0 = 1, NaN included.
template <class T>
struct One {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V) const {
    return V(1);
  }
};

template <class T>
struct PowScalar {
  T exponent;
  NNS_HOST_DEVICE T operator()(T x) const { return pow(x, exponent); }
};

// Calls fn with the formula of x ^ e.
template <class T, class Fn>
void with_power(double e, Fn&& fn) {
  if (e == 2) return fn(Square<T>{});
  if (e == 3) return fn(Cube<T>{});
  if (e == 0.5) return fn(Sqrt<T>{});
  if (e == -0.5) return fn(Rsqrt<T>{});
  if (e == -1) return fn(Reciprocal<T>{});
  if (e == -2) return fn(InverseSquare<T>{});
  if (e == 1) return fn(Identity<T>{});
  if (e == 0) return fn(One<T>{});
  fn(PowScalar<T>{static_cast<T>(e)});
}

template <class F>
constexpr bool simd_formula = requires {
  requires F::kSimd;
};

// ---- binary formulas: out = f(a, b) --------------------------------------------------------

template <class T>
struct Add {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x + y;
  }
};

template <class T>
struct AddScaled {
  T alpha;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x + V(alpha) * y;
  }
};

template <class T>
struct Sub {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x - y;
  }
};

template <class T>
struct SubScaled {
  T alpha;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x - V(alpha) * y;
  }
};

template <class T>
struct Mul {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x * y;
  }
};

template <class T>
struct Div {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V y) const {
    return x / y;
  }
};

template <class T>
struct Pow {
  NNS_HOST_DEVICE T operator()(T x, T e) const {
    if constexpr (std::is_integral_v<T>) {
      return ipow(x, e);
    } else {
      return pow(x, e);
    }
  }
};

// grad where the result is positive, else 0 (even for a NaN grad), as threshold_backward.
template <class T>
struct ReluBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return select(r <= V(0), V(0), g);
  }
};

template <class T>
struct TanhBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return g * (V(1) - r * r);
  }
};

template <class T>
struct SigmoidBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return g * (V(1) - r) * r;
  }
};

template <class T>
struct SqrtBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return g / (V(2) * r);
  }
};

// As PyTorch: -0.5 * grad * result^3.
template <class T>
struct RsqrtBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return V(-0.5) * g * (r * r * r);
  }
};

template <class T>
struct SinBackward {
  NNS_HOST_DEVICE T operator()(T g, T x) const { return g * cos(x); }
};

template <class T>
struct CosBackward {
  NNS_HOST_DEVICE T operator()(T g, T x) const { return g * -sin(x); }
};

// grad * sgn(x), with sgn(0) = sgn(NaN) = 0.
template <class T>
struct AbsBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return g * (select(V(0) < x, V(1), V(0)) - select(x < V(0), V(1), V(0)));
  }
};

template <class T>
struct LeakyReluBackward {
  T slope;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return select(V(0) < x, g, g * V(slope));
  }
};

template <class T>
struct GeluBackward {
  NNS_HOST_DEVICE T operator()(T g, T x) const {
    const T beta_pdf = static_cast<T>(M_2_SQRTPI * M_SQRT1_2 * 0.5);
    const T cdf = T(0.5) * erfc_cdf(x);
    const T pdf = beta_pdf * exp(x * x * T(-0.5));
    return g * (cdf + x * pdf);
  }
};

template <class T>
struct GeluTanhBackward {
  NNS_HOST_DEVICE T operator()(T g, T x) const {
    const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
    const T k_kappa = static_cast<T>(0.044715);
    const T x_sq = x * x;
    const T inner = k_beta * (x + k_kappa * x_sq * x);
    const T tanh_inner = tanh(inner);
    const T left = T(0.5) * x;
    const T right = T(1) + tanh_inner;
    const T left_derivative = T(0.5) * right;
    const T right_derivative =
        left * (T(1) - tanh_inner * tanh_inner) * k_beta * (T(1) + T(3) * k_kappa * x_sq);
    return g * (left_derivative + right_derivative);
  }
};

// NaN inputs get no gradient.
template <class T>
struct ClampBackward {
  T lo, hi;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return select((V(lo) <= x) & (x <= V(hi)), g, V(0));
  }
};

// PyTorch's grad * (e * x^(e - 1)), the power with its special cases.
template <class T, class Power>
struct PowBackward {
  T exponent;
  Power power;  // x ^ (exponent - 1)
  static constexpr bool kSimd = simd_formula<Power>;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return g * (V(exponent) * power(x));
  }
};

// PyTorch's zeros for the exponent 0, not grad * 0 (which would give -0 and NaN).
template <class T>
struct Zero {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V, V) const {
    return V(0);
  }
};

template <class T>
struct ReciprocalBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V r) const {
    return -g * (r * r);
  }
};

// PyTorch's formula with s = 1 / (1 + exp(-x)), term by term.
template <class T>
struct SiluBackward {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    const V s = V(1) / (V(1) + exp(-x));
    return g * s * (V(1) + x * (V(1) - s));
  }
};

template <class T>
struct EluBackward {
  T alpha;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return select(x <= V(0), g * V(alpha) * exp(x), g);
  }
};

// prelu(x, w) = x > 0 ? x : w * x.
template <class T>
struct Prelu {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V x, V w) const {
    return select(V(0) < x, x, w * x);
  }
};

// The summand of prelu's weight gradient: x > 0 ? 0 : x * grad.
template <class T>
struct PreluBackwardWeight {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x) const {
    return select(V(0) < x, V(0), x * g);
  }
};

// ---- ternary formulas: out = f(a, b, c) ---------------------------------------------------

template <class T>
struct Addcmul {
  T value;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V s, V x, V y) const {
    return s + V(value) * x * y;
  }
};

template <class T>
struct Addcdiv {
  T value;
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V s, V x, V y) const {
    return s + V(value) * x / y;
  }
};

template <class T>
struct PowBackwardSelf {
  NNS_HOST_DEVICE T operator()(T g, T x, T e) const {
    return e == T(0) ? T(0) : g * (e * pow(x, e - T(1)));
  }
};

template <class T>
struct PowBackwardExponent {
  NNS_HOST_DEVICE T operator()(T g, T x, T e) const {
    return x == T(0) && e >= T(0) ? T(0) : g * (pow(x, e) * log(x));
  }
};

template <class T>
struct PreluBackwardSelf {
  static constexpr bool kSimd = true;
  template <class V>
  NNS_HOST_DEVICE V operator()(V g, V x, V w) const {
    return select(V(0) < x, g, w * g);
  }
};

// ---- comparisons, where, finiteness (results of another dtype: no SIMD form) --------------

template <class T, CompareOp kOp>
struct Compare {
  NNS_HOST_DEVICE bool operator()(T x, T y) const {
    if constexpr (kOp == CompareOp::Eq) {
      return x == y;
    } else if constexpr (kOp == CompareOp::Ne) {
      return x != y;
    } else if constexpr (kOp == CompareOp::Lt) {
      return x < y;
    } else if constexpr (kOp == CompareOp::Le) {
      return x <= y;
    } else if constexpr (kOp == CompareOp::Gt) {
      return x > y;
    } else {
      return x >= y;
    }
  }
};

template <class T>
struct Where {
  NNS_HOST_DEVICE T operator()(bool condition, T x, T y) const { return condition ? x : y; }
};

template <class T>
struct IsFinite {
  NNS_HOST_DEVICE bool operator()(T x) const { return is_finite(x); }
};

// ---- the table: op -> formula, with the dtype check of both devices -----------------------

// The ops' names, as the errors give them.
inline const char* op_name(UnaryOp op) {
  constexpr const char* kNames[] = {"neg",     "abs",        "relu",       "exp",  "log",
                                    "sqrt",    "rsqrt",      "sin",        "cos",  "tanh",
                                    "sigmoid", "reciprocal", "leaky_relu", "gelu", "gelu (tanh)",
                                    "clamp",   "pow",        "silu",       "elu"};
  return kNames[static_cast<int>(op)];
}

inline const char* op_name(BinaryOp op) {
  constexpr const char* kNames[] = {"add",
                                    "sub",
                                    "mul",
                                    "div",
                                    "pow",
                                    "relu_backward",
                                    "tanh_backward",
                                    "sigmoid_backward",
                                    "sqrt_backward",
                                    "rsqrt_backward",
                                    "sin_backward",
                                    "cos_backward",
                                    "abs_backward",
                                    "leaky_relu_backward",
                                    "gelu_backward",
                                    "gelu_backward (tanh)",
                                    "clamp_backward",
                                    "pow_backward",
                                    "reciprocal_backward",
                                    "silu_backward",
                                    "elu_backward",
                                    "prelu",
                                    "prelu_backward"};
  return kNames[static_cast<int>(op)];
}

inline const char* op_name(TernaryOp op) {
  constexpr const char* kNames[] = {"addcmul", "addcdiv", "pow_backward", "pow_backward",
                                    "prelu_backward"};
  return kNames[static_cast<int>(op)];
}

template <class T, class Run>
void unary_formula(UnaryOp op, Dtype dtype, double alpha, double beta, Run& run) {
  switch (op) {
    case UnaryOp::Neg:
      return run(T{}, Neg<T>{});
    case UnaryOp::Abs:
      return run(T{}, Abs<T>{});
    case UnaryOp::Relu:
      return run(T{}, Relu<T>{});
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
    switch (op) {
      case UnaryOp::Exp:
        return run(T{}, Exp<T>{});
      case UnaryOp::Log:
        return run(T{}, Log<T>{});
      case UnaryOp::Sqrt:
        return run(T{}, Sqrt<T>{});
      case UnaryOp::Rsqrt:
        return run(T{}, Rsqrt<T>{});
      case UnaryOp::Sin:
        return run(T{}, Sin<T>{});
      case UnaryOp::Cos:
        return run(T{}, Cos<T>{});
      case UnaryOp::Tanh:
        return run(T{}, Tanh<T>{});
      case UnaryOp::Sigmoid:
        return run(T{}, Sigmoid<T>{});
      case UnaryOp::Reciprocal:
        return run(T{}, Reciprocal<T>{});
      case UnaryOp::LeakyRelu:
        return run(T{}, LeakyRelu<T>{al});
      case UnaryOp::Gelu:
        return run(T{}, Gelu<T>{});
      case UnaryOp::GeluTanh:
        return run(T{}, GeluTanh<T>{});
      case UnaryOp::Clamp:
        return run(T{}, Clamp<T>{al, be});
      case UnaryOp::Pow:
        return with_power<T>(alpha, [&](auto power) { run(T{}, power); });
      case UnaryOp::Silu:
        return run(T{}, Silu<T>{});
      case UnaryOp::Elu:
        return run(T{}, Elu<T>{al});
      default:
        break;
    }
  }
  throw_unsupported_dtype(op_name(op), dtype, "float32 or float64");
}

// Arithmetic on int64 too: add, sub, mul and pow.
template <class T, class Run>
void binary_arithmetic_formula(BinaryOp op, Dtype dtype, double alpha, Run& run) {
  const T al = static_cast<T>(alpha);
  switch (op) {
    case BinaryOp::Add:
      return alpha == 1 ? run(T{}, Add<T>{}) : run(T{}, AddScaled<T>{al});
    case BinaryOp::Sub:
      return alpha == 1 ? run(T{}, Sub<T>{}) : run(T{}, SubScaled<T>{al});
    case BinaryOp::Mul:
      return run(T{}, Mul<T>{});
    case BinaryOp::Pow:
      return run(T{}, Pow<T>{});
    default:
      throw_unsupported_dtype(op_name(op), dtype, "float32 or float64");
  }
}

template <class T, class Run>
void binary_formula(BinaryOp op, Dtype dtype, double alpha, double beta, Run& run) {
  const T al = static_cast<T>(alpha), be = static_cast<T>(beta);
  switch (op) {
    case BinaryOp::Div:
      return run(T{}, Div<T>{});
    case BinaryOp::ReluBackward:
      return run(T{}, ReluBackward<T>{});
    case BinaryOp::TanhBackward:
      return run(T{}, TanhBackward<T>{});
    case BinaryOp::SigmoidBackward:
      return run(T{}, SigmoidBackward<T>{});
    case BinaryOp::SqrtBackward:
      return run(T{}, SqrtBackward<T>{});
    case BinaryOp::RsqrtBackward:
      return run(T{}, RsqrtBackward<T>{});
    case BinaryOp::SinBackward:
      return run(T{}, SinBackward<T>{});
    case BinaryOp::CosBackward:
      return run(T{}, CosBackward<T>{});
    case BinaryOp::AbsBackward:
      return run(T{}, AbsBackward<T>{});
    case BinaryOp::LeakyReluBackward:
      return run(T{}, LeakyReluBackward<T>{al});
    case BinaryOp::GeluBackward:
      return run(T{}, GeluBackward<T>{});
    case BinaryOp::GeluTanhBackward:
      return run(T{}, GeluTanhBackward<T>{});
    case BinaryOp::ClampBackward:
      return run(T{}, ClampBackward<T>{al, be});
    case BinaryOp::PowBackward:
      if (alpha == 0) return run(T{}, Zero<T>{});
      return with_power<T>(alpha - 1, [&](auto power) {
        run(T{}, PowBackward<T, decltype(power)>{al, power});
      });
    case BinaryOp::ReciprocalBackward:
      return run(T{}, ReciprocalBackward<T>{});
    case BinaryOp::SiluBackward:
      return run(T{}, SiluBackward<T>{});
    case BinaryOp::EluBackward:
      return run(T{}, EluBackward<T>{al});
    case BinaryOp::Prelu:
      return run(T{}, Prelu<T>{});
    case BinaryOp::PreluBackwardWeight:
      return run(T{}, PreluBackwardWeight<T>{});
    default:
      return binary_arithmetic_formula<T>(op, dtype, alpha, run);
  }
}

// Calls run(T{}, formula) with the formula of op for dtype (float32, float64; int64 for
// neg, abs and relu).
template <class Run>
void dispatch_unary(UnaryOp op, Dtype dtype, double alpha, double beta, Run&& run) {
  dispatch_arithmetic(dtype, op_name(op), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) unary_formula<T>(op, dtype, alpha, beta, run);
  });
}

// Calls run(T{}, formula) with the formula of op for dtype (float32, float64; int64 for add,
// sub, mul and pow).
template <class Run>
void dispatch_binary(BinaryOp op, Dtype dtype, double alpha, double beta, Run&& run) {
  dispatch_arithmetic(dtype, op_name(op), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      binary_formula<T>(op, dtype, alpha, beta, run);
    } else if constexpr (!std::is_same_v<T, bool>) {
      binary_arithmetic_formula<T>(op, dtype, alpha, run);
    }
  });
}

template <class Run>
void dispatch_ternary(TernaryOp op, Dtype dtype, double value, Run&& run) {
  dispatch_floating(dtype, op_name(op), [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    switch (op) {
      case TernaryOp::Addcmul:
        return run(T{}, Addcmul<T>{v});
      case TernaryOp::Addcdiv:
        return run(T{}, Addcdiv<T>{v});
      case TernaryOp::PowBackwardSelf:
        return run(T{}, PowBackwardSelf<T>{});
      case TernaryOp::PowBackwardExponent:
        return run(T{}, PowBackwardExponent<T>{});
      case TernaryOp::PreluBackwardSelf:
        return run(T{}, PreluBackwardSelf<T>{});
    }
  });
}

// Calls run(T{}, formula) with the comparison of operands of dtype (any but float16/bfloat16).
template <class Run>
void dispatch_compare(CompareOp op, Dtype dtype, Run&& run) {
  dispatch_arithmetic(
      dtype, "compare",
      [&](auto tag) {
        using T = decltype(tag);
        switch (op) {
          case CompareOp::Eq:
            return run(T{}, Compare<T, CompareOp::Eq>{});
          case CompareOp::Ne:
            return run(T{}, Compare<T, CompareOp::Ne>{});
          case CompareOp::Lt:
            return run(T{}, Compare<T, CompareOp::Lt>{});
          case CompareOp::Le:
            return run(T{}, Compare<T, CompareOp::Le>{});
          case CompareOp::Gt:
            return run(T{}, Compare<T, CompareOp::Gt>{});
          case CompareOp::Ge:
            return run(T{}, Compare<T, CompareOp::Ge>{});
        }
      },
      /*allow_bool=*/true);
}

}  // namespace nns::ew
