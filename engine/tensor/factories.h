// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Making tensors: torch.zeros, ones, full, arange, rand, randn, empty, tensor(data), ...
#include <initializer_list>
#include <vector>

#include "engine/tensor/generator.h"
#include "engine/tensor/tensor.h"

namespace nns {

Tensor empty(const Shape& shape, TensorOptions options = {});
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
// [0, end) and [start, end) by step; the dtype defaults to float32 (pass kInt64 for indices).
Tensor arange(double end, TensorOptions options = {});
Tensor arange(double start, double end, double step = 1, TensorOptions options = {});
// Uniform in [0, 1) and standard normal, from the given or the default generator.
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* generator = nullptr);
// Integers in [low, high), int64 unless options say otherwise.
Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions options = kInt64,
               Generator* generator = nullptr);
// A random permutation of 0..n-1 (int64).
Tensor randperm(int64_t n, Generator* generator = nullptr);

Tensor empty_like(const Tensor& t);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t, Generator* generator = nullptr);
Tensor randn_like(const Tensor& t, Generator* generator = nullptr);

// From data in row-major order; data.size() must equal the shape's element count.
Tensor from_vector(const std::vector<float>& data, const Shape& shape, TensorOptions options = {});
Tensor from_vector(const std::vector<double>& data, const Shape& shape,
                   TensorOptions options = kFloat64);
Tensor from_vector(const std::vector<int64_t>& data, const Shape& shape,
                   TensorOptions options = kInt64);
Tensor from_vector(const std::vector<bool>& data, const Shape& shape,
                   TensorOptions options = kBool);
// torch.tensor([...]) and torch.tensor([[...], ...]) for float data (float32 by default).
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows,
              TensorOptions options = {});
// A zero-dim tensor.
Tensor scalar_tensor(double value, TensorOptions options = {});

// In-place fills from a generator, used by factories and nn::init.
Tensor& uniform_(Tensor& t, double from = 0, double to = 1, Generator* generator = nullptr);
Tensor& normal_(Tensor& t, double mean = 0, double std = 1, Generator* generator = nullptr);
// 1 with probability p_keep, else 0: the Bernoulli mask of dropout (p_keep = 1 - p).
Tensor bernoulli_mask(const Shape& shape, double p_keep, TensorOptions options,
                      Generator* generator = nullptr);

}  // namespace nns
