// SPDX-License-Identifier: GPL-3.0-or-later
// Activations a PyTorch forward calls as functions (F.hardtanh in nn.ReLU6, F.hardswish in
// nn.Hardswish, torch.sigmoid, ...), as the PyTorch import (engine/torch_import) makes them;
// F.relu is with the merge functions (functional.cpp).
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/ops/ops.h"

namespace nns::graph {
namespace {

NodeType unary(std::string name, std::string description, std::vector<OptionSpec> options,
               std::function<Tensor(const Tensor&, const Json&)> f) {
  NodeType t;
  t.name = std::move(name);
  t.kind = NodeKind::Functional;
  t.category = "Activation";
  t.description = std::move(description);
  t.options = std::move(options);
  t.inputs = in_port();
  t.outputs = out_port();
  t.apply = [f = std::move(f)](const std::vector<Tensor>& x, const Json& o) {
    return std::vector<Tensor>{f(x.at(0), o)};
  };
  t.infer_shapes = same_shape;
  return t;
}

}  // namespace

std::vector<NodeType> activation_function_types() {
  std::vector<NodeType> types;
  types.push_back(unary("F.hardtanh",
                        "min_val for x < min_val, max_val for x > max_val (ReLU6: 0, 6)",
                        {float_option("min_val", -1.0, "the lower bound"),
                         float_option("max_val", 1.0, "the upper bound")},
                        [](const Tensor& x, const Json& o) {
                          return clamp(x, get_float(o, "min_val"), get_float(o, "max_val"));
                        }));
  types.push_back(unary("F.hardsigmoid", "relu6(x + 3) / 6", {}, [](const Tensor& x, const Json&) {
    return clamp(x + 3.0, 0.0, 6.0) / 6.0;
  }));
  types.push_back(
      unary("F.hardswish", "x * relu6(x + 3) / 6", {},
            [](const Tensor& x, const Json&) { return x * (clamp(x + 3.0, 0.0, 6.0) / 6.0); }));
  types.push_back(unary("torch.sigmoid", "1 / (1 + exp(-x)) without a module", {},
                        [](const Tensor& x, const Json&) { return sigmoid(x); }));
  types.push_back(unary("torch.tanh", "hyperbolic tangent without a module", {},
                        [](const Tensor& x, const Json&) { return tanh(x); }));
  types.push_back(unary("F.silu", "x * sigmoid(x) without a module", {},
                        [](const Tensor& x, const Json&) { return silu(x); }));
  types.push_back(unary(
      "F.gelu", "x * Phi(x) without a module",
      {choice_option("approximate", "none", {"none", "tanh"}, "tanh: the tanh approximation")},
      [](const Tensor& x, const Json& o) { return gelu(x, get_string(o, "approximate")); }));
  return types;
}

}  // namespace nns::graph
