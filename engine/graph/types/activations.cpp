// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>

#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/layers.h"

namespace nns::graph {
namespace {

template <class M>
NodeType activation(std::string name, std::string description) {
  return module_type(
      std::move(name), "Activation", std::move(description), {},
      [](const Json&) { return std::make_shared<M>(); }, same_shape);
}

Shapes infer_prelu(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t n = get_int(o, "num_parameters");
  if (n != 1 && (x.size() < 2 || x[1] != n))
    bad_input("in", x, "[N, " + std::to_string(n) + ", ...] (dim 1 = num_parameters)");
  return {x};
}

Shapes infer_softmax(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (const std::optional<int64_t> dim = get_optional_int(o, "dim"))
    wrap(*dim, std::max<size_t>(x.size(), 1), "dim", x);
  return {x};
}

}  // namespace

std::vector<NodeType> activation_types() {
  std::vector<NodeType> types;
  types.push_back(activation<nn::ReLU>("ReLU", "max(0, x)"));
  types.push_back(module_type(
      "LeakyReLU", "Activation", "x for x >= 0, negative_slope * x otherwise",
      {float_option("negative_slope", 0.01, "slope for negative inputs")},
      [](const Json& o) { return std::make_shared<nn::LeakyReLU>(get_float(o, "negative_slope")); },
      same_shape));
  types.push_back(activation<nn::Tanh>("Tanh", "hyperbolic tangent"));
  types.push_back(activation<nn::Sigmoid>("Sigmoid", "1 / (1 + exp(-x))"));
  types.push_back(module_type(
      "GELU", "Activation", "x * Phi(x), the Gaussian error linear unit",
      {choice_option("approximate", "none", {"none", "tanh"},
                     "the exact erf form or the tanh one")},
      [](const Json& o) { return std::make_shared<nn::GELU>(get_string(o, "approximate")); },
      same_shape));
  types.push_back(activation<nn::SiLU>("SiLU", "x * sigmoid(x)"));
  types.push_back(module_type(
      "ELU", "Activation", "x for x > 0, alpha * (exp(x) - 1) otherwise",
      {float_option("alpha", 1.0, "the value approached for large negative inputs")},
      [](const Json& o) { return std::make_shared<nn::ELU>(get_float(o, "alpha")); }, same_shape));
  types.push_back(module_type(
      "PReLU", "Activation", "LeakyReLU with a learned slope (one, or one per channel)",
      {int_option("num_parameters", 1, "1, or the number of channels (dim 1)", 1),
       float_option("init", 0.25, "the initial slope")},
      [](const Json& o) {
        return std::make_shared<nn::PReLU>(get_int(o, "num_parameters"), get_float(o, "init"));
      },
      infer_prelu));
  types.push_back(module_type(
      "Softmax", "Activation", "exp(x) / sum(exp(x)) along dim",
      {optional_int_option("dim", "the dim that sums to 1 (null: PyTorch's legacy choice)")},
      [](const Json& o) { return std::make_shared<nn::Softmax>(get_optional_int(o, "dim")); },
      infer_softmax));

  types.push_back(module_type(
      "LogSoftmax", "Activation", "log(softmax(x)) along dim, computed stably",
      {optional_int_option("dim", "the dim of the softmax (null: PyTorch's legacy choice)")},
      [](const Json& o) { return std::make_shared<nn::LogSoftmax>(get_optional_int(o, "dim")); },
      infer_softmax));
  return types;
}

}  // namespace nns::graph
