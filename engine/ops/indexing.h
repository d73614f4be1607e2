#pragma once
// Joining and indexing: cat, stack, index_select, gather.
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// index: 1-D int64.
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
// index: int64 with a's number of dims; out[i][j] = a[index[i][j]][j] for dim 0, ...
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);

}  // namespace nns
