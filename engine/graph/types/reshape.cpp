// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/layers.h"

namespace nns::graph {
namespace {

Shapes infer_unflatten(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t dim = wrap(get_int(o, "dim"), x.size(), "dim", x);
  const Shape sizes = get_list(o, "unflattened_size");
  SymShape out(x.begin(), x.begin() + dim);
  int64_t known = 1, free = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      if (free >= 0) throw ValueError("option unflattened_size may hold -1 only once");
      free = static_cast<int64_t>(i);
    } else {
      known *= sizes[i];
    }
  }
  Shape result = sizes;
  const int64_t size = x[static_cast<size_t>(dim)];
  if (size != -1) {
    if (free >= 0 && known > 0 && size % known == 0)
      result[static_cast<size_t>(free)] = size / known;
    const bool ok = free >= 0 ? known > 0 && size % known == 0 : known == size;
    if (!ok)
      bad_input("in", x,
                "size " + std::to_string(size) + " of dim " + std::to_string(dim) +
                    " to split into unflattened_size " + shape_str(sizes));
  }
  out.insert(out.end(), result.begin(), result.end());
  out.insert(out.end(), x.begin() + dim + 1, x.end());
  return {out};
}

}  // namespace

std::vector<NodeType> reshape_types() {
  std::vector<NodeType> types;
  types.push_back(module_type(
      "Flatten", "Reshape", "flattens dims start_dim..end_dim into one",
      {int_option("start_dim", 1, "first dim to flatten"),
       int_option("end_dim", -1, "last dim to flatten")},
      [](const Json& o) {
        return std::make_shared<nn::Flatten>(get_int(o, "start_dim"), get_int(o, "end_dim"));
      },
      infer_flatten));
  types.push_back(module_type(
      "Unflatten", "Reshape", "splits dim into unflattened_size",
      {int_option("dim", 1, "the dim to split"),
       list_option("unflattened_size", Json::array({1, 1}), "the sizes it becomes (one may be -1)",
                   0, -1)},
      [](const Json& o) {
        return std::make_shared<nn::Unflatten>(get_int(o, "dim"), get_list(o, "unflattened_size"));
      },
      infer_unflatten));
  types.push_back(module_type(
      "Identity", "Reshape", "returns its input", {},
      [](const Json&) { return std::make_shared<nn::Identity>(); }, same_shape));
  return types;
}

}  // namespace nns::graph
