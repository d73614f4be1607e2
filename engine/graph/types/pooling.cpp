// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/pooling.h"
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"

namespace nns::graph {
namespace {

// MaxPool2d and AvgPool2d (dilation 1 for the latter).
Shapes infer_pool2d(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (x.size() != 4) bad_input("in", x, "[N, C, H, W]");
  const Int2 k = get_int2(o, "kernel_size"), p = get_int2(o, "padding");
  Int2 s = get_int2(o, "stride");
  if (s[0] == 0) s = k;
  const Int2 d = o.contains("dilation") ? get_int2(o, "dilation") : Int2{1, 1};
  for (int i = 0; i < 2; ++i) {
    if (2 * p[i] > k[i])
      throw ValueError("option padding=" + shape_str({p[0], p[1]}) +
                       " must be at most half of kernel_size=" + shape_str({k[0], k[1]}));
  }
  SymShape out{x[0], x[1], 0, 0};
  for (int i = 0; i < 2; ++i) {
    out[2 + i] = window_out(x[2 + i], k[i], s[i], p[i], d[i], get_bool(o, "ceil_mode"));
    if (out[2 + i] <= 0)
      bad_input("in", x,
                "a larger image: the window " + shape_str({k[0], k[1]}) + " leaves no output");
  }
  return {out};
}

Shapes infer_adaptive_pool2d(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (x.size() != 4) bad_input("in", x, "[N, C, H, W]");
  const Int2 size = get_int2(o, "output_size");
  return {{x[0], x[1], size[0], size[1]}};
}

}  // namespace

std::vector<NodeType> pooling_types() {
  std::vector<NodeType> types;
  types.push_back(module_type(
      "MaxPool2d", "Pooling", "the maximum over each window of [N, C, H, W]",
      {list_option("kernel_size", Json::array({2, 2}), "size of the window", 2, 1),
       list_option("stride", nullptr, "step of the window (null: kernel_size)", 2, 1),
       list_option("padding", Json::array({0, 0}), "implicit -inf padding on both sides", 2, 0),
       list_option("dilation", Json::array({1, 1}), "spacing between window elements", 2, 1),
       bool_option("ceil_mode", false, "round the output size up")},
      [](const Json& o) {
        nn::MaxPool2dOptions p;
        p.kernel_size = get_int2(o, "kernel_size");
        p.stride = get_int2(o, "stride");
        p.padding = get_int2(o, "padding");
        p.dilation = get_int2(o, "dilation");
        p.ceil_mode = get_bool(o, "ceil_mode");
        return std::make_shared<nn::MaxPool2d>(p);
      },
      infer_pool2d));
  types.push_back(module_type(
      "AvgPool2d", "Pooling", "the mean over each window of [N, C, H, W]",
      {list_option("kernel_size", Json::array({2, 2}), "size of the window", 2, 1),
       list_option("stride", nullptr, "step of the window (null: kernel_size)", 2, 1),
       list_option("padding", Json::array({0, 0}), "implicit zero padding on both sides", 2, 0),
       bool_option("ceil_mode", false, "round the output size up"),
       bool_option("count_include_pad", true, "count the padding in the mean's divisor")},
      [](const Json& o) {
        nn::AvgPool2dOptions p;
        p.kernel_size = get_int2(o, "kernel_size");
        p.stride = get_int2(o, "stride");
        p.padding = get_int2(o, "padding");
        p.ceil_mode = get_bool(o, "ceil_mode");
        p.count_include_pad = get_bool(o, "count_include_pad");
        return std::make_shared<nn::AvgPool2d>(p);
      },
      infer_pool2d));
  types.push_back(module_type(
      "AdaptiveAvgPool2d", "Pooling", "averages [N, C, H, W] down to output_size",
      {list_option("output_size", Json::array({1, 1}), "the output's H and W", 2, 1)},
      [](const Json& o) {
        return std::make_shared<nn::AdaptiveAvgPool2d>(get_int2(o, "output_size"));
      },
      infer_adaptive_pool2d));
  return types;
}

}  // namespace nns::graph
