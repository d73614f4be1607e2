// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.nn.utils.clip_grad_norm_ and clip_grad_value_ (PyTorch 1.13): gradients rescaled or
// clamped in place, between backward() and the optimizer's step().
//
//   loss.backward();
//   nns::nn::clip_grad_norm_(model->parameters(), 1.0);
//   optimizer.step();
#include <limits>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns::nn {

inline constexpr double kInfNorm = std::numeric_limits<double>::infinity();

// The norm of all gradients together (as if concatenated into one vector; parameters
// without a gradient are skipped), returned as a 0-dim tensor of the first gradient's dtype
// (float32 0 when none has one). Every gradient is then multiplied by
// min(max_norm / (total_norm + 1e-6), 1), computed in that dtype as PyTorch computes it.
// norm_type is p of the p-norm: any p > 0, kInfNorm (the largest |g|), 0 (the count of
// non-zeros) or -kInfNorm (the smallest |g|), as torch.norm. With error_if_nonfinite, a NaN
// or infinite total norm is a ValueError (with PyTorch's words) and nothing is changed;
// otherwise the gradients are scaled by it all the same (and become NaN), as in PyTorch.
Tensor clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                       double norm_type = 2.0, bool error_if_nonfinite = false);

// Clamps every gradient into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value);

}  // namespace nns::nn
