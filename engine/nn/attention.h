// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.nn.MultiheadAttention: scaled dot-product attention over num_heads heads, with
// PyTorch's parameters (in_proj_weight [3E, E] and in_proj_bias [3E] packed for query, key and
// value; out_proj, a NonDynamicallyQuantizableLinear), initialisation (out_proj as a Linear,
// then xavier_uniform_ in_proj_weight, zero biases: the same draws in the same order) and repr.
// Inputs query [L, N, E], key and value [S, N, E] ([N, L, E] with batch_first); outputs the
// attention output [L, N, E] and the weights averaged over the heads [N, L, S], as PyTorch's
// need_weights=True, average_attn_weights=True. is_causal masks the keys after each query
// (a query attends to keys 0..its own index).
//
//   nns::nn::MultiheadAttentionOptions o;
//   o.embed_dim = 16; o.num_heads = 4; o.batch_first = true;
//   auto mha = std::make_shared<nns::nn::MultiheadAttention>(o);
//   auto out = mha->forward({x, x, x});   // out[0]: [N, L, 16], out[1]: [N, L, L]
#include <vector>

#include "engine/nn/layers.h"
#include "engine/nn/module.h"

namespace nns::nn {

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0;
  int64_t num_heads = 1;
  double dropout = 0;  // on the attention weights, while training
  bool bias = true;
  bool batch_first = false;
  bool is_causal = false;
};

// PyTorch's name for out_proj's class (a Linear that quantization leaves alone): the repr
// shows it.
class NonDynamicallyQuantizableLinear : public Linear {
 public:
  using Linear::Linear;
};

class MultiheadAttention : public Module {
 public:
  explicit MultiheadAttention(const MultiheadAttentionOptions& options);
  const MultiheadAttentionOptions& options() const { return options_; }

  using Module::forward;
  // {query, key, value} -> {output, weights averaged over heads}.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;
  // Self-attention of one input: the output.
  Tensor forward(const Tensor& input) override;

  Tensor in_proj_weight;
  Tensor in_proj_bias;  // undefined without bias
  std::shared_ptr<NonDynamicallyQuantizableLinear> out_proj;

  // While on, each forward keeps its weights per head, detached, in last_head_weights
  // [N, heads, L, S] (what PyTorch returns with average_attn_weights=False): for probes and
  // predictions that draw attention maps. Off by default; set and read on the thread that
  // runs the model.
  bool record_head_weights = false;
  Tensor last_head_weights;

 private:
  MultiheadAttentionOptions options_;
};

}  // namespace nns::nn
