// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/families.h"
#include "engine/nn/layers.h"

namespace nns::graph {

std::vector<NodeType> dropout_types() {
  std::vector<NodeType> types;
  types.push_back(module_type(
      "Dropout", "Dropout", "zeroes elements with probability p while training",
      {float_option("p", 0.5, "probability of an element to be zeroed", 0, 1)},
      [](const Json& o) { return std::make_shared<nn::Dropout>(get_float(o, "p")); }, same_shape));
  return types;
}

}  // namespace nns::graph
