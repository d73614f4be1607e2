// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Joining and indexing: cat, stack and its inverse unbind, index_select, gather.
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// The slices of `a` along dim, as views (torch.unbind): one autograd node for them all, whose
// backward stacks their gradients, where a select per slice would scatter each into a tensor
// of a's full size (a loop over time steps would cost time squared).
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
// index: 1-D int64.
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
// index: int64 with a's number of dims; out[i][j] = a[index[i][j]][j] for dim 0, ...
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);

}  // namespace nns
