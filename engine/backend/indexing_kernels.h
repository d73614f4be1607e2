// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Kernels of the indexing ops (engine/ops/indexing.cpp, embedding): gathers by an int64
// index tensor and their scatter-add backwards. The ops validate every index first
// (find_invalid_index), so the kernels never see one out of range.
#include <cstdint>

#include "engine/backend/kernel_types.h"

namespace nns {

struct IndexingKernels {
  // The position (in row-major order) of the first element of the int64 tensor index that
  // is outside [0, size), or -1 when all are inside; *value receives that element.
  int64_t (*find_invalid_index)(const TensorView& index, int64_t size, int64_t* value);
  // out.select(dim, i) = self.select(dim, index[i]) for the 1-D index. out and self have the
  // same dtype.
  void (*index_select)(const TensorView& out, const TensorView& self, int64_t dim,
                       const TensorView& index);
  // self.select(dim, index[i]) += source.select(dim, i); repeated indices accumulate.
  void (*index_add)(const TensorView& self, int64_t dim, const TensorView& index,
                    const TensorView& source);
  // out[..., i_dim, ...] = self[..., index[..., i_dim, ...], ...] over index's shape (out
  // has index's shape).
  void (*gather)(const TensorView& out, const TensorView& self, int64_t dim,
                 const TensorView& index);
  // self[..., index[..., i_dim, ...], ...] += source[..., i_dim, ...] over index's shape.
  void (*scatter_add)(const TensorView& self, int64_t dim, const TensorView& index,
                      const TensorView& source);

  static const IndexingKernels* for_device(DeviceType type);
};

}  // namespace nns
