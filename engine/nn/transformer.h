// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.nn.TransformerEncoderLayer and TransformerDecoderLayer: attention, then a feed-forward
// block (linear1, activation, dropout, linear2), each with a residual connection and a
// LayerNorm, after (norm_first false, PyTorch's default) or before (norm_first) the block.
// PyTorch's submodule names and order (self_attn, [multihead_attn,] linear1, dropout, linear2,
// norm1, norm2, [norm3,] dropout1, dropout2, [dropout3]), so the same seed draws the same
// initial weights and the state-dict keys are PyTorch's. The activation is a function (relu or
// gelu), not a module, as PyTorch's default string argument makes it.
//
//   nns::nn::TransformerOptions o;
//   o.d_model = 32; o.nhead = 4; o.dim_feedforward = 64; o.batch_first = true;
//   auto layer = std::make_shared<nns::nn::TransformerEncoderLayer>(o);
//   nns::Tensor y = (*layer)(x);   // [N, L, 32]
#include <string>
#include <vector>

#include "engine/nn/attention.h"
#include "engine/nn/layers.h"
#include "engine/nn/normalization.h"

namespace nns::nn {

struct TransformerOptions {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;
};

class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerOptions& options);
  const TransformerOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& src) override;

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;

 private:
  TransformerOptions options_;
};

class TransformerDecoderLayer : public Module {
 public:
  explicit TransformerDecoderLayer(const TransformerOptions& options);
  const TransformerOptions& options() const { return options_; }
  using Module::forward;
  // {tgt, memory} -> {out}.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;

  std::shared_ptr<MultiheadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;

 private:
  TransformerOptions options_;
};

}  // namespace nns::nn
