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

SymShape broadcast(const SymShape& a, const SymShape& b, const std::string& port_b) {
  const size_t n = std::max(a.size(), b.size());
  SymShape out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (x == y || y == 1) {
      out[i] = x;
    } else if (x == 1) {
      out[i] = y;
    } else if (x == -1 || y == -1) {
      out[i] = -1;
    } else {
      throw ShapeError("input '" + port_b + "' has shape " + shape_str(b) +
                       ", which does not broadcast with " + shape_str(a) + " (dim " +
                       std::to_string(i) + ": " + std::to_string(y) + " vs " + std::to_string(x) +
                       ")");
    }
  }
  return out;
}

Shapes infer_flatten(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (x.empty()) return {{1}};
  const int64_t start = wrap(get_int(o, "start_dim"), x.size(), "start_dim", x);
  const int64_t end = wrap(get_int(o, "end_dim"), x.size(), "end_dim", x);
  if (start > end)
    throw ShapeError("option start_dim=" + std::to_string(start) + " comes after end_dim=" +
                     std::to_string(end) + " for input 'in' of shape " + shape_str(x));
  SymShape out(x.begin(), x.begin() + start);
  int64_t size = 1;
  for (int64_t i = start; i <= end; ++i) size = (x[i] == -1 || size == -1) ? -1 : size * x[i];
  out.push_back(size);
  out.insert(out.end(), x.begin() + end + 1, x.end());
  return {out};
}

}  // namespace nns::graph
