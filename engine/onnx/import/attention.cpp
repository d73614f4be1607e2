// SPDX-License-Identifier: GPL-3.0-or-later
// Attention: the decompositions exporters write for it, each found whole and made one
// MultiheadAttention. torch 1.13 writes nn.MultiheadAttention's forward node by node
// (match_attention); torch 2.x writes scaled_dot_product_attention as the product of the scaled
// queries and keys, a mask, a Softmax and the product with the values, between the projections
// of a module's own code or nn.MultiheadAttention's (match_sdpa).
#include <algorithm>
#include <cmath>
#include <set>

#include "engine/onnx/import/importer.h"
#include "engine/ops/indexing.h"
#include "engine/tensor/factories.h"

namespace nns::onnx::detail {

// ---- torch 1.13: nn.MultiheadAttention's forward ----------------------------------------------

// nn.MultiheadAttention's forward as torch.onnx.export writes it (self-attention, as
// nn.TransformerEncoderLayer and torchvision's VisionTransformer call it): every node in the
// module's scope around one Softmax, reading one value and making one. The in-projection is a
// MatMul by [E, 3E] (+ [3E]), the out-projection a Gemm or MatMul by [E, E] (+ [E]); the
// query's scale 1/sqrt(head_dim) gives the heads. It moves the batch inside (to dim 1 and into
// the heads), which no node by node import can keep: it comes back as the layer.
std::optional<Pattern> Importer::match_attention(int softmax) {
  const std::string scope = this->scope(softmax);
  if (scope.empty()) return std::nullopt;
  static const std::set<std::string> parts = {
      "Transpose", "Shape", "Gather", "Div",     "Cast",      "MatMul", "Add",
      "Mul",       "Slice", "Split",  "Squeeze", "Unsqueeze", "Concat", "Reshape",
      "Softmax",   "Gemm",  "Sqrt",   "Dropout", "Identity"};
  std::vector<int> region;
  std::set<std::string> made;
  for (int j = 0; j < graph_.node_size(); ++j) {
    if (done_.contains(j) || this->scope(j) != scope) continue;
    if (!parts.contains(node(j).op_type())) return std::nullopt;
    if (node(j).op_type() == "Softmax" && j != softmax) return std::nullopt;
    region.push_back(j);
    for (const std::string& o : node(j).output()) made.insert(o);
  }
  // What the region reads from outside (not constants, nor sizes such as the batch that torch
  // 2.x reads once for the model) and what is read of it outside.
  std::vector<std::string> reads;
  for (int j : region) {
    for (const std::string& v : node(j).input()) {
      if (v.empty() || made.contains(v) || constants_.contains(v) || is_size(v)) continue;
      if (std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
    }
  }
  std::vector<std::string> outputs;
  for (const std::string& v : made) {
    bool outside = is_graph_output(v);
    for (int c : consumers_[v])
      outside = outside || !std::binary_search(region.begin(), region.end(), c);
    if (outside) outputs.push_back(v);
  }
  if (reads.size() != 1 || outputs.size() != 1) return std::nullopt;
  const std::string x = reads[0];
  // The projections and the scale.
  std::string in_w, in_b, out_w, out_b;
  bool out_transposed = false;
  std::vector<double> scales;
  std::vector<std::string> float_adds;  // constants added (biases; anything else is a mask)
  for (int j : region) {
    const NodeProto& n = node(j);
    const std::string& op = n.op_type();
    const auto c = split_constant(n);
    const bool float_constant = c && constants_.at(c->second).dtype() != kInt64;
    if (op == "MatMul" && c) {
      const Shape& w = constants_.at(c->second).shape();
      if (w.size() != 2) return std::nullopt;
      if (w[1] == 3 * w[0] && in_w.empty()) {
        in_w = c->second;
      } else if (w[1] == w[0] && out_w.empty()) {
        out_w = c->second;
        out_transposed = true;
      } else {
        return std::nullopt;
      }
    } else if (op == "Gemm") {
      if (n.input_size() < 2 || !constants_.contains(n.input(1)) || !out_w.empty() ||
          attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1) != 1 ||
          attr_float(n, "beta", 1) != 1)
        return std::nullopt;
      out_w = n.input(1);
      out_transposed = attr_int(n, "transB", 0) == 0;
      if (n.input_size() > 2 && !n.input(2).empty()) {
        if (!constants_.contains(n.input(2))) return std::nullopt;
        out_b = n.input(2);
      }
    } else if (op == "Add" && float_constant) {
      float_adds.push_back(c->second);
    } else if ((op == "Div" || op == "Mul") && float_constant) {
      const std::optional<double> v = scalar(c->second);
      if (!v || *v <= 0) return std::nullopt;
      scales.push_back(op == "Div" ? 1 / *v : *v);
    }
  }
  if (in_w.empty() || out_w.empty()) return std::nullopt;
  const int64_t e = constants_.at(in_w).shape()[0];
  if (constants_.at(out_w).shape() != Shape{e, e}) return std::nullopt;
  bool causal = false;
  for (const std::string& b : float_adds) {
    const int64_t numel = constants_.at(b).numel();
    if (constants_.at(b).dim() == 2 && is_causal_mask(constants_.at(b)) && !causal) {
      causal = true;
    } else if (numel == 3 * e && in_b.empty()) {
      in_b = b;
    } else if (numel == e && out_b.empty() && out_transposed) {
      out_b = b;
    } else {
      return std::nullopt;  // a mask, or another term: not nn.MultiheadAttention's forward
    }
  }
  if (in_b.empty() != out_b.empty()) return std::nullopt;
  // q * s (torch 1.13), or q * sqrt(s) and k * sqrt(s) (scaled_dot_product_attention's).
  double scale = 0;
  if (scales.size() == 1) scale = scales[0];
  if (scales.size() == 2 && near(scales[0], scales[1])) scale = scales[0] * scales[1];
  if (scale <= 0) return std::nullopt;
  const double head_dim = 1 / (scale * scale);
  const int64_t hd = std::llround(head_dim);
  if (hd < 1 || std::abs(head_dim - static_cast<double>(hd)) > 1e-3 * head_dim || e % hd != 0)
    return std::nullopt;
  // batch_first: the module moves [N, L, E] to [L, N, E] before anything else.
  bool batch_first = true;
  for (int c : consumers_[x]) {
    if (!std::binary_search(region.begin(), region.end(), c)) continue;  // a residual's Add
    if (node(c).op_type() != "Transpose" ||
        attr_ints(node(c), "perm") != std::vector<int64_t>{1, 0, 2})
      batch_first = false;
  }
  Pattern p;
  p.type = "MultiheadAttention";
  p.inputs = {x, x, x};
  p.ports = {"query", "key", "value"};
  p.output = outputs[0];
  p.nodes = region;
  p.options = {{"embed_dim", e},
               {"num_heads", e / hd},
               {"bias", !in_b.empty()},
               {"batch_first", batch_first},
               {"is_causal", causal}};
  p.state = {{"in_proj_weight^T", in_w}};
  if (!in_b.empty()) p.state.emplace_back("in_proj_bias", in_b);
  p.state.emplace_back(out_transposed ? "out_proj.weight^T" : "out_proj.weight", out_w);
  if (!out_b.empty()) p.state.emplace_back("out_proj.bias", out_b);
  return p;
}

// Whether `value` holds sizes read from a shape: Shape, and Gather, Slice, Squeeze, Unsqueeze,
// Concat and Cast of what it makes.
bool Importer::is_size(const std::string& value) const {
  static const std::set<std::string> size_ops = {"Gather",    "Slice",  "Squeeze",
                                                 "Unsqueeze", "Concat", "Cast"};
  const int p = producer_of(value);
  if (p < 0) return false;
  if (node(p).op_type() == "Shape") return true;
  if (!size_ops.contains(node(p).op_type())) return false;
  return std::all_of(node(p).input().begin(), node(p).input().end(), [this](const std::string& v) {
    return v.empty() || constants_.contains(v) || is_size(v);
  });
}

// [L, L] (or [1, .., 1, L, L]) with 0 on and below the diagonal and -inf above: each query sees
// the keys up to its own position. torch 2.x's exporter writes the float's lowest value for
// -inf (so that a row of only masked keys is no NaN): any value below -1e30 masks as -inf does,
// exp() of it being 0.
bool Importer::is_causal_mask(const Tensor& mask) {
  if (mask.dim() < 2) return false;
  const int64_t len = mask.shape()[mask.dim() - 1];
  if (mask.shape()[mask.dim() - 2] != len || mask.numel() != len * len) return false;
  const Tensor m = mask.to(kFloat64).contiguous();
  const double* v = m.data_ptr<double>();
  for (int64_t i = 0; i < len; ++i) {
    for (int64_t j = 0; j < len; ++j) {
      const double x = v[i * len + j];
      if (j <= i ? x != 0 : !(x < -1e30)) return false;
    }
  }
  return true;
}

// ---- torch 2.x: scaled_dot_product_attention between projections -----------------------------

// Softmax(Q @ K^T * scale (+ a causal mask)) @ V between the heads of three projections and an
// out-projection, as torch 2.x's exporter writes F.scaled_dot_product_attention (the scale's
// square root on Q and on K^T, K^T by a Reshape, Transpose and Reshape) or a module's own
// `q @ k.transpose(-2, -1) / sqrt(d)`: Q, K and V the [N, L, E] projections x @ W (+ b) split
// into heads ([N, L, H, hd] moved to [N, H, L, hd]), or equal column blocks of one projection
// (qkv(x).split(E, -1)); the result's heads moved back to [N, L, E] and projected by [E, E].
// That is nn.MultiheadAttention's math (batch_first) where the scale is 1/sqrt(hd) and the
// query, key and value have E features: its in_proj_weight the three projections' weights.
// The query may read another tensor than the key and value (cross-attention).
std::optional<Pattern> Importer::match_sdpa(int softmax) {
  const int64_t axis = attr_int(node(softmax), "axis", -1);
  if (axis != -1 && axis != 3) return std::nullopt;
  std::vector<int> nodes{softmax};
  std::string scores = node(softmax).input(0);
  bool causal = false;
  if (const int add = producer_of(scores); add >= 0 && node(add).op_type() == "Add") {
    const auto mask = split_constant(node(add));
    if (!mask || !is_causal_mask(constant(mask->second))) return std::nullopt;
    causal = true;
    nodes.push_back(add);
    scores = mask->first;
  }
  double scale = 1;
  scores = unscaled(scores, scale, nodes);
  const int qk = producer_of(scores);
  if (qk < 0 || node(qk).op_type() != "MatMul") return std::nullopt;
  nodes.push_back(qk);
  const std::string q4 = unscaled(node(qk).input(0), scale, nodes);
  const std::optional<std::string> k4 =
      untransposed_key(unscaled(node(qk).input(1), scale, nodes), nodes);
  // The weights (which a Dropout in eval mode passes) times V.
  std::string weights = node(softmax).output(0);
  int pv = only_consumer(weights);
  if (pv >= 0 && node(pv).op_type() == "Dropout") {
    nodes.push_back(pv);
    weights = node(pv).output(0);
    pv = only_consumer(weights);
  }
  if (!k4 || pv < 0 || node(pv).op_type() != "MatMul" || node(pv).input(0) != weights)
    return std::nullopt;
  nodes.push_back(pv);
  const std::optional<Heads> q = heads_of(q4, nodes), k = heads_of(*k4, nodes),
                             v = heads_of(node(pv).input(1), nodes);
  if (!q || !k || !v || k->heads != q->heads || v->heads != q->heads ||
      k->head_dim != q->head_dim || v->head_dim != q->head_dim ||
      !near(scale, 1 / std::sqrt(static_cast<double>(q->head_dim))))
    return std::nullopt;
  const int64_t e = q->heads * q->head_dim;
  // E features in (nn.MultiheadAttention's kdim and vdim are E), E out of each part.
  auto fits = [&](const Projection& p) {
    return constant(p.weight).shape() == Shape{e, e * p.parts};
  };
  if (!fits(q->projection) || !fits(k->projection) || !fits(v->projection)) return std::nullopt;
  const auto out = merged_heads(node(pv).output(0), e, nodes);
  if (!out) return std::nullopt;
  take_size_nodes(nodes);
  if (!closed(nodes, out->first)) return std::nullopt;
  return sdpa_pattern({q->projection, k->projection, v->projection}, out->second, q->heads, e,
                      causal, out->first, nodes);
}

// The value before Mul and Div nodes by scalar constants that `value` is, their product
// multiplied into `scale`.
std::string Importer::unscaled(std::string value, double& scale, std::vector<int>& nodes) const {
  for (;;) {
    const int p = producer_of(value);
    if (p < 0 || (node(p).op_type() != "Mul" && node(p).op_type() != "Div")) return value;
    const auto c = split_constant(node(p));
    const std::optional<double> s = c ? scalar(c->second) : std::nullopt;
    if (!s || *s <= 0) return value;
    scale *= node(p).op_type() == "Div" ? 1 / *s : *s;
    nodes.push_back(p);
    value = c->first;
  }
}

// The [N, H, S, hd] keys whose last two dims `kt` swaps: a Transpose (perm 0, 1, 3, 2), or
// torch 2.x's exporter's Reshape to [-1, S, hd], Transpose (perm 0, 2, 1) and Reshape back.
std::optional<std::string> Importer::untransposed_key(const std::string& kt,
                                                      std::vector<int>& nodes) const {
  const int t = producer_of(kt);
  if (t < 0) return std::nullopt;
  if (node(t).op_type() == "Transpose") {
    if (attr_ints(node(t), "perm") != std::vector<int64_t>{0, 1, 3, 2}) return std::nullopt;
    nodes.push_back(t);
    return node(t).input(0);
  }
  if (node(t).op_type() != "Reshape") return std::nullopt;
  const int swap = producer_of(node(t).input(0));
  if (swap < 0 || node(swap).op_type() != "Transpose" ||
      attr_ints(node(swap), "perm") != std::vector<int64_t>{0, 2, 1})
    return std::nullopt;
  const int flat = producer_of(node(swap).input(0));
  if (flat < 0 || node(flat).op_type() != "Reshape") return std::nullopt;
  nodes.insert(nodes.end(), {t, swap, flat});
  return node(flat).input(0);
}

// [N, H, L, hd] made from a projection [N, L, E]: a Reshape to [.., H, hd] (constant H and hd),
// then a Transpose (perm 0, 2, 1, 3).
std::optional<Importer::Heads> Importer::heads_of(const std::string& value,
                                                  std::vector<int>& nodes) const {
  const int t = producer_of(value);
  if (t < 0 || node(t).op_type() != "Transpose" ||
      attr_ints(node(t), "perm") != std::vector<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  const int r = producer_of(node(t).input(0));
  if (r < 0 || node(r).op_type() != "Reshape") return std::nullopt;
  const std::vector<int64_t> tail = constant_tail(node(r).input(1));
  if (tail.size() < 2 || tail[tail.size() - 2] < 1 || tail.back() < 1) return std::nullopt;
  std::vector<int> taken{t, r};
  const std::optional<Projection> p = projection_of(node(r).input(0), taken);
  if (!p) return std::nullopt;
  nodes.insert(nodes.end(), taken.begin(), taken.end());
  return Heads{*p, tail[tail.size() - 2], tail.back()};
}

// x @ W (+ b) with W [in, out] and b [out] constants, or one of the equal column blocks a Split
// along the last dim cuts from it.
std::optional<Importer::Projection> Importer::projection_of(const std::string& value,
                                                            std::vector<int>& nodes) const {
  Projection p;
  std::string v = value;
  int at = producer_of(v);
  std::optional<std::vector<int64_t>> sizes;
  if (at >= 0 && node(at).op_type() == "Split") {
    const NodeProto& s = node(at);
    const int64_t axis = attr_int(s, "axis", 0);
    if (axis != -1 && axis != 2) return std::nullopt;
    if (!input(at, 1).empty()) {
      sizes = int_values(input(at, 1));
      if (!sizes) return std::nullopt;
    }
    p.parts = s.output_size();
    p.part = std::find(s.output().begin(), s.output().end(), v) - s.output().begin();
    nodes.push_back(at);
    v = s.input(0);
    at = producer_of(v);
  }
  if (at >= 0 && node(at).op_type() == "Add") {
    const auto b = split_constant(node(at));
    if (!b || constant(b->second).dim() != 1) return std::nullopt;
    p.bias = b->second;
    nodes.push_back(at);
    v = b->first;
    at = producer_of(v);
  }
  if (at < 0 || node(at).op_type() != "MatMul" || constants_.contains(input(at, 0)) ||
      !constants_.contains(input(at, 1)) || constant(input(at, 1)).dim() != 2)
    return std::nullopt;
  p.x = input(at, 0);
  p.weight = input(at, 1);
  nodes.push_back(at);
  const int64_t columns = constant(p.weight).shape()[1];
  if (columns % p.parts != 0) return std::nullopt;
  if (sizes && (static_cast<int64_t>(sizes->size()) != p.parts ||
                std::any_of(sizes->begin(), sizes->end(),
                            [&](int64_t s) { return s != columns / p.parts; })))
    return std::nullopt;
  if (!p.bias.empty() && constant(p.bias).numel() != columns) return std::nullopt;
  return p;
}

// [N, H, L, hd] back to [N, L, E] (a Transpose, perm 0, 2, 1, 3, and a Reshape to [.., E]) and
// through the out-projection by [E, E] (+ [E]): its output, and that projection.
std::optional<std::pair<std::string, Importer::Projection>> Importer::merged_heads(
    const std::string& value, int64_t e, std::vector<int>& nodes) const {
  const int t = only_consumer(value);
  if (t < 0 || node(t).op_type() != "Transpose" ||
      attr_ints(node(t), "perm") != std::vector<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  const int r = only_consumer(node(t).output(0));
  if (r < 0 || node(r).op_type() != "Reshape" || input(r, 0) != node(t).output(0))
    return std::nullopt;
  // [.., E], or [N, L, -1] written out whole.
  const std::vector<int64_t> tail = constant_tail(input(r, 1));
  if (tail.empty() || !(tail.back() == e || (tail.size() == 3 && tail.back() == -1)))
    return std::nullopt;
  const int m = only_consumer(node(r).output(0));
  if (m < 0 || node(m).op_type() != "MatMul" || input(m, 0) != node(r).output(0) ||
      !constants_.contains(input(m, 1)) || constant(input(m, 1)).shape() != Shape{e, e})
    return std::nullopt;
  nodes.insert(nodes.end(), {t, r, m});
  Projection out;
  out.x = node(r).output(0);
  out.weight = input(m, 1);
  std::string y = node(m).output(0);
  if (const int add = only_consumer(y); add >= 0 && node(add).op_type() == "Add") {
    const auto b = split_constant(node(add));
    if (b && b->first == y && constant(b->second).numel() == e) {
      out.bias = b->second;
      nodes.push_back(add);
      y = node(add).output(0);
    }
  }
  return std::pair{y, out};
}

// The constant entries at the end of a list of sizes: all of a constant's, or those after the
// last computed piece of a Concat (torch writes [N, L, H, hd] as the batch read from a shape
// and constants).
std::vector<int64_t> Importer::constant_tail(const std::string& sizes) const {
  if (auto c = int_values(sizes)) return *c;
  const int p = producer_of(sizes);
  if (p < 0 || node(p).op_type() != "Concat") return {};
  std::vector<int64_t> tail;
  for (int k = node(p).input_size(); k-- > 0;) {
    const std::optional<std::vector<int64_t>> piece = int_values(node(p).input(k));
    if (!piece) break;
    tail.insert(tail.begin(), piece->begin(), piece->end());
  }
  return tail;
}

// The nodes that compute the sizes of the pattern's Reshapes (Shape, Slice, Concat, ... of
// shapes), where only the pattern reads them: a size read elsewhere too (the batch, which
// torch reads once for the whole model) stays for convert_shape_arithmetic.
void Importer::take_size_nodes(std::vector<int>& nodes) const {
  static const std::set<std::string> size_ops = {"Shape", "Slice",   "Concat",   "Gather",
                                                 "Cast",  "Squeeze", "Unsqueeze"};
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::set<int> in(nodes.begin(), nodes.end()), candidates;
  std::vector<int> frontier;
  for (int j : nodes) {
    if (node(j).op_type() == "Reshape") frontier.push_back(producer_of(input(j, 1)));
  }
  while (!frontier.empty()) {
    const int c = frontier.back();
    frontier.pop_back();
    if (c < 0 || done_.contains(c) || in.contains(c) || !size_ops.contains(node(c).op_type()) ||
        !candidates.insert(c).second)
      continue;
    if (node(c).op_type() != "Shape") {
      for (const std::string& v : node(c).input()) frontier.push_back(producer_of(v));
    }
  }
  for (bool grew = true; grew;) {
    grew = false;
    for (int c : candidates) {
      if (in.contains(c) || !read_only_by(node(c), in)) continue;
      in.insert(c);
      nodes.push_back(c);
      grew = true;
    }
  }
}

// Whether every value `n` makes is read by nodes of `in` only (and is no graph output).
bool Importer::read_only_by(const NodeProto& n, const std::set<int>& in) const {
  for (const std::string& o : n.output()) {
    if (o.empty()) continue;
    if (is_graph_output(o)) return false;
    if (auto it = consumers_.find(o); it != consumers_.end()) {
      for (int c : it->second) {
        if (!in.contains(c)) return false;
      }
    }
  }
  return true;
}

// Whether only the pattern's nodes read what they make, but for its output.
bool Importer::closed(const std::vector<int>& nodes, const std::string& output) const {
  const std::set<int> in(nodes.begin(), nodes.end());
  return std::all_of(nodes.begin(), nodes.end(), [&](int j) {
    return std::find(node(j).output().begin(), node(j).output().end(), output) !=
               node(j).output().end() ||
           read_only_by(node(j), in);
  });
}

// The MultiheadAttention of match_sdpa: in_proj_weight the q, k and v projections' [E, E]
// blocks, in_proj_bias their biases (zeros for one without: the same sums), out_proj the
// out-projection's; named after the module that holds the projections.
Pattern Importer::sdpa_pattern(const std::array<Projection, 3>& qkv, const Projection& out,
                               int64_t heads, int64_t e, bool causal, const std::string& output,
                               const std::vector<int>& nodes) const {
  Pattern p;
  p.type = "MultiheadAttention";
  p.inputs = {qkv[0].x, qkv[1].x, qkv[2].x};
  p.ports = {"query", "key", "value"};
  p.output = output;
  p.nodes = nodes;
  bool bias = !out.bias.empty();
  std::vector<Tensor> weights, biases;
  std::vector<std::string> modules;
  for (size_t k = 0; k < 4; ++k) {
    const Projection& pr = k < 3 ? qkv[k] : out;
    const Tensor w = constant(pr.weight);  // [in, out]
    weights.push_back(w.narrow(1, pr.part * e, e).transpose(0, 1).contiguous());
    biases.push_back(pr.bias.empty()
                         ? zeros({e})
                         : constant(pr.bias).reshape({-1}).narrow(0, pr.part * e, e).contiguous());
    bias = bias || !pr.bias.empty();
    for (const std::string& c : {pr.weight, pr.bias}) {
      if (c.empty()) continue;
      const std::string source = source_of(c);
      if (std::find(p.sources.begin(), p.sources.end(), source) == p.sources.end())
        p.sources.push_back(source);
      modules.push_back(module_of_initializer(source));
    }
  }
  p.options = {{"embed_dim", e},
               {"num_heads", heads},
               {"bias", bias},
               {"batch_first", true},
               {"is_causal", causal}};
  p.tensors = {{"in_proj_weight", cat({weights[0], weights[1], weights[2]}, 0)},
               {"out_proj.weight", weights[3]}};
  if (bias) {
    p.tensors.insert(p.tensors.begin() + 1,
                     {"in_proj_bias", cat({biases[0], biases[1], biases[2]}, 0)});
    p.tensors.emplace_back("out_proj.bias", biases[3]);
  }
  p.module = common_module(modules);
  return p;
}

// The module that holds all of `paths` ("enc.attn.q", "enc.attn.out" -> "enc.attn"), "" for
// none (or for a path that is no module's).
std::string Importer::common_module(const std::vector<std::string>& paths) {
  if (paths.empty() ||
      std::any_of(paths.begin(), paths.end(), [](const std::string& m) { return m.empty(); }))
    return "";
  std::vector<std::string> common = split(paths[0], '.');
  for (const std::string& m : paths) {
    const std::vector<std::string> parts = split(m, '.');
    size_t k = 0;
    while (k < common.size() && k < parts.size() && common[k] == parts[k]) ++k;
    common.resize(k);
  }
  std::string out;
  for (const std::string& part : common) out += (out.empty() ? "" : ".") + part;
  return out;
}
}  // namespace nns::onnx::detail
