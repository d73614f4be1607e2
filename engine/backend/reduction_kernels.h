// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The reduction kernel family: sums, means and extremes over dims, arg-extremes along one
// dim, and softmax. Outputs are given in keepdim form (size 1 on every reduced dim); the
// op layer (engine/ops/reduction.cpp) squeezes them afterwards.
//
//   Tensor out = empty({1, 4});  // a [3, 4] input summed over dim 0, keepdim
//   kernels<ReductionKernels>(a.device(), "sum").reduce(ReduceOp::Sum, view_of(out), view_of(a));
#include <cstdint>

#include "engine/backend/kernel_types.h"

namespace nns {

enum class ReduceOp : uint8_t {
  Sum,
  Mean,
  Max,  // NaN wins (PyTorch propagates NaN)
  Min
};

enum class ArgReduceOp : uint8_t { Max, Min };

struct ReductionKernels {
  // out has in's number of dims, size 1 where reduced and in's size elsewhere; out and in
  // share one dtype (float32/float64/int64; Max and Min also bool). in has at least one element
  // for Max/Min.
  void (*reduce)(ReduceOp op, const TensorView& out, const TensorView& in);
  // The extreme along dim and its first index (a NaN counts as the extreme, as in PyTorch).
  // values (in's dtype, may have data == nullptr to skip) and indices (int64) are in keepdim
  // form; in's size along dim is at least 1.
  void (*arg_reduce)(ArgReduceOp op, const TensorView& values, const TensorView& indices,
                     const TensorView& in, int64_t dim);
  // grad_in (zero-filled by the caller, the input's sizes) receives grad_out (keepdim form) at
  // the positions indices (keepdim form) name along dim: the backward of max/min along a dim.
  void (*index_backward)(const TensorView& grad_in, const TensorView& grad_out,
                         const TensorView& indices, int64_t dim);
  // Softmax, or log-softmax when log, along dim; out and in contiguous, same sizes, floating.
  void (*softmax)(const TensorView& out, const TensorView& in, int64_t dim, bool log);
  // grad_in from grad_out and the forward's output; all contiguous with one layout.
  void (*softmax_backward)(const TensorView& grad_in, const TensorView& grad_out,
                           const TensorView& output, int64_t dim, bool log);

  static const ReductionKernels* for_device(DeviceType type);
};

}  // namespace nns
