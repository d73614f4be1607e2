// SPDX-License-Identifier: GPL-3.0-or-later
// The elementwise family on CUDA: one grid-stride kernel per arity and dtype, the op chosen
// per element by a switch on a launch constant (a uniform branch: every thread of a launch
// takes the same case). The formulas are the CPU kernels' (engine/cpu/elementwise.cpp) term
// by term; the float32 transcendental functions are CUDA's (1-2 units in the last place, as
// PyTorch's CUDA kernels).
#include <cmath>

#include "engine/backend/elementwise_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

template <class T>
__device__ __forceinline__ T erfc_cdf(T x) {
  return erfc(-x * static_cast<T>(M_SQRT1_2));
}

__device__ __forceinline__ int64_t ipow(int64_t base, int64_t exp) {
  // A negative exponent: PyTorch's CPU raises; here (no way to raise from a kernel) 1 for
  // base 1, +-1 for base -1, else 0, as the integer result of 1 / base^|exp| truncated.
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

// x ^ e with the CPU's special cases for a constant exponent.
template <class T>
__device__ __forceinline__ T pow_scalar(T x, T e) {
  if (e == T(2)) return x * x;
  if (e == T(3)) return x * x * x;
  if (e == T(0.5)) return sqrt(x);
  if (e == T(-0.5)) return T(1) / sqrt(x);
  if (e == T(-1)) return T(1) / x;
  if (e == T(-2)) return T(1) / (x * x);
  if (e == T(1)) return x;
  if (e == T(0)) return T(1);
  return pow(x, e);
}

template <class T>
__device__ __forceinline__ T sigmoid(T x) {
  return T(1) / (T(1) + exp(-x));
}

template <class T>
__device__ T binary_op(BinaryOp op, T a, T b, T alpha, T beta) {
  if constexpr (std::is_same_v<T, int64_t>) {
    switch (op) {
      case BinaryOp::Add:
        return a + alpha * b;
      case BinaryOp::Sub:
        return a - alpha * b;
      case BinaryOp::Mul:
        return a * b;
      case BinaryOp::Pow:
        return ipow(a, b);
      default:
        return 0;
    }
  } else {
    switch (op) {
      case BinaryOp::Add:
        return alpha == T(1) ? a + b : a + alpha * b;
      case BinaryOp::Sub:
        return alpha == T(1) ? a - b : a - alpha * b;
      case BinaryOp::Mul:
        return a * b;
      case BinaryOp::Div:
        return a / b;
      case BinaryOp::Pow:
        return pow(a, b);
      case BinaryOp::ReluBackward:
        return b <= T(0) ? T(0) : a;
      case BinaryOp::TanhBackward:
        return a * (T(1) - b * b);
      case BinaryOp::SigmoidBackward:
        return a * (T(1) - b) * b;
      case BinaryOp::SqrtBackward:
        return a / (T(2) * b);
      case BinaryOp::RsqrtBackward:
        return T(-0.5) * a * (b * b * b);
      case BinaryOp::SinBackward:
        return a * cos(b);
      case BinaryOp::CosBackward:
        return a * -sin(b);
      case BinaryOp::AbsBackward:
        return a * static_cast<T>((T(0) < b) - (b < T(0)));
      case BinaryOp::LeakyReluBackward:
        return b > T(0) ? a : a * alpha;
      case BinaryOp::GeluBackward: {
        const T beta_pdf = static_cast<T>(M_2_SQRTPI * M_SQRT1_2 * 0.5);
        const T cdf = T(0.5) * erfc_cdf(b);
        const T pdf = beta_pdf * exp(b * b * T(-0.5));
        return a * (cdf + b * pdf);
      }
      case BinaryOp::GeluTanhBackward: {
        const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
        const T k_kappa = static_cast<T>(0.044715);
        const T x_sq = b * b;
        const T inner = k_beta * (b + k_kappa * x_sq * b);
        const T t = tanh(inner);
        const T left = T(0.5) * b;
        const T right = T(1) + t;
        const T left_derivative = T(0.5) * right;
        const T right_derivative = left * (T(1) - t * t) * k_beta * (T(1) + T(3) * k_kappa * x_sq);
        return a * (left_derivative + right_derivative);
      }
      case BinaryOp::ClampBackward:
        return b >= alpha && b <= beta ? a : T(0);
      case BinaryOp::PowBackward:
        if (alpha == T(0)) return T(0);
        return a * (alpha * pow_scalar(b, alpha - T(1)));
      case BinaryOp::ReciprocalBackward:
        return -a * (b * b);
      case BinaryOp::SiluBackward: {
        const T s = sigmoid(b);
        return a * s * (T(1) + b * (T(1) - s));
      }
      case BinaryOp::EluBackward:
        return b <= T(0) ? a * alpha * exp(b) : a;
      case BinaryOp::Prelu:
        return a > T(0) ? a : b * a;
      case BinaryOp::PreluBackwardWeight:
        return b > T(0) ? T(0) : b * a;
    }
    return T(0);
  }
}

bool binary_supports(BinaryOp op, Dtype dtype) {
  if (dtype == Dtype::Float32 || dtype == Dtype::Float64) return true;
  if (dtype == Dtype::Int64)
    return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul || op == BinaryOp::Pow;
  return false;
}

// b_ptr == nullptr: b is the constant b_value (binary_scalar).
template <class T>
__global__ void binary_kernel(BinaryOp op, T* out, const T* a, const T* b, T b_value, T alpha,
                              T beta, bool swap, Strided<3> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const T x = a[off[1]];
    const T y = b ? b[off[2]] : b_value;
    out[off[0]] = swap ? binary_op<T>(op, y, x, alpha, beta) : binary_op<T>(op, x, y, alpha, beta);
  }
}

template <class T>
void launch_binary(BinaryOp op, const TensorView& out, const TensorView& a, const T* b,
                   std::span<const int64_t> b_strides, T b_value, double alpha, double beta,
                   bool swap) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Strided<3> s = make_strided<3>(out.sizes, {out.strides, a.strides, b_strides});
  binary_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
      op, out.ptr<T>(), a.ptr<const T>(), b, b_value, static_cast<T>(alpha), static_cast<T>(beta),
      swap, s, n);
  check_launch("binary");
}

void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
            double alpha, double beta) {
  if (!binary_supports(op, out.dtype))
    throw DtypeError("elementwise (CUDA): binary op " + std::to_string(static_cast<int>(op)) +
                     " does not support " + dtype_name(out.dtype));
  dispatch_compute(out.dtype, "binary", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      launch_binary<T>(op, out, a, b.ptr<const T>(), b.strides, T(0), alpha, beta, false);
  });
}

void binary_scalar(BinaryOp op, const TensorView& out, const TensorView& a, double scalar,
                   bool scalar_first) {
  if (!binary_supports(op, out.dtype))
    throw DtypeError("elementwise (CUDA): binary op " + std::to_string(static_cast<int>(op)) +
                     " does not support " + dtype_name(out.dtype));
  dispatch_compute(out.dtype, "binary_scalar", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      launch_binary<T>(op, out, a, nullptr, {}, static_cast<T>(scalar), 1, 0, scalar_first);
  });
}

// ---- unary -----------------------------------------------------------------------------------

template <class T>
__device__ T unary_op(UnaryOp op, T x, T alpha, T beta) {
  switch (op) {
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Abs:
      return x < T(0) ? -x : x;
    case UnaryOp::Relu:
      return x < T(0) ? T(0) : x;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case UnaryOp::Exp:
        return exp(x);
      case UnaryOp::Log:
        return log(x);
      case UnaryOp::Sqrt:
        return sqrt(x);
      case UnaryOp::Rsqrt:
        return T(1) / sqrt(x);
      case UnaryOp::Sin:
        return sin(x);
      case UnaryOp::Cos:
        return cos(x);
      case UnaryOp::Tanh:
        return tanh(x);
      case UnaryOp::Sigmoid:
        return sigmoid(x);
      case UnaryOp::Reciprocal:
        return T(1) / x;
      case UnaryOp::LeakyRelu:
        return x > T(0) ? x : x * alpha;
      case UnaryOp::Gelu:
        return x * T(0.5) * erfc_cdf(x);
      case UnaryOp::GeluTanh: {
        const T k_beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5);
        const T k_kappa = static_cast<T>(0.044715);
        return T(0.5) * x * (T(1) + tanh(k_beta * (x + k_kappa * (x * x * x))));
      }
      case UnaryOp::Clamp: {
        const T v = x < alpha ? alpha : x;
        return beta < v ? beta : v;
      }
      case UnaryOp::Pow:
        return pow_scalar(x, alpha);
      case UnaryOp::Silu:
        return x / (T(1) + exp(-x));
      case UnaryOp::Elu:
        return x <= T(0) ? expm1(x) * alpha : x;
      default:
        break;
    }
  }
  return T(0);
}

template <class T>
__global__ void unary_kernel(UnaryOp op, T* out, const T* a, T alpha, T beta, Strided<2> s,
                             int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    s.offsets(i, off);
    out[off[0]] = unary_op<T>(op, a[off[1]], alpha, beta);
  }
}

void unary(UnaryOp op, const TensorView& out, const TensorView& a, double alpha, double beta) {
  const bool int_ok = op == UnaryOp::Neg || op == UnaryOp::Abs || op == UnaryOp::Relu;
  if (out.dtype == Dtype::Int64 && !int_ok)
    throw DtypeError("elementwise (CUDA): unary op " + std::to_string(static_cast<int>(op)) +
                     " does not support " + dtype_name(out.dtype));
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_compute(out.dtype, "unary", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const Strided<2> s = make_strided<2>(out.sizes, {out.strides, a.strides});
      unary_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
          op, out.ptr<T>(), a.ptr<const T>(), static_cast<T>(alpha), static_cast<T>(beta), s, n);
    }
  });
  check_launch("unary");
}

// ---- compare, where ---------------------------------------------------------------------------

template <class T>
__global__ void compare_kernel(CompareOp op, bool* out, const T* a, const T* b, T b_value,
                               Strided<3> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const T x = a[off[1]];
    const T y = b ? b[off[2]] : b_value;
    bool r = false;
    switch (op) {
      case CompareOp::Eq:
        r = x == y;
        break;
      case CompareOp::Ne:
        r = x != y;
        break;
      case CompareOp::Lt:
        r = x < y;
        break;
      case CompareOp::Le:
        r = x <= y;
        break;
      case CompareOp::Gt:
        r = x > y;
        break;
      case CompareOp::Ge:
        r = x >= y;
        break;
    }
    out[off[0]] = r;
  }
}

void compare_impl(CompareOp op, const TensorView& out, const TensorView& a, const TensorView* b,
                  double scalar) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_compute(
      a.dtype, "compare",
      [&](auto tag) {
        using T = decltype(tag);
        const Strided<3> s = make_strided<3>(
            out.sizes, {out.strides, a.strides, b ? b->strides : std::span<const int64_t>{}});
        compare_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
            op, out.ptr<bool>(), a.ptr<const T>(), b ? b->ptr<const T>() : nullptr,
            static_cast<T>(scalar), s, n);
      },
      /*allow_bool=*/true);
  check_launch("compare");
}

void compare(CompareOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  compare_impl(op, out, a, &b, 0);
}

void compare_scalar(CompareOp op, const TensorView& out, const TensorView& a, double scalar) {
  compare_impl(op, out, a, nullptr, scalar);
}

template <class T>
__global__ void where_kernel(T* out, const bool* cond, const T* a, const T* b, Strided<4> s,
                             int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[4];
    s.offsets(i, off);
    out[off[0]] = cond[off[1]] ? a[off[2]] : b[off[3]];
  }
}

void where(const TensorView& out, const TensorView& condition, const TensorView& a,
           const TensorView& b) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_compute(
      out.dtype, "where",
      [&](auto tag) {
        using T = decltype(tag);
        const Strided<4> s =
            make_strided<4>(out.sizes, {out.strides, condition.strides, a.strides, b.strides});
        where_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
            out.ptr<T>(), condition.ptr<const bool>(), a.ptr<const T>(), b.ptr<const T>(), s, n);
      },
      /*allow_bool=*/true);
  check_launch("where");
}

// ---- ternary ----------------------------------------------------------------------------------

template <class T>
__global__ void ternary_kernel(TernaryOp op, T* out, const T* a, const T* b, const T* c, T v,
                               Strided<4> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[4];
    s.offsets(i, off);
    const T x = a[off[1]], y = b[off[2]], z = c[off[3]];
    T r = T(0);
    switch (op) {
      case TernaryOp::Addcmul:
        r = x + v * y * z;
        break;
      case TernaryOp::Addcdiv:
        r = x + v * y / z;
        break;
      case TernaryOp::PowBackwardSelf:  // x: grad, y: input, z: exponent
        r = z == T(0) ? T(0) : x * (z * pow(y, z - T(1)));
        break;
      case TernaryOp::PowBackwardExponent:
        r = y == T(0) && z >= T(0) ? T(0) : x * (pow(y, z) * log(y));
        break;
      case TernaryOp::PreluBackwardSelf:  // x: grad, y: input, z: weight
        r = y > T(0) ? x : z * x;
        break;
    }
    out[off[0]] = r;
  }
}

void ternary(TernaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
             const TensorView& c, double value) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating(out.dtype, "ternary", [&](auto tag) {
    using T = decltype(tag);
    const Strided<4> s = make_strided<4>(out.sizes, {out.strides, a.strides, b.strides, c.strides});
    ternary_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
        op, out.ptr<T>(), a.ptr<const T>(), b.ptr<const T>(), c.ptr<const T>(),
        static_cast<T>(value), s, n);
  });
  check_launch("ternary");
}

// ---- finiteness -------------------------------------------------------------------------------

template <class T>
__global__ void isfinite_kernel(bool* out, const T* a, Strided<2> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    s.offsets(i, off);
    out[off[0]] = isfinite(a[off[1]]);
  }
}

void isfinite_impl(const TensorView& out, const TensorView& a) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating(a.dtype, "isfinite", [&](auto tag) {
    using T = decltype(tag);
    const Strided<2> s = make_strided<2>(out.sizes, {out.strides, a.strides});
    isfinite_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
        out.ptr<bool>(), a.ptr<const T>(), s, n);
  });
  check_launch("isfinite");
}

template <class T>
__global__ void any_non_finite_kernel(const T* a, Strided<1> s, int64_t n, int* flag) {
  bool bad = false;
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    s.offsets(i, off);
    bad |= !isfinite(a[off[0]]);
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) *flag = 1;
}

// One flag per call, read back at once: the non-finite check of a training step is a
// synchronization point anyway (the step decides on it).
bool any_non_finite(const TensorView& a) {
  const int64_t n = a.numel();
  if (n == 0) return false;
  const int device = device_of(a.data);
  set_device(device);
  cudaStream_t st = stream(device);
  int* flag = static_cast<int*>(cached_allocate(sizeof(int), device));
  int host = 0;
  try {
    check(cudaMemsetAsync(flag, 0, sizeof(int), st), "any_non_finite");
    dispatch_floating(a.dtype, "any_non_finite", [&](auto tag) {
      using T = decltype(tag);
      const Strided<1> s = make_strided<1>(a.sizes, {a.strides});
      any_non_finite_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(a.ptr<const T>(), s, n, flag);
    });
    check_launch("any_non_finite");
    check(cudaMemcpyAsync(&host, flag, sizeof(int), cudaMemcpyDeviceToHost, st), "any_non_finite");
    check(cudaStreamSynchronize(st), "any_non_finite");
  } catch (...) {
    cached_free(flag, device);
    throw;
  }
  cached_free(flag, device);
  return host != 0;
}

}  // namespace

const ElementwiseKernels elementwise_kernels{&binary,  &binary_scalar,  &unary,
                                             &compare, &compare_scalar, &where,
                                             &ternary, &isfinite_impl,  &any_non_finite};

}  // namespace nns::cuda
