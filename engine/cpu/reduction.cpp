// SPDX-License-Identifier: GPL-3.0-or-later
// CPU reduction kernels. A reduction over any set of dims walks the input once with
// for_each_run, the output seen with stride 0 on the reduced dims: a run along a reduced dim
// folds into one output element (an Eigen sum), a run along a kept dim adds a whole input row
// onto an output row. Softmax works on [outer, dim, inner] blocks of contiguous memory.
#include <algorithm>
#include <limits>
#include <type_traits>
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
using CMap = Eigen::Map<const Vec<T>>;
template <class T>
using Map = Eigen::Map<Vec<T>>;
using Stride = Eigen::InnerStride<Eigen::Dynamic>;
template <class T>
using CSMap = Eigen::Map<const Vec<T>, 0, Stride>;
template <class T>
using SMap = Eigen::Map<Vec<T>, 0, Stride>;
// A [rows x cols] block stored column after column (cols = the softmax dim, rows = inner).
template <class T>
using Block = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
T* at(char* p) {
  return reinterpret_cast<T*>(p);
}

template <class T>
T& element(char* base, int64_t i, int64_t byte_stride) {
  return *reinterpret_cast<T*>(base + i * byte_stride);
}

// out's strides as seen from the input: 0 on the reduced dims (size 1 in out).
Shape broadcast_out_strides(const TensorView& out, const TensorView& in) {
  Shape strides(in.sizes.size());
  for (size_t d = 0; d < strides.size(); ++d) strides[d] = out.sizes[d] == 1 ? 0 : out.strides[d];
  return strides;
}

// float32 sums accumulate in float64: the result is then (nearly always) the correctly rounded
// sum, which is also what PyTorch's cascade summation arrives at.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, float>, double, T>;

// Whether out reduces a contiguous input over a run of leading dims only (a bias gradient:
// [batch, features] to [features]), so that the input reads as rows x out.numel() columns.
bool reduces_leading_dims(const TensorView& out, const TensorView& in) {
  if (!in.is_contiguous()) return false;
  size_t d = 0;
  while (d < in.sizes.size() && out.sizes[d] == 1) ++d;
  for (; d < in.sizes.size(); ++d) {
    if (out.sizes[d] != in.sizes[d]) return false;
  }
  return true;
}

// The column sums of a contiguous rows x cols input, kBlock columns at a time in accumulators
// that stay in registers (the general loop re-reads and re-writes a row of accumulators per
// input row). Each column adds its rows in order from zero, as the general loop does, so the
// sums are the same bits.
template <class T, class A>
void sum_columns(T* o, const T* x, int64_t rows, int64_t cols, bool mean, A count) {
  constexpr int64_t kBlock = 32;
  const auto finish = [&](A total) { return static_cast<T>(mean ? total / count : total); };
  int64_t j0 = 0;
  for (; j0 + kBlock <= cols; j0 += kBlock) {
    A acc[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * cols + j0;
      for (int64_t j = 0; j < kBlock; ++j) acc[j] += static_cast<A>(row[j]);
    }
    for (int64_t j = 0; j < kBlock; ++j) o[j0 + j] = finish(acc[j]);
  }
  const int64_t width = cols - j0;
  if (width == 0) return;
  A acc[kBlock] = {};
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols + j0;
    for (int64_t j = 0; j < width; ++j) acc[j] += static_cast<A>(row[j]);
  }
  for (int64_t j = 0; j < width; ++j) o[j0 + j] = finish(acc[j]);
}

// out = sum of in over the dims where out has size 1, divided by the count when mean.
template <class T>
void sum_into(const TensorView& out, const TensorView& in, bool mean) {
  using A = Accumulator<T>;
  const int64_t n_out = out.numel();
  const A count = static_cast<A>(in.numel() / std::max<int64_t>(n_out, 1));
  T* o = out.ptr<T>();
  if (n_out == 1 && in.is_contiguous()) {
    const A total = CMap<T>(in.ptr<const T>(), in.numel()).template cast<A>().sum();
    *o = static_cast<T>(mean ? total / count : total);
    return;
  }
  if (n_out > 0 && reduces_leading_dims(out, in)) {
    sum_columns<T, A>(o, in.ptr<const T>(), in.numel() / n_out, n_out, mean, count);
    return;
  }
  // out is contiguous; the accumulators take its layout.
  std::vector<A> acc(static_cast<size_t>(n_out), A(0));
  const Shape out_strides = broadcast_out_strides(out, in);
  // static: clang 14 does not let the capture-less lambda below read a local constexpr.
  static constexpr int64_t sa = sizeof(A), st = sizeof(T);
  StridedOperands<2> ops{{reinterpret_cast<char*>(acc.data()), static_cast<char*>(in.data)},
                         {out_strides, in.strides},
                         {sa, st}};
  for_each_run(in.sizes, ops, [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    if (s[0] == 0) {
      *at<A>(p[0]) +=
          s[1] == st ? CMap<T>(at<const T>(p[1]), n).template cast<A>().sum()
                     : CSMap<T>(at<const T>(p[1]), n, Stride(s[1] / st)).template cast<A>().sum();
    } else if (s[0] == sa && s[1] == st) {
      Map<A>(at<A>(p[0]), n) += CMap<T>(at<const T>(p[1]), n).template cast<A>();
    } else {
      SMap<A>(at<A>(p[0]), n, Stride(s[0] / sa)) +=
          CSMap<T>(at<const T>(p[1]), n, Stride(s[1] / st)).template cast<A>();
    }
  });
  for (int64_t i = 0; i < n_out; ++i) o[i] = static_cast<T>(mean ? acc[i] / count : acc[i]);
}

// Max or min with NaN winning: once the accumulator is NaN it stays NaN.
template <class T, bool kMax>
void extreme_into(const TensorView& out, const TensorView& in) {
  constexpr T identity =
      std::numeric_limits<T>::has_infinity
          ? (kMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity())
          : (kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
  T* o = out.ptr<T>();
  std::fill(o, o + out.numel(), identity);
  const Shape out_strides = broadcast_out_strides(out, in);
  StridedOperands<2> ops{{static_cast<char*>(out.data), static_cast<char*>(in.data)},
                         {out_strides, in.strides},
                         {int64_t{sizeof(T)}, int64_t{sizeof(T)}}};
  for_each_run(in.sizes, ops, [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      T& acc = element<T>(p[0], i, s[0]);
      const T x = element<const T>(p[1], i, s[1]);
      // x != x only for NaN; it also compiles for int64 and bool, where it is always false.
      if ((kMax ? x > acc : x < acc) || x != x) acc = x;
    }
  });
}

void reduce(ReduceOp op, const TensorView& out, const TensorView& in) {
  switch (op) {
    case ReduceOp::Sum:
      return dispatch_arithmetic(in.dtype, "sum", [&](auto tag) {
        if constexpr (!std::is_same_v<decltype(tag), bool>) sum_into<decltype(tag)>(out, in, false);
      });
    case ReduceOp::Mean:
      return dispatch_floating(in.dtype, "mean",
                               [&](auto tag) { sum_into<decltype(tag)>(out, in, true); });
    case ReduceOp::Max:
      return dispatch_arithmetic(
          in.dtype, "max", [&](auto tag) { extreme_into<decltype(tag), true>(out, in); },
          /*allow_bool=*/true);
    case ReduceOp::Min:
      return dispatch_arithmetic(
          in.dtype, "min", [&](auto tag) { extreme_into<decltype(tag), false>(out, in); },
          /*allow_bool=*/true);
  }
}

// in's sizes with dim collapsed to 1: the positions of a keepdim output.
Shape collapsed(const TensorView& in, int64_t dim) {
  Shape sizes(in.sizes.begin(), in.sizes.end());
  sizes[dim] = 1;
  return sizes;
}

template <class T, bool kMax>
void arg_reduce_typed(const TensorView& values, const TensorView& indices, const TensorView& in,
                      int64_t dim) {
  const int64_t k_size = in.sizes[dim];
  const int64_t k_stride = in.strides[dim] * static_cast<int64_t>(sizeof(T));
  const bool write_values = values.data != nullptr;
  // Without values, the indices stand in as operand 0 so that the loop has a valid pointer.
  const TensorView& v = write_values ? values : indices;
  const Shape sizes = collapsed(in, dim);
  StridedOperands<3> ops{
      {static_cast<char*>(v.data), static_cast<char*>(indices.data), static_cast<char*>(in.data)},
      {v.strides, indices.strides, in.strides},
      {write_values ? int64_t{sizeof(T)} : int64_t{sizeof(int64_t)}, int64_t{sizeof(int64_t)},
       int64_t{sizeof(T)}}};
  for_each_run(sizes, ops, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const char* row = p[2] + i * s[2];
      T best = *reinterpret_cast<const T*>(row);
      int64_t best_k = 0;
      for (int64_t k = 1; k < k_size; ++k) {
        const T x = *reinterpret_cast<const T*>(row + k * k_stride);
        // The first NaN wins and stays; among equals the first index stays.
        if (((kMax ? x > best : x < best) || x != x) && best == best) {
          best = x;
          best_k = k;
        }
      }
      if (write_values) element<T>(p[0], i, s[0]) = best;
      element<int64_t>(p[1], i, s[1]) = best_k;
    }
  });
}

void arg_reduce(ArgReduceOp op, const TensorView& values, const TensorView& indices,
                const TensorView& in, int64_t dim) {
  dispatch_arithmetic(
      in.dtype, op == ArgReduceOp::Max ? "max" : "min",
      [&](auto tag) {
        using T = decltype(tag);
        if (op == ArgReduceOp::Max) {
          arg_reduce_typed<T, true>(values, indices, in, dim);
        } else {
          arg_reduce_typed<T, false>(values, indices, in, dim);
        }
      },
      /*allow_bool=*/true);
}

void index_backward(const TensorView& grad_in, const TensorView& grad_out,
                    const TensorView& indices, int64_t dim) {
  dispatch_floating(grad_in.dtype, "max_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t k_stride = grad_in.strides[dim] * static_cast<int64_t>(sizeof(T));
    const Shape sizes = collapsed(grad_in, dim);
    StridedOperands<3> ops{{static_cast<char*>(grad_in.data), static_cast<char*>(grad_out.data),
                            static_cast<char*>(indices.data)},
                           {grad_in.strides, grad_out.strides, indices.strides},
                           {int64_t{sizeof(T)}, int64_t{sizeof(T)}, int64_t{sizeof(int64_t)}}};
    for_each_run(sizes, ops, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = element<const int64_t>(p[2], i, s[2]);
        *reinterpret_cast<T*>(p[0] + i * s[0] + k * k_stride) = element<const T>(p[1], i, s[1]);
      }
    });
  });
}

// [outer, dim_size, inner] of a contiguous layout.
struct SoftmaxShape {
  int64_t outer = 1, dim_size = 1, inner = 1;
};

SoftmaxShape softmax_shape(const TensorView& t, int64_t dim) {
  SoftmaxShape s;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) s.outer *= t.sizes[d];
    if (d == dim) s.dim_size = t.sizes[d];
    if (d > dim) s.inner *= t.sizes[d];
  }
  return s;
}

// softmax or log_softmax of a [rows x cols] block stored column after column, along its rows:
// column k holds the elements at position k of the softmax dim, so every step is a contiguous,
// vectorized pass over one column. The same formulas as PyTorch's vectorized CPU softmax:
// subtract the max, exponentiate, and multiply by the reciprocal of the sum (softmax) or
// subtract the log of the sum (log_softmax).
template <class T, class In, class Out>
void softmax_columns(const In& x, Out& y, bool log) {
  const int64_t dim_size = x.cols();
  Vec<T> max = x.col(0);
  for (int64_t k = 1; k < dim_size; ++k) max = max.max(x.col(k));
  Vec<T> sum = Vec<T>::Zero(x.rows());
  if (log) {
    for (int64_t k = 0; k < dim_size; ++k) {
      y.col(k) = x.col(k) - max;
      sum += y.col(k).unaryExpr(ExpOp<T>{});
    }
    const Vec<T> log_sum = sum.log();
    for (int64_t k = 0; k < dim_size; ++k) y.col(k) -= log_sum;
  } else {
    for (int64_t k = 0; k < dim_size; ++k) {
      y.col(k) = (x.col(k) - max).unaryExpr(ExpOp<T>{});
      sum += y.col(k);
    }
    const Vec<T> inv_sum = sum.inverse();
    for (int64_t k = 0; k < dim_size; ++k) y.col(k) *= inv_sum;
  }
}

// Its backward, in the same layout.
template <class T, class In, class Out>
void softmax_backward_columns(const In& g, const In& y, Out& gi, bool log) {
  const int64_t dim_size = g.cols();
  Vec<T> acc = Vec<T>::Zero(g.rows());
  if (log) {
    for (int64_t k = 0; k < dim_size; ++k) acc += g.col(k);
    for (int64_t k = 0; k < dim_size; ++k) gi.col(k) = g.col(k) - y.col(k).exp() * acc;
  } else {
    for (int64_t k = 0; k < dim_size; ++k) acc += g.col(k) * y.col(k);
    for (int64_t k = 0; k < dim_size; ++k) gi.col(k) = y.col(k) * (g.col(k) - acc);
  }
}

// A softmax over a short last dim (a classifier's logits: [batch, 3]) runs on the rows'
// transpose, where the rows are the vector lanes: one 3-element Eigen map per row ran scalar
// libm exp and log, and the loss took a tenth of the small benchmark MLP's step.
constexpr int64_t kShortSoftmaxDim = 16;

bool softmax_on_transpose(const SoftmaxShape& sh) {
  return sh.inner == 1 && sh.dim_size <= kShortSoftmaxDim && sh.outer > 1;
}

void softmax(const TensorView& out, const TensorView& in, int64_t dim, bool log) {
  dispatch_floating(in.dtype, log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = decltype(tag);
    const SoftmaxShape sh = softmax_shape(in, dim);
    if (sh.outer * sh.dim_size * sh.inner == 0) return;
    if (softmax_on_transpose(sh)) {
      const Block<T> x =
          Eigen::Map<const Block<T>>(in.ptr<const T>(), sh.dim_size, sh.outer).transpose();
      Block<T> y(sh.outer, sh.dim_size);
      softmax_columns<T>(x, y, log);
      Eigen::Map<Block<T>>(out.ptr<T>(), sh.dim_size, sh.outer) = y.transpose();
      return;
    }
    const int64_t block = sh.dim_size * sh.inner;
    for (int64_t o = 0; o < sh.outer; ++o) {
      const T* x_ptr = in.ptr<const T>() + o * block;
      T* y_ptr = out.ptr<T>() + o * block;
      if (sh.inner == 1) {
        CMap<T> x(x_ptr, sh.dim_size);
        Map<T> y(y_ptr, sh.dim_size);
        const T max = x.maxCoeff();
        if (log) {
          const T log_sum = std::log((x - max).unaryExpr(ExpOp<T>{}).sum());
          y = x - max - log_sum;
        } else {
          y = (x - max).unaryExpr(ExpOp<T>{});
          const T inv_sum = T(1) / y.sum();
          y *= inv_sum;
        }
      } else {
        Eigen::Map<const Block<T>> x(x_ptr, sh.inner, sh.dim_size);
        Eigen::Map<Block<T>> y(y_ptr, sh.inner, sh.dim_size);
        softmax_columns<T>(x, y, log);
      }
    }
  });
}

void softmax_backward(const TensorView& grad_in, const TensorView& grad_out,
                      const TensorView& output, int64_t dim, bool log) {
  dispatch_floating(output.dtype, log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    const SoftmaxShape sh = softmax_shape(output, dim);
    if (sh.outer * sh.dim_size * sh.inner == 0) return;
    if (softmax_on_transpose(sh)) {
      const auto transposed = [&](const TensorView& t) -> Block<T> {
        return Eigen::Map<const Block<T>>(t.ptr<const T>(), sh.dim_size, sh.outer).transpose();
      };
      const Block<T> g = transposed(grad_out), y = transposed(output);
      Block<T> gi(sh.outer, sh.dim_size);
      softmax_backward_columns<T>(g, y, gi, log);
      Eigen::Map<Block<T>>(grad_in.ptr<T>(), sh.dim_size, sh.outer) = gi.transpose();
      return;
    }
    const int64_t block = sh.dim_size * sh.inner;
    for (int64_t o = 0; o < sh.outer; ++o) {
      const T* g_ptr = grad_out.ptr<const T>() + o * block;
      const T* y_ptr = output.ptr<const T>() + o * block;
      T* gi_ptr = grad_in.ptr<T>() + o * block;
      if (sh.inner == 1) {
        CMap<T> g(g_ptr, sh.dim_size), y(y_ptr, sh.dim_size);
        Map<T> gi(gi_ptr, sh.dim_size);
        if (log) {
          gi = g - y.exp() * g.sum();
        } else {
          gi = y * (g - (g * y).sum());
        }
      } else {
        Eigen::Map<const Block<T>> g(g_ptr, sh.inner, sh.dim_size), y(y_ptr, sh.inner, sh.dim_size);
        Eigen::Map<Block<T>> gi(gi_ptr, sh.inner, sh.dim_size);
        softmax_backward_columns<T>(g, y, gi, log);
      }
    }
  });
}

}  // namespace

const ReductionKernels reduction_kernels{&reduce, &arg_reduce, &index_backward, &softmax,
                                         &softmax_backward};

}  // namespace nns::cpu
