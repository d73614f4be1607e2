#pragma once
// Reductions over all elements or over dims (keepdim keeps them with size 1), and softmax.
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
