// SPDX-License-Identifier: GPL-3.0-or-later
// The tensor functions a PyTorch forward calls without a module (x - y, x / 2, torch.flatten,
// x.mean(1), x.view(x.size(0), -1), x.transpose(1, 2), x[:, 0], x[:, 1:3]), as the PyTorch
// import (engine/torch_import) makes them from a traced forward. Dims count the batch as dim
// 0, as PyTorch's do, except Reshape's shape, which is one sample's (the batch stays dim 0).
#include <algorithm>

#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"

namespace nns::graph {
namespace {

using Apply = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Json&)>;

NodeType function_type(std::string name, std::string category, std::string description,
                       std::vector<OptionSpec> options, std::vector<PortSpec> inputs, Apply apply,
                       std::function<Shapes(const Json&, const Shapes&)> infer) {
  NodeType t;
  t.name = std::move(name);
  t.kind = NodeKind::Functional;
  t.category = std::move(category);
  t.description = std::move(description);
  t.options = std::move(options);
  t.inputs = std::move(inputs);
  t.outputs = out_port();
  t.apply = std::move(apply);
  t.infer_shapes = std::move(infer);
  return t;
}

std::vector<PortSpec> two_ports() {
  return {{"in0", "the left operand"}, {"in1", "the right operand"}};
}

Shapes infer_binary(const Json&, const Shapes& in) {
  return {broadcast(in.at(0), in.at(1), "in1")};
}

int64_t product(const SymShape& s, size_t from, size_t to) {
  int64_t size = 1;
  for (size_t i = from; i < to; ++i) size = (s[i] == -1 || size == -1) ? -1 : size * s[i];
  return size;
}

Shapes infer_mean(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const bool keepdim = get_bool(o, "keepdim");
  std::vector<bool> reduced(x.size(), false);
  for (int64_t d : get_list(o, "dim"))
    reduced[static_cast<size_t>(wrap(d, x.size(), "dim", x))] = true;
  SymShape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(x[i]);
    } else if (keepdim) {
      out.push_back(1);
    }
  }
  return {out};
}

// The batch stays dim 0; `shape` is one sample's, with at most one -1 (inferred).
Shapes infer_reshape(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (x.empty() || x[0] != -1) bad_input("in", x, "a batch [N, ...] (the batch stays dim 0)");
  const Shape shape = get_list(o, "shape");
  const int64_t size = product(x, 1, x.size());
  int64_t known = 1, free = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (free >= 0) throw ValueError("option shape may hold -1 only once");
      free = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  SymShape out{-1};
  out.insert(out.end(), shape.begin(), shape.end());
  const bool fits = free >= 0 ? known > 0 && size % known == 0 : known == size;
  if (!fits)
    bad_input("in", x,
              std::to_string(known) + (free >= 0 ? " times some number of" : "") +
                  " values per sample, to reshape to [N, ...] with shape " + shape_str(shape));
  if (free >= 0) out[static_cast<size_t>(free) + 1] = size / known;
  return {out};
}

Shape sample_reshape(const Tensor& x, const Json& o) {
  Shape shape{x.size(0)};
  for (int64_t s : get_list(o, "shape")) shape.push_back(s);
  return shape;
}

Shapes infer_transpose(const Json& o, const Shapes& in) {
  SymShape x = one_input(in);
  const int64_t a = wrap(get_int(o, "dim0"), x.size(), "dim0", x);
  const int64_t b = wrap(get_int(o, "dim1"), x.size(), "dim1", x);
  std::swap(x[static_cast<size_t>(a)], x[static_cast<size_t>(b)]);
  return {x};
}

Shapes infer_permute(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const Shape dims = get_list(o, "dims");
  if (dims.size() != x.size())
    bad_input("in", x, std::to_string(dims.size()) + " dims (one per entry of dims)");
  SymShape out;
  std::vector<bool> used(x.size(), false);
  for (int64_t d : dims) {
    const auto w = static_cast<size_t>(wrap(d, x.size(), "dims", x));
    if (used[w]) throw ValueError("option dims names dim " + std::to_string(w) + " twice");
    used[w] = true;
    out.push_back(x[w]);
  }
  return {out};
}

Shapes infer_select(const Json& o, const Shapes& in) {
  SymShape x = one_input(in);
  const int64_t d = wrap(get_int(o, "dim"), x.size(), "dim", x);
  const int64_t size = x[static_cast<size_t>(d)], index = get_int(o, "index");
  if (size != -1 && (index < -size || index >= size))
    bad_input("in", x,
              "more than " + std::to_string(index) + " entries along dim " + std::to_string(d));
  x.erase(x.begin() + d);
  return {x};
}

Shapes infer_narrow(const Json& o, const Shapes& in) {
  SymShape x = one_input(in);
  const int64_t d = wrap(get_int(o, "dim"), x.size(), "dim", x);
  const int64_t size = x[static_cast<size_t>(d)];
  const int64_t start = get_int(o, "start"), length = get_int(o, "length");
  if (size != -1 && start + length > size)
    bad_input(
        "in", x,
        "at least " + std::to_string(start + length) + " entries along dim " + std::to_string(d));
  x[static_cast<size_t>(d)] = length;
  return {x};
}

Shapes infer_adaptive_pool(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (x.size() != 4) bad_input("in", x, "[N, C, H, W]");
  const Int2 size = get_int2(o, "output_size");
  return {{x[0], x[1], size[0], size[1]}};
}

}  // namespace

std::vector<NodeType> tensor_function_types() {
  std::vector<NodeType> types;
  types.push_back(function_type(
      "Sub", "Math", "in0 - in1 (broadcasting)", {}, two_ports(),
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{x.at(0) - x.at(1)};
      },
      infer_binary));
  types.push_back(function_type(
      "Div", "Math", "in0 / in1 (broadcasting)", {}, two_ports(),
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{x.at(0) / x.at(1)};
      },
      infer_binary));
  types.push_back(function_type(
      "Constant", "Math", "a number as a 0-dim tensor, for x * 0.5 or 1 - x",
      {float_option("value", 1.0, "the number")}, {},
      [](const std::vector<Tensor>&, const Json& o) {
        return std::vector<Tensor>{scalar_tensor(get_float(o, "value"))};
      },
      [](const Json&, const Shapes&) { return Shapes{SymShape{}}; }));
  types.push_back(function_type(
      "torch.flatten", "Reshape", "torch.flatten(x, start_dim, end_dim) without a module",
      {int_option("start_dim", 0, "first dim to flatten (0 is the batch)"),
       int_option("end_dim", -1, "last dim to flatten")},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).flatten(get_int(o, "start_dim"), get_int(o, "end_dim"))};
      },
      infer_flatten));
  types.push_back(function_type(
      "Reshape", "Reshape", "x.reshape(N, *shape): one sample's new shape; the batch stays dim 0",
      {list_option("shape", Json::array({-1}), "one sample's shape (one entry may be -1)", 0, -1)},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).reshape(sample_reshape(x.at(0), o))};
      },
      infer_reshape));
  types.push_back(function_type(
      "Mean", "Math", "x.mean(dim, keepdim): the mean over dims (0 is the batch)",
      {list_option("dim", Json::array({1}), "the dims to average over", 0, std::nullopt),
       bool_option("keepdim", false, "keep the averaged dims with size 1")},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).mean(get_list(o, "dim"), get_bool(o, "keepdim"))};
      },
      infer_mean));
  types.push_back(function_type(
      "Transpose", "Reshape", "x.transpose(dim0, dim1): swaps two dims (0 is the batch)",
      {int_option("dim0", 1, "one dim"), int_option("dim1", 2, "the other dim")}, in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).transpose(get_int(o, "dim0"), get_int(o, "dim1"))};
      },
      infer_transpose));
  types.push_back(function_type(
      "Permute", "Reshape", "x.permute(*dims): reorders the dims (0 is the batch)",
      {list_option("dims", Json::array({0, 2, 1}), "the input's dim for each output dim", 0,
                   std::nullopt)},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).permute(get_list(o, "dims"))};
      },
      infer_permute));
  types.push_back(function_type(
      "Select", "Reshape", "x.select(dim, index), as x[:, index]: drops dim",
      {int_option("dim", 1, "the dim to index"), int_option("index", 0, "the entry to keep")},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{x.at(0).select(get_int(o, "dim"), get_int(o, "index"))};
      },
      infer_select));
  types.push_back(function_type(
      "Narrow", "Reshape", "x.narrow(dim, start, length), as x[:, start:start + length]",
      {int_option("dim", 1, "the dim to slice"), int_option("start", 0, "the first entry", 0),
       int_option("length", 1, "how many entries", 1)},
      in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{
            x.at(0).narrow(get_int(o, "dim"), get_int(o, "start"), get_int(o, "length"))};
      },
      infer_narrow));
  types.push_back(function_type(
      "Expand", "Reshape",
      "in0.expand(in1.size(0), -1, ...): a [1, ...] tensor (a class token) repeated along in1's "
      "batch",
      {}, {{"in0", "the [1, ...] tensor"}, {"in1", "a tensor whose batch size it takes"}},
      [](const std::vector<Tensor>& x, const Json&) {
        Shape sizes(x.at(0).dim(), -1);
        sizes[0] = x.at(1).size(0);
        return std::vector<Tensor>{x.at(0).expand(sizes)};
      },
      [](const Json&, const Shapes& in) {
        const SymShape& x = in.at(0);
        if (x.empty() || x[0] != 1) bad_input("in0", x, "[1, ...]");
        if (in.at(1).empty() || in.at(1)[0] != -1) bad_input("in1", in.at(1), "a batch [N, ...]");
        SymShape out = x;
        out[0] = -1;
        return Shapes{out};
      }));
  types.push_back(function_type(
      "F.adaptive_avg_pool2d", "Pooling",
      "F.adaptive_avg_pool2d(x, output_size) without a module: averages [N, C, H, W] down to "
      "output_size",
      {list_option("output_size", Json::array({1, 1}), "the output's H and W", 2, 1)}, in_port(),
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{adaptive_avg_pool2d(x.at(0), get_int2(o, "output_size"))};
      },
      infer_adaptive_pool));
  return types;
}

}  // namespace nns::graph
