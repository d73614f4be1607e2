// SPDX-License-Identifier: GPL-3.0-or-later
// The loss functions. mse_loss, huber_loss, nll_loss and binary_cross_entropy_with_logits
// compute their value out of the graph and record one node with PyTorch's backward formula;
// l1_loss and cross_entropy are compositions, as in ATen, so their graphs read the same.
#include "engine/ops/loss_ops.h"

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/nn_kernels.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/reduction.h"
#include "engine/tensor/factories.h"

namespace nns {

std::string reduction_name(Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
  }
  return "mean";
}

Reduction reduction_from_name(const std::string& name) {
  if (name == "none") return Reduction::None;
  if (name == "mean") return Reduction::Mean;
  if (name == "sum") return Reduction::Sum;
  throw ValueError("reduction: \"" + name + "\" is not a valid value for reduction; use " +
                   "\"none\", \"mean\" or \"sum\"");
}

namespace {

void check_defined(const Tensor& t, const char* op, const char* what) {
  if (!t.defined()) throw ValueError(std::string(op) + ": " + what + " is an undefined tensor");
}

void check_floating(const Tensor& t, const char* op, const char* what) {
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64) {
    throw DtypeError(std::string(op) + ": expected a float32 or float64 " + what + ", but got " +
                     dtype_name(t.dtype()) + "; convert it with .to(nns::kFloat32) first");
  }
}

// An operand (target, weight, pos_weight) of the input's dtype and device.
void check_like_input(const Tensor& t, const Tensor& input, const char* op, const char* what) {
  if (t.dtype() != input.dtype()) {
    throw DtypeError(std::string(op) + ": " + what + " is " + dtype_name(t.dtype()) +
                     " but the input is " + dtype_name(input.dtype()) +
                     "; convert one with .to(...) so that they match");
  }
  if (t.device() != input.device()) {
    throw DeviceError(std::string(op) + ": " + what + " is on " + t.device().str() +
                      " but the input is on " + input.device().str() + "; move one with .to(...)");
  }
}

// The pointwise losses take a target of the input's shape and dtype.
void check_pointwise_operands(const Tensor& input, const Tensor& target, const char* op) {
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating(input, op, "input");
  check_like_input(target, input, op, "target");
  if (input.sizes() != target.sizes()) {
    throw ShapeError(std::string(op) + ": the target's shape " + shape_str(target.sizes()) +
                     " differs from the input's " + shape_str(input.sizes()) +
                     "; give both the same shape (e.g. reshape a [N, 1] prediction to [N])");
  }
}

Tensor reduce(const Tensor& loss, Reduction reduction) {
  switch (reduction) {
    case Reduction::None:
      return loss;
    case Reduction::Mean:
      return mean(loss);
    case Reduction::Sum:
      return sum(loss);
  }
  return loss;
}

// A loss node of (input, target) whose input gradient is grad_input(grad) and whose target
// gradient is its negation (mse, huber).
struct DifferenceLossBackward : Node {
  const char* node_name;
  SavedVariable self, target;
  Reduction reduction = Reduction::Mean;
  double delta = 0;  // huber only
  explicit DifferenceLossBackward(const char* n) : node_name(n) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    const Tensor x = self.unpack(this), t = target.unpack(this);
    NoGradGuard no_grad;
    const double numel = static_cast<double>(x.numel());
    Tensor gx;
    if (delta == 0) {
      // mse: norm * (x - t) * grad with norm = 2 (/ numel for the mean), as ATen.
      const double norm = reduction == Reduction::Mean ? 2. / numel : 2.;
      gx = mul(mul(sub(x, t), norm), grads[0]);
    } else {
      // huber: (x - t) clamped to [-delta, delta], times norm and grad.
      const double norm = reduction == Reduction::Mean ? 1. / numel : 1.;
      gx = mul(mul(clamp(sub(x, t), -delta, delta), norm), grads[0]);
    }
    variable_list out(2);
    if (next_edges[1].valid()) out[1] = neg(gx);
    if (next_edges[0].valid()) out[0] = gx;
    return out;
  }
  void release_variables() override {
    self.reset();
    target.reset();
  }
};

Tensor difference_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta,
                       const char* op, const char* node_name) {
  check_pointwise_operands(input, target, op);
  Tensor out;
  {
    NoGradGuard no_grad;
    const Tensor d = sub(input, target);
    Tensor loss;
    if (delta == 0) {
      loss = mul(d, d);
    } else {
      const Tensor z = abs(d);
      loss = where(lt(z, delta), mul(mul(z, 0.5), z), mul(z - 0.5 * delta, delta));
    }
    out = reduce(loss, reduction);
  }
  if (auto node = make_node<DifferenceLossBackward>({input, target}, node_name)) {
    node->self = SavedVariable(input);
    node->target = SavedVariable(target);
    node->reduction = reduction;
    node->delta = delta;
    set_history(out, node);
  }
  return out;
}

// ---- nll_loss ---------------------------------------------------------------------------

struct NllLossBackward : Node {
  const char* node_name;
  SavedVariable target, weight, total_weight;
  Shape input_sizes;
  int64_t n = 0, classes = 0, spatial = 0, ignore_index = -100;
  bool reduce = true, mean = true;
  explicit NllLossBackward(const char* nm) : node_name(nm) {}
  std::string name() const override { return node_name; }
  variable_list apply(variable_list&& grads) override {
    Tensor g = grads[0].is_contiguous() ? grads[0] : grads[0].contiguous();
    const Tensor w = weight.unpack(this);
    Tensor gx = empty(input_sizes, TensorOptions(g.dtype()).device(g.device()));
    kernels<NNKernels>(g.device(), "nll_loss_backward")
        .nll_loss_backward(view_of(g), view_of(target.unpack(this)),
                           w.defined() ? view_of(w) : TensorView{}, n, classes, spatial,
                           ignore_index, reduce, mean, view_of(total_weight.unpack(this)),
                           view_of(gx));
    return {gx};
  }
  void release_variables() override {
    target.reset();
    weight.reset();
    total_weight.reset();
  }
};

struct NllResult {
  Tensor loss;
  Tensor total_weight;  // the summed weights of the counted targets (zero-dim)
};

// nll_loss with the total weight that cross_entropy's label smoothing divides by; op names
// the caller in errors.
NllResult nll_impl(const Tensor& input, const Tensor& target, const Tensor& weight,
                   int64_t ignore_index, Reduction reduction, const char* op) {
  const std::string name = op;
  check_defined(input, op, "input");
  check_defined(target, op, "target");
  check_floating(input, op, "input");
  if (target.dtype() != kInt64) {
    throw DtypeError(name + ": expected the target to hold class indices of dtype int64, but got " +
                     dtype_name(target.dtype()) +
                     "; convert it with .to(nns::kInt64) (class probabilities are not supported)");
  }
  if (target.device() != input.device()) {
    throw DeviceError(name + ": the target is on " + target.device().str() +
                      " but the input is on " + input.device().str() + "; move one with .to(...)");
  }
  if (input.dim() < 1) {
    throw ShapeError(name +
                     ": expected an input of 1 or more dims [C], [N, C] or [N, C, d1, ...], " +
                     "but got a zero-dim input");
  }
  // The shapes: input [N, C, d...] with target [N, d...], or input [C] with target [].
  const bool unbatched = input.dim() == 1;
  Shape expected_target;
  if (!unbatched) {
    expected_target = input.sizes();
    expected_target.erase(expected_target.begin() + 1);
  }
  if (target.sizes() != expected_target) {
    throw ShapeError(name + ": expected a target of shape " + shape_str(expected_target) +
                     " for an input of shape " + shape_str(input.sizes()) +
                     " (the input's shape without the class dim " + (unbatched ? "0" : "1") +
                     "), but got target of shape " + shape_str(target.sizes()));
  }
  const int64_t classes = input.size(unbatched ? 0 : 1);
  if (weight.defined()) {
    check_like_input(weight, input, op, "weight");
    if (weight.dim() != 1 || weight.size(0) != classes) {
      throw ShapeError(name + ": expected a weight of shape [" + std::to_string(classes) +
                       "] (one per class), but got weight of shape " + shape_str(weight.sizes()));
    }
  }
  const int64_t n = unbatched ? 1 : input.size(0);
  const int64_t spatial = n * classes == 0 ? 0 : input.numel() / (n * classes);
  const bool reduce = reduction != Reduction::None;
  const bool mean = reduction == Reduction::Mean;
  const Tensor x = input.is_contiguous() ? input : input.detach().contiguous();
  const Tensor t = target.is_contiguous() ? target : target.contiguous();
  const Tensor w =
      !weight.defined() || weight.is_contiguous() ? weight : weight.detach().contiguous();
  const TensorOptions options = TensorOptions(input.dtype()).device(input.device());
  // Per-element losses come in the target's shape: directly for [N] and [N, H, W] (ATen's own
  // output shapes), through a recorded view otherwise (ViewBackward0, as ATen's nll_loss_nd).
  const bool direct = input.dim() <= 2 || input.dim() == 4;
  Tensor out = empty(reduce ? Shape{} : direct ? target.sizes() : Shape{n * spatial}, options);
  Tensor total_weight = empty({}, options);
  const int64_t bad =
      kernels<NNKernels>(input.device(), op)
          .nll_loss_forward(view_of(x), view_of(t), w.defined() ? view_of(w) : TensorView{}, n,
                            classes, spatial, ignore_index, reduce, mean, view_of(out),
                            view_of(total_weight));
  if (bad >= 0) {
    throw IndexError(name + ": target " + std::to_string(t.to_vector<int64_t>()[bad]) +
                     " is out of bounds: the input has " + std::to_string(classes) +
                     " classes, so class indices must be in [0, " + std::to_string(classes - 1) +
                     "] (or equal ignore_index=" + std::to_string(ignore_index) + ")");
  }
  // ATen's node names: NllLoss2DBackward0 for inputs of more than 2 dims.
  if (auto node = make_node<NllLossBackward>(
          {input}, input.dim() > 2 ? "NllLoss2DBackward0" : "NllLossBackward0")) {
    node->target = SavedVariable(t);
    node->weight = SavedVariable(w);
    node->total_weight = SavedVariable(total_weight);
    node->input_sizes = input.sizes();
    node->n = n;
    node->classes = classes;
    node->spatial = spatial;
    node->ignore_index = ignore_index;
    node->reduce = reduce;
    node->mean = mean;
    set_history(out, node);
  }
  if (!reduce && !direct) out = out.view(target.sizes());
  return {out, total_weight};
}

}  // namespace

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  return difference_loss(input, target, reduction, 0, "mse_loss", "MseLossBackward0");
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pointwise_operands(input, target, "l1_loss");
  return reduce(abs(sub(input, target)), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  if (!(delta > 0)) {
    throw ValueError("huber_loss: delta must be positive, but got " + std::to_string(delta));
  }
  return difference_loss(input, target, reduction, delta, "huber_loss", "HuberLossBackward0");
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, Reduction reduction) {
  return nll_impl(input, target, weight, ignore_index, reduction, "nll_loss").loss;
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, Reduction reduction, double label_smoothing) {
  if (!(label_smoothing >= 0 && label_smoothing <= 1)) {
    throw ValueError("cross_entropy: label_smoothing must be between 0.0 and 1.0, but got " +
                     std::to_string(label_smoothing));
  }
  check_defined(input, "cross_entropy", "input");
  if (input.dim() < 1) {
    throw ShapeError(
        "cross_entropy: expected an input of 1 or more dims [C], [N, C] or [N, C, d1, ...], "
        "but got a zero-dim input");
  }
  check_floating(input, "cross_entropy", "input");
  const int64_t class_dim = input.dim() == 1 ? 0 : 1;
  const Tensor logp = log_softmax(input, class_dim);
  NllResult nll = nll_impl(logp, target, weight, ignore_index, reduction, "cross_entropy");
  if (label_smoothing == 0) return nll.loss;
  // ATen's cross_entropy_loss_label_smoothing: the loss against the uniform distribution,
  // -sum_c w_c log p_c, zero at ignored targets, reduced like the NLL term.
  Tensor smooth;
  if (weight.defined()) {
    Shape shape(static_cast<size_t>(input.dim()), 1);
    shape[class_dim] = weight.size(0);
    smooth = neg(sum(mul(logp, weight.view(shape)), {class_dim}));
  } else {
    smooth = neg(sum(logp, {class_dim}));
  }
  const Tensor ignored = eq(target, scalar_tensor(static_cast<double>(ignore_index), kInt64));
  smooth = where(ignored, zeros({}, TensorOptions(smooth.dtype()).device(smooth.device())), smooth);
  Tensor smooth_loss;
  switch (reduction) {
    case Reduction::Mean:
      smooth_loss = div(sum(smooth), nll.total_weight);
      break;
    case Reduction::Sum:
      smooth_loss = sum(smooth);
      break;
    case Reduction::None:
      smooth_loss = smooth;
      break;
  }
  const double classes = static_cast<double>(input.size(class_dim));
  return add(mul(nll.loss, 1 - label_smoothing), mul(smooth_loss, label_smoothing / classes));
}

// ---- binary_cross_entropy_with_logits ---------------------------------------------------

namespace {

struct BinaryCrossEntropyWithLogitsBackward0 : Node {
  SavedVariable self, target, weight, pos_weight;
  Reduction reduction = Reduction::Mean;
  std::string name() const override { return "BinaryCrossEntropyWithLogitsBackward0"; }
  variable_list apply(variable_list&& grads) override {
    const Tensor x = self.unpack(this), t = target.unpack(this);
    const Tensor w = weight.unpack(this), pw = pos_weight.unpack(this);
    const Tensor& g = grads[0];
    NoGradGuard no_grad;
    // ATen's formulas, term by term.
    auto finish = [&](Tensor r) {
      if (w.defined()) r = mul(r, w);
      if (reduction != Reduction::Mean) return r;
      return div(r, scalar_tensor(static_cast<double>(x.numel()), r.dtype()));
    };
    variable_list out(2);
    if (next_edges[0].valid()) {
      if (pw.defined()) {
        const Tensor pt = mul(pw, t);
        out[0] = finish(mul(sub(mul(sub(add(pt, 1.0), t), sigmoid(x)), pt), g));
      } else {
        out[0] = finish(mul(sub(sigmoid(x), t), g));
      }
    }
    if (next_edges[1].valid()) {
      if (pw.defined()) {
        // log_sigmoid(-x) - log_sigmoid(x) * pos_weight, with log_sigmoid(v) =
        // -(max(-v, 0) + log(1 + exp(-|v|))).
        const Tensor softplus_tail = log(add(exp(neg(abs(x))), 1.0));
        const Tensor log_sig = neg(add(clamp(neg(x), 0.0, std::nullopt), softplus_tail));
        const Tensor log_sig_neg = neg(add(clamp(x, 0.0, std::nullopt), softplus_tail));
        out[1] = finish(mul(sub(log_sig_neg, mul(log_sig, pw)), g));
      } else {
        out[1] = finish(mul(neg(x), g));
      }
    }
    return out;
  }
  void release_variables() override {
    self.reset();
    target.reset();
    weight.reset();
    pos_weight.reset();
  }
};

}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, Reduction reduction,
                                        const Tensor& pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  check_pointwise_operands(input, target, op);
  for (const auto& [t, what] :
       {std::pair{&weight, "weight"}, std::pair{&pos_weight, "pos_weight"}}) {
    if (!t->defined()) continue;
    check_like_input(*t, input, op, what);
    if (broadcast_shapes(input.sizes(), t->sizes(), op) != input.sizes()) {
      throw ShapeError(std::string(op) + ": " + what + " of shape " + shape_str(t->sizes()) +
                       " does not broadcast to the input's shape " + shape_str(input.sizes()));
    }
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    // ATen: (1 - t) * x + lw * (log(exp(-m) + exp(-x - m)) + m), m = max(-x, 0), with
    // lw = (pos_weight - 1) * t + 1 (or 1).
    const Tensor m = clamp(neg(input), 0.0, std::nullopt);
    const Tensor log_term = log(add(exp(neg(m)), exp(sub(neg(input), m))));
    Tensor loss = mul(rsub(target, 1.0), input);
    if (pos_weight.defined()) {
      const Tensor log_weight =
          add(mul(sub(pos_weight, scalar_tensor(1, pos_weight.dtype())), target), 1.0);
      loss = add(loss, mul(log_weight, add(log_term, m)));
    } else {
      loss = add(add(loss, m), log_term);
    }
    if (weight.defined()) loss = mul(loss, weight);
    out = reduce(loss, reduction);
  }
  if (auto node = make_node<BinaryCrossEntropyWithLogitsBackward0>({input, target})) {
    node->self = SavedVariable(input);
    node->target = SavedVariable(target);
    node->weight = SavedVariable(weight);
    node->pos_weight = SavedVariable(pos_weight);
    node->reduction = reduction;
    set_history(out, node);
  }
  return out;
}

}  // namespace nns
