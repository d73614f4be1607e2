// SPDX-License-Identifier: GPL-3.0-or-later
// Arithmetic and merges: x + y, x - y, x * y, x / y (with numbers as Constant nodes), x @ y,
// torch.cat, F.relu, and the calls that change nothing in eval mode (contiguous, clone,
// F.dropout with training=False).
#include <set>

#include "engine/torch_import/convert.h"

namespace nns::torch_import::detail {
namespace {

bool one_of(const std::string& target, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (target == n) return true;
  }
  return false;
}

// The operand as a tensor: a number becomes a Constant node.
Value operand(const Value& v, Emitter& out) {
  if (v.is_tensor()) return v;
  if (v.is_constant()) return out.constant(v.first);
  if (v.is_number())
    out.refuse("an operand depends on the batch size (" + std::to_string(v.first) + " at batch 2)");
  out.refuse("an operand is neither a tensor nor a number");
  return {};  // not reached: refuse throws (GCC does not see [[noreturn]] through a virtual call)
}

}  // namespace

std::optional<Value> convert_arithmetic(const Call& call, Emitter& out) {
  const std::string& t = call.target;
  struct Binary {
    const char* type;
    std::set<std::string> names;
  };
  static const std::vector<Binary> binaries = {
      {"Add", {"operator.add", "operator.iadd", "torch.add", "add", "add_"}},
      {"Sub", {"operator.sub", "operator.isub", "torch.sub", "sub", "sub_"}},
      {"Mul", {"operator.mul", "operator.imul", "torch.mul", "mul", "mul_"}},
      {"Div", {"operator.truediv", "operator.itruediv", "torch.div", "div", "div_"}},
      {"MatMul", {"operator.matmul", "torch.matmul", "matmul"}},
  };
  for (const Binary& b : binaries) {
    if (!b.names.contains(t)) continue;
    const Value* x = call.arg(0, "input");
    const Value* y = call.arg(1, "other");
    if (!x || !y) out.refuse("expected two operands");
    if (const Value* alpha = call.kwargs.count("alpha") ? &call.kwargs.at("alpha") : nullptr;
        alpha && !(alpha->is_constant() && alpha->first == 1))
      out.refuse("alpha other than 1 is not supported");
    if (call.kwargs.count("rounding_mode") &&
        call.kwargs.at("rounding_mode").kind != Value::Kind::None)
      out.refuse("rounding_mode is not supported");
    const Value a = operand(*x, out), c = operand(*y, out);
    Json options = Json::object();
    if (std::string(b.type) == "Add" || std::string(b.type) == "Mul") options["inputs"] = 2;
    return out.add(b.type, options, {a, c}, out.result_shape());
  }
  if (one_of(t, {"torch.cat", "torch.concat"})) {
    const Value* list = call.arg(0, "tensors");
    if (!list || list->kind != Value::Kind::Tuple || list->items.size() < 1)
      out.refuse("expected a list of tensors");
    const Value* dim = call.arg(1, "dim");
    const int64_t d = dim ? constant_int(*dim, "dim", out) : 0;
    std::vector<Value> inputs;
    for (const Value& v : list->items) {
      if (!v.is_tensor()) out.refuse("every item of the list must be a tensor");
      inputs.push_back(v);
    }
    if (inputs.size() == 1) return inputs[0];
    return out.add("Concat", {{"inputs", inputs.size()}, {"dim", d}}, inputs, out.result_shape());
  }
  if (one_of(t, {"F.relu", "torch.relu", "relu", "relu_"})) {
    const Value* x = call.arg(0, "input");
    if (!x || !x->is_tensor()) out.refuse("expected a tensor");
    return out.add("F.relu", Json::object(), {*x}, x->shape);
  }
  struct Unary {
    const char* type;
    std::set<std::string> names;
  };
  static const std::vector<Unary> unaries = {
      {"F.hardtanh", {"F.hardtanh", "F.hardtanh_"}},
      {"F.hardsigmoid", {"F.hardsigmoid"}},
      {"F.hardswish", {"F.hardswish"}},
      {"torch.sigmoid", {"torch.sigmoid", "F.sigmoid", "sigmoid", "sigmoid_"}},
      {"torch.tanh", {"torch.tanh", "F.tanh", "tanh", "tanh_"}},
      {"F.silu", {"F.silu"}},
      {"F.gelu", {"F.gelu"}},
  };
  for (const Unary& u : unaries) {
    if (!u.names.contains(t)) continue;
    const Value* x = call.arg(0, "input");
    if (!x || !x->is_tensor()) out.refuse("expected a tensor");
    Json options = Json::object();
    if (std::string(u.type) == "F.hardtanh") {
      const Value* lo = call.arg(1, "min_val");
      const Value* hi = call.arg(2, "max_val");
      options["min_val"] = lo ? lo->first : -1.0;
      options["max_val"] = hi ? hi->first : 1.0;
      if ((lo && !lo->is_constant()) || (hi && !hi->is_constant()))
        out.refuse("min_val and max_val must be numbers");
    }
    if (std::string(u.type) == "F.gelu") {
      const Value* a = call.arg(1, "approximate");
      if (a && a->kind == Value::Kind::Other && a->raw.is_string()) options["approximate"] = a->raw;
    }
    return out.add(u.type, options, {*x}, x->shape);
  }
  if (one_of(t, {"contiguous", "clone", "detach", "torch.clone"})) {
    const Value* x = call.arg(0, "input");
    if (!x || !x->is_tensor()) out.refuse("expected a tensor");
    return *x;
  }
  if (one_of(t, {"F.dropout", "torch.dropout"})) {
    // Traced in eval mode, F.dropout(x, training=self.training) passes x through.
    const Value* x = call.arg(0, "input");
    if (!x || !x->is_tensor()) out.refuse("expected a tensor");
    out.note(
        "a functional dropout (F.dropout) is left out: the import keeps only what eval mode "
        "computes; use an nn.Dropout module to train with it");
    return *x;
  }
  if (t == "torchvision.ops.stochastic_depth.stochastic_depth") {
    // torchvision's residual drop: the identity in eval mode (training=False when traced).
    const Value* x = call.arg(0, "input");
    const Value* training = call.arg(3, "training");
    if (!x || !x->is_tensor()) out.refuse("expected a tensor");
    if (training && !(training->is_constant() && training->first == 0))
      out.refuse("it drops residuals while training, which NN Studio has no node for");
    out.note(
        "torchvision's StochasticDepth is left out: the import keeps what eval mode "
        "computes (the identity)");
    return *x;
  }
  return std::nullopt;
}

}  // namespace nns::torch_import::detail
