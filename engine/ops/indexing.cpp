// SPDX-License-Identifier: GPL-3.0-or-later
// Joining and indexing: cat, stack, index_select, gather, and embedding (a row lookup, so it
// lives here with its siblings). Every index is checked before a kernel reads it; the
// backwards scatter-add the gradient, so repeated indices accumulate.
#include "engine/ops/indexing.h"

#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/indexing_kernels.h"
#include "engine/backend/kernel_types.h"
#include "engine/ops/nn_ops.h"
#include "engine/tensor/factories.h"

namespace nns {

namespace {

void check_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) throw ValueError(std::string(op) + ": " + what + " is an undefined tensor");
}

void check_index_dtype(const Tensor& index, const char* op) {
  if (index.dtype() != kInt64) {
    throw DtypeError(std::string(op) + ": expected an int64 index tensor, but got " +
                     dtype_name(index.dtype()) + "; convert it with .to(nns::kInt64)");
  }
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device()) {
    throw DeviceError(std::string(op) + ": expected all tensors on the same device, but got " +
                      a.device().str() + " and " + b.device().str() + "; move them with .to(...)");
  }
}

// Throws IndexError unless every element of index is in [0, size); `where` describes the
// indexed dim for the message.
void check_indices(const Tensor& index, int64_t size, const char* op, const std::string& where) {
  int64_t value = 0;
  const int64_t position =
      kernels<IndexingKernels>(index.device(), op).find_invalid_index(view_of(index), size, &value);
  if (position >= 0) {
    throw IndexError(std::string(op) + ": index " + std::to_string(value) + " (at position " +
                     std::to_string(position) + " of the index) is out of range for " + where +
                     "; indices must be in [0, " + std::to_string(size) + ")");
  }
}

// The region of `out` that starts at `offset` along `dim` and has `sizes`.
TensorView region(const Tensor& out, int64_t dim, int64_t offset, const Shape& sizes) {
  char* data = static_cast<char*>(out.raw_data()) +
               offset * out.stride(dim) * static_cast<int64_t>(out.element_size());
  return TensorView{data, out.dtype(), sizes, out.strides()};
}

// 0-dim operands of the indexing kernels are read as one element along a 1-D dim.
Tensor as_1d(const Tensor& t) {
  return t.dim() == 0 ? t.detach().view({1}) : t;
}

Tensor grad_in_dtype(const Tensor& grad, Dtype dtype) {
  return grad.dtype() == dtype ? grad : grad.to(dtype);
}

struct CatBackward0 : Node {
  int64_t dim = 0;
  std::vector<Shape> sizes;
  std::vector<Dtype> dtypes;
  std::vector<bool> skipped;  // legacy 1-D empty inputs, not part of the result
  std::string name() const override { return "CatBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out;
    int64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (skipped[i]) {
        out.push_back(next_edges[i].valid() ? zeros({0}, dtypes[i]) : Tensor());
        continue;
      }
      const int64_t n = sizes[i][dim];
      out.push_back(next_edges[i].valid()
                        ? grad_in_dtype(grads[0].narrow(dim, offset, n), dtypes[i])
                        : Tensor());
      offset += n;
    }
    return out;
  }
};

struct UnbindBackward0 : Node {
  int64_t dim = 0;
  Shape slice_sizes;
  Dtype dtype = kFloat32;
  Device device;
  std::string name() const override { return "UnbindBackward0"; }
  variable_list apply(variable_list&& grads) override {
    // A slice that got no gradient contributes zeros.
    for (Tensor& g : grads) {
      if (!g.defined()) g = zeros(slice_sizes, TensorOptions(dtype).device(device));
    }
    return {stack(grads, dim)};
  }
};

struct StackBackward0 : Node {
  int64_t dim = 0;
  std::vector<Dtype> dtypes;
  std::string name() const override { return "StackBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      out.push_back(next_edges[i].valid()
                        ? grad_in_dtype(grads[0].select(dim, static_cast<int64_t>(i)), dtypes[i])
                        : Tensor());
    }
    return out;
  }
};

struct IndexSelectBackward0 : Node {
  Shape self_sizes;
  int64_t dim = 0;
  SavedVariable index;
  std::string name() const override { return "IndexSelectBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& grad = grads[0];
    Tensor out = zeros(self_sizes, TensorOptions(grad.dtype()).device(grad.device()));
    kernels<IndexingKernels>(grad.device(), "index_select_backward")
        .index_add(view_of(as_1d(out)), dim, view_of(index.unpack(this)), view_of(as_1d(grad)));
    return {out, Tensor()};
  }
  void release_variables() override { index.reset(); }
};

struct GatherBackward0 : Node {
  Shape self_sizes;
  int64_t dim = 0;
  SavedVariable index;
  std::string name() const override { return "GatherBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& grad = grads[0];
    Tensor out = zeros(self_sizes, TensorOptions(grad.dtype()).device(grad.device()));
    kernels<IndexingKernels>(grad.device(), "gather_backward")
        .scatter_add(view_of(as_1d(out)), dim, view_of(index.unpack(this)), view_of(as_1d(grad)));
    return {out, Tensor()};
  }
  void release_variables() override { index.reset(); }
};

struct EmbeddingBackward0 : Node {
  int64_t num_weights = 0;
  int64_t padding_idx = -1;
  SavedVariable indices;
  std::string name() const override { return "EmbeddingBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& grad = grads[0];
    const int64_t dim = grad.size(-1);
    Tensor out = zeros({num_weights, dim}, TensorOptions(grad.dtype()).device(grad.device()));
    Tensor flat = indices.unpack(this).reshape({-1});
    kernels<IndexingKernels>(grad.device(), "embedding_backward")
        .index_add(view_of(out), 0, view_of(flat), view_of(grad.reshape({flat.numel(), dim})));
    // The padding row takes no gradient, however often it was looked up.
    if (padding_idx >= 0) {
      kernels<CopyKernels>(out.device(), "embedding_backward").fill(view_of(out[padding_idx]), 0);
    }
    return {out, Tensor()};
  }
  void release_variables() override { indices.reset(); }
};

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("cat: expected a non-empty list of tensors");
  // PyTorch's legacy rule: 1-D empty tensors are left out whatever the other shapes are.
  auto skip = [](const Tensor& t) { return t.dim() == 1 && t.numel() == 0; };
  const Tensor* ref = nullptr;
  Dtype dtype = Dtype::Bool;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_defined(t, "cat", ("tensor " + std::to_string(i)).c_str());
    check_same_device(t, tensors[0], "cat");
    if (t.dim() == 0) {
      throw ShapeError("cat: zero-dimensional tensor (at position " + std::to_string(i) +
                       ") cannot be concatenated; unsqueeze(0) it or use stack");
    }
    dtype = i == 0 ? t.dtype() : promote_types(dtype, t.dtype());
    if (!ref && !skip(t)) ref = &t;
  }
  if (!ref) ref = &tensors[0];
  dim = wrap_dim(dim, ref->dim(), "cat");
  Shape shape = ref->sizes();
  shape[dim] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (skip(t) && &t != ref) continue;
    if (t.dim() != ref->dim()) {
      throw ShapeError("cat: tensors must have the same number of dimensions: got " +
                       shape_str(ref->sizes()) + " and " + shape_str(t.sizes()) +
                       " (tensor number " + std::to_string(i) + " in the list)");
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      if (d != dim && t.size(d) != ref->size(d)) {
        throw ShapeError("cat: sizes of tensors must match except in dimension " +
                         std::to_string(dim) + ". Expected size " + std::to_string(ref->size(d)) +
                         " but got size " + std::to_string(t.size(d)) + " for tensor number " +
                         std::to_string(i) + " in the list (shapes " + shape_str(ref->sizes()) +
                         " and " + shape_str(t.sizes()) + ")");
      }
    }
    shape[dim] += t.size(dim);
  }
  Tensor out = empty(shape, TensorOptions(dtype).device(ref->device()));
  const CopyKernels& copy = kernels<CopyKernels>(out.device(), "cat");
  auto node = make_node<CatBackward0>(tensors);
  if (node) node->dim = dim;
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    const bool skipped = skip(t) && &t != ref;
    if (!skipped) {
      copy.copy(region(out, dim, offset, t.sizes()), view_of(t));
      offset += t.size(dim);
    }
    if (node) {
      node->sizes.push_back(t.sizes());
      node->dtypes.push_back(t.dtype());
      node->skipped.push_back(skipped);
    }
  }
  if (node) set_history(out, node);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  if (tensors.empty()) throw ValueError("stack: expected a non-empty list of tensors");
  const Tensor& ref = tensors[0];
  check_defined(ref, "stack", "tensor 0");
  Dtype dtype = ref.dtype();
  for (size_t i = 1; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_defined(t, "stack", ("tensor " + std::to_string(i)).c_str());
    check_same_device(t, ref, "stack");
    if (t.sizes() != ref.sizes()) {
      throw ShapeError("stack: expects each tensor to be equal size, but got " +
                       shape_str(ref.sizes()) + " at entry 0 and " + shape_str(t.sizes()) +
                       " at entry " + std::to_string(i));
    }
    dtype = promote_types(dtype, t.dtype());
  }
  dim = wrap_dim(dim, ref.dim() + 1, "stack");
  Shape shape = ref.sizes();
  shape.insert(shape.begin() + dim, static_cast<int64_t>(tensors.size()));
  Tensor out = empty(shape, TensorOptions(dtype).device(ref.device()));
  Shape strides = out.strides();
  const int64_t step = strides[dim] * static_cast<int64_t>(out.element_size());
  strides.erase(strides.begin() + dim);
  const CopyKernels& copy = kernels<CopyKernels>(out.device(), "stack");
  for (size_t i = 0; i < tensors.size(); ++i) {
    TensorView dst{static_cast<char*>(out.raw_data()) + static_cast<int64_t>(i) * step, dtype,
                   ref.sizes(), strides};
    copy.copy(dst, view_of(tensors[i]));
  }
  if (auto node = make_node<StackBackward0>(tensors)) {
    node->dim = dim;
    for (const Tensor& t : tensors) node->dtypes.push_back(t.dtype());
    set_history(out, node);
  }
  return out;
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  check_defined(a, "unbind", "input");
  dim = wrap_dim(dim, a.dim(), "unbind");
  // Views of a detached alias (the same storage and version counter), given the one node's
  // history below.
  const Tensor base = a.detach();
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(a.size(dim)));
  for (int64_t i = 0; i < a.size(dim); ++i) out.push_back(base.select(dim, i));
  if (auto node = make_node<UnbindBackward0>({a})) {
    node->dim = dim;
    node->slice_sizes = out.empty() ? Shape{} : out.front().sizes();
    node->dtype = a.dtype();
    node->device = a.device();
    set_history(out, node);
  }
  return out;
}

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  check_defined(a, "index_select", "input");
  check_defined(index, "index_select", "index");
  check_index_dtype(index, "index_select");
  check_same_device(a, index, "index_select");
  if (index.dim() > 1) {
    throw ShapeError("index_select: index must be a vector (0-D or 1-D), but got shape " +
                     shape_str(index.sizes()));
  }
  dim = wrap_dim(dim, a.dim(), "index_select");
  const int64_t size = a.dim() == 0 ? 1 : a.size(dim);
  check_indices(index, size, "index_select",
                "dimension " + std::to_string(dim) + " of size " + std::to_string(size) +
                    " (input shape " + shape_str(a.sizes()) + ")");
  if (a.dim() == 0 && index.numel() != 1) {
    throw ShapeError("index_select: a 0-dim input takes exactly one index, but got " +
                     std::to_string(index.numel()));
  }
  Shape shape = a.sizes();
  if (a.dim() > 0) shape[dim] = index.numel();
  Tensor out = empty(shape, TensorOptions(a.dtype()).device(a.device()));
  kernels<IndexingKernels>(a.device(), "index_select")
      .index_select(view_of(as_1d(out)), view_of(as_1d(a)), dim, view_of(index));
  if (auto node = make_node<IndexSelectBackward0>({a, index})) {
    node->self_sizes = a.sizes();
    node->dim = dim;
    node->index = SavedVariable(index);
    set_history(out, node);
  }
  return out;
}

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  check_defined(a, "gather", "input");
  check_defined(index, "gather", "index");
  check_index_dtype(index, "gather");
  check_same_device(a, index, "gather");
  if (std::max<int64_t>(a.dim(), 1) != std::max<int64_t>(index.dim(), 1)) {
    throw ShapeError(
        "gather: index tensor must have the same number of dimensions as the input "
        "tensor, but got index " +
        shape_str(index.sizes()) + " and input " + shape_str(a.sizes()));
  }
  dim = wrap_dim(dim, a.dim(), "gather");
  for (int64_t d = 0; d < index.dim() && a.dim() > 0; ++d) {
    if (d != dim && index.size(d) > a.size(d)) {
      throw ShapeError("gather: index shape " + shape_str(index.sizes()) +
                       " must not be larger than input shape " + shape_str(a.sizes()) +
                       " apart from dimension " + std::to_string(dim) + " (dimension " +
                       std::to_string(d) + ": " + std::to_string(index.size(d)) + " > " +
                       std::to_string(a.size(d)) + ")");
    }
  }
  const int64_t size = a.dim() == 0 ? 1 : a.size(dim);
  check_indices(index, size, "gather",
                "dimension " + std::to_string(dim) + " of size " + std::to_string(size) +
                    " (input shape " + shape_str(a.sizes()) + ")");
  Tensor out = empty(index.sizes(), TensorOptions(a.dtype()).device(a.device()));
  kernels<IndexingKernels>(a.device(), "gather")
      .gather(view_of(as_1d(out)), view_of(as_1d(a)), dim, view_of(as_1d(index)));
  if (auto node = make_node<GatherBackward0>({a, index})) {
    node->self_sizes = a.sizes();
    node->dim = dim;
    node->index = SavedVariable(as_1d(index));
    set_history(out, node);
  }
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  check_defined(weight, "embedding", "weight");
  check_defined(indices, "embedding", "indices");
  if (weight.dim() != 2) {
    throw ShapeError("embedding: weight must be 2-D [num_embeddings, embedding_dim], but got " +
                     shape_str(weight.sizes()));
  }
  check_index_dtype(indices, "embedding");
  check_same_device(weight, indices, "embedding");
  const int64_t rows = weight.size(0), dim = weight.size(1);
  if (padding_idx >= rows) {
    throw ValueError("embedding: padding_idx " + std::to_string(padding_idx) +
                     " must be within num_embeddings (" + std::to_string(rows) +
                     "); pass -1 for no padding index");
  }
  check_indices(indices, rows, "embedding",
                "an embedding table of " + std::to_string(rows) + " rows (weight " +
                    shape_str(weight.sizes()) + ")");
  Shape shape = indices.sizes();
  shape.push_back(dim);
  Tensor out = empty(shape, TensorOptions(weight.dtype()).device(weight.device()));
  Tensor flat = indices.reshape({-1});
  const Shape rows_shape{flat.numel(), dim};
  const Shape rows_strides = contiguous_strides(rows_shape);
  kernels<IndexingKernels>(weight.device(), "embedding")
      .index_select(TensorView{out.raw_data(), out.dtype(), rows_shape, rows_strides},
                    view_of(weight), 0, view_of(flat));
  if (auto node = make_node<EmbeddingBackward0>({weight, indices})) {
    node->num_weights = rows;
    node->padding_idx = padding_idx;
    node->indices = SavedVariable(indices);
    set_history(out, node);
  }
  return out;
}

}  // namespace nns
