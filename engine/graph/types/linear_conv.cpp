// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/conv.h"
#include "engine/nn/embedding.h"
#include "engine/nn/layers.h"

namespace nns::graph {
namespace {

Shapes infer_linear(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t features = get_int(o, "in_features");
  if (x.empty() || x.back() != features)
    bad_input("in", x, "[N, *, " + std::to_string(features) + "] (last dim = in_features)");
  SymShape out = x;
  out.back() = get_int(o, "out_features");
  return {out};
}

Shapes infer_conv2d(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t channels = get_int(o, "in_channels");
  if (x.size() != 4 || x[1] != channels)
    bad_input("in", x, "[N, " + std::to_string(channels) + ", H, W] (dim 1 = in_channels)");
  const Int2 k = get_int2(o, "kernel_size"), s = get_int2(o, "stride"), p = get_int2(o, "padding"),
             d = get_int2(o, "dilation");
  SymShape out{x[0], get_int(o, "out_channels"), 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_out(x[2 + i], k[i], s[i], p[i], d[i], false);
    if (out[2 + i] <= 0)
      bad_input("in", x,
                "a larger image: the kernel " + shape_str({k[0], k[1]}) + " with padding " +
                    shape_str({p[0], p[1]}) + " leaves no output");
  }
  return {out};
}

Shapes infer_conv1d(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t channels = get_int(o, "in_channels");
  if (x.size() != 3 || x[1] != channels)
    bad_input("in", x, "[N, " + std::to_string(channels) + ", L] (dim 1 = in_channels)");
  const int64_t length = window_out(x[2], get_int(o, "kernel_size"), get_int(o, "stride"),
                                    get_int(o, "padding"), get_int(o, "dilation"), false);
  if (length <= 0) bad_input("in", x, "a longer input: the kernel leaves no output");
  return {{x[0], get_int(o, "out_channels"), length}};
}

Shapes infer_embedding(const Json& o, const Shapes& in) {
  SymShape out = one_input(in);
  out.push_back(get_int(o, "embedding_dim"));
  return {out};
}

}  // namespace

std::vector<NodeType> linear_conv_types() {
  std::vector<NodeType> types;
  const std::string conv = "Linear / Conv";

  types.push_back(module_type(
      "Linear", conv, "y = x W^T + b over the last dim",
      {int_option("in_features", 1, "size of each input sample", 0),
       int_option("out_features", 1, "size of each output sample", 0),
       bool_option("bias", true, "learn an additive bias")},
      [](const Json& o) {
        return std::make_shared<nn::Linear>(get_int(o, "in_features"), get_int(o, "out_features"),
                                            get_bool(o, "bias"));
      },
      infer_linear));
  types.push_back(module_type(
      "Conv2d", conv, "2-D convolution over [N, C, H, W]",
      {int_option("in_channels", 1, "channels of the input image", 1),
       int_option("out_channels", 1, "channels made by the convolution", 1),
       list_option("kernel_size", Json::array({3, 3}), "size of the kernel", 2, 1),
       list_option("stride", Json::array({1, 1}), "stride of the convolution", 2, 1),
       list_option("padding", Json::array({0, 0}), "zero padding on both sides", 2, 0),
       list_option("dilation", Json::array({1, 1}), "spacing between kernel elements", 2, 1),
       int_option("groups", 1, "blocked connections from input to output channels", 1),
       bool_option("bias", true, "learn an additive bias")},
      [](const Json& o) {
        nn::Conv2dOptions c;
        c.in_channels = get_int(o, "in_channels");
        c.out_channels = get_int(o, "out_channels");
        c.kernel_size = get_int2(o, "kernel_size");
        c.stride = get_int2(o, "stride");
        c.padding = get_int2(o, "padding");
        c.dilation = get_int2(o, "dilation");
        c.groups = get_int(o, "groups");
        c.bias = get_bool(o, "bias");
        return std::make_shared<nn::Conv2d>(c);
      },
      infer_conv2d));

  types.push_back(module_type(
      "Conv1d", conv, "1-D convolution over [N, C, L]",
      {int_option("in_channels", 1, "channels of the input", 1),
       int_option("out_channels", 1, "channels made by the convolution", 1),
       int_option("kernel_size", 3, "size of the kernel", 1),
       int_option("stride", 1, "stride of the convolution", 1),
       int_option("padding", 0, "zero padding on both sides", 0),
       int_option("dilation", 1, "spacing between kernel elements", 1),
       int_option("groups", 1, "blocked connections from input to output channels", 1),
       bool_option("bias", true, "learn an additive bias")},
      [](const Json& o) {
        nn::Conv1dOptions c;
        c.in_channels = get_int(o, "in_channels");
        c.out_channels = get_int(o, "out_channels");
        c.kernel_size = get_int(o, "kernel_size");
        c.stride = get_int(o, "stride");
        c.padding = get_int(o, "padding");
        c.dilation = get_int(o, "dilation");
        c.groups = get_int(o, "groups");
        c.bias = get_bool(o, "bias");
        return std::make_shared<nn::Conv1d>(c);
      },
      infer_conv1d));
  types.push_back(module_type(
      "Embedding", conv, "rows of a learned table, looked up by int64 indices",
      {int_option("num_embeddings", 1, "size of the table (indices 0..num_embeddings-1)", 1),
       int_option("embedding_dim", 1, "size of each row", 1),
       optional_int_option("padding_idx", "a row that stays zero and gets no gradient")},
      [](const Json& o) {
        return std::make_shared<nn::Embedding>(get_int(o, "num_embeddings"),
                                               get_int(o, "embedding_dim"),
                                               get_optional_int(o, "padding_idx"));
      },
      infer_embedding));
  return types;
}

}  // namespace nns::graph
