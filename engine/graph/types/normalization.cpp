// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>

#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/batchnorm.h"
#include "engine/nn/normalization.h"

namespace nns::graph {
namespace {

template <size_t... Ranks>
Shapes infer_batchnorm(const Json& o, const Shapes& in, const std::string& expected) {
  const SymShape& x = one_input(in);
  const int64_t features = get_int(o, "num_features");
  if (((x.size() != Ranks) && ...) || x[1] != features)
    bad_input("in", x, expected + " with C = num_features = " + std::to_string(features));
  return {x};
}

Shapes infer_layer_norm(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const Shape normalized = get_list(o, "normalized_shape");
  const bool fit = x.size() > normalized.size() &&
                   std::equal(normalized.begin(), normalized.end(), x.end() - normalized.size());
  if (!fit) {
    SymShape expected{-1};
    expected.insert(expected.end(), normalized.begin(), normalized.end());
    bad_input("in", x,
              "[N, *, ...] ending in normalized_shape " + shape_str(normalized) + ", such as " +
                  shape_str(expected));
  }
  return {x};
}

}  // namespace

std::vector<NodeType> normalization_types() {
  std::vector<NodeType> types;
  const std::vector<OptionSpec> batchnorm_options{
      int_option("num_features", 1, "C of the input [N, C, ...]", 1),
      float_option("eps", 1e-5, "added to the variance for stability", 0),
      float_option("momentum", 0.1, "weight of the new batch in the running statistics", 0, 1),
      bool_option("affine", true, "learn weight and bias"),
      bool_option("track_running_stats", true, "keep running mean and variance buffers")};
  auto batchnorm_options_of = [](const Json& o) {
    nn::BatchNormOptions b;
    b.num_features = get_int(o, "num_features");
    b.eps = get_float(o, "eps");
    b.momentum = get_float(o, "momentum");
    b.affine = get_bool(o, "affine");
    b.track_running_stats = get_bool(o, "track_running_stats");
    return b;
  };
  types.push_back(module_type(
      "BatchNorm1d", "Normalization", "normalizes [N, C] or [N, C, L] per channel",
      batchnorm_options,
      [batchnorm_options_of](const Json& o) {
        return std::make_shared<nn::BatchNorm1d>(batchnorm_options_of(o));
      },
      [](const Json& o, const Shapes& in) {
        return infer_batchnorm<2, 3>(o, in, "[N, C] or [N, C, L]");
      }));
  types.push_back(module_type(
      "BatchNorm2d", "Normalization", "normalizes [N, C, H, W] per channel", batchnorm_options,
      [batchnorm_options_of](const Json& o) {
        return std::make_shared<nn::BatchNorm2d>(batchnorm_options_of(o));
      },
      [](const Json& o, const Shapes& in) { return infer_batchnorm<4>(o, in, "[N, C, H, W]"); }));

  types.push_back(module_type(
      "LayerNorm", "Normalization", "normalizes each sample over its last dims",
      {list_option("normalized_shape", Json::array({1}), "the trailing dims to normalize over", 0,
                   1),
       float_option("eps", 1e-5, "added to the variance for stability", 0),
       bool_option("elementwise_affine", true, "learn weight and bias")},
      [](const Json& o) {
        return std::make_shared<nn::LayerNorm>(get_list(o, "normalized_shape"), get_float(o, "eps"),
                                               get_bool(o, "elementwise_affine"));
      },
      infer_layer_norm));
  return types;
}

}  // namespace nns::graph
