#include "engine/nn/attention.h"
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"

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
  return {t};
}

}  // namespace nns::graph
