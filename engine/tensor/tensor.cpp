// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/tensor/tensor.h"

#include <cstring>
#include <sstream>

#include "engine/autograd/autograd.h"
#include "engine/backend/kernel_types.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor/factories.h"

namespace nns {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<int64_t>(shape[i], 1);
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  // A zero-dim tensor accepts dim 0 and -1, as in PyTorch.
  int64_t range = std::max<int64_t>(ndim, 1);
  if (dim < -range || dim >= range) {
    throw IndexError(std::string(op) + ": dimension " + std::to_string(dim) +
                     " is out of range for a tensor with " + std::to_string(ndim) +
                     " dimension(s) (expected a dim in [" + std::to_string(-range) + ", " +
                     std::to_string(range - 1) + "])");
  }
  return dim < 0 ? dim + range : dim;
}

TensorImpl& Tensor::checked() const {
  if (!impl_) {
    throw ValueError(
        "Tensor: this tensor is undefined (default-constructed); give it a value "
        "with a factory such as nns::zeros before using it");
  }
  return *impl_;
}

int64_t Tensor::size(int64_t dim) const {
  const TensorImpl& t = checked();
  return t.sizes[wrap_dim(dim, this->dim(), "size")];
}

int64_t Tensor::stride(int64_t dim) const {
  const TensorImpl& t = checked();
  return t.strides[wrap_dim(dim, this->dim(), "stride")];
}

int64_t Tensor::numel() const {
  return shape_numel(checked().sizes);
}

bool Tensor::is_contiguous() const {
  const TensorImpl& t = checked();
  int64_t expected = 1;
  for (size_t i = t.sizes.size(); i-- > 0;) {
    if (t.sizes[i] == 1) continue;
    if (t.strides[i] != expected) return false;
    expected *= t.sizes[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  const TensorImpl& t = checked();
  return static_cast<char*>(t.storage->data()) +
         t.storage_offset * static_cast<int64_t>(nns::element_size(t.dtype));
}

namespace {
template <class T>
constexpr Dtype dtype_of();
template <>
constexpr Dtype dtype_of<float>() {
  return kFloat32;
}
template <>
constexpr Dtype dtype_of<double>() {
  return kFloat64;
}
template <>
constexpr Dtype dtype_of<int64_t>() {
  return kInt64;
}
template <>
constexpr Dtype dtype_of<bool>() {
  return kBool;
}
}  // namespace

template <class T>
T* Tensor::data_ptr() const {
  if (dtype() != dtype_of<T>()) {
    throw DtypeError("data_ptr: the tensor's dtype is " + dtype_name(dtype()) +
                     ", not the requested " + dtype_name(dtype_of<T>()) +
                     "; convert it first with .to(...)");
  }
  // Host code reads the pointer: a GPU tensor's memory is not the host's (a read would crash).
  if (!device().is_cpu()) {
    throw DeviceError("data_ptr: the tensor is on " + device().str() +
                      "; host code reads CPU tensors: copy it with .to(nns::kCPU) first");
  }
  return static_cast<T*>(raw_data());
}
template float* Tensor::data_ptr<float>() const;
template double* Tensor::data_ptr<double>() const;
template int64_t* Tensor::data_ptr<int64_t>() const;
template bool* Tensor::data_ptr<bool>() const;

template <class T>
std::vector<T> Tensor::to_vector() const {
  // A contiguous CPU copy in T's dtype; then read it out.
  Tensor c = to(kCPU).to(dtype_of<T>()).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

// vector<bool> has no data(): read bools one by one.
template <>
std::vector<bool> Tensor::to_vector<bool>() const {
  Tensor c = to(kCPU).to(kBool).contiguous();
  const bool* p = c.data_ptr<bool>();
  return std::vector<bool>(p, p + c.numel());
}

double Tensor::item() const {
  if (numel() != 1) {
    throw ValueError("item: a Tensor with " + std::to_string(numel()) +
                     " elements cannot be converted to a scalar; only one-element tensors can");
  }
  return to_vector<double>()[0];
}

// ---- Autograd accessors -------------------------------------------------------------------

bool Tensor::requires_grad() const {
  const TensorImpl& t = checked();
  return t.autograd && (t.autograd->requires_grad || t.autograd->grad_fn);
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  TensorImpl& t = checked();
  if (!is_leaf()) {
    if (!requires_grad) {
      throw AutogradError(
          "requires_grad_: you can only change requires_grad flags of leaf variables; to use "
          "a non-leaf without gradients, call .detach() on it");
    }
    return *this;
  }
  if (requires_grad && !nns::is_floating_point(t.dtype)) {
    throw DtypeError(
        "requires_grad_: only tensors of floating point dtype can require "
        "gradients, this one is " +
        dtype_name(t.dtype));
  }
  if (requires_grad || t.autograd) t.autograd_meta().requires_grad = requires_grad;
  return *this;
}

Tensor Tensor::grad() const {
  const TensorImpl& t = checked();
  if (!t.autograd || !t.autograd->grad) return Tensor();
  return Tensor(t.autograd->grad);
}

void Tensor::set_grad(const Tensor& grad) const {
  TensorImpl& t = checked();
  if (grad.defined()) {
    if (grad.sizes() != t.sizes) {
      throw ShapeError("set_grad: assigned grad has shape " + shape_str(grad.sizes()) +
                       ", but the tensor has shape " + shape_str(t.sizes));
    }
    if (grad.dtype() != t.dtype) {
      throw DtypeError("set_grad: assigned grad has dtype " + dtype_name(grad.dtype()) +
                       ", but the tensor has dtype " + dtype_name(t.dtype));
    }
    t.autograd_meta().grad = grad.impl_ptr();
  } else if (t.autograd) {
    t.autograd->grad.reset();
  }
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> kNone;
  const TensorImpl& t = checked();
  return t.autograd ? t.autograd->grad_fn : kNone;
}

uint32_t Tensor::output_nr() const {
  const TensorImpl& t = checked();
  return t.autograd ? t.autograd->output_nr : 0;
}

void Tensor::retain_grad() const {
  if (!requires_grad()) {
    throw AutogradError("retain_grad: can't retain_grad on a Tensor that has requires_grad=False");
  }
  if (is_leaf()) return;  // leaves keep their grad anyway
  AutogradMeta& meta = checked().autograd_meta();
  if (meta.retains_grad) return;
  meta.retains_grad = true;
  // A hook in registration order, as in PyTorch 1.13: it sees the gradient as the hooks
  // registered before it left it. The weak reference keeps the graph from owning the tensor.
  std::weak_ptr<TensorImpl> weak = impl_;
  register_hook(TensorHook([weak](const Tensor& grad) {
    if (auto impl = weak.lock()) {
      NoGradGuard no_grad;
      AutogradMeta& m = impl->autograd_meta();
      m.grad = m.grad ? (Tensor(m.grad) + grad).impl_ptr() : grad.clone().impl_ptr();
    }
    return Tensor();
  }));
}

bool Tensor::retains_grad() const {
  const TensorImpl& t = checked();
  return t.autograd && t.autograd->retains_grad;
}

Tensor Tensor::detach() const {
  const TensorImpl& t = checked();
  auto impl =
      std::make_shared<TensorImpl>(t.storage, t.sizes, t.strides, t.storage_offset, t.dtype);
  impl->is_view = true;
  return Tensor(std::move(impl));
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  autograd::backward({*this}, grads, retain_graph);
}

RemovableHandle Tensor::register_hook(TensorHook hook) const {
  if (!requires_grad()) {
    throw AutogradError(
        "register_hook: cannot register a hook on a tensor that doesn't "
        "require gradient; call requires_grad_() on a leaf first");
  }
  AutogradMeta& meta = checked().autograd_meta();
  if (!meta.hooks) {
    meta.hooks = std::make_shared<TensorHookTable>();
    if (meta.grad_fn) {
      Node& node = *meta.grad_fn;
      if (node.tensor_pre_hooks.size() <= meta.output_nr) {
        node.tensor_pre_hooks.resize(meta.output_nr + 1);
      }
      node.tensor_pre_hooks[meta.output_nr] = meta.hooks;
    }
  }
  return meta.hooks->add(std::move(hook));
}

RemovableHandle Tensor::register_hook(std::function<void(const Tensor&)> hook) const {
  return register_hook(TensorHook([hook = std::move(hook)](const Tensor& grad) {
    hook(grad);
    return Tensor();
  }));
}

std::ostream& operator<<(std::ostream& os, const Tensor& tensor) {
  return os << tensor.str();
}

// ---- Views for kernels ------------------------------------------------------------------

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

TensorView view_of(const Tensor& t) {
  const TensorImpl& impl = *t.impl();
  return TensorView{t.raw_data(), impl.dtype, impl.sizes, impl.strides};
}

TensorView broadcast_view(const Tensor& t, const Shape& shape, Shape& strides_out) {
  const TensorImpl& impl = *t.impl();
  const int64_t ndim = static_cast<int64_t>(shape.size());
  const int64_t tdim = static_cast<int64_t>(impl.sizes.size());
  strides_out.assign(ndim, 0);
  for (int64_t i = 0; i < tdim; ++i) {
    int64_t out_i = ndim - tdim + i;
    strides_out[out_i] = impl.sizes[i] == 1 ? 0 : impl.strides[i];
  }
  return TensorView{t.raw_data(), impl.dtype, shape, strides_out};
}

}  // namespace nns
