// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/transformer.h"

#include "engine/ops/elementwise.h"
#include "engine/tensor/error.h"

namespace nns::nn {
namespace {

MultiheadAttentionOptions attention(const TransformerOptions& o) {
  MultiheadAttentionOptions a;
  a.embed_dim = o.d_model;
  a.num_heads = o.nhead;
  a.dropout = o.dropout;
  a.batch_first = o.batch_first;
  return a;
}

void check(const TransformerOptions& o, const std::string& owner) {
  if (o.d_model < 1 || o.nhead < 1 || o.dim_feedforward < 1)
    throw ValueError(owner + ": d_model, nhead and dim_feedforward must be >= 1");
  if (o.activation != "relu" && o.activation != "gelu")
    throw ValueError(owner + ": activation must be relu or gelu, got '" + o.activation + "'");
}

Tensor activate(const Tensor& x, const std::string& activation) {
  return activation == "gelu" ? gelu(x) : relu(x);
}

// Attention of x to memory (the output alone, as need_weights=False), called as a module so
// that hooks on self_attn and multihead_attn run, as in PyTorch.
Tensor attend(MultiheadAttention& attn, const Tensor& x, const Tensor& memory) {
  return attn(std::vector<Tensor>{x, memory, memory}).at(0);
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerOptions& options)
    : options_(options) {
  const TransformerOptions& o = options_;
  check(o, "TransformerEncoderLayer");
  // Registration order is PyTorch's: the initial weights are drawn in it.
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(attention(o)));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src) {
  auto sa = [this](const Tensor& x) { return (*dropout1)(attend(*self_attn, x, x)); };
  auto ff = [this](const Tensor& x) {
    return (*dropout2)((*linear2)((*dropout)(activate((*linear1)(x), options_.activation))));
  };
  Tensor x = src;
  if (options_.norm_first) {
    x = x + sa((*norm1)(x));
    x = x + ff((*norm2)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + ff(x));
  }
  return x;
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerOptions& options)
    : options_(options) {
  const TransformerOptions& o = options_;
  check(o, "TransformerDecoderLayer");
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(attention(o)));
  multihead_attn =
      register_module("multihead_attn", std::make_shared<MultiheadAttention>(attention(o)));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  norm3 = register_module("norm3", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout));
  dropout3 = register_module("dropout3", std::make_shared<Dropout>(o.dropout));
}

std::vector<Tensor> TransformerDecoderLayer::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 2)
    throw ValueError("TransformerDecoderLayer: expected tgt and memory, got " +
                     std::to_string(inputs.size()) + " inputs");
  const Tensor& memory = inputs[1];
  auto sa = [this](const Tensor& x) { return (*dropout1)(attend(*self_attn, x, x)); };
  auto mha = [this, &memory](const Tensor& x) {
    return (*dropout2)(attend(*multihead_attn, x, memory));
  };
  auto ff = [this](const Tensor& x) {
    return (*dropout3)((*linear2)((*dropout)(activate((*linear1)(x), options_.activation))));
  };
  Tensor x = inputs[0];
  if (options_.norm_first) {
    x = x + sa((*norm1)(x));
    x = x + mha((*norm2)(x));
    x = x + ff((*norm3)(x));
  } else {
    x = (*norm1)(x + sa(x));
    x = (*norm2)(x + mha(x));
    x = (*norm3)(x + ff(x));
  }
  return {x};
}

}  // namespace nns::nn
