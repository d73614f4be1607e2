// SPDX-License-Identifier: GPL-3.0-or-later
// Views and layout: view, reshape, transpose, permute, squeeze, slicing, expand, contiguous,
// clone, to. A view is a new TensorImpl over the same Storage; its backward reshapes, moves
// or scatters the gradient back to the input's shape.
#include <algorithm>
#include <numeric>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/tensor/factories.h"

namespace nns {

namespace {

// Backward of any op that only changes the shape: the gradient takes the input's shape.
struct ReshapeLikeBackward : Node {
  std::string node_name;
  Shape self_sizes;
  ReshapeLikeBackward(std::string n, Shape s) : node_name(std::move(n)), self_sizes(std::move(s)) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override { return {grads[0].reshape(self_sizes)}; }
};

struct TransposeBackward0 : Node {
  std::string node_name;
  int64_t dim0, dim1;
  TransposeBackward0(std::string n, int64_t d0, int64_t d1)
      : node_name(std::move(n)), dim0(d0), dim1(d1) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override { return {grads[0].transpose(dim0, dim1)}; }
};

struct PermuteBackward0 : Node {
  Shape inverse;
  explicit PermuteBackward0(Shape inv) : inverse(std::move(inv)) {}
  std::string name() const override { return "PermuteBackward0"; }
  variable_list apply(variable_list&& grads) override { return {grads[0].permute(inverse)}; }
};

// Slicing and selecting: the gradient lands in the same place of a zero tensor.
struct SliceBackward0 : Node {
  std::string node_name;
  Shape self_sizes;
  int64_t dim, start, end, step;
  bool select;  // select drops the dim
  SliceBackward0(std::string n, Shape s, int64_t d, int64_t st, int64_t e, int64_t sp, bool sel)
      : node_name(std::move(n)),
        self_sizes(std::move(s)),
        dim(d),
        start(st),
        end(e),
        step(sp),
        select(sel) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    Tensor out = zeros(self_sizes, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    Tensor region = select ? out.select(dim, start) : out.slice(dim, start, end, step);
    region.copy_(grads[0]);
    return {out};
  }
};

struct ExpandBackward0 : Node {
  Shape self_sizes;
  explicit ExpandBackward0(Shape s) : self_sizes(std::move(s)) {}
  std::string name() const override { return "ExpandBackward0"; }
  variable_list apply(variable_list&& grads) override { return {sum_to(grads[0], self_sizes)}; }
};

struct CloneBackward0 : Node {
  std::string name() const override { return "CloneBackward0"; }
  variable_list apply(variable_list&& grads) override { return {grads[0]}; }
};

struct ToCopyBackward0 : Node {
  Dtype self_dtype;
  Device self_device;
  ToCopyBackward0(Dtype d, Device dev) : self_dtype(d), self_device(dev) {}
  std::string name() const override { return "ToCopyBackward0"; }
  variable_list apply(variable_list&& grads) override {
    return {grads[0].to(self_device).to(self_dtype)};
  }
};

// A new view of self's storage; records node (if any) as its grad_fn.
Tensor make_view(const Tensor& self, Shape sizes, Shape strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>(self.storage(), std::move(sizes), std::move(strides),
                                           offset, self.dtype());
  impl->is_view = true;
  return Tensor(std::move(impl));
}

template <class NodeT, class... Args>
Tensor record(Tensor out, const Tensor& self, Args&&... args) {
  if (auto node = make_node<NodeT>({self}, std::forward<Args>(args)...)) set_history(out, node);
  return out;
}

// The sizes for view/reshape with one -1 inferred; op names the caller in errors.
Shape infer_size(const Shape& shape, int64_t numel, const char* op) {
  Shape out = shape;
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      if (infer >= 0)
        throw ShapeError(std::string(op) + ": only one dimension can be inferred (-1)");
      infer = static_cast<int64_t>(i);
    } else if (out[i] < 0) {
      throw ShapeError(std::string(op) + ": invalid shape dimension " + std::to_string(out[i]));
    } else {
      known *= out[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      throw ShapeError(std::string(op) + ": shape '" + shape_str(shape) +
                       "' is invalid for input of size " + std::to_string(numel));
    }
    out[infer] = numel / known;
  } else if (known != numel) {
    throw ShapeError(std::string(op) + ": shape '" + shape_str(shape) +
                     "' is invalid for input of size " + std::to_string(numel));
  }
  return out;
}

// Strides that let `sizes` view memory laid out as (old_sizes, old_strides), or nullopt when
// no view is possible (ATen's computeStride).
std::optional<Shape> view_strides(const Shape& old_sizes, const Shape& old_strides,
                                  const Shape& sizes) {
  Shape strides(sizes.size());
  if (old_sizes.empty()) return Shape(sizes.size(), 1);
  int64_t numel = shape_numel(old_sizes);
  if (numel == 0) {
    if (old_sizes == sizes) return old_strides;
    return contiguous_strides(sizes);
  }
  int64_t view_d = static_cast<int64_t>(sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; tensor_d--) {
    tensor_numel *= old_sizes[tensor_d];
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || sizes[view_d] == 1)) {
        strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return strides;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel(), "view");
  auto strides = view_strides(this->sizes(), this->strides(), sizes);
  if (!strides) {
    throw ShapeError("view: size " + shape_str(shape) +
                     " is not compatible with input tensor's "
                     "size " +
                     shape_str(this->sizes()) + " and stride " + shape_str(this->strides()) +
                     " (at least one dimension spans across two contiguous subspaces); use "
                     ".reshape(...) instead");
  }
  return record<ReshapeLikeBackward>(make_view(*this, sizes, *strides, storage_offset()), *this,
                                     "ViewBackward0", this->sizes());
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape sizes = infer_size(shape, numel(), "reshape");
  if (auto strides = view_strides(this->sizes(), this->strides(), sizes)) {
    return record<ReshapeLikeBackward>(make_view(*this, sizes, *strides, storage_offset()), *this,
                                       "ReshapeAliasBackward0", this->sizes());
  }
  Tensor copy;
  {
    NoGradGuard no_grad;
    copy = contiguous();
  }
  Tensor out = make_view(copy, sizes, contiguous_strides(sizes), 0);
  out.impl()->is_view = false;
  return record<ReshapeLikeBackward>(out, *this, "UnsafeViewBackward0", this->sizes());
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  start_dim = wrap_dim(start_dim, dim(), "flatten");
  end_dim = wrap_dim(end_dim, dim(), "flatten");
  if (start_dim > end_dim) {
    throw IndexError("flatten: start_dim (" + std::to_string(start_dim) +
                     ") cannot come after end_dim (" + std::to_string(end_dim) + ")");
  }
  if (start_dim == end_dim) return *this;
  Shape sizes(this->sizes().begin(), this->sizes().begin() + start_dim);
  int64_t n = 1;
  for (int64_t d = start_dim; d <= end_dim; ++d) n *= size(d);
  sizes.push_back(n);
  sizes.insert(sizes.end(), this->sizes().begin() + end_dim + 1, this->sizes().end());
  return reshape(sizes);
}

Tensor Tensor::unflatten(int64_t d, const Shape& sizes) const {
  d = wrap_dim(d, dim(), "unflatten");
  Shape inner = infer_size(sizes, size(d), "unflatten");
  Shape out(this->sizes().begin(), this->sizes().begin() + d);
  out.insert(out.end(), inner.begin(), inner.end());
  out.insert(out.end(), this->sizes().begin() + d + 1, this->sizes().end());
  return view(out);
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  dim0 = wrap_dim(dim0, dim(), "transpose");
  dim1 = wrap_dim(dim1, dim(), "transpose");
  Shape sizes = this->sizes();
  Shape strides = this->strides();
  if (dim() > 0) {
    std::swap(sizes[dim0], sizes[dim1]);
    std::swap(strides[dim0], strides[dim1]);
  }
  return record<TransposeBackward0>(make_view(*this, sizes, strides, storage_offset()), *this,
                                    "TransposeBackward0", dim0, dim1);
}

Tensor Tensor::t() const {
  if (dim() > 2) {
    throw ShapeError("t: expects a tensor with <= 2 dimensions, but self is " +
                     std::to_string(dim()) + "D; use transpose(dim0, dim1) or permute");
  }
  if (dim() < 2)
    return record<ReshapeLikeBackward>(make_view(*this, sizes(), strides(), storage_offset()),
                                       *this, "TBackward0", sizes());
  Shape sizes = {size(1), size(0)};
  Shape strides = {stride(1), stride(0)};
  return record<TransposeBackward0>(make_view(*this, sizes, strides, storage_offset()), *this,
                                    "TBackward0", 0, 1);
}

Tensor Tensor::permute(const Shape& dims) const {
  if (static_cast<int64_t>(dims.size()) != dim()) {
    throw ShapeError("permute: number of dims don't match in permute: the tensor has " +
                     std::to_string(dim()) + " dims but " + std::to_string(dims.size()) +
                     " were given (" + shape_str(dims) + ")");
  }
  Shape sizes(dims.size()), strides(dims.size()), inverse(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    if (seen[d])
      throw IndexError("permute: repeated dim " + std::to_string(d) + " in " + shape_str(dims));
    seen[d] = true;
    sizes[i] = size(d);
    strides[i] = stride(d);
    inverse[d] = static_cast<int64_t>(i);
  }
  return record<PermuteBackward0>(make_view(*this, sizes, strides, storage_offset()), *this,
                                  inverse);
}

Tensor Tensor::squeeze() const {
  Shape sizes, strides;
  for (int64_t d = 0; d < dim(); ++d) {
    if (size(d) != 1) {
      sizes.push_back(size(d));
      strides.push_back(stride(d));
    }
  }
  return record<ReshapeLikeBackward>(make_view(*this, sizes, strides, storage_offset()), *this,
                                     "SqueezeBackward0", this->sizes());
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  Shape sizes = this->sizes(), strides = this->strides();
  if (dim() > 0 && sizes[d] == 1) {
    sizes.erase(sizes.begin() + d);
    strides.erase(strides.begin() + d);
  }
  return record<ReshapeLikeBackward>(make_view(*this, sizes, strides, storage_offset()), *this,
                                     "SqueezeBackward1", this->sizes());
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape sizes = this->sizes(), strides = this->strides();
  int64_t new_stride = d < dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, new_stride);
  return record<ReshapeLikeBackward>(make_view(*this, sizes, strides, storage_offset()), *this,
                                     "UnsqueezeBackward0", this->sizes());
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  if (dim() == 0) throw IndexError("slice: cannot slice a 0-dim tensor");
  d = wrap_dim(d, dim(), "slice");
  if (step <= 0) throw ValueError("slice: step must be positive, got " + std::to_string(step));
  const int64_t n = size(d);
  // Python's clamping of slice bounds.
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape sizes = this->sizes(), strides = this->strides();
  sizes[d] = (end - start + step - 1) / step;
  strides[d] *= step;
  Tensor out = make_view(*this, sizes, strides, storage_offset() + start * stride(d));
  return record<SliceBackward0>(out, *this, "SliceBackward0", this->sizes(), d, start, end, step,
                                false);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  const int64_t n = size(d);
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start + length > n) {
    throw IndexError("narrow: start (" + std::to_string(start) + ") + length (" +
                     std::to_string(length) + ") exceeds dimension size (" + std::to_string(n) +
                     ")");
  }
  return slice(d, start, start + length);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  if (dim() == 0) throw IndexError("select: invalid index of a 0-dim tensor; use item()");
  d = wrap_dim(d, dim(), "select");
  const int64_t n = size(d);
  if (index < -n || index >= n) {
    throw IndexError("select: index " + std::to_string(index) + " is out of bounds for dimension " +
                     std::to_string(d) + " with size " + std::to_string(n));
  }
  if (index < 0) index += n;
  Shape sizes = this->sizes(), strides = this->strides();
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  Tensor out = make_view(*this, sizes, strides, storage_offset() + index * stride(d));
  return record<SliceBackward0>(out, *this, "SelectBackward0", this->sizes(), d, index, index + 1,
                                1, true);
}

Tensor Tensor::expand(const Shape& shape) const {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  if (ndim < dim()) {
    throw ShapeError("expand: the number of sizes provided (" + std::to_string(ndim) +
                     ") must be greater or equal to the number of dimensions in the tensor (" +
                     std::to_string(dim()) + ")");
  }
  Shape sizes(ndim), strides(ndim);
  for (int64_t i = ndim - 1; i >= 0; --i) {
    int64_t src = i - (ndim - dim());
    int64_t want = shape[i];
    if (src >= 0) {
      int64_t have = size(src);
      if (want == -1) want = have;
      if (have != want && have != 1) {
        throw ShapeError("expand: the expanded size of the tensor (" + std::to_string(want) +
                         ") must match the existing size (" + std::to_string(have) +
                         ") at non-singleton dimension " + std::to_string(i) + ". Target sizes: " +
                         shape_str(shape) + ". Tensor sizes: " + shape_str(this->sizes()));
      }
      sizes[i] = want;
      strides[i] = have == want ? stride(src) : 0;
    } else {
      if (want < 0)
        throw ShapeError("expand: -1 is not allowed in a leading, non-existing dimension");
      sizes[i] = want;
      strides[i] = 0;
    }
  }
  return record<ExpandBackward0>(make_view(*this, sizes, strides, storage_offset()), *this,
                                 this->sizes());
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

Tensor Tensor::clone() const {
  Tensor out = empty(sizes(), TensorOptions(dtype()).device(device()));
  kernels<CopyKernels>(device(), "clone").copy(view_of(out), view_of(*this));
  return record<CloneBackward0>(out, *this);
}

Tensor Tensor::to(Dtype target) const {
  if (target == dtype()) return *this;
  Tensor out = empty(sizes(), TensorOptions(target).device(device()));
  kernels<CopyKernels>(device(), "to").copy(view_of(out), view_of(*this));
  if (nns::is_floating_point(target)) return record<ToCopyBackward0>(out, *this, dtype(), device());
  return out;
}

Tensor Tensor::to(Device target) const {
  if (target == device()) return *this;
  if (!device_available(target)) throw_no_backend(target, "to");
  // Through a contiguous buffer: devices exchange flat memory, layouts are rebuilt on arrival.
  Tensor src;
  {
    NoGradGuard no_grad;
    src = contiguous();
  }
  Tensor out = empty(sizes(), TensorOptions(dtype()).device(target));
  copy_between_devices(out.raw_data(), target, src.raw_data(), device(),
                       static_cast<size_t>(numel()) * element_size());
  return record<ToCopyBackward0>(out, *this, dtype(), device());
}

}  // namespace nns
