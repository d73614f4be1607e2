// SPDX-License-Identifier: GPL-3.0-or-later
// The elementwise family on CUDA: the loops around the formulas of
// engine/backend/elementwise_formulas.h, which the CPU kernels run too. One grid-stride
// kernel per arity, instantiated for each formula and dtype, over strided operands.
#include <cmath>

#include "engine/backend/elementwise_formulas.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

template <class F, class TO, class TA>
__global__ void map1_kernel(F f, TO* out, const TA* a, Strided<2> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    s.offsets(i, off);
    out[off[0]] = f(a[off[1]]);
  }
}

// b == nullptr: b is the constant b_value (a scalar operand); swap: f(b, a).
template <class F, class TO, class TA>
__global__ void map2_kernel(F f, TO* out, const TA* a, const TA* b, TA b_value, bool swap,
                            Strided<3> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const TA x = a[off[1]];
    const TA y = b ? b[off[2]] : b_value;
    out[off[0]] = swap ? f(y, x) : f(x, y);
  }
}

template <class F, class TO, class TA, class TB>
__global__ void map3_kernel(F f, TO* out, const TA* a, const TB* b, const TB* c, Strided<4> s,
                            int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[4];
    s.offsets(i, off);
    out[off[0]] = f(a[off[1]], b[off[2]], c[off[3]]);
  }
}

template <class TO, class TA, class F>
void launch_map1(const F& f, const TensorView& out, const TensorView& a, const char* what) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Strided<2> s = make_strided<2>(out.sizes, {out.strides, a.strides});
  map1_kernel<F, TO, TA><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
      f, out.ptr<TO>(), a.ptr<const TA>(), s, n);
  check_launch(what);
}

// b == nullptr: the scalar b_value instead.
template <class TO, class TA, class F>
void launch_map2(const F& f, const TensorView& out, const TensorView& a, const TensorView* b,
                 TA b_value, bool swap, const char* what) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Strided<3> s = make_strided<3>(
      out.sizes, {out.strides, a.strides, b ? b->strides : std::span<const int64_t>{}});
  map2_kernel<F, TO, TA><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
      f, out.ptr<TO>(), a.ptr<const TA>(), b ? b->ptr<const TA>() : nullptr, b_value, swap, s, n);
  check_launch(what);
}

template <class TO, class TA, class TB, class F>
void launch_map3(const F& f, const TensorView& out, const TensorView& a, const TensorView& b,
                 const TensorView& c, const char* what) {
  const int64_t n = out.numel();
  if (n == 0) return;
  const Strided<4> s = make_strided<4>(out.sizes, {out.strides, a.strides, b.strides, c.strides});
  map3_kernel<F, TO, TA, TB><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
      f, out.ptr<TO>(), a.ptr<const TA>(), b.ptr<const TB>(), c.ptr<const TB>(), s, n);
  check_launch(what);
}

void binary(BinaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
            double alpha, double beta) {
  ew::dispatch_binary(op, out.dtype, alpha, beta, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map2<T, T>(f, out, a, &b, T(0), false, "binary");
  });
}

void binary_scalar(BinaryOp op, const TensorView& out, const TensorView& a, double scalar,
                   bool scalar_first) {
  ew::dispatch_binary(op, out.dtype, 1, 0, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map2<T, T>(f, out, a, nullptr, static_cast<T>(scalar), scalar_first, "binary_scalar");
  });
}

void unary(UnaryOp op, const TensorView& out, const TensorView& a, double alpha, double beta) {
  ew::dispatch_unary(op, out.dtype, alpha, beta, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map1<T, T>(f, out, a, "unary");
  });
}

void compare(CompareOp op, const TensorView& out, const TensorView& a, const TensorView& b) {
  ew::dispatch_compare(op, a.dtype, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map2<bool, T>(f, out, a, &b, T(0), false, "compare");
  });
}

void compare_scalar(CompareOp op, const TensorView& out, const TensorView& a, double scalar) {
  ew::dispatch_compare(op, a.dtype, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map2<bool, T>(f, out, a, nullptr, static_cast<T>(scalar), false, "compare");
  });
}

void where(const TensorView& out, const TensorView& condition, const TensorView& a,
           const TensorView& b) {
  dispatch_arithmetic(
      out.dtype, "where",
      [&](auto tag) {
        using T = decltype(tag);
        launch_map3<T, bool, T>(ew::Where<T>{}, out, condition, a, b, "where");
      },
      /*allow_bool=*/true);
}

void ternary(TernaryOp op, const TensorView& out, const TensorView& a, const TensorView& b,
             const TensorView& c, double value) {
  ew::dispatch_ternary(op, out.dtype, value, [&](auto tag, const auto& f) {
    using T = decltype(tag);
    launch_map3<T, T, T>(f, out, a, b, c, "ternary");
  });
}

// ---- finiteness -------------------------------------------------------------------------------

void isfinite_impl(const TensorView& out, const TensorView& a) {
  dispatch_floating(a.dtype, "isfinite", [&](auto tag) {
    using T = decltype(tag);
    launch_map1<bool, T>(ew::IsFinite<T>{}, out, a, "isfinite");
  });
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
