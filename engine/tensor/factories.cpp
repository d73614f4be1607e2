// SPDX-License-Identifier: GPL-3.0-or-later
// Factories that need no random numbers (the random ones are in random.cpp).
#include "engine/tensor/factories.h"

#include <cmath>

#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"

namespace nns {

namespace {
void check_shape(const Shape& shape, const char* op) {
  for (int64_t s : shape) {
    if (s < 0) {
      throw ValueError(std::string(op) + ": negative dimension in shape " + shape_str(shape) +
                       "; sizes must be >= 0");
    }
  }
}

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad()) t.requires_grad_(true);
  return t;
}

template <class T>
Tensor from_data(const T* data, size_t count, const Shape& shape, const TensorOptions& options,
                 Dtype source_dtype) {
  check_shape(shape, "from_vector");
  if (static_cast<int64_t>(count) != shape_numel(shape)) {
    throw ShapeError("from_vector: " + std::to_string(count) + " values do not fill shape " +
                     shape_str(shape) + " (" + std::to_string(shape_numel(shape)) + " elements)");
  }
  // The values are host memory: convert them on the CPU, then move the tensor (a device's copy
  // kernel cannot read a host pointer: on a GPU it is an illegal address).
  Tensor out = empty(shape, TensorOptions(options.dtype()));
  Shape strides = contiguous_strides(shape);
  TensorView src{const_cast<T*>(data), source_dtype, shape, strides};
  kernels<CopyKernels>(out.device(), "from_vector").copy(view_of(out), src);
  if (!options.device().is_cpu()) out = out.to(options.device());
  return finish(out, options);
}
}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  check_shape(shape, "empty");
  const int64_t n = shape_numel(shape);
  auto storage =
      Storage::allocate(static_cast<size_t>(n) * element_size(options.dtype()), options.device());
  auto impl = std::make_shared<TensorImpl>(std::move(storage), shape, contiguous_strides(shape), 0,
                                           options.dtype());
  return finish(Tensor(std::move(impl)), options);
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  Tensor t = empty(shape, TensorOptions(options.dtype()).device(options.device()));
  kernels<CopyKernels>(t.device(), "full").fill(view_of(t), value);
  return finish(t, options);
}

Tensor zeros(const Shape& shape, TensorOptions options) {
  return full(shape, 0, options);
}
Tensor ones(const Shape& shape, TensorOptions options) {
  return full(shape, 1, options);
}

Tensor arange(double end, TensorOptions options) {
  return arange(0, end, 1, options);
}

Tensor arange(double start, double end, double step, TensorOptions options) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) {
    throw ValueError(
        "arange: step must be nonzero and the bounds finite (got start=" + std::to_string(start) +
        ", end=" + std::to_string(end) + ", step=" + std::to_string(step) + ")");
  }
  if ((step > 0 && end < start) || (step < 0 && end > start)) {
    throw ValueError("arange: upper bound and larger bound inconsistent with step sign");
  }
  const int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  std::vector<double> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return from_data(values.data(), values.size(), {n}, options, kFloat64);
}

Tensor empty_like(const Tensor& t) {
  return empty(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
}
Tensor ones_like(const Tensor& t) {
  return ones(t.sizes(), TensorOptions(t.dtype()).device(t.device()));
}
Tensor full_like(const Tensor& t, double value) {
  return full(t.sizes(), value, TensorOptions(t.dtype()).device(t.device()));
}

Tensor from_vector(const std::vector<float>& data, const Shape& shape, TensorOptions options) {
  return from_data(data.data(), data.size(), shape, options, kFloat32);
}
Tensor from_vector(const std::vector<double>& data, const Shape& shape, TensorOptions options) {
  return from_data(data.data(), data.size(), shape, options, kFloat64);
}
Tensor from_vector(const std::vector<int64_t>& data, const Shape& shape, TensorOptions options) {
  return from_data(data.data(), data.size(), shape, options, kInt64);
}
Tensor from_vector(const std::vector<bool>& data, const Shape& shape, TensorOptions options) {
  std::vector<uint8_t> bytes(data.begin(), data.end());
  return from_data(reinterpret_cast<const bool*>(bytes.data()), bytes.size(), shape, options,
                   kBool);
}

Tensor tensor(std::initializer_list<double> values, TensorOptions options) {
  return from_data(values.begin(), values.size(), {static_cast<int64_t>(values.size())}, options,
                   kFloat64);
}

Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions options) {
  const int64_t n = static_cast<int64_t>(rows.size());
  const int64_t m = n ? static_cast<int64_t>(rows.begin()->size()) : 0;
  std::vector<double> values;
  values.reserve(n * m);
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != m) {
      throw ShapeError("tensor: rows of different lengths (" + std::to_string(m) + " and " +
                       std::to_string(row.size()) + "); every row needs the same length");
    }
    values.insert(values.end(), row.begin(), row.end());
  }
  return from_data(values.data(), values.size(), {n, m}, options, kFloat64);
}

Tensor scalar_tensor(double value, TensorOptions options) {
  return from_data(&value, 1, {}, options, kFloat64);
}

}  // namespace nns
