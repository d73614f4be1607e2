// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/attention.h"
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/positional.h"
#include "engine/nn/transformer.h"

namespace nns::graph {
namespace {

nn::MultiheadAttentionOptions attention_options(const Json& o) {
  nn::MultiheadAttentionOptions a;
  a.embed_dim = get_int(o, "embed_dim");
  a.num_heads = get_int(o, "num_heads");
  a.dropout = get_float(o, "dropout");
  a.bias = get_bool(o, "bias");
  a.batch_first = get_bool(o, "batch_first");
  a.is_causal = get_bool(o, "is_causal");
  return a;
}

// query [L, N, E], key and value [S, N, E] (batch_first: [N, L, E], [N, S, E]) -> out as
// query, weights [N, L, S].
Shapes infer_attention(const Json& o, const Shapes& in) {
  const nn::MultiheadAttentionOptions a = attention_options(o);
  if (a.embed_dim % a.num_heads != 0)
    throw ShapeError("embed_dim (" + std::to_string(a.embed_dim) +
                     ") must be divisible by num_heads (" + std::to_string(a.num_heads) + ")");
  const std::string layout = a.batch_first ? "[N, L, E]" : "[L, N, E]";
  const char* ports[] = {"query", "key", "value"};
  for (size_t k = 0; k < 3; ++k) {
    if (in[k].size() != 3 || in[k][2] != a.embed_dim)
      bad_input(ports[k], in[k], layout + " with E = embed_dim = " + std::to_string(a.embed_dim));
  }
  const size_t batch = a.batch_first ? 0 : 1, time = 1 - batch;
  if (in[1] != in[2]) bad_input("value", in[2], "the key's shape " + shape_str(in[1]));
  if (in[1][batch] != in[0][batch])
    bad_input("key", in[1], "the query's batch size (" + shape_str(in[0]) + ")");
  if (a.is_causal && in[1][time] != in[0][time])
    bad_input("key", in[1], "as many keys as queries (is_causal)");
  return {in[0], {in[0][batch], in[0][time], in[1][time]}};
}

nn::TransformerOptions transformer_options(const Json& o) {
  nn::TransformerOptions t;
  t.d_model = get_int(o, "d_model");
  t.nhead = get_int(o, "nhead");
  t.dim_feedforward = get_int(o, "dim_feedforward");
  t.dropout = get_float(o, "dropout");
  t.activation = get_string(o, "activation");
  t.layer_norm_eps = get_float(o, "layer_norm_eps");
  t.batch_first = get_bool(o, "batch_first");
  t.norm_first = get_bool(o, "norm_first");
  return t;
}

// in [L, N, d_model] ([N, L, d_model] with batch_first), and for the decoder memory
// [S, N, d_model] -> out as in.
Shapes infer_transformer(const Json& o, const Shapes& in) {
  const nn::TransformerOptions t = transformer_options(o);
  if (t.d_model % t.nhead != 0)
    throw ShapeError("d_model (" + std::to_string(t.d_model) + ") must be divisible by nhead (" +
                     std::to_string(t.nhead) + ")");
  const std::string layout = t.batch_first ? "[N, L, d_model]" : "[L, N, d_model]";
  const char* ports[] = {"in", "memory"};
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k].size() != 3 || in[k][2] != t.d_model)
      bad_input(ports[k], in[k], layout + " with d_model = " + std::to_string(t.d_model));
  }
  const size_t batch = t.batch_first ? 0 : 1;
  if (in.size() == 2 && in[1][batch] != in[0][batch])
    bad_input("memory", in[1], "the input's batch size (" + shape_str(in[0]) + ")");
  return {in[0]};
}

// The options of nn.TransformerEncoderLayer/DecoderLayer, in the constructor's order.
std::vector<OptionSpec> transformer_option_specs() {
  return {
      int_option("d_model", 1, "features of each position", 1),
      int_option("nhead", 1, "attention heads; d_model must be divisible by it", 1),
      int_option("dim_feedforward", 2048, "width of the feed-forward block", 1),
      float_option("dropout", 0.1, "dropout after attention and in the feed-forward block", 0, 1),
      choice_option("activation", "relu", {"relu", "gelu"}, "the feed-forward block's activation"),
      float_option("layer_norm_eps", 1e-5, "the LayerNorms' eps", 0),
      bool_option("batch_first", false, "input and output are [N, L, d_model]"),
      bool_option("norm_first", false, "LayerNorm before each block (else after the sum)")};
}

}  // namespace

std::vector<NodeType> attention_types() {
  NodeType t;
  t.name = "MultiheadAttention";
  t.category = "Attention";
  t.description = "scaled dot-product attention of queries to keys over num_heads heads";
  t.options = {
      int_option("embed_dim", 1, "features of each query, key and value (E)", 1),
      int_option("num_heads", 1, "parallel heads; embed_dim must be divisible by it", 1),
      float_option("dropout", 0, "dropout on the attention weights while training", 0, 1),
      bool_option("bias", true, "learn in_proj_bias and out_proj's bias"),
      bool_option("batch_first", false, "inputs and output are [N, L, E] (else [L, N, E])"),
      bool_option("is_causal", false,
                  "each query attends only to keys up to its own position (a causal mask)")};
  t.inputs = {{"query", "the queries"}, {"key", "the keys"}, {"value", "the values"}};
  t.outputs = {{"out", "the attention output, shaped as the query"},
               {"weights", "the attention weights averaged over heads [N, L, S]"}};
  t.make_module = [](const Json& o) {
    return std::make_shared<nn::MultiheadAttention>(attention_options(o));
  };
  t.infer_shapes = infer_attention;

  NodeType encoder;
  encoder.name = "TransformerEncoderLayer";
  encoder.category = "Attention";
  encoder.description =
      "self-attention and a feed-forward block, each with a residual and a LayerNorm";
  encoder.options = transformer_option_specs();
  encoder.inputs = in_port();
  encoder.outputs = out_port();
  encoder.make_module = [](const Json& o) {
    return std::make_shared<nn::TransformerEncoderLayer>(transformer_options(o));
  };
  encoder.infer_shapes = infer_transformer;

  NodeType decoder = encoder;
  decoder.name = "TransformerDecoderLayer";
  decoder.description =
      "self-attention, attention to memory (an encoder's output) and a feed-forward block";
  decoder.inputs = {{"in", "the target sequence"}, {"memory", "the sequence it attends to"}};
  decoder.make_module = [](const Json& o) {
    return std::make_shared<nn::TransformerDecoderLayer>(transformer_options(o));
  };
  // Position information: fixed sinusoids or learned rows, added to the input.
  const std::vector<OptionSpec> positional_options{
      int_option("d_model", 1, "features of each position", 1),
      int_option("max_len", 512, "the most positions an input may have", 1),
      bool_option("batch_first", false, "the input is [N, L, d_model] (else [L, N, d_model])")};
  auto positional_of = [](const Json& o) {
    nn::PositionalOptions p;
    p.d_model = get_int(o, "d_model");
    p.max_len = get_int(o, "max_len");
    p.batch_first = get_bool(o, "batch_first");
    return p;
  };
  auto infer_positional = [positional_of](const Json& o, const Shapes& in) {
    const nn::PositionalOptions p = positional_of(o);
    const SymShape& x = one_input(in);
    const std::string layout = p.batch_first ? "[N, L, d_model]" : "[L, N, d_model]";
    if (x.size() != 3 || x[2] != p.d_model || x[p.batch_first ? 1 : 0] > p.max_len)
      bad_input("in", x,
                layout + " with d_model = " + std::to_string(p.d_model) +
                    " and L <= max_len = " + std::to_string(p.max_len));
    return Shapes{x};
  };
  NodeType sinusoid = module_type(
      "PositionalEncoding", "Attention",
      "adds fixed sinusoids of each position (Attention Is All You Need)", positional_options,
      [positional_of](const Json& o) {
        return std::make_shared<nn::PositionalEncoding>(positional_of(o));
      },
      infer_positional);
  sinusoid.pytorch_source = nn::positional_encoding_pytorch_source();
  NodeType learned = module_type(
      "LearnedPositionalEncoding", "Attention", "adds a learned vector for each position",
      positional_options,
      [positional_of](const Json& o) {
        return std::make_shared<nn::LearnedPositionalEncoding>(positional_of(o));
      },
      infer_positional);
  learned.pytorch_source = nn::learned_positional_encoding_pytorch_source();
  return {t, encoder, decoder, sinusoid, learned};
}

}  // namespace nns::graph
