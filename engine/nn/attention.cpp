// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/attention.h"

#include <cmath>
#include <limits>

#include "engine/nn/init.h"
#include "engine/ops/linalg.h"
#include "engine/ops/nn_ops.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& options)
    : options_(options) {
  const MultiheadAttentionOptions& o = options_;
  if (o.embed_dim < 1 || o.num_heads < 1)
    throw ValueError("MultiheadAttention: embed_dim and num_heads must be >= 1, got " +
                     std::to_string(o.embed_dim) + " and " + std::to_string(o.num_heads));
  if (o.embed_dim % o.num_heads != 0)
    throw ValueError("MultiheadAttention: embed_dim (" + std::to_string(o.embed_dim) +
                     ") must be divisible by num_heads (" + std::to_string(o.num_heads) + ")");
  if (o.dropout < 0 || o.dropout > 1)
    throw ValueError("MultiheadAttention: dropout must be in [0, 1], got " +
                     python_float(o.dropout));
  const int64_t e = o.embed_dim;
  in_proj_weight = register_parameter("in_proj_weight", Parameter(empty({3 * e, e})));
  in_proj_bias = register_parameter("in_proj_bias", o.bias ? Parameter(empty({3 * e})) : Tensor());
  // PyTorch's order of draws: out_proj's own initialisation, then in_proj_weight's.
  out_proj =
      register_module("out_proj", std::make_shared<NonDynamicallyQuantizableLinear>(e, e, o.bias));
  init::xavier_uniform_(in_proj_weight);
  if (o.bias) {
    init::constant_(in_proj_bias, 0);
    init::constant_(out_proj->bias, 0);
  }
}

std::vector<Tensor> MultiheadAttention::forward(const std::vector<Tensor>& inputs) {
  const MultiheadAttentionOptions& o = options_;
  if (inputs.size() != 3)
    throw ValueError("MultiheadAttention: expected query, key and value, got " +
                     std::to_string(inputs.size()) + " inputs");
  const std::string layout = o.batch_first ? "[N, L, E]" : "[L, N, E]";
  for (size_t k = 0; k < 3; ++k) {
    const Tensor& t = inputs[k];
    if (t.dim() != 3 || t.size(2) != o.embed_dim)
      throw ShapeError(std::string("MultiheadAttention: ") +
                       (k == 0   ? "query"
                        : k == 1 ? "key"
                                 : "value") +
                       " must be " + layout + " with E = embed_dim = " +
                       std::to_string(o.embed_dim) + ", got " + shape_str(t.shape()));
  }
  Tensor q = inputs[0], k = inputs[1], v = inputs[2];
  if (o.batch_first) {
    q = q.transpose(0, 1);
    k = k.transpose(0, 1);
    v = v.transpose(0, 1);
  }
  const int64_t l = q.size(0), n = q.size(1), s = k.size(0), e = o.embed_dim, h = o.num_heads;
  const int64_t d = e / h;
  if (k.size(1) != n || v.size(1) != n || v.size(0) != s)
    throw ShapeError(
        "MultiheadAttention: query, key and value must have the same batch, and key "
        "and value the same length; got " +
        shape_str(inputs[0].shape()) + ", " + shape_str(inputs[1].shape()) + " and " +
        shape_str(inputs[2].shape()));
  if (o.is_causal && l != s)
    throw ShapeError("MultiheadAttention: is_causal needs as many queries as keys, got " +
                     std::to_string(l) + " and " + std::to_string(s));
  // The packed projection's rows: query's, key's, value's.
  auto project = [&](const Tensor& x, int64_t part, int64_t length) {
    const Tensor w = in_proj_weight.narrow(0, part * e, e);
    const Tensor b = in_proj_bias.defined() ? in_proj_bias.narrow(0, part * e, e) : Tensor();
    // [length, N, E] -> [N * heads, length, head_dim]
    return linear(x, w, b).reshape({length, n * h, d}).transpose(0, 1);
  };
  const Tensor qh = project(q, 0, l), kh = project(k, 1, s), vh = project(v, 2, s);
  Tensor scores = bmm(qh / std::sqrt(static_cast<double>(d)), kh.transpose(1, 2));  // [N*h, L, S]
  if (o.is_causal) {
    std::vector<float> mask(static_cast<size_t>(l * s), 0.0f);
    for (int64_t i = 0; i < l; ++i) {
      for (int64_t j = i + 1; j < s; ++j)
        mask[static_cast<size_t>(i * s + j)] = -std::numeric_limits<float>::infinity();
    }
    scores = scores + from_vector(mask, {l, s}).to(scores.dtype());
  }
  Tensor weights = scores.softmax(-1);
  if (o.dropout > 0) weights = dropout(weights, o.dropout, is_training());
  Tensor out = bmm(weights, vh).transpose(0, 1).contiguous().reshape({l * n, e});
  out = linear(out, out_proj->weight, out_proj->bias).reshape({l, n, e});
  if (o.batch_first) out = out.transpose(0, 1);
  const Tensor per_head = weights.reshape({n, h, l, s});
  if (record_head_weights) last_head_weights = per_head.detach().clone();
  return {out, per_head.mean({1})};
}

Tensor MultiheadAttention::forward(const Tensor& input) {
  return forward(std::vector<Tensor>{input, input, input}).at(0);
}

}  // namespace nns::nn
