// SPDX-License-Identifier: GPL-3.0-or-later
// Reductions (sum, mean, max, min, argmax, var) and softmax, with their backward nodes. The
// kernels write keepdim-shaped views of the output; without keepdim the output tensor simply
// has the reduced dims left out (same memory layout), so it is never a view.
#include "engine/ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/reduction_kernels.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor/factories.h"

namespace nns {

namespace {

const ReductionKernels& rk(const Tensor& t, const char* op) {
  return kernels<ReductionKernels>(t.device(), op);
}

Tensor cast(const Tensor& t, Dtype dtype) {
  if (t.dtype() == dtype) return t;
  NoGradGuard no_grad;
  return t.to(dtype);
}

void check_compute_dtype(Dtype dtype, const char* op) {
  if (dtype == kFloat16 || dtype == kBFloat16) {
    throw DtypeError(std::string(op) + ": " + dtype_name(dtype) +
                     " is a storage type here and has no arithmetic; convert with "
                     ".to(nns::kFloat32) first");
  }
}

void check_floating(const Tensor& a, const char* op, const char* what) {
  if (!is_floating_point(a.dtype())) {
    throw DtypeError(std::string(op) + ": " + what + ", got " + dtype_name(a.dtype()) +
                     "; convert with .to(nns::kFloat32) first");
  }
  check_compute_dtype(a.dtype(), op);
}

// Which dims a reduction folds; an empty list means every dim (as PyTorch's sum(dim=[])).
struct ReduceDims {
  std::vector<bool> reduced;  // per input dim
  Shape keep_shape;           // input sizes with reduced dims as 1
  Shape out_shape;            // the result's sizes (keepdim or not)
  int64_t count = 1;          // elements folded into each output element
};

ReduceDims reduce_dims(const Tensor& a, const Shape& dims, bool keepdim, const char* op) {
  const int64_t ndim = a.dim();
  ReduceDims r;
  r.reduced.assign(ndim, dims.empty());
  for (int64_t d : dims) {
    const int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    if (r.reduced[w]) {
      throw IndexError(std::string(op) + ": dim " + std::to_string(w) +
                       " appears multiple times in the list of dims " + shape_str(dims));
    }
    r.reduced[w] = true;
  }
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = a.size(d);
    r.keep_shape.push_back(r.reduced[d] ? 1 : size);
    if (r.reduced[d]) r.count *= size;
    if (!r.reduced[d] || keepdim) r.out_shape.push_back(r.reduced[d] ? 1 : size);
  }
  return r;
}

// The output's memory seen with the keepdim sizes (the size-1 dims take no room).
struct KeepdimView {
  Shape sizes, strides;
  TensorView view;  // points into sizes and strides: not copyable
  KeepdimView(const Tensor& out, const Shape& keep_shape)
      : sizes(keep_shape),
        strides(contiguous_strides(keep_shape)),
        view{out.raw_data(), out.dtype(), sizes, strides} {}
  KeepdimView(const KeepdimView&) = delete;
  KeepdimView& operator=(const KeepdimView&) = delete;
};

// A zero-dim tensor reduces as a one-element vector.
Shape as_vector_sizes(const Tensor& a) {
  return a.dim() == 0 ? Shape{1} : a.sizes();
}

Tensor reduce_kernel(ReduceOp op, const Tensor& in, const ReduceDims& r, const char* name) {
  Tensor out = empty(r.out_shape, TensorOptions(in.dtype()).device(in.device()));
  const KeepdimView ov(out, r.keep_shape);
  rk(in, name).reduce(op, ov.view, view_of(in));
  return out;
}

// The gradient of a reduction's output, broadcast back over the input's sizes.
Tensor expand_back(const Tensor& grad, const std::vector<bool>& reduced, bool keepdim,
                   const Shape& sizes) {
  Tensor g = grad;
  if (!keepdim) {
    for (size_t d = 0; d < reduced.size(); ++d) {
      if (reduced[d]) g = g.unsqueeze(static_cast<int64_t>(d));
    }
  }
  return g.expand(sizes);
}

struct SumBackward0 : Node {
  Shape self_sizes;
  std::string name() const override { return "SumBackward0"; }
  variable_list apply(variable_list&& grads) override { return {grads[0].expand(self_sizes)}; }
};

struct SumBackward1 : Node {
  Shape self_sizes;
  std::vector<bool> reduced;
  bool keepdim = false;
  std::string name() const override { return "SumBackward1"; }
  variable_list apply(variable_list&& grads) override {
    return {expand_back(grads[0], reduced, keepdim, self_sizes)};
  }
};

// mean: the gradient divided by the count first, then expanded (no full-size division).
struct MeanBackward : Node {
  const char* node_name;
  Shape self_sizes;
  std::vector<bool> reduced;
  bool keepdim = false;
  int64_t count = 1;
  explicit MeanBackward(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    return {expand_back(grads[0] / static_cast<double>(count), reduced, keepdim, self_sizes)};
  }
};

// max()/min() over all elements: the gradient is shared evenly by every element equal to the
// result (all NaNs when the result is NaN), as PyTorch's evenly_distribute_backward.
struct ExtremeAllBackward : Node {
  const char* node_name;
  SavedVariable self, result;
  explicit ExtremeAllBackward(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    const Tensor x = self.unpack(this);
    const Tensor r = result.unpack(this);
    const Tensor mask = (std::isnan(r.item()) ? ne(x, x) : eq(x, r)).to(grads[0].dtype());
    return {mask * (grads[0] / mask.sum())};
  }
  void release_variables() override {
    self.reset();
    result.reset();
  }
};

// max/min along a dim: the gradient goes to the index that was chosen.
struct ExtremeDimBackward : Node {
  const char* node_name;
  SavedVariable indices;
  Shape self_sizes;
  int64_t dim = 0;
  bool keepdim = false;
  explicit ExtremeDimBackward(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = grads[0], idx = indices.unpack(this);
    if (!keepdim && !self_sizes.empty()) {
      g = g.unsqueeze(dim);
      idx = idx.unsqueeze(dim);
    }
    Tensor grad_in = zeros(self_sizes, TensorOptions(g.dtype()).device(g.device()));
    const Shape sizes = self_sizes.empty() ? Shape{1} : self_sizes;
    const KeepdimView gi(grad_in, sizes);
    const Shape keep = g.dim() == 0 ? Shape{1} : g.sizes();
    const Shape g_strides = g.dim() == 0 ? Shape{1} : g.strides();
    const Shape i_strides = idx.dim() == 0 ? Shape{1} : idx.strides();
    const TensorView gv{g.raw_data(), g.dtype(), keep, g_strides};
    const TensorView iv{idx.raw_data(), idx.dtype(), keep, i_strides};
    rk(g, "max_backward").index_backward(gi.view, gv, iv, dim);
    return {grad_in};
  }
  void release_variables() override { indices.reset(); }
};

struct VarBackward0 : Node {
  SavedVariable self;
  std::vector<bool> reduced;
  bool keepdim = false;
  Shape dims;
  double divisor = 1;
  std::string name() const override { return "VarBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor x = self.unpack(this);
    const Tensor g = expand_back(grads[0], reduced, keepdim, x.sizes());
    return {(2.0 / divisor) * g * (x - x.mean(dims, /*keepdim=*/true))};
  }
  void release_variables() override { self.reset(); }
};

struct SoftmaxBackward : Node {
  const char* node_name;
  bool log;
  SavedVariable result;
  int64_t dim = 0;
  SoftmaxBackward(const char* n, bool l) : node_name(n), log(l) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    const Tensor y = result.unpack(this);
    const Tensor g = cast(grads[0], y.dtype()).contiguous();
    Tensor grad_in = empty(y.sizes(), TensorOptions(y.dtype()).device(y.device()));
    const Shape sizes = as_vector_sizes(y);
    const Shape strides = contiguous_strides(sizes);
    const TensorView gi{grad_in.raw_data(), y.dtype(), sizes, strides};
    const TensorView gv{g.raw_data(), y.dtype(), sizes, strides};
    const TensorView yv{y.raw_data(), y.dtype(), sizes, strides};
    rk(y, node_name).softmax_backward(gi, gv, yv, dim, log);
    return {grad_in};
  }
  void release_variables() override { result.reset(); }
};

// The dtype a sum computes in: integers and bools sum as int64.
Dtype sum_dtype(const Tensor& a) {
  check_compute_dtype(a.dtype(), "sum");
  return is_floating_point(a.dtype()) ? a.dtype() : kInt64;
}

Tensor sum_impl(const Tensor& a, const Shape& dims, bool keepdim, bool all) {
  const Tensor in = cast(a, sum_dtype(a));
  const ReduceDims r = reduce_dims(a, dims, keepdim && !all, "sum");
  Tensor out = reduce_kernel(ReduceOp::Sum, in, r, "sum");
  if (all) {
    if (auto node = make_node<SumBackward0>({a})) {
      node->self_sizes = a.sizes();
      set_history(out, node);
    }
  } else if (auto node = make_node<SumBackward1>({a})) {
    node->self_sizes = a.sizes();
    node->reduced = r.reduced;
    node->keepdim = keepdim;
    set_history(out, node);
  }
  return out;
}

Tensor mean_impl(const Tensor& a, const Shape& dims, bool keepdim, bool all) {
  if (!is_floating_point(a.dtype())) {
    throw DtypeError(
        "mean(): could not infer output dtype. Input dtype must be either a "
        "floating point or complex dtype. Got: " +
        dtype_name(a.dtype()) + "; convert with .to(nns::kFloat32) first");
  }
  check_compute_dtype(a.dtype(), "mean");
  const ReduceDims r = reduce_dims(a, dims, keepdim && !all, "mean");
  Tensor out = reduce_kernel(ReduceOp::Mean, a, r, "mean");
  if (auto node = make_node<MeanBackward>({a}, all ? "MeanBackward0" : "MeanBackward1")) {
    node->self_sizes = a.sizes();
    node->reduced = r.reduced;
    node->keepdim = keepdim && !all;
    node->count = r.count;
    set_history(out, node);
  }
  return out;
}

Tensor extreme_all(const Tensor& a, bool is_max) {
  const char* name = is_max ? "max" : "min";
  check_compute_dtype(a.dtype(), name);
  if (a.numel() == 0) {
    throw ShapeError(std::string(name) +
                     "(): Expected reduction dim to be specified for input.numel() == 0. "
                     "Specify the reduction dim with the 'dim' argument.");
  }
  const ReduceDims r = reduce_dims(a, {}, false, name);
  Tensor out = reduce_kernel(is_max ? ReduceOp::Max : ReduceOp::Min, a, r, name);
  if (auto node = make_node<ExtremeAllBackward>({a}, is_max ? "MaxBackward1" : "MinBackward1")) {
    node->self = SavedVariable(a);
    node->result = SavedVariable(out, true);
    set_history(out, node);
  }
  return out;
}

// values (when wanted) and indices of the extreme along dim.
std::pair<Tensor, Tensor> arg_extreme(const Tensor& a, int64_t dim, bool keepdim, bool is_max,
                                      bool want_values, const char* name) {
  check_compute_dtype(a.dtype(), name);
  dim = wrap_dim(dim, a.dim(), name);
  const Shape sizes = as_vector_sizes(a);
  if (sizes[dim] == 0) {
    throw ShapeError(std::string(name) + "(): Expected reduction dim " + std::to_string(dim) +
                     " to have non-zero size (input shape " + shape_str(a.sizes()) + ")");
  }
  Shape keep = sizes, out_shape;
  keep[dim] = 1;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d != dim || keepdim) out_shape.push_back(keep[d]);
  }
  const TensorOptions device_options = TensorOptions().device(a.device());
  Tensor values =
      want_values ? empty(out_shape, TensorOptions(device_options).dtype(a.dtype())) : Tensor();
  Tensor indices = empty(out_shape, TensorOptions(device_options).dtype(kInt64));
  const Shape in_strides = a.dim() == 0 ? Shape{1} : a.strides();
  const TensorView in{a.raw_data(), a.dtype(), sizes, in_strides};
  const KeepdimView iv(indices, keep);
  if (want_values) {
    const KeepdimView vv(values, keep);
    rk(a, name).arg_reduce(is_max ? ArgReduceOp::Max : ArgReduceOp::Min, vv.view, iv.view, in, dim);
  } else {
    const TensorView none{nullptr, a.dtype(), keep, iv.strides};
    rk(a, name).arg_reduce(is_max ? ArgReduceOp::Max : ArgReduceOp::Min, none, iv.view, in, dim);
  }
  return {values, indices};
}

std::pair<Tensor, Tensor> extreme_dim(const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  auto [values, indices] = arg_extreme(a, dim, keepdim, is_max, true, name);
  if (auto node = make_node<ExtremeDimBackward>({a}, is_max ? "MaxBackward0" : "MinBackward0")) {
    node->indices = SavedVariable(indices);
    node->self_sizes = a.sizes();
    node->dim = wrap_dim(dim, a.dim(), name);
    node->keepdim = keepdim;
    set_history(values, node);
  }
  return {values, indices};
}

Tensor var_impl(const Tensor& a, const Shape& dims, int64_t correction, bool keepdim, bool all) {
  check_floating(a, "var", "std and var only support floating point dtypes");
  const ReduceDims r = reduce_dims(a, dims, keepdim && !all, "var");
  const double divisor = std::max<double>(static_cast<double>(r.count - correction), 0.0);
  Tensor out;
  {
    // Two passes, the mean first: as accurate as Welford's update for the sizes we see.
    NoGradGuard no_grad;
    const ReduceDims keep = reduce_dims(a, dims, true, "var");
    const Tensor mean = reduce_kernel(ReduceOp::Mean, a, keep, "var");
    const Tensor diff = a - mean;
    out = reduce_kernel(ReduceOp::Sum, diff * diff, r, "var");
    out.div_(divisor);
  }
  if (auto node = make_node<VarBackward0>({a})) {
    node->self = SavedVariable(a);
    node->reduced = r.reduced;
    node->keepdim = keepdim && !all;
    node->divisor = divisor;
    for (size_t d = 0; d < r.reduced.size(); ++d) {
      if (r.reduced[d]) node->dims.push_back(static_cast<int64_t>(d));
    }
    set_history(out, node);
  }
  return out;
}

Tensor softmax_impl(const Tensor& a, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_floating(a, name, "expected a floating point tensor");
  dim = wrap_dim(dim, a.dim(), name);
  Tensor in;
  {
    NoGradGuard no_grad;
    in = a.contiguous();
  }
  Tensor out = empty(a.sizes(), TensorOptions(a.dtype()).device(a.device()));
  const Shape sizes = as_vector_sizes(a);
  const Shape strides = contiguous_strides(sizes);
  const TensorView ov{out.raw_data(), a.dtype(), sizes, strides};
  const TensorView iv{in.raw_data(), a.dtype(), sizes, strides};
  rk(a, name).softmax(ov, iv, dim, log);
  if (auto node =
          make_node<SoftmaxBackward>({a}, log ? "LogSoftmaxBackward0" : "SoftmaxBackward0", log)) {
    node->result = SavedVariable(out, true);
    node->dim = dim;
    set_history(out, node);
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& a) {
  return sum_impl(a, {}, false, true);
}
Tensor sum(const Tensor& a, const Shape& dims, bool keepdim) {
  return sum_impl(a, dims, keepdim, false);
}
Tensor mean(const Tensor& a) {
  return mean_impl(a, {}, false, true);
}
Tensor mean(const Tensor& a, const Shape& dims, bool keepdim) {
  return mean_impl(a, dims, keepdim, false);
}
Tensor max(const Tensor& a) {
  return extreme_all(a, true);
}
Tensor min(const Tensor& a) {
  return extreme_all(a, false);
}
std::pair<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme_dim(a, dim, keepdim, true);
}
std::pair<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) {
  return extreme_dim(a, dim, keepdim, false);
}

Tensor argmax(const Tensor& a) {
  if (a.numel() == 0) {
    throw ShapeError("argmax(): Expected reduction dim to be specified for input.numel() == 0.");
  }
  Tensor flat;
  {
    NoGradGuard no_grad;
    flat = a.reshape({-1});
  }
  return arg_extreme(flat, 0, false, true, false, "argmax").second;
}

Tensor argmax(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_extreme(a, dim, keepdim, true, false, "argmax").second;
}
Tensor argmin(const Tensor& a, int64_t dim, bool keepdim) {
  return arg_extreme(a, dim, keepdim, false, false, "argmin").second;
}

Tensor var(const Tensor& a, const Shape& dims, int64_t correction, bool keepdim) {
  return var_impl(a, dims, correction, keepdim, false);
}
Tensor var(const Tensor& a, int64_t correction) {
  return var_impl(a, {}, correction, false, true);
}

Tensor softmax(const Tensor& a, int64_t dim) {
  return softmax_impl(a, dim, false);
}
Tensor log_softmax(const Tensor& a, int64_t dim) {
  return softmax_impl(a, dim, true);
}

Tensor Tensor::sum() const {
  return nns::sum(*this);
}
Tensor Tensor::sum(const Shape& dims, bool keepdim) const {
  return nns::sum(*this, dims, keepdim);
}
Tensor Tensor::mean() const {
  return nns::mean(*this);
}
Tensor Tensor::mean(const Shape& dims, bool keepdim) const {
  return nns::mean(*this, dims, keepdim);
}
Tensor Tensor::max() const {
  return nns::max(*this);
}
Tensor Tensor::min() const {
  return nns::min(*this);
}
Tensor Tensor::argmax() const {
  return nns::argmax(*this);
}
Tensor Tensor::argmax(int64_t dim, bool keepdim) const {
  return nns::argmax(*this, dim, keepdim);
}
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return nns::var(*this, dims, correction, keepdim);
}
Tensor Tensor::softmax(int64_t dim) const {
  return nns::softmax(*this, dim);
}
Tensor Tensor::log_softmax(int64_t dim) const {
  return nns::log_softmax(*this, dim);
}

}  // namespace nns
