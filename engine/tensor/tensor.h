// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Tensor: a cheap, copyable handle (like torch.Tensor) over a TensorImpl, which holds the
// shared storage, shape, strides, offset and dtype, and the autograd metadata when there
// is any. Copying a Tensor copies the handle; both name the same tensor. Views (view,
// transpose, slicing, ...) are new TensorImpls over the same Storage.
//
//   nns::Tensor x = nns::ones({2, 2}, nns::TensorOptions().requires_grad(true));
//   nns::Tensor y = (x + 2).sum();
//   y.backward();          // x.grad() is all ones
//   std::cout << x;        // tensor([[1., 1.],
//                          //         [1., 1.]], requires_grad=True)
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/autograd/hooks.h"
#include "engine/tensor/device.h"
#include "engine/tensor/dtype.h"
#include "engine/tensor/error.h"
#include "engine/tensor/storage.h"

namespace nns {

using Shape = std::vector<int64_t>;

class Node;
class Tensor;
class TensorImpl;
class Generator;

// A hook on a tensor's gradient: returns a replacement gradient, or an undefined Tensor to
// leave it as it is.
using TensorHook = std::function<Tensor(const Tensor& grad)>;
using TensorHookTable = HookTable<TensorHook>;

// Autograd state of one tensor; allocated only for tensors that take part in autograd, so
// plain tensors stay small and fast.
struct AutogradMeta {
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  // The node that made this tensor (non-leaf), and which of its outputs this tensor is.
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  // A leaf's AccumulateGrad node, created on first use and shared by every graph.
  std::weak_ptr<Node> grad_accumulator;
  bool retains_grad = false;
  // Hooks registered with register_hook. For a non-leaf the same table is also registered
  // on grad_fn (the engine runs it on the gradient of output output_nr).
  std::shared_ptr<TensorHookTable> hooks;
};

class TensorImpl {
 public:
  TensorImpl(std::shared_ptr<Storage> storage, Shape sizes, Shape strides, int64_t storage_offset,
             Dtype dtype)
      : storage(std::move(storage)),
        sizes(std::move(sizes)),
        strides(std::move(strides)),
        storage_offset(storage_offset),
        dtype(dtype) {}

  std::shared_ptr<Storage> storage;
  Shape sizes;
  Shape strides;  // in elements, as in PyTorch
  int64_t storage_offset = 0;
  Dtype dtype;
  // True when this tensor shares its storage with a tensor it was made from by a view op.
  bool is_view = false;
  std::unique_ptr<AutogradMeta> autograd;

  AutogradMeta& autograd_meta() {
    if (!autograd) autograd = std::make_unique<AutogradMeta>();
    return *autograd;
  }
};

// How a factory makes a tensor: dtype, device, requires_grad. Setters chain:
// TensorOptions().dtype(kFloat64).requires_grad(true).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(Dtype d) : dtype_(d) {}    // NOLINT: implicit like PyTorch's dtype argument
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions& dtype(Dtype d) {
    dtype_ = d;
    return *this;
  }
  TensorOptions& device(Device d) {
    device_ = d;
    return *this;
  }
  TensorOptions& requires_grad(bool r) {
    requires_grad_ = r;
    return *this;
  }
  Dtype dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  Dtype dtype_ = kFloat32;
  Device device_ = kCPU;
  bool requires_grad_ = false;
};

class Tensor {
 public:
  Tensor() = default;  // undefined, like an empty optional
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // Same TensorImpl (not merely equal values).
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }

  // ---- Metadata -------------------------------------------------------------------------
  const Shape& sizes() const { return checked().sizes; }
  const Shape& shape() const { return checked().sizes; }
  const Shape& strides() const { return checked().strides; }
  int64_t size(int64_t dim) const;  // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return static_cast<int64_t>(checked().sizes.size()); }
  int64_t numel() const;
  int64_t storage_offset() const { return checked().storage_offset; }
  Dtype dtype() const { return checked().dtype; }
  Device device() const { return checked().storage->device(); }
  size_t element_size() const { return nns::element_size(dtype()); }
  bool is_contiguous() const;
  bool is_floating_point() const { return nns::is_floating_point(dtype()); }
  const std::shared_ptr<Storage>& storage() const { return checked().storage; }
  // Address of element [0, 0, ...] (storage data plus offset).
  void* raw_data() const;
  // Typed pointer to element [0, ...]; throws DtypeError when T does not match the dtype.
  template <class T>
  T* data_ptr() const;
  // The value of a one-element tensor, as a double (PyTorch's item()).
  double item() const;
  // The elements in row-major order, converted to T (works for any layout).
  template <class T>
  std::vector<T> to_vector() const;
  // The version counter that in-place operations bump (PyTorch's _version).
  uint32_t version() const { return checked().storage->version(); }
  void bump_version() const { checked().storage->bump_version(); }

  // ---- Autograd ---------------------------------------------------------------------------
  bool requires_grad() const;
  // Leaf tensors only (as in PyTorch); floating dtypes only.
  Tensor& requires_grad_(bool requires_grad = true);
  // The accumulated gradient, or an undefined Tensor.
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  const std::shared_ptr<Node>& grad_fn() const;
  uint32_t output_nr() const;
  bool is_leaf() const { return grad_fn() == nullptr; }
  // Keep .grad() for a non-leaf after backward.
  void retain_grad() const;
  bool retains_grad() const;
  // A new tensor over the same storage, out of the graph, requires_grad false.
  Tensor detach() const;
  // Like PyTorch's backward: gradient defaults to 1 for a one-element tensor.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  // The hook sees the gradient of this tensor and may return a replacement.
  RemovableHandle register_hook(TensorHook hook) const;
  RemovableHandle register_hook(std::function<void(const Tensor&)> hook) const;

  // ---- Views and layout (engine/ops/shape_ops.cpp) ------------------------------------------
  Tensor view(const Shape& shape) const;     // one size may be -1
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor unflatten(int64_t dim, const Shape& sizes) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // 2-D transpose (<= 2 dims)
  Tensor permute(const Shape& dims) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  // Python's x[..., start:end:step, ...] on one dim; end is clamped like Python slicing.
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // x[..., index, ...]; drops dim
  Tensor operator[](int64_t index) const { return select(0, index); }
  Tensor expand(const Shape& sizes) const;  // -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;
  Tensor to(Dtype dtype) const;  // itself when the dtype already matches
  Tensor to(Device device) const;

  // ---- Arithmetic (engine/ops/elementwise.cpp) -----------------------------------------------
  Tensor add(const Tensor& other, double alpha = 1) const;
  Tensor sub(const Tensor& other, double alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor neg() const;
  Tensor pow(double exponent) const;
  Tensor pow(const Tensor& exponent) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor abs() const;
  Tensor clamp(std::optional<double> min, std::optional<double> max) const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;

  // In place; each bumps the version counter.
  Tensor& add_(const Tensor& other, double alpha = 1);
  Tensor& add_(double other);
  Tensor& sub_(const Tensor& other, double alpha = 1);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(double other);
  Tensor& clamp_(std::optional<double> min, std::optional<double> max);
  Tensor& relu_();
  Tensor& addcmul_(const Tensor& a, const Tensor& b, double value = 1);
  Tensor& addcdiv_(const Tensor& a, const Tensor& b, double value = 1);
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);  // broadcasts src, converts its dtype

  // ---- Reductions (engine/ops/reduction.cpp) -------------------------------------------------
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor max() const;
  Tensor min() const;
  Tensor argmax() const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  // correction 1 is the unbiased estimator (PyTorch's default).
  Tensor var(const Shape& dims, int64_t correction = 1, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;

  // ---- Linear algebra (engine/ops/linalg.cpp) -----------------------------------------------
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;

  // ---- Printing (engine/tensor/tensor_print.cpp) ---------------------------------------------
  // PyTorch's repr: tensor([[1., 2.]], requires_grad=True), grad_fn=<...>, dtype=... suffixes.
  std::string str() const;

 private:
  TensorImpl& checked() const;
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& tensor);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

// ---- Helpers shared by the ops ----------------------------------------------------------------
// Wraps a negative dim and checks the range; op names the caller in the error.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);
// "[2, 3]"
std::string shape_str(const Shape& shape);
// The shape two shapes broadcast to (NumPy/PyTorch rules, aligned from the last dim); throws
// ShapeError naming op and the first mismatching dim. Defined in engine/ops/elementwise.cpp.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);

}  // namespace nns
