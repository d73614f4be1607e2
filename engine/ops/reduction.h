// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Reductions over all elements or over dims (keepdim keeps them with size 1), and softmax.
// Dims may be negative; an empty dims list reduces every dim (as PyTorch's sum(x, [])).
// Integer and bool tensors sum to int64; mean, var and softmax need a floating dtype.
//
//   Tensor loss = nns::mean(nns::pow(pred - target, 2));
//   Tensor p = nns::softmax(logits, -1);             // max-subtracted: no overflow
//   auto [values, indices] = nns::max(scores, 1);
#include <utility>

#include "engine/tensor/tensor.h"

namespace nns {

Tensor sum(const Tensor& a);
Tensor sum(const Tensor& a, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& a);
Tensor mean(const Tensor& a, const Shape& dims, bool keepdim = false);
// Over all elements: a zero-dim tensor. The gradient goes to every maximal element equally
// (PyTorch's MaxBackward1).
Tensor max(const Tensor& a);
Tensor min(const Tensor& a);
// Over one dim: (values, int64 indices); the gradient goes to the index.
std::pair<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
std::pair<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmax(const Tensor& a);  // index into the flattened tensor
Tensor argmax(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim = false);
Tensor var(const Tensor& a, const Shape& dims, int64_t correction = 1, bool keepdim = false);
Tensor var(const Tensor& a, int64_t correction = 1);  // over all elements
Tensor softmax(const Tensor& a, int64_t dim);
Tensor log_softmax(const Tensor& a, int64_t dim);

}  // namespace nns
