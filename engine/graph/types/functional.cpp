// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>

#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/ops/ops.h"

namespace nns::graph {
namespace {

Tensor sum_all(const std::vector<Tensor>& inputs, bool multiply) {
  Tensor acc = inputs.at(0);
  for (size_t i = 1; i < inputs.size(); ++i) acc = multiply ? acc * inputs[i] : acc + inputs[i];
  return acc;
}

Shapes infer_broadcast(const Json&, const Shapes& in) {
  SymShape out = in.at(0);
  for (size_t i = 1; i < in.size(); ++i) out = broadcast(out, in[i], variadic_port(i));
  return {out};
}

Shapes infer_concat(const Json& o, const Shapes& in) {
  const SymShape& first = in.at(0);
  const int64_t dim = wrap(get_int(o, "dim"), std::max<size_t>(first.size(), 1), "dim", first);
  SymShape out = first;
  for (size_t i = 1; i < in.size(); ++i) {
    const SymShape& x = in[i];
    bool ok = x.size() == first.size();
    for (size_t d = 0; ok && d < x.size(); ++d) {
      if (static_cast<int64_t>(d) != dim && x[d] != first[d]) ok = false;
    }
    if (!ok) {
      SymShape expected = first;
      expected[static_cast<size_t>(dim)] = -2;
      std::string text = shape_str(expected);
      // -2 prints as a plain number; show it as "*" (any size along the concatenated dim).
      const std::string star = std::to_string(-2);
      text.replace(text.find(star), star.size(), "*");
      bad_input(variadic_port(i), x,
                text + " (sizes equal to in0's except along dim " + std::to_string(dim) + ")");
    }
    const int64_t size = x[static_cast<size_t>(dim)];
    int64_t& acc = out[static_cast<size_t>(dim)];
    acc = (acc == -1 || size == -1) ? -1 : acc + size;
  }
  return {out};
}

Shapes infer_matmul(const Json&, const Shapes& in) {
  SymShape a = in.at(0), b = in.at(1);
  if (a.empty()) bad_input("in0", a, "at least 1 dim");
  if (b.empty()) bad_input("in1", b, "at least 1 dim");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t k = a.back(), kb = b[b.size() - 2];
  if (k != kb && k != -1 && kb != -1)
    bad_input("in1", in[1],
              "[" + std::to_string(k) + ", *] (its rows must match the " + std::to_string(k) +
                  " columns of in0 " + shape_str(in[0]) + ")");
  const SymShape batch =
      broadcast(SymShape(a.begin(), a.end() - 2), SymShape(b.begin(), b.end() - 2), "in1");
  SymShape out = batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  return {out};
}

NodeType functional(
    std::string name, std::string category, std::string description,
    std::vector<OptionSpec> options, bool variadic,
    std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Json&)> apply,
    std::function<Shapes(const Json&, const Shapes&)> infer) {
  NodeType t;
  t.name = std::move(name);
  t.kind = NodeKind::Functional;
  t.category = std::move(category);
  t.description = std::move(description);
  t.options = std::move(options);
  t.variadic = variadic;
  if (variadic) {
    t.options.insert(t.options.begin(), int_option("inputs", 2, "number of input ports", 2));
  } else {
    t.inputs = {{"in0", "the left operand"}, {"in1", "the right operand"}};
  }
  t.outputs = out_port();
  t.apply = std::move(apply);
  t.infer_shapes = std::move(infer);
  return t;
}

}  // namespace

std::vector<NodeType> functional_types() {
  std::vector<NodeType> types;
  types.push_back(functional(
      "Add", "Merge", "in0 + in1 + ... (broadcasting), e.g. a residual connection", {}, true,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{sum_all(x, false)};
      },
      infer_broadcast));
  types.push_back(functional(
      "Mul", "Merge", "in0 * in1 * ... elementwise (broadcasting)", {}, true,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{sum_all(x, true)};
      },
      infer_broadcast));
  types.push_back(functional(
      "Concat", "Merge", "torch.cat of the inputs along dim",
      {int_option("dim", 1, "the dim to concatenate along (0 is the batch)")}, true,
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{cat(x, get_int(o, "dim"))};
      },
      infer_concat));
  types.push_back(functional(
      "MatMul", "Math", "in0 @ in1 (torch.matmul)", {}, false,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{matmul(x.at(0), x.at(1))};
      },
      infer_matmul));
  // F.relu in a forward: an activation that is no attribute (the seeds' Net calls it so).
  NodeType relu_fn = functional(
      "F.relu", "Activation", "torch.nn.functional.relu: max(0, x) without a module", {}, false,
      [](const std::vector<Tensor>& x, const Json&) { return std::vector<Tensor>{relu(x.at(0))}; },
      same_shape);
  relu_fn.inputs = in_port();
  types.push_back(std::move(relu_fn));
  return types;
}

}  // namespace nns::graph
