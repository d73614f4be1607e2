// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/shape_helpers.h"

namespace nns::graph {

const SymShape& one_input(const Shapes& in) {
  return in.at(0);
}

Int2 get_int2(const Json& o, const char* name) {
  if (o.at(name).is_null()) return {0, 0};
  const Shape s = get_list(o, name);
  return s.size() == 1 ? Int2{s[0], s[0]} : Int2{s[0], s[1]};
}

int64_t wrap(int64_t dim, size_t rank, const std::string& option, const SymShape& shape) {
  const auto n = static_cast<int64_t>(rank);
  if (dim < -n || dim >= n)
    throw ShapeError("option " + option + "=" + std::to_string(dim) +
                     " is out of range for input 'in' of shape " + shape_str(shape) + " (" +
                     std::to_string(n) + " dims)");
  return dim < 0 ? dim + n : dim;
}

int64_t window_out(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                   bool ceil_mode) {
  const int64_t span = size + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil_mode the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= size + padding) --out;
  return out;
}

std::string variadic_port(size_t i) {
  return "in" + std::to_string(i);
}

}  // namespace nns::graph
