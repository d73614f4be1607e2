// SPDX-License-Identifier: GPL-3.0-or-later
// Elementwise operations: broadcasting, type promotion and the kernel call of each op, with
// its backward node next to it, and the in-place variants (Tensor::add_ ...) with their
// version counters. Dtype rules are PyTorch's: two tensors promote by result_type (a zero-dim
// tensor only counts when it is of a higher category), a double scalar acts as a Python float
// (an integer or bool tensor with a double gives float32).
#include "engine/ops/elementwise.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/elementwise_kernels.h"
#include "engine/ops/reduction.h"
#include "engine/tensor/factories.h"

namespace nns {

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  if (a == b) return a;
  const size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    // Align from the right; a missing leading dim counts as 1.
    const int64_t da = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    const int64_t db = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw ShapeError(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                       " cannot be broadcast (dimension " + std::to_string(i) + ": " +
                       std::to_string(da) + " vs " + std::to_string(db) +
                       "); sizes must match or be 1, aligned from the last dimension");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

// ---- Dtypes, shapes, kernels --------------------------------------------------------------

const ElementwiseKernels& ew(const Tensor& t, const char* op) {
  return kernels<ElementwiseKernels>(t.device(), op);
}

// bool < integer < floating, PyTorch's categories for promotion with zero-dim tensors.
int category(Dtype d) {
  return d == kBool ? 0 : is_floating_point(d) ? 2 : 1;
}

// torch.result_type for two tensors: a zero-dim tensor next to a tensor with dims promotes
// only when its category is higher (float32 [3] + float64 scalar tensor stays float32).
Dtype result_type(const Tensor& a, const Tensor& b) {
  const bool a0 = a.dim() == 0, b0 = b.dim() == 0;
  if (a0 == b0) return promote_types(a.dtype(), b.dtype());
  const Dtype dim_dtype = a0 ? b.dtype() : a.dtype();
  const Dtype zero_dtype = a0 ? a.dtype() : b.dtype();
  return category(zero_dtype) > category(dim_dtype) ? promote_types(dim_dtype, zero_dtype)
                                                    : dim_dtype;
}

// The dtype of a tensor with a double scalar (a Python float), and of float math (exp, log,
// ...): the tensor's own when floating, else float32, as in PyTorch.
Dtype floating_result_type(const Tensor& a) {
  return is_floating_point(a.dtype()) ? a.dtype() : kFloat32;
}

// The kernels compute in float32, float64 and int64 (and bool where it means something).
void check_compute_dtype(Dtype dtype, const char* op) {
  if (dtype == kFloat16 || dtype == kBFloat16) {
    throw DtypeError(std::string(op) + ": " + dtype_name(dtype) +
                     " is a storage type here and has no arithmetic; convert with "
                     ".to(nns::kFloat32) first");
  }
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device()) {
    throw DeviceError(std::string(op) +
                      ": expected all tensors to be on the same device, but found at least two "
                      "devices, " +
                      a.device().str() + " and " + b.device().str() + "; move them with .to(...)");
  }
}

// Converts without recording: the op's own node carries the gradient back to the input.
Tensor cast(const Tensor& t, Dtype dtype) {
  if (t.dtype() == dtype) return t;
  NoGradGuard no_grad;
  return t.to(dtype);
}

// The view of an operand with the output's sizes (broadcast strides when it needs them).
TensorView operand_view(const Tensor& t, const Shape& shape, Shape& strides) {
  return t.sizes() == shape ? view_of(t) : broadcast_view(t, shape, strides);
}

Tensor empty_out(const Shape& shape, Dtype dtype, const Tensor& like) {
  return empty(shape, TensorOptions(dtype).device(like.device()));
}

// out = op(a, b) in dtype, broadcasting; no autograd.
Tensor binary_kernel(BinaryOp op, const Tensor& a, const Tensor& b, Dtype dtype, const char* name,
                     double alpha = 1, double beta = 0) {
  check_same_device(a, b, name);
  check_compute_dtype(dtype, name);
  if (dtype == kBool) {
    throw DtypeError(std::string(name) +
                     ": arithmetic on two torch.bool tensors is not "
                     "supported here; convert them with .to(nns::kInt64) or .to(nns::kFloat32)");
  }
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  const Tensor ac = cast(a, dtype), bc = cast(b, dtype);
  Tensor out = empty_out(shape, dtype, a);
  Shape sa, sb;
  ew(out, name).binary(op, view_of(out), operand_view(ac, shape, sa), operand_view(bc, shape, sb),
                       alpha, beta);
  return out;
}

Tensor binary_scalar_kernel(BinaryOp op, const Tensor& a, double scalar, bool scalar_first,
                            const char* name) {
  const Dtype dtype = floating_result_type(a);
  check_compute_dtype(dtype, name);
  const Tensor ac = cast(a, dtype);
  Tensor out = empty_out(a.sizes(), dtype, a);
  ew(out, name).binary_scalar(op, view_of(out), view_of(ac), scalar, scalar_first);
  return out;
}

Tensor unary_kernel(UnaryOp op, const Tensor& a, Dtype dtype, const char* name, double alpha = 0,
                    double beta = 0) {
  check_compute_dtype(dtype, name);
  const Tensor ac = cast(a, dtype);
  Tensor out = empty_out(a.sizes(), dtype, a);
  ew(out, name).unary(op, view_of(out), view_of(ac), alpha, beta);
  return out;
}

void check_floating(const Tensor& a, const char* op) {
  if (!is_floating_point(a.dtype())) {
    throw DtypeError(std::string(op) + ": does not support " + dtype_name(a.dtype()) +
                     " tensors; it needs a floating dtype, convert with .to(nns::kFloat32) first");
  }
}

void check_not_bool(const Tensor& a, const char* op) {
  if (a.dtype() == kBool) {
    throw DtypeError(std::string(op) +
                     ": does not support torch.bool tensors; convert with "
                     ".to(nns::kInt64) or .to(nns::kFloat32) first");
  }
}

// ---- Gradients ----------------------------------------------------------------------------

// What a backward needs to know of an input to hand it a gradient of its own shape and dtype.
struct InputInfo {
  Shape sizes;
  Dtype dtype = kFloat32;
  InputInfo() = default;
  explicit InputInfo(const Tensor& t) : sizes(t.sizes()), dtype(t.dtype()) {}
};

// Sums the broadcast dims away and converts to the input's dtype.
Tensor grad_for(const Tensor& grad, const InputInfo& input) {
  Tensor g = sum_to(grad, input.sizes);
  return g.dtype() == input.dtype ? g : g.to(input.dtype);
}

bool needs_grad(const Node& node, size_t input) {
  return input < node.next_edges.size() && node.next_edges[input].valid();
}

// out = f(grad, saved) with one of the fused backward kernels.
Tensor fused_backward(BinaryOp op, const Tensor& grad, const Tensor& saved, const char* name,
                      double alpha = 0, double beta = 0) {
  return binary_kernel(op, grad, saved, saved.dtype(), name, alpha, beta);
}

struct AddBackward0 : Node {
  double alpha = 1;
  InputInfo self, other;
  std::string name() const override { return "AddBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out(next_edges.size());
    if (needs_grad(*this, 0)) out[0] = grad_for(grads[0], self);
    if (needs_grad(*this, 1)) out[1] = grad_for(alpha == 1 ? grads[0] : grads[0] * alpha, other);
    return out;
  }
};

struct SubBackward0 : Node {
  double alpha = 1;
  InputInfo self, other;
  std::string name() const override { return "SubBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out(next_edges.size());
    if (needs_grad(*this, 0)) out[0] = grad_for(grads[0], self);
    if (needs_grad(*this, 1)) {
      out[1] = grad_for(alpha == 1 ? -grads[0] : grads[0] * -alpha, other);
    }
    return out;
  }
};

struct RsubBackward1 : Node {
  InputInfo self;
  std::string name() const override { return "RsubBackward1"; }
  variable_list apply(variable_list&& grads) override { return {grad_for(-grads[0], self)}; }
};

struct NegBackward0 : Node {
  std::string name() const override { return "NegBackward0"; }
  variable_list apply(variable_list&& grads) override { return {-grads[0]}; }
};

// a * b, or a * scalar when the node has one input.
struct MulBackward0 : Node {
  SavedVariable self_, other_;
  double scalar = 1;
  InputInfo self, other;
  std::string name() const override { return "MulBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out(next_edges.size());
    if (next_edges.size() == 1) {
      out[0] = grad_for(grads[0] * scalar, self);
      return out;
    }
    if (needs_grad(*this, 0)) out[0] = grad_for(grads[0] * other_.unpack(this), self);
    if (needs_grad(*this, 1)) out[1] = grad_for(grads[0] * self_.unpack(this), other);
    return out;
  }
  void release_variables() override {
    self_.reset();
    other_.reset();
  }
};

struct DivBackward0 : Node {
  SavedVariable self_, other_;
  double scalar = 1;
  InputInfo self, other;
  std::string name() const override { return "DivBackward0"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out(next_edges.size());
    if (next_edges.size() == 1) {
      out[0] = grad_for(grads[0] / scalar, self);
      return out;
    }
    const Tensor b = other_.unpack(this);
    if (needs_grad(*this, 0)) out[0] = grad_for(grads[0] / b, self);
    if (needs_grad(*this, 1)) out[1] = grad_for(-grads[0] * ((self_.unpack(this) / b) / b), other);
    return out;
  }
  void release_variables() override {
    self_.reset();
    other_.reset();
  }
};

// A backward of the form grad_in = kernel(grad, saved): the saved tensor is the op's input
// or its result, depending on the formula.
struct FusedBackward : Node {
  const char* node_name;
  BinaryOp op;
  double alpha = 0, beta = 0;
  SavedVariable saved;
  FusedBackward(const char* n, BinaryOp o) : node_name(n), op(o) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    return {fused_backward(op, grads[0], saved.unpack(this), node_name, alpha, beta)};
  }
  void release_variables() override { saved.reset(); }
};

struct ExpBackward0 : Node {
  SavedVariable result;
  std::string name() const override { return "ExpBackward0"; }
  variable_list apply(variable_list&& grads) override { return {grads[0] * result.unpack(this)}; }
  void release_variables() override { result.reset(); }
};

struct LogBackward0 : Node {
  SavedVariable self;
  std::string name() const override { return "LogBackward0"; }
  variable_list apply(variable_list&& grads) override { return {grads[0] / self.unpack(this)}; }
  void release_variables() override { self.reset(); }
};

struct PowBackward1 : Node {
  SavedVariable self_, exponent_;
  InputInfo self, exponent;
  std::string name() const override { return "PowBackward1"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor x = self_.unpack(this), e = exponent_.unpack(this);
    variable_list out(2);
    Shape sx, se;
    auto run = [&](TernaryOp op) {
      Tensor r = empty_out(g.sizes(), g.dtype(), g);
      const Tensor xc = cast(x, g.dtype()), ec = cast(e, g.dtype());
      ew(g, "pow_backward")
          .ternary(op, view_of(r), view_of(g), operand_view(xc, g.sizes(), sx),
                   operand_view(ec, g.sizes(), se), 0);
      return r;
    };
    if (needs_grad(*this, 0)) out[0] = grad_for(run(TernaryOp::PowBackwardSelf), self);
    if (needs_grad(*this, 1)) out[1] = grad_for(run(TernaryOp::PowBackwardExponent), exponent);
    return out;
  }
  void release_variables() override {
    self_.reset();
    exponent_.reset();
  }
};

struct WhereBackward0 : Node {
  SavedVariable condition;
  InputInfo self, other;
  std::string name() const override { return "WhereBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor c = condition.unpack(this);
    const Tensor zero = scalar_tensor(0, TensorOptions(grads[0].dtype()).device(grads[0].device()));
    variable_list out(2);
    if (needs_grad(*this, 0)) out[0] = grad_for(where(c, grads[0], zero), self);
    if (needs_grad(*this, 1)) out[1] = grad_for(where(c, zero, grads[0]), other);
    return out;
  }
  void release_variables() override { condition.reset(); }
};

// Gradients that stop at an in-place overwrite (zero_, fill_) or split at copy_.
struct OverwriteBackward : Node {
  const char* node_name;
  explicit OverwriteBackward(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override { return {zeros_like(grads[0])}; }
};

struct CopyBackwards : Node {
  InputInfo src;
  std::string name() const override { return "CopyBackwards"; }
  variable_list apply(variable_list&& grads) override {
    variable_list out(2);
    if (needs_grad(*this, 0)) out[0] = zeros_like(grads[0]);
    if (needs_grad(*this, 1)) out[1] = grad_for(grads[0], src);
    return out;
  }
};

struct AddcmulBackward0 : Node {
  SavedVariable tensor1_, tensor2_;
  double value = 1;
  InputInfo self, tensor1, tensor2;
  std::string name() const override { return "AddcmulBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    variable_list out(3);
    if (needs_grad(*this, 0)) out[0] = grad_for(g, self);
    if (needs_grad(*this, 1)) out[1] = grad_for(g * tensor2_.unpack(this) * value, tensor1);
    if (needs_grad(*this, 2)) out[2] = grad_for(g * tensor1_.unpack(this) * value, tensor2);
    return out;
  }
  void release_variables() override {
    tensor1_.reset();
    tensor2_.reset();
  }
};

struct AddcdivBackward0 : Node {
  SavedVariable tensor1_, tensor2_;
  double value = 1;
  InputInfo self, tensor1, tensor2;
  std::string name() const override { return "AddcdivBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor t2 = tensor2_.unpack(this);
    variable_list out(3);
    if (needs_grad(*this, 0)) out[0] = grad_for(g, self);
    if (needs_grad(*this, 1)) out[1] = grad_for(g * value / t2, tensor1);
    if (needs_grad(*this, 2)) {
      out[2] = grad_for(-g * value * tensor1_.unpack(this) / (t2 * t2), tensor2);
    }
    return out;
  }
  void release_variables() override {
    tensor1_.reset();
    tensor2_.reset();
  }
};

// Records a fused-backward node for a unary op.
Tensor record_fused(Tensor out, const Tensor& input, const char* name, BinaryOp op,
                    const Tensor& saved, bool saved_is_output, double alpha = 0, double beta = 0) {
  if (auto node = make_node<FusedBackward>({input}, name, op)) {
    node->alpha = alpha;
    node->beta = beta;
    node->saved = SavedVariable(saved, saved_is_output);
    set_history(out, node);
  }
  return out;
}

// ---- In-place helpers ---------------------------------------------------------------------

// The start of every in-place op: the autograd checks, and whether the op must be recorded.
bool begin_inplace(const Tensor& self, std::initializer_list<const Tensor*> others,
                   const char* op) {
  check_inplace(self, op);
  bool record = GradMode::is_enabled() && self.requires_grad();
  for (const Tensor* t : others) record = record || any_requires_grad({t});
  if (record && self.impl()->is_view && !self.requires_grad()) {
    // The base the view came from has no grad_fn to take the new history: its gradient
    // would silently miss this op.
    throw AutogradError(std::string(op) +
                        ": in-place operation on a view with an operand that requires grad is "
                        "not supported; clone() the view first, or build the tensor with "
                        "cat/stack instead of writing into a slice");
  }
  for (size_t d = 0; d < self.sizes().size(); ++d) {
    if (self.strides()[d] == 0 && self.sizes()[d] > 1) {
      throw ValueError(std::string(op) +
                       ": unsupported operation: more than one element of the written-to tensor "
                       "refers to a single memory location (an expanded tensor); clone() it "
                       "first");
    }
  }
  return record;
}

// An in-place result must fit self's dtype: no float into an integer, no integer into bool.
void check_inplace_result(const Tensor& self, Dtype result, const char* op) {
  if (category(result) > category(self.dtype())) {
    throw DtypeError(std::string(op) + ": result type " + dtype_name(result) +
                     " can't be cast to the desired output type " + dtype_name(self.dtype()) +
                     "; use the out-of-place form, or convert self with .to(...) first");
  }
  check_compute_dtype(self.dtype(), op);
}

// Checks that self can take the result of an in-place op with operand `other` and returns the
// operand in self's dtype, broadcastable to self, and not partially overlapping self.
Tensor inplace_operand(const Tensor& self, const Tensor& other, Dtype result, const char* op) {
  check_same_device(self, other, op);
  check_inplace_result(self, result, op);
  const Shape shape = broadcast_shapes(self.sizes(), other.sizes(), op);
  if (shape != self.sizes()) {
    throw ShapeError(std::string(op) + ": output with shape " + shape_str(self.sizes()) +
                     " doesn't match the broadcast shape " + shape_str(shape) +
                     "; an in-place op cannot grow its tensor, use the out-of-place form");
  }
  Tensor o = cast(other, self.dtype());
  // Reading other while writing self is only safe when they are the same elements or apart.
  if (o.storage() == self.storage() &&
      !(o.storage_offset() == self.storage_offset() && o.strides() == self.strides() &&
        o.sizes() == self.sizes())) {
    NoGradGuard no_grad;
    o = o.clone();
  }
  return o;
}

// An in-place op with a double scalar: an int64 tensor takes a whole number (its += 1 stays
// int64), anything else makes a float result.
void check_inplace_scalar(const Tensor& self, double value, const char* op) {
  const bool whole = std::isfinite(value) && std::trunc(value) == value;
  check_inplace_result(self, self.dtype() == kInt64 && whole ? kInt64 : floating_result_type(self),
                       op);
}

// Ends an in-place op: the version bump, then the new history when the op is recorded.
void finish_inplace(const Tensor& self, const std::shared_ptr<Node>& node) {
  self.bump_version();
  if (node) rebase_history(self, node);
}

// The inputs of an in-place op's node: self's old history and the operands.
template <class NodeT, class... Args>
std::shared_ptr<NodeT> inplace_node(bool record, const std::vector<Tensor>& inputs,
                                    Args&&... args) {
  return record ? make_node<NodeT>(inputs, std::forward<Args>(args)...) : nullptr;
}

// self = op(self, other) for the binary in-place ops.
void binary_inplace(BinaryOp op, Tensor& self, const Tensor& other, double alpha,
                    const char* name) {
  Shape so;
  ew(self, name)
      .binary(op, view_of(self), view_of(self), operand_view(other, self.sizes(), so), alpha, 0);
}

}  // namespace

// ---- Arithmetic ---------------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
  Tensor out = binary_kernel(BinaryOp::Add, a, b, result_type(a, b), "add", alpha);
  if (auto node = make_node<AddBackward0>({a, b})) {
    node->alpha = alpha;
    node->self = InputInfo(a);
    node->other = InputInfo(b);
    set_history(out, node);
  }
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
  if (a.dtype() == kBool && b.dtype() == kBool) {
    throw DtypeError(
        "sub: Subtraction, the `-` operator, with two bool tensors is not "
        "supported. Use the `^` or `logical_xor()` operator instead.");
  }
  Tensor out = binary_kernel(BinaryOp::Sub, a, b, result_type(a, b), "sub", alpha);
  if (auto node = make_node<SubBackward0>({a, b})) {
    node->alpha = alpha;
    node->self = InputInfo(a);
    node->other = InputInfo(b);
    set_history(out, node);
  }
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_kernel(BinaryOp::Mul, a, b, result_type(a, b), "mul");
  if (auto node = make_node<MulBackward0>({a, b})) {
    // Each factor is kept only if the other one's gradient needs it.
    if (needs_grad(*node, 0)) node->other_ = SavedVariable(b);
    if (needs_grad(*node, 1)) node->self_ = SavedVariable(a);
    node->self = InputInfo(a);
    node->other = InputInfo(b);
    set_history(out, node);
  }
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  // True division: integers divide as float32.
  const Dtype rt = result_type(a, b);
  Tensor out = binary_kernel(BinaryOp::Div, a, b, is_floating_point(rt) ? rt : kFloat32, "div");
  if (auto node = make_node<DivBackward0>({a, b})) {
    node->other_ = SavedVariable(b);
    if (needs_grad(*node, 1)) node->self_ = SavedVariable(a);
    node->self = InputInfo(a);
    node->other = InputInfo(b);
    set_history(out, node);
  }
  return out;
}

namespace {
// Subtraction has no meaning for bool masks (PyTorch's words).
void check_not_bool_sub(const Tensor& a, const char* op) {
  if (a.dtype() == kBool) {
    throw DtypeError(std::string(op) +
                     ": Subtraction, the `-` operator, with a bool tensor is not supported. "
                     "If you are trying to invert a mask, use the `~` or `logical_not()` "
                     "operator instead.");
  }
}

// A tensor op a scalar: the kernel, then the node NodeT (which keeps the scalar when its
// formula needs it).
template <class NodeT>
Tensor scalar_op(BinaryOp op, const Tensor& a, double b, bool scalar_first, const char* name) {
  Tensor out = binary_scalar_kernel(op, a, b, scalar_first, name);
  if (auto node = make_node<NodeT>({a})) {
    if constexpr (requires { node->scalar; }) node->scalar = b;
    node->self = InputInfo(a);
    set_history(out, node);
  }
  return out;
}
}  // namespace

Tensor add(const Tensor& a, double b) {
  return scalar_op<AddBackward0>(BinaryOp::Add, a, b, false, "add");
}

Tensor mul(const Tensor& a, double b) {
  return scalar_op<MulBackward0>(BinaryOp::Mul, a, b, false, "mul");
}

Tensor rsub(const Tensor& a, double b) {
  check_not_bool_sub(a, "rsub");
  return scalar_op<RsubBackward1>(BinaryOp::Sub, a, b, /*scalar_first=*/true, "rsub");
}

Tensor rdiv(const Tensor& a, double b) {
  // As PyTorch's __rdiv__: a.reciprocal() * b, so the graph reads MulBackward0 then
  // ReciprocalBackward0.
  const Tensor r = unary_kernel(UnaryOp::Reciprocal, a, floating_result_type(a), "reciprocal");
  record_fused(r, a, "ReciprocalBackward0", BinaryOp::ReciprocalBackward, r, true);
  return mul(r, b);
}

Tensor neg(const Tensor& a) {
  if (a.dtype() == kBool) {
    throw DtypeError(
        "neg: Negation, the `-` operator, on a bool tensor is not supported. If "
        "you are trying to invert a mask, use the `~` or `logical_not()` operator "
        "instead.");
  }
  Tensor out = unary_kernel(UnaryOp::Neg, a, a.dtype(), "neg");
  if (auto node = make_node<NegBackward0>({a})) set_history(out, node);
  return out;
}

Tensor pow(const Tensor& a, double exponent) {
  Tensor out = unary_kernel(UnaryOp::Pow, a, floating_result_type(a), "pow", exponent);
  return record_fused(out, a, "PowBackward0", BinaryOp::PowBackward, a, false, exponent);
}

Tensor pow(const Tensor& a, const Tensor& exponent) {
  Tensor out = binary_kernel(BinaryOp::Pow, a, exponent, result_type(a, exponent), "pow");
  if (auto node = make_node<PowBackward1>({a, exponent})) {
    node->self_ = SavedVariable(a);
    node->exponent_ = SavedVariable(exponent);
    node->self = InputInfo(a);
    node->exponent = InputInfo(exponent);
    set_history(out, node);
  }
  return out;
}

Tensor exp(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Exp, a, floating_result_type(a), "exp");
  if (auto node = make_node<ExpBackward0>({a})) {
    node->result = SavedVariable(out, true);
    set_history(out, node);
  }
  return out;
}

Tensor log(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Log, a, floating_result_type(a), "log");
  if (auto node = make_node<LogBackward0>({a})) {
    node->self = SavedVariable(a);
    set_history(out, node);
  }
  return out;
}

Tensor sqrt(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Sqrt, a, floating_result_type(a), "sqrt");
  return record_fused(out, a, "SqrtBackward0", BinaryOp::SqrtBackward, out, true);
}

Tensor rsqrt(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Rsqrt, a, floating_result_type(a), "rsqrt");
  return record_fused(out, a, "RsqrtBackward0", BinaryOp::RsqrtBackward, out, true);
}

Tensor sin(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Sin, a, floating_result_type(a), "sin");
  return record_fused(out, a, "SinBackward0", BinaryOp::SinBackward, a, false);
}

Tensor cos(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Cos, a, floating_result_type(a), "cos");
  return record_fused(out, a, "CosBackward0", BinaryOp::CosBackward, a, false);
}

Tensor abs(const Tensor& a) {
  check_not_bool(a, "abs");
  Tensor out = unary_kernel(UnaryOp::Abs, a, a.dtype(), "abs");
  return record_fused(out, a, "AbsBackward0", BinaryOp::AbsBackward, a, false);
}

namespace {
std::pair<double, double> clamp_bounds(std::optional<double> min, std::optional<double> max,
                                       const char* op) {
  if (!min && !max) {
    throw ValueError(std::string(op) + ": At least one of 'min' or 'max' must not be None");
  }
  const double inf = std::numeric_limits<double>::infinity();
  return {min.value_or(-inf), max.value_or(inf)};
}
}  // namespace

Tensor clamp(const Tensor& a, std::optional<double> min, std::optional<double> max) {
  const auto [lo, hi] = clamp_bounds(min, max, "clamp");
  Tensor out = unary_kernel(UnaryOp::Clamp, a, floating_result_type(a), "clamp", lo, hi);
  return record_fused(out, a, "ClampBackward1", BinaryOp::ClampBackward, a, false, lo, hi);
}

Tensor tanh(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Tanh, a, floating_result_type(a), "tanh");
  return record_fused(out, a, "TanhBackward0", BinaryOp::TanhBackward, out, true);
}

Tensor sigmoid(const Tensor& a) {
  Tensor out = unary_kernel(UnaryOp::Sigmoid, a, floating_result_type(a), "sigmoid");
  return record_fused(out, a, "SigmoidBackward0", BinaryOp::SigmoidBackward, out, true);
}

Tensor relu(const Tensor& a) {
  check_not_bool(a, "relu");
  Tensor out = unary_kernel(UnaryOp::Relu, a, a.dtype(), "relu");
  return record_fused(out, a, "ReluBackward0", BinaryOp::ReluBackward, out, true);
}

Tensor leaky_relu(const Tensor& a, double negative_slope) {
  check_floating(a, "leaky_relu");
  Tensor out = unary_kernel(UnaryOp::LeakyRelu, a, a.dtype(), "leaky_relu", negative_slope);
  return record_fused(out, a, "LeakyReluBackward0", BinaryOp::LeakyReluBackward, a, false,
                      negative_slope);
}

Tensor gelu(const Tensor& a, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh") {
    throw ValueError("gelu: approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  }
  check_floating(a, "gelu");
  const bool tanh_form = approximate == "tanh";
  Tensor out = unary_kernel(tanh_form ? UnaryOp::GeluTanh : UnaryOp::Gelu, a, a.dtype(), "gelu");
  return record_fused(out, a, "GeluBackward0",
                      tanh_form ? BinaryOp::GeluTanhBackward : BinaryOp::GeluBackward, a, false);
}

Tensor silu(const Tensor& a) {
  check_floating(a, "silu");
  Tensor out = unary_kernel(UnaryOp::Silu, a, a.dtype(), "silu");
  return record_fused(out, a, "SiluBackward0", BinaryOp::SiluBackward, a, false);
}

Tensor elu(const Tensor& a, double alpha) {
  check_floating(a, "elu");
  Tensor out = unary_kernel(UnaryOp::Elu, a, a.dtype(), "elu", alpha);
  return record_fused(out, a, "EluBackward0", BinaryOp::EluBackward, a, false, alpha);
}

namespace {

// prelu's weight seen with the input's rank: [C, 1, ...] lines its C up with dim 1, a single
// weight is a zero-dim tensor. A plain view out of the graph: PreluBackward0 hands the
// weight's gradient back in its own shape.
Tensor prelu_channel_view(const Tensor& weight, const Tensor& input) {
  NoGradGuard no_grad;
  if (weight.numel() == 1) return weight.reshape({});
  Shape shape(static_cast<size_t>(input.dim() - 1), 1);
  shape[0] = weight.numel();
  return weight.reshape(shape);
}

struct PreluBackward0 : Node {
  SavedVariable self_, weight_;
  std::string name() const override { return "PreluBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor& g = grads[0];
    const Tensor x = self_.unpack(this), w = weight_.unpack(this);
    const Tensor wb = prelu_channel_view(w, x);
    variable_list out(2);
    if (needs_grad(*this, 0)) {
      Tensor gx = empty_out(g.sizes(), g.dtype(), g);
      Shape sx, sw;
      ew(g, "prelu_backward")
          .ternary(TernaryOp::PreluBackwardSelf, view_of(gx), view_of(g),
                   operand_view(x, g.sizes(), sx), operand_view(wb, g.sizes(), sw), 0);
      out[0] = gx;
    }
    if (needs_grad(*this, 1)) {
      const Tensor terms =
          binary_kernel(BinaryOp::PreluBackwardWeight, g, x, g.dtype(), "prelu_backward");
      NoGradGuard no_grad;
      out[1] = sum_to(terms, wb.sizes()).reshape(w.sizes());
    }
    return out;
  }
  void release_variables() override {
    self_.reset();
    weight_.reset();
  }
};

}  // namespace

Tensor prelu(const Tensor& a, const Tensor& weight) {
  check_floating(a, "prelu");
  check_same_device(a, weight, "prelu");
  if (weight.dtype() != a.dtype()) {
    throw DtypeError("prelu: the weight is " + dtype_name(weight.dtype()) + " but the input is " +
                     dtype_name(a.dtype()) + "; convert one with .to(...) so that they match");
  }
  const int64_t n = weight.numel();
  if (weight.dim() > 1 || n == 0) {
    throw ShapeError("prelu: weight must be a 1-D tensor of 1 or C elements, but got shape " +
                     shape_str(weight.sizes()));
  }
  if (n != 1) {
    const int64_t channels = a.dim() >= 2 ? a.size(1) : 1;
    if (a.dim() == 0 || channels != n) {
      throw ShapeError("prelu: mismatch of parameter numbers and input channel size: found " +
                       std::to_string(n) + " parameters and " + std::to_string(channels) +
                       " channels (dim 1 of the input of shape " + shape_str(a.sizes()) +
                       "); use num_parameters=1 or the input's channel count");
    }
  }
  Tensor out = binary_kernel(BinaryOp::Prelu, a, prelu_channel_view(weight, a), a.dtype(), "prelu");
  if (auto node = make_node<PreluBackward0>({a, weight})) {
    node->self_ = SavedVariable(a);
    node->weight_ = SavedVariable(weight);
    set_history(out, node);
  }
  return out;
}

// ---- Comparisons, where, finiteness -------------------------------------------------------

namespace {
Tensor compare(CompareOp op, const Tensor& a, const Tensor& b, const char* name) {
  check_same_device(a, b, name);
  const Dtype dtype = result_type(a, b);
  check_compute_dtype(dtype, name);
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), name);
  const Tensor ac = cast(a, dtype), bc = cast(b, dtype);
  Tensor out = empty_out(shape, kBool, a);
  Shape sa, sb;
  ew(out, name).compare(op, view_of(out), operand_view(ac, shape, sa), operand_view(bc, shape, sb));
  return out;
}

Tensor compare_scalar(CompareOp op, const Tensor& a, double b, const char* name) {
  const Dtype dtype = floating_result_type(a);
  check_compute_dtype(dtype, name);
  const Tensor ac = cast(a, dtype);
  Tensor out = empty_out(a.sizes(), kBool, a);
  ew(out, name).compare_scalar(op, view_of(out), view_of(ac), b);
  return out;
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Eq, a, b, "eq");
}
Tensor ne(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Ne, a, b, "ne");
}
Tensor lt(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Lt, a, b, "lt");
}
Tensor le(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Le, a, b, "le");
}
Tensor gt(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Gt, a, b, "gt");
}
Tensor ge(const Tensor& a, const Tensor& b) {
  return compare(CompareOp::Ge, a, b, "ge");
}
Tensor gt(const Tensor& a, double b) {
  return compare_scalar(CompareOp::Gt, a, b, "gt");
}
Tensor lt(const Tensor& a, double b) {
  return compare_scalar(CompareOp::Lt, a, b, "lt");
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  if (condition.dtype() != kBool) {
    throw DtypeError(
        "where: expected condition to be a boolean tensor, but got a tensor with "
        "dtype " +
        dtype_name(condition.dtype()) + "; compare first (e.g. gt(x, 0))");
  }
  check_same_device(condition, a, "where");
  check_same_device(a, b, "where");
  const Dtype dtype = result_type(a, b);
  check_compute_dtype(dtype, "where");
  const Shape shape =
      broadcast_shapes(broadcast_shapes(condition.sizes(), a.sizes(), "where"), b.sizes(), "where");
  const Tensor ac = cast(a, dtype), bc = cast(b, dtype);
  Tensor out = empty_out(shape, dtype, a);
  Shape sc, sa, sb;
  ew(out, "where")
      .where(view_of(out), operand_view(condition, shape, sc), operand_view(ac, shape, sa),
             operand_view(bc, shape, sb));
  if (auto node = make_node<WhereBackward0>({a, b})) {
    node->condition = SavedVariable(condition);
    node->self = InputInfo(a);
    node->other = InputInfo(b);
    set_history(out, node);
  }
  return out;
}

Tensor isfinite(const Tensor& a) {
  if (!is_floating_point(a.dtype()))
    return ones(a.sizes(), TensorOptions(kBool).device(a.device()));
  const Tensor ac = cast(a, a.dtype() == kFloat64 ? kFloat64 : kFloat32);
  Tensor out = empty_out(a.sizes(), kBool, a);
  ew(out, "isfinite").isfinite(view_of(out), view_of(ac));
  return out;
}

bool any_non_finite(const Tensor& a) {
  if (!is_floating_point(a.dtype())) return false;
  const Tensor ac = cast(a, a.dtype() == kFloat64 ? kFloat64 : kFloat32);
  return ew(ac, "any_non_finite").any_non_finite(view_of(ac));
}

// ---- Tensor methods and operators ---------------------------------------------------------

namespace {
Tensor sub_scalar(const Tensor& a, double b) {
  check_not_bool_sub(a, "sub");
  return scalar_op<SubBackward0>(BinaryOp::Sub, a, b, false, "sub");
}

Tensor div_scalar(const Tensor& a, double b) {
  return scalar_op<DivBackward0>(BinaryOp::Div, a, b, false, "div");
}
}  // namespace

Tensor Tensor::add(const Tensor& other, double alpha) const {
  return nns::add(*this, other, alpha);
}
Tensor Tensor::sub(const Tensor& other, double alpha) const {
  return nns::sub(*this, other, alpha);
}
Tensor Tensor::mul(const Tensor& other) const {
  return nns::mul(*this, other);
}
Tensor Tensor::div(const Tensor& other) const {
  return nns::div(*this, other);
}
Tensor Tensor::neg() const {
  return nns::neg(*this);
}
Tensor Tensor::pow(double exponent) const {
  return nns::pow(*this, exponent);
}
Tensor Tensor::pow(const Tensor& exponent) const {
  return nns::pow(*this, exponent);
}
Tensor Tensor::exp() const {
  return nns::exp(*this);
}
Tensor Tensor::log() const {
  return nns::log(*this);
}
Tensor Tensor::sqrt() const {
  return nns::sqrt(*this);
}
Tensor Tensor::rsqrt() const {
  return nns::rsqrt(*this);
}
Tensor Tensor::sin() const {
  return nns::sin(*this);
}
Tensor Tensor::cos() const {
  return nns::cos(*this);
}
Tensor Tensor::abs() const {
  return nns::abs(*this);
}
Tensor Tensor::clamp(std::optional<double> min, std::optional<double> max) const {
  return nns::clamp(*this, min, max);
}
Tensor Tensor::tanh() const {
  return nns::tanh(*this);
}
Tensor Tensor::sigmoid() const {
  return nns::sigmoid(*this);
}
Tensor Tensor::relu() const {
  return nns::relu(*this);
}

Tensor operator+(const Tensor& a, const Tensor& b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
  return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
  return div(a, b);
}
Tensor operator+(const Tensor& a, double b) {
  return add(a, b);
}
Tensor operator-(const Tensor& a, double b) {
  return sub_scalar(a, b);
}
Tensor operator*(const Tensor& a, double b) {
  return mul(a, b);
}
Tensor operator/(const Tensor& a, double b) {
  return div_scalar(a, b);
}
Tensor operator+(double a, const Tensor& b) {
  return add(b, a);
}
Tensor operator-(double a, const Tensor& b) {
  return rsub(b, a);
}
Tensor operator*(double a, const Tensor& b) {
  return mul(b, a);
}
Tensor operator/(double a, const Tensor& b) {
  return rdiv(b, a);
}
Tensor operator-(const Tensor& a) {
  return neg(a);
}

// ---- In place -----------------------------------------------------------------------------

Tensor& Tensor::add_(const Tensor& other, double alpha) {
  const bool record = begin_inplace(*this, {&other}, "add_");
  const Tensor o = inplace_operand(*this, other, result_type(*this, other), "add_");
  binary_inplace(BinaryOp::Add, *this, o, alpha, "add_");
  auto node = inplace_node<AddBackward0>(record, {*this, other});
  if (node) {
    node->alpha = alpha;
    node->self = InputInfo(*this);
    node->other = InputInfo(other);
  }
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::add_(double other) {
  const bool record = begin_inplace(*this, {}, "add_");
  check_inplace_scalar(*this, other, "add_");
  ew(*this, "add_").binary_scalar(BinaryOp::Add, view_of(*this), view_of(*this), other, false);
  auto node = inplace_node<AddBackward0>(record, {*this});
  if (node) node->self = InputInfo(*this);
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::sub_(const Tensor& other, double alpha) {
  const bool record = begin_inplace(*this, {&other}, "sub_");
  if (dtype() == kBool) {
    throw DtypeError(
        "sub_: Subtraction, the `-` operator, with a bool tensor is not supported. "
        "Use the `^` or `logical_xor()` operator instead.");
  }
  const Tensor o = inplace_operand(*this, other, result_type(*this, other), "sub_");
  binary_inplace(BinaryOp::Sub, *this, o, alpha, "sub_");
  auto node = inplace_node<SubBackward0>(record, {*this, other});
  if (node) {
    node->alpha = alpha;
    node->self = InputInfo(*this);
    node->other = InputInfo(other);
  }
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::mul_(const Tensor& other) {
  const bool record = begin_inplace(*this, {&other}, "mul_");
  const Tensor o = inplace_operand(*this, other, result_type(*this, other), "mul_");
  auto node = inplace_node<MulBackward0>(record, {*this, other});
  if (node) {
    // other's gradient needs self as it was before the write.
    if (needs_grad(*node, 0)) node->other_ = SavedVariable(other);
    if (needs_grad(*node, 1)) {
      NoGradGuard no_grad;
      node->self_ = SavedVariable(clone());
    }
    node->self = InputInfo(*this);
    node->other = InputInfo(other);
  }
  binary_inplace(BinaryOp::Mul, *this, o, 1, "mul_");
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::mul_(double other) {
  const bool record = begin_inplace(*this, {}, "mul_");
  check_inplace_scalar(*this, other, "mul_");
  ew(*this, "mul_").binary_scalar(BinaryOp::Mul, view_of(*this), view_of(*this), other, false);
  auto node = inplace_node<MulBackward0>(record, {*this});
  if (node) {
    node->scalar = other;
    node->self = InputInfo(*this);
  }
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::div_(const Tensor& other) {
  const bool record = begin_inplace(*this, {&other}, "div_");
  const Dtype rt = result_type(*this, other);
  const Tensor o =
      inplace_operand(*this, other, nns::is_floating_point(rt) ? rt : kFloat32, "div_");
  auto node = inplace_node<DivBackward0>(record, {*this, other});
  if (node) {
    node->other_ = SavedVariable(other);
    if (needs_grad(*node, 1)) {
      NoGradGuard no_grad;
      node->self_ = SavedVariable(clone());
    }
    node->self = InputInfo(*this);
    node->other = InputInfo(other);
  }
  binary_inplace(BinaryOp::Div, *this, o, 1, "div_");
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::div_(double other) {
  const bool record = begin_inplace(*this, {}, "div_");
  check_inplace_result(*this, floating_result_type(*this), "div_");
  ew(*this, "div_").binary_scalar(BinaryOp::Div, view_of(*this), view_of(*this), other, false);
  auto node = inplace_node<DivBackward0>(record, {*this});
  if (node) {
    node->scalar = other;
    node->self = InputInfo(*this);
  }
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::clamp_(std::optional<double> min, std::optional<double> max) {
  const auto [lo, hi] = clamp_bounds(min, max, "clamp_");
  const bool record = begin_inplace(*this, {}, "clamp_");
  check_inplace_result(*this, floating_result_type(*this), "clamp_");
  auto node =
      inplace_node<FusedBackward>(record, {*this}, "ClampBackward1", BinaryOp::ClampBackward);
  if (node) {
    // The mask needs self as it was before the write.
    NoGradGuard no_grad;
    node->saved = SavedVariable(clone());
    node->alpha = lo;
    node->beta = hi;
  }
  ew(*this, "clamp_").unary(UnaryOp::Clamp, view_of(*this), view_of(*this), lo, hi);
  finish_inplace(*this, node);
  return *this;
}

Tensor& Tensor::relu_() {
  const bool record = begin_inplace(*this, {}, "relu_");
  check_not_bool(*this, "relu_");
  check_compute_dtype(dtype(), "relu_");
  ew(*this, "relu_").unary(UnaryOp::Relu, view_of(*this), view_of(*this), 0, 0);
  bump_version();
  // ReluBackward0 saves the result, which is self after the write (and the bump).
  if (auto node =
          inplace_node<FusedBackward>(record, {*this}, "ReluBackward0", BinaryOp::ReluBackward)) {
    node->saved = SavedVariable(*this, true);
    rebase_history(*this, node);
  }
  return *this;
}

namespace {
// self += value * a * b (Addcmul) or self += value * a / b (Addcdiv).
template <class NodeT>
void pointwise_inplace_(Tensor& self, const Tensor& a, const Tensor& b, double value, TernaryOp op,
                        const char* name) {
  const bool record = begin_inplace(self, {&a, &b}, name);
  check_floating(self, name);
  const Dtype rt = result_type(self, a);
  const Tensor ac = inplace_operand(self, a, rt, name);
  const Tensor bc = inplace_operand(self, b, promote_types(rt, b.dtype()), name);
  auto node = inplace_node<NodeT>(record, {self, a, b});
  if (node) {
    // Addcmul: each factor's gradient needs the other one. Addcdiv: both gradients need b,
    // b's also needs a.
    const bool grad_a = needs_grad(*node, 1), grad_b = needs_grad(*node, 2);
    const bool is_div = op == TernaryOp::Addcdiv;
    if (grad_b) node->tensor1_ = SavedVariable(a);
    if (is_div ? grad_a || grad_b : grad_a) node->tensor2_ = SavedVariable(b);
    node->value = value;
    node->self = InputInfo(self);
    node->tensor1 = InputInfo(a);
    node->tensor2 = InputInfo(b);
  }
  Shape sa, sb;
  ew(self, name)
      .ternary(op, view_of(self), view_of(self), operand_view(ac, self.sizes(), sa),
               operand_view(bc, self.sizes(), sb), value);
  finish_inplace(self, node);
}
}  // namespace

Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, double value) {
  pointwise_inplace_<AddcmulBackward0>(*this, a, b, value, TernaryOp::Addcmul, "addcmul_");
  return *this;
}

Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, double value) {
  pointwise_inplace_<AddcdivBackward0>(*this, a, b, value, TernaryOp::Addcdiv, "addcdiv_");
  return *this;
}

namespace {
void fill_inplace(Tensor& self, double value, const char* op, const char* node_name) {
  const bool record = begin_inplace(self, {}, op);
  kernels<CopyKernels>(self.device(), op).fill(view_of(self), value);
  finish_inplace(self, inplace_node<OverwriteBackward>(record, {self}, node_name));
}
}  // namespace

Tensor& Tensor::zero_() {
  fill_inplace(*this, 0, "zero_", "ZeroBackward0");
  return *this;
}

Tensor& Tensor::fill_(double value) {
  fill_inplace(*this, value, "fill_", "FillBackward2");
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  const bool record = begin_inplace(*this, {&src}, "copy_");
  // Across devices (as PyTorch's copy_): the source is moved first; its to() records the move,
  // so a gradient flows back to the source's device.
  const Tensor moved = src.device() == device() ? src : src.to(device());
  const Shape shape = broadcast_shapes(sizes(), src.sizes(), "copy_");
  if (shape != sizes()) {
    throw ShapeError("copy_: the source of shape " + shape_str(src.sizes()) +
                     " cannot be broadcast to the destination's shape " + shape_str(sizes()) +
                     " (it would need shape " + shape_str(shape) + ")");
  }
  Tensor s = moved;
  if (s.storage() == storage() && !s.is_same(*this)) {
    NoGradGuard no_grad;
    s = s.clone();
  }
  Shape ss;
  kernels<CopyKernels>(device(), "copy_").copy(view_of(*this), operand_view(s, sizes(), ss));
  auto node = inplace_node<CopyBackwards>(record, {*this, moved});
  if (node) node->src = InputInfo(moved);
  finish_inplace(*this, node);
  return *this;
}

}  // namespace nns
