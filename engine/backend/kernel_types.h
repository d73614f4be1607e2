// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What kernels see of a tensor: a raw pointer to element [0, ...] and the layout. No
// ownership, no autograd; the op that calls a kernel keeps the tensors alive.
#include <cstdint>
#include <span>

#include "engine/tensor/tensor.h"

namespace nns {

struct TensorView {
  void* data = nullptr;
  Dtype dtype = kFloat32;
  std::span<const int64_t> sizes;
  std::span<const int64_t> strides;  // in elements; 0 on broadcast dims

  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t s : sizes) n *= s;
    return n;
  }
  bool is_contiguous() const;
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
};

// The view of a tensor as it is.
TensorView view_of(const Tensor& t);

// The columns [column, column + sizes[1]) of a row-major matrix, as a view with `strides`
// (the matrix's row length and 1); the spans must outlive it.
inline TensorView column_block(const TensorView& m, int64_t column, const int64_t (&sizes)[2],
                               const int64_t (&strides)[2]) {
  TensorView v = m;
  v.data = static_cast<char*>(m.data) + column * static_cast<int64_t>(element_size(m.dtype));
  v.sizes = sizes;
  v.strides = strides;
  return v;
}

// A tensor's layout broadcast to `shape` (strides 0 on the broadcast dims). The returned
// view's spans point into `strides_out`, which must outlive it.
TensorView broadcast_view(const Tensor& t, const Shape& shape, Shape& strides_out);

// Layout kernels: strided copy with dtype conversion, and fill.
struct CopyKernels {
  // dst and src have the same sizes (src may have 0 strides); dtypes may differ.
  void (*copy)(const TensorView& dst, const TensorView& src);
  void (*fill)(const TensorView& dst, double value);
  static const CopyKernels* for_device(DeviceType type);
};

}  // namespace nns
