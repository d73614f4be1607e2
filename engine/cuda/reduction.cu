// SPDX-License-Identifier: GPL-3.0-or-later
// The reduction family on CUDA. reduce: one block per output element (grid-stride over the
// outputs), its threads striding over the reduced elements and meeting in a tree through
// shared memory, as PyTorch's reduce kernels for float32 (float32 accumulators, the tree
// order). arg_reduce and index_backward: one thread per output position walking the dim.
// softmax: one warp per row, the max and the sum through warp shuffles.
#include <cfloat>
#include <climits>
#include <cmath>
#include <vector>

#include "engine/backend/reduction_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

template <class T>
__device__ __forceinline__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

template <class T>
__device__ __forceinline__ T lowest() {
  if constexpr (std::is_same_v<T, float>) return -INFINITY;
  if constexpr (std::is_same_v<T, double>) return -HUGE_VAL;
  if constexpr (std::is_same_v<T, int64_t>) return LLONG_MIN;
  if constexpr (std::is_same_v<T, bool>) return false;
}
template <class T>
__device__ __forceinline__ T highest() {
  if constexpr (std::is_same_v<T, float>) return INFINITY;
  if constexpr (std::is_same_v<T, double>) return HUGE_VAL;
  if constexpr (std::is_same_v<T, int64_t>) return LLONG_MAX;
  if constexpr (std::is_same_v<T, bool>) return true;
}

// a combined with b under op; a NaN wins for Max and Min.
template <class T>
__device__ __forceinline__ T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
      if constexpr (std::is_same_v<T, bool>) {
        return a || b;
      } else {
        return a + b;
      }
    case ReduceOp::Max:
      if (is_nan(a)) return a;
      return (b > a || is_nan(b)) ? b : a;
    case ReduceOp::Min:
      if (is_nan(a)) return a;
      return (b < a || is_nan(b)) ? b : a;
  }
  return a;
}

template <class T>
__device__ __forceinline__ T identity(ReduceOp op) {
  if (op == ReduceOp::Max) return lowest<T>();
  if (op == ReduceOp::Min) return highest<T>();
  return T(0);
}

// kept: the output positions (operand 0: out, 1: in over the kept dims); reduced: the reduced
// positions of in.
template <class T>
__global__ void reduce_kernel(ReduceOp op, T* out, const T* in, Strided<2> kept, Strided<1> reduced,
                              int64_t n_out, int64_t n_red) {
  __shared__ T shared[kThreads];
  for (int64_t o = blockIdx.x; o < n_out; o += gridDim.x) {
    int64_t ko[2];
    kept.offsets(o, ko);
    T acc = identity<T>(op);
    for (int64_t r = threadIdx.x; r < n_red; r += blockDim.x) {
      int64_t ro[1];
      reduced.offsets(r, ro);
      acc = combine(op, acc, in[ko[1] + ro[0]]);
    }
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width /= 2) {
      if (threadIdx.x < width)
        shared[threadIdx.x] = combine(op, shared[threadIdx.x], shared[threadIdx.x + width]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      T v = shared[0];
      if constexpr (std::is_floating_point_v<T>) {
        if (op == ReduceOp::Mean) v = v / static_cast<T>(n_red);
      }
      out[ko[0]] = v;
    }
    __syncthreads();
  }
}

void reduce(ReduceOp op, const TensorView& out, const TensorView& in) {
  const int64_t n_out = out.numel();
  if (n_out == 0) return;
  const int64_t n_in = in.numel();
  // The kept dims (out's size) and the reduced ones (size 1 in out), each as a strided space.
  std::vector<int64_t> kept_sizes, out_strides, in_kept_strides, red_sizes, red_strides;
  for (size_t d = 0; d < in.sizes.size(); ++d) {
    if (out.sizes[d] == 1 && in.sizes[d] != 1) {
      red_sizes.push_back(in.sizes[d]);
      red_strides.push_back(in.strides[d]);
    } else {
      kept_sizes.push_back(in.sizes[d]);
      out_strides.push_back(out.strides[d]);
      in_kept_strides.push_back(in.strides[d]);
    }
  }
  const Strided<2> kept = make_strided<2>(kept_sizes, {out_strides, in_kept_strides});
  const Strided<1> reduced = make_strided<1>(red_sizes, {red_strides});
  const int64_t n_red = n_out == 0 ? 0 : n_in / n_out;
  if (op == ReduceOp::Mean && in.dtype != Dtype::Float32 && in.dtype != Dtype::Float64)
    throw_unsupported_dtype("mean", in.dtype, "float32 or float64");
  const bool allow_bool = op == ReduceOp::Max || op == ReduceOp::Min;
  const unsigned blocks = static_cast<unsigned>(n_out < 65535 * 16 ? n_out : 65535 * 16);
  dispatch_arithmetic(
      in.dtype, "reduce",
      [&](auto tag) {
        using T = decltype(tag);
        reduce_kernel<T><<<blocks, kThreads, 0, stream_for(out.data)>>>(
            op, out.ptr<T>(), in.ptr<const T>(), kept, reduced, n_out, n_red);
      },
      allow_bool);
  check_launch("reduce");
}

// ---- arg_reduce, index_backward ---------------------------------------------------------------

// positions: operand 0 values (or indices when there are no values), 1 indices, 2 in.
template <class T>
__global__ void arg_reduce_kernel(bool is_max, T* values, int64_t* indices, const T* in,
                                  Strided<3> s, int64_t n, int64_t k_size, int64_t k_stride) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const T* row = in + off[2];
    T best = row[0];
    int64_t best_k = 0;
    for (int64_t k = 1; k < k_size; ++k) {
      const T x = row[k * k_stride];
      // The first NaN wins and stays; among equals the first index stays.
      if (((is_max ? x > best : x < best) || is_nan(x)) && !is_nan(best)) {
        best = x;
        best_k = k;
      }
    }
    if (values) values[off[0]] = best;
    indices[off[1]] = best_k;
  }
}

void arg_reduce(ArgReduceOp op, const TensorView& values, const TensorView& indices,
                const TensorView& in, int64_t dim) {
  std::vector<int64_t> sizes(in.sizes.begin(), in.sizes.end());
  sizes[dim] = 1;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  const TensorView& v = values.data ? values : indices;
  const Strided<3> s = make_strided<3>(sizes, {v.strides, indices.strides, in.strides});
  dispatch_arithmetic(
      in.dtype, "argmax",
      [&](auto tag) {
        using T = decltype(tag);
        arg_reduce_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(indices.data)>>>(
            op == ArgReduceOp::Max, values.data ? values.ptr<T>() : nullptr, indices.ptr<int64_t>(),
            in.ptr<const T>(), s, n, in.sizes[dim], in.strides[dim]);
      },
      /*allow_bool=*/true);
  check_launch("arg_reduce");
}

template <class T>
__global__ void index_backward_kernel(T* grad_in, const T* grad_out, const int64_t* indices,
                                      Strided<3> s, int64_t n, int64_t k_stride) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    grad_in[off[0] + indices[off[2]] * k_stride] = grad_out[off[1]];
  }
}

void index_backward(const TensorView& grad_in, const TensorView& grad_out,
                    const TensorView& indices, int64_t dim) {
  std::vector<int64_t> sizes(grad_in.sizes.begin(), grad_in.sizes.end());
  sizes[dim] = 1;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  const Strided<3> s = make_strided<3>(sizes, {grad_in.strides, grad_out.strides, indices.strides});
  dispatch_floating(grad_in.dtype, "max_backward", [&](auto tag) {
    using T = decltype(tag);
    index_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(grad_in.data)>>>(
        grad_in.ptr<T>(), grad_out.ptr<const T>(), indices.ptr<const int64_t>(), s, n,
        grad_in.strides[dim]);
  });
  check_launch("index_backward");
}

// ---- softmax ----------------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ T warp_max(T v) {
  for (int o = 16; o > 0; o /= 2) {
    const T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = (w > v || w != w) ? w : v;
  }
  return v;
}
template <class T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

constexpr int kWarpsPerBlock = kThreads / 32;

// Rows are (outer, inner) pairs; element k of a row is at row_base + k * inner.
template <class T>
__global__ void softmax_kernel(T* out, const T* in, int64_t rows, int64_t dim_size, int64_t inner,
                               bool log) {
  const int lane = threadIdx.x % 32;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const int64_t base = (row / inner) * dim_size * inner + row % inner;
    T m = -INFINITY;
    for (int64_t k = lane; k < dim_size; k += 32) {
      const T x = in[base + k * inner];
      m = (x > m || x != x) ? x : m;
    }
    m = warp_max(m);
    T sum = 0;
    for (int64_t k = lane; k < dim_size; k += 32) sum += exp(in[base + k * inner] - m);
    sum = warp_sum(sum);
    if (log) {
      const T log_sum = ::log(sum);
      for (int64_t k = lane; k < dim_size; k += 32)
        out[base + k * inner] = in[base + k * inner] - m - log_sum;
    } else {
      const T r = T(1) / sum;
      for (int64_t k = lane; k < dim_size; k += 32)
        out[base + k * inner] = exp(in[base + k * inner] - m) * r;
    }
  }
}

template <class T>
__global__ void softmax_backward_kernel(T* grad_in, const T* grad_out, const T* output,
                                        int64_t rows, int64_t dim_size, int64_t inner, bool log) {
  const int lane = threadIdx.x % 32;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
       row < rows; row += static_cast<int64_t>(gridDim.x) * kWarpsPerBlock) {
    const int64_t base = (row / inner) * dim_size * inner + row % inner;
    T sum = 0;
    for (int64_t k = lane; k < dim_size; k += 32) {
      const int64_t i = base + k * inner;
      sum += log ? grad_out[i] : grad_out[i] * output[i];
    }
    sum = warp_sum(sum);
    for (int64_t k = lane; k < dim_size; k += 32) {
      const int64_t i = base + k * inner;
      grad_in[i] = log ? grad_out[i] - exp(output[i]) * sum : output[i] * (grad_out[i] - sum);
    }
  }
}

struct RowShape {
  int64_t rows, dim_size, inner;
};
RowShape row_shape(const TensorView& t, int64_t dim) {
  RowShape r{1, t.sizes[dim], 1};
  for (int64_t d = 0; d < dim; ++d) r.rows *= t.sizes[d];
  for (size_t d = dim + 1; d < t.sizes.size(); ++d) r.inner *= t.sizes[d];
  r.rows *= r.inner;
  return r;
}

unsigned warp_blocks(int64_t rows) {
  const int64_t b = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

void softmax(const TensorView& out, const TensorView& in, int64_t dim, bool log) {
  if (in.numel() == 0) return;
  const RowShape r = row_shape(in, dim);
  dispatch_floating(in.dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    softmax_kernel<T><<<warp_blocks(r.rows), kThreads, 0, stream_for(out.data)>>>(
        out.ptr<T>(), in.ptr<const T>(), r.rows, r.dim_size, r.inner, log);
  });
  check_launch("softmax");
}

void softmax_backward(const TensorView& grad_in, const TensorView& grad_out,
                      const TensorView& output, int64_t dim, bool log) {
  if (grad_in.numel() == 0) return;
  const RowShape r = row_shape(output, dim);
  dispatch_floating(output.dtype, "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    softmax_backward_kernel<T><<<warp_blocks(r.rows), kThreads, 0, stream_for(grad_in.data)>>>(
        grad_in.ptr<T>(), grad_out.ptr<const T>(), output.ptr<const T>(), r.rows, r.dim_size,
        r.inner, log);
  });
  check_launch("softmax_backward");
}

}  // namespace

const ReductionKernels reduction_kernels{&reduce, &arg_reduce, &index_backward, &softmax,
                                         &softmax_backward};

}  // namespace nns::cuda
