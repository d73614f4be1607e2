// SPDX-License-Identifier: GPL-3.0-or-later
// Patterns: the decompositions torch.onnx.export writes for one layer or function (layer_norm,
// GELU, SiLU, hardswish, x @ W + b; attention's are attention.cpp's), each found whole and made
// one unit.
#include <algorithm>
#include <cmath>
#include <set>

#include "engine/onnx/import/importer.h"

namespace nns::onnx::detail {

// Attention first: its projections would otherwise be taken as Linears.
void Importer::match_patterns() {
  for (bool attention : {true, false}) {
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (done_.contains(i)) continue;
      const std::string& op = node(i).op_type();
      std::optional<Pattern> p;
      if (attention) {
        if (op == "Softmax") p = match_attention(i);
        if (op == "Softmax" && !p) p = match_sdpa(i);
      } else if (op == "ReduceMean") {
        p = match_layer_norm(i);
      } else if (op == "Erf") {
        p = match_gelu(i);
      } else if (op == "Tanh") {
        p = match_gelu_tanh(i);
      } else if (op == "Sigmoid") {
        p = match_silu(i);
      } else if (op == "MatMul") {
        p = match_linear(i);
      } else if (op == "HardSigmoid") {
        p = match_hardswish(i);
      }
      if (!p || std::any_of(p->nodes.begin(), p->nodes.end(),
                            [this](int k) { return done_.contains(k); }))
        continue;
      for (int k : p->nodes) done_.insert(k);
      patterns_[*std::max_element(p->nodes.begin(), p->nodes.end())] = *p;
    }
  }
}

// x * hardsigmoid(x): hardswish, as torch.onnx.export writes it before opset 14.
std::optional<Pattern> Importer::match_hardswish(int hard_sigmoid) {
  if (!is_torch_hardsigmoid(node(hard_sigmoid))) return std::nullopt;
  std::optional<Pattern> p = match_silu(hard_sigmoid);
  if (p) p->type = "F.hardswish";
  return p;
}

// HardSigmoid with PyTorch's hardsigmoid constants (relu6(x + 3) / 6).
bool Importer::is_torch_hardsigmoid(const NodeProto& n) {
  return near(attr_float(n, "alpha", 0.2), 1.0 / 6) && near(attr_float(n, "beta", 0.5), 0.5);
}

// x - mean(x), / sqrt(mean((x - mean)^2) + eps), * weight, + bias: torch's layer_norm at
// opsets below 17.
std::optional<Pattern> Importer::match_layer_norm(int mean1) {
  const NodeProto& m1 = node(mean1);
  const std::string x = m1.input(0);
  const auto axes = reduction_axes(mean1);
  if (!axes || axes->empty() || attr_int(m1, "keepdims", 1) != 1) return std::nullopt;
  // Both x - mean and the variance's mean read x or the difference: find Sub(x, mean).
  int sub = -1;
  for (int c : consumers_[m1.output(0)]) {
    if (node(c).op_type() == "Sub" && node(c).input(0) == x && node(c).input(1) == m1.output(0))
      sub = c;
  }
  if (sub < 0 || consumers_[m1.output(0)].size() != 1) return std::nullopt;
  const std::string d = node(sub).output(0);
  int pow = -1, div = -1;
  for (int c : consumers_[d]) {
    if (node(c).op_type() == "Pow" && node(c).input(0) == d && near(scalar(node(c).input(1)), 2))
      pow = c;
    if (node(c).op_type() == "Div" && node(c).input(0) == d) div = c;
  }
  if (pow < 0 || div < 0 || consumers_[d].size() != 2) return std::nullopt;
  const int mean2 = only_consumer(node(pow).output(0));
  if (mean2 < 0 || node(mean2).op_type() != "ReduceMean" || reduction_axes(mean2) != axes ||
      attr_int(node(mean2), "keepdims", 1) != 1)
    return std::nullopt;
  const int add = only_consumer(node(mean2).output(0));
  if (add < 0 || node(add).op_type() != "Add") return std::nullopt;
  const auto eps_split = split_constant(node(add));
  if (!eps_split || !scalar(eps_split->second)) return std::nullopt;
  const int sqrt = only_consumer(node(add).output(0));
  if (sqrt < 0 || node(sqrt).op_type() != "Sqrt" || only_consumer(node(sqrt).output(0)) != div ||
      node(div).input(1) != node(sqrt).output(0))
    return std::nullopt;
  Pattern p;
  p.type = "LayerNorm";
  p.inputs = {x};
  p.nodes = {mean1, sub, pow, mean2, add, sqrt, div};
  p.output = node(div).output(0);
  p.options = {{"normalized_shape", json_list(*axes)},  // axes for now: made sizes below
               {"eps", shortest(*scalar(eps_split->second))},
               {"elementwise_affine", false}};
  // The affine part: * weight, + bias, each an initializer.
  const int mul = only_consumer(p.output);
  if (mul >= 0 && node(mul).op_type() == "Mul") {
    const auto w = split_constant(node(mul));
    if (w && w->first == p.output) {
      const int bias = only_consumer(node(mul).output(0));
      const auto b =
          bias >= 0 && node(bias).op_type() == "Add" ? split_constant(node(bias)) : std::nullopt;
      if (b && b->first == node(mul).output(0)) {
        p.nodes.insert(p.nodes.end(), {mul, bias});
        p.output = node(bias).output(0);
        p.options["elementwise_affine"] = true;
        p.state = {{"weight", w->second}, {"bias", b->second}};
      }
    }
  }
  return p;
}

// x * sigmoid(x): SiLU, as torch.onnx.export writes it before opset 20.
std::optional<Pattern> Importer::match_silu(int sigmoid) {
  const std::string x = node(sigmoid).input(0);
  const int mul = only_consumer(node(sigmoid).output(0));
  if (mul < 0 || node(mul).op_type() != "Mul") return std::nullopt;
  const NodeProto& m = node(mul);
  const std::string& s = node(sigmoid).output(0);
  if (!((m.input(0) == x && m.input(1) == s) || (m.input(0) == s && m.input(1) == x)))
    return std::nullopt;
  Pattern p;
  p.type = "SiLU";
  p.inputs = {x};
  p.output = m.output(0);
  p.nodes = {sigmoid, mul};
  return p;
}

// x * 0.5 * (1 + erf(x / sqrt(2))) in the orders torch and other exporters write it.
std::optional<Pattern> Importer::match_gelu(int erf) {
  const int scale = producer_of(node(erf).input(0));
  if (scale < 0) return std::nullopt;
  const NodeProto& s = node(scale);
  const auto xs = split_constant(s);
  if (!xs || only_consumer(s.output(0)) != erf) return std::nullopt;
  const bool ok = (s.op_type() == "Div" && near(scalar(xs->second), std::sqrt(2.0))) ||
                  (s.op_type() == "Mul" && near(scalar(xs->second), 1 / std::sqrt(2.0)));
  if (!ok) return std::nullopt;
  return gelu_tail(xs->first, {scale, erf}, "none");
}

// x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))): GELU(approximate="tanh"), with
// x^3 as Pow(x, 3) or x * (x * x).
std::optional<Pattern> Importer::match_gelu_tanh(int tanh) {
  const int scale = producer_of(node(tanh).input(0));
  if (scale < 0 || node(scale).op_type() != "Mul" || only_consumer(node(scale).output(0)) != tanh)
    return std::nullopt;
  const auto us = split_constant(node(scale));
  if (!us || !near(scalar(us->second), std::sqrt(2 / M_PI))) return std::nullopt;
  const int add = producer_of(us->first);
  if (add < 0 || node(add).op_type() != "Add" || only_consumer(us->first) != scale)
    return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const std::string x = node(add).input(k), term = node(add).input(1 - k);
    const int coef = producer_of(term);
    if (coef < 0 || node(coef).op_type() != "Mul" || only_consumer(term) != add) continue;
    const auto cs = split_constant(node(coef));
    if (!cs || !near(scalar(cs->second), 0.044715)) continue;
    const std::optional<std::vector<int>> cube = match_cube(cs->first, x);
    if (!cube) continue;
    std::vector<int> nodes = *cube;
    nodes.insert(nodes.end(), {coef, add, scale, tanh});
    return gelu_tail(x, nodes, "tanh");
  }
  return std::nullopt;
}

// The nodes that make `value` as x^3: Pow(x, 3), or x * (x * x) in either order.
std::optional<std::vector<int>> Importer::match_cube(const std::string& value,
                                                     const std::string& x) {
  const int n = producer_of(value);
  if (n < 0 || node(n).input_size() != 2) return std::nullopt;
  const NodeProto& c = node(n);
  if (c.op_type() == "Pow" && c.input(0) == x && near(scalar(c.input(1)), 3))
    return std::vector<int>{n};
  if (c.op_type() != "Mul") return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const int sq = producer_of(c.input(1 - k));
    if (c.input(k) == x && sq >= 0 && node(sq).op_type() == "Mul" && node(sq).input(0) == x &&
        node(sq).input(1) == x && only_consumer(c.input(1 - k)) == n)
      return std::vector<int>{sq, n};
  }
  return std::nullopt;
}

// GELU's end from its erf or tanh node (the last of `nodes`): + 1, times x, times 0.5, as
// (x * (1 + e)) * 0.5, (x * 0.5) * (1 + e) or, as torch 2.x's exporter writes it,
// x * (0.5 * (1 + e)).
std::optional<Pattern> Importer::gelu_tail(const std::string& x, std::vector<int> nodes,
                                           const std::string& approximate) {
  const int add = only_consumer(node(nodes.back()).output(0));
  if (add < 0 || node(add).op_type() != "Add") return std::nullopt;
  const auto one = split_constant(node(add));
  if (!one || !near(scalar(one->second), 1)) return std::nullopt;
  const int mul = only_consumer(node(add).output(0));
  if (mul < 0 || node(mul).op_type() != "Mul") return std::nullopt;
  const NodeProto& m = node(mul);
  const std::string other = m.input(0) == node(add).output(0) ? m.input(1) : m.input(0);
  Pattern p;
  p.type = "GELU";
  p.options = {{"approximate", approximate}};
  p.inputs = {x};
  nodes.insert(nodes.end(), {add, mul});
  if (near(scalar(other), 0.5)) {
    const int times = only_consumer(m.output(0));
    if (times < 0 || node(times).op_type() != "Mul") return std::nullopt;
    const NodeProto& t = node(times);
    if ((t.input(0) == m.output(0) ? t.input(1) : t.input(0)) != x) return std::nullopt;
    nodes.push_back(times);
    p.nodes = nodes;
    p.output = t.output(0);
    return p;
  }
  if (other == x) {
    const int half = only_consumer(m.output(0));
    if (half < 0 || node(half).op_type() != "Mul") return std::nullopt;
    const auto h = split_constant(node(half));
    if (!h || h->first != m.output(0) || !near(scalar(h->second), 0.5)) return std::nullopt;
    nodes.push_back(half);
    p.nodes = nodes;
    p.output = node(half).output(0);
    return p;
  }
  const int half = producer_of(other);
  if (half < 0 || node(half).op_type() != "Mul" || only_consumer(other) != mul) return std::nullopt;
  const auto h = split_constant(node(half));
  if (!h || h->first != x || !near(scalar(h->second), 0.5)) return std::nullopt;
  nodes.push_back(half);
  p.nodes = nodes;
  p.output = m.output(0);
  return p;
}

// x @ W (+ b) with W and b initializers: a Linear whose weight is W transposed (PyTorch's
// exporter writes Linear on inputs of rank 3 and more so).
std::optional<Pattern> Importer::match_linear(int matmul) {
  const NodeProto& m = node(matmul);
  if (m.input_size() != 2 || constants_.contains(m.input(0)) || !constants_.contains(m.input(1)) ||
      constants_.at(m.input(1)).dim() != 2)
    return std::nullopt;
  // A weight under a plain name of the model's own ("w_out") is a Parameter node of its
  // forward's x @ w_out, not a layer.
  if (initializers_.contains(m.input(1)) && is_module_path(m.input(1)) &&
      m.input(1).find('.') == std::string::npos)
    return std::nullopt;
  Pattern p;
  p.type = "Linear";
  p.inputs = {m.input(0)};
  p.output = m.output(0);
  p.nodes = {matmul};
  p.state = {{"weight^T", m.input(1)}};
  const int64_t out = constants_.at(m.input(1)).shape()[1];
  const int add = only_consumer(m.output(0));
  if (add >= 0 && node(add).op_type() == "Add") {
    const auto b = split_constant(node(add));
    if (b && b->first == m.output(0) && constants_.at(b->second).numel() == out) {
      p.nodes.push_back(add);
      p.output = node(add).output(0);
      p.state.emplace_back("bias", b->second);
    }
  }
  return p;
}

// ---- A pattern's unit ---------------------------------------------------------------------------

void Importer::add_pattern(int last, const Pattern& p) {
  Unit u = unit_for(last, p.type);
  u.label =
      p.type + " (ONNX nodes " + node(p.nodes.front()).name() + " .. " + node(last).name() + ")";
  u.inputs = p.inputs;
  u.ports = p.ports;
  u.output = p.output;
  u.options = p.options;
  u.module = p.module;
  for (const auto& [entry, t] : p.tensors) u.state.emplace_back(entry, t);
  u.sources.insert(u.sources.end(), p.sources.begin(), p.sources.end());
  for (const auto& [entry, init] : p.state) {
    Tensor t = constant(init);
    if (entry.ends_with("^T")) {
      u.state.emplace_back(entry.substr(0, entry.size() - 2), t.transpose(0, 1).contiguous());
      if (p.type == "Linear") {
        u.options["in_features"] = t.shape()[0];
        u.options["out_features"] = t.shape()[1];
        u.options["bias"] = false;
      }
    } else {
      u.state.emplace_back(entry, t);
      if (p.type == "Linear") u.options["bias"] = true;
    }
    u.sources.push_back(source_of(init));
  }
  if (p.type == "LayerNorm") {
    // The reduced axes must be the trailing ones; their sizes are normalized_shape.
    const SymShape& x = shape_of(p.inputs[0]);
    std::vector<int64_t> dims;
    for (const Json& a : p.options["normalized_shape"])
      dims.push_back(axis_dim(last, a.get<int64_t>(), x.size()));
    std::sort(dims.begin(), dims.end());
    std::vector<int64_t> sizes;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] != static_cast<int64_t>(x.size() - dims.size() + k) || dims[k] == 0)
        fail(u.label + ": normalizes over dims that are not the trailing ones");
      sizes.push_back(x[dims[k]]);
    }
    u.options["normalized_shape"] = json_list(sizes);
    for (auto& [entry, t] : u.state) t = t.reshape(Shape(sizes.begin(), sizes.end()));
  }
  if (p.type == "Linear" && u.state.size() == 2)
    u.state[1].second = u.state[1].second.reshape({-1});
  // x @ self.weight (+ self.bias) with the weight under its own key ("embed.weight", [in,
  // out]) is a custom module's code, not a Linear's (whose exported matrix has a made-up
  // name): a block instance keeps its keys and the weight's shape.
  const std::string& w = p.state.empty() ? std::string() : p.state[0].second;
  if (p.type == "Linear" && initializers_.contains(w) && !module_of_initializer(w).empty() &&
      shape_of(p.inputs[0]).size() == 2) {
    const Tensor weight = constant(w);
    u.block = true;
    u.type = u.state.size() == 2 ? kWeightBiasBlock : kWeightBlock;
    u.options = {{"in_features", weight.shape()[0]}, {"out_features", weight.shape()[1]}};
    u.state[0].second = weight;
    const SymShape& x = shape_of(p.inputs[0]);
    if (x.back() != weight.shape()[0])
      fail(u.label + ": its input has " + std::to_string(x.back()) + " features; its weight '" + w +
           "' takes " + std::to_string(weight.shape()[0]));
    for (std::string& v : u.inputs) v = resolve(v);
    shapes_[u.output] = {x[0], weight.shape()[1]};
    used_blocks_.insert(u.type);
    units_.push_back(std::move(u));
    return;
  }
  add_unit(std::move(u));
}

}  // namespace nns::onnx::detail
