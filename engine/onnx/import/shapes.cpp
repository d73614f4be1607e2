// SPDX-License-Identifier: GPL-3.0-or-later
// Shapes: the sizes torch computes from a tensor's shape (x.view(x.size(0), -1)), and the
// views, transposes, slices, splits, selects and expands that read them, with the batch kept
// dim 0.
#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "engine/onnx/import/importer.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/tensor/factories.h"

namespace nns::onnx::detail {

// An axis of a rank-`rank` tensor as a dim >= 1 (dim 0 is the batch).
int64_t Importer::axis_dim(int i, int64_t axis, size_t rank) const {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(label(i) + ": axis " + std::to_string(axis) + " is out of range");
  return axis < 0 ? axis + r : axis;
}

// ---- Sizes computed from shapes -----------------------------------------------------------------

// The integers of a shape value or an integer constant; nullopt for anything else.
std::optional<std::vector<int64_t>> Importer::int_values(const std::string& value) const {
  const std::string v = resolve(value);
  if (auto it = shape_values_.find(v); it != shape_values_.end()) return it->second;
  auto c = constants_.find(v);
  if (c == constants_.end() || c->second.dtype() != kInt64) return std::nullopt;
  const Tensor t = c->second.contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

// Shape, and Gather, Unsqueeze, Squeeze, Concat and Cast of what Shape makes: the sizes
// PyTorch code reads from a tensor (x.view(x.size(0), -1)), computed here, with the batch a
// symbol, for a Reshape to read. False for a node on tensors.
bool Importer::convert_shape_arithmetic(int i) {
  const NodeProto& n = node(i);
  const std::string& op = n.op_type();
  auto is_shape = [this](const std::string& v) { return shape_values_.contains(resolve(v)); };
  std::vector<int64_t> out;
  std::string batch;  // a tensor whose dim 0 is the batch these sizes hold
  for (const std::string& v : n.input()) {
    auto it = batch_source_.find(resolve(v));
    if (batch.empty() && it != batch_source_.end()) batch = it->second;
  }
  // Elementwise on sizes, scalars broadcast; the batch's size is a symbol, not a number.
  auto elementwise = [&](auto f) {
    std::vector<std::vector<int64_t>> args;
    size_t size = 1;
    for (const std::string& v : n.input()) {
      std::optional<std::vector<int64_t>> a = int_values(v);
      if (!a) unsupported_form(i, "it computes sizes from values that are not sizes");
      if (a->size() != 1 && size != 1 && a->size() != size)
        unsupported_form(i, "its operands' lengths differ");
      if (a->size() != 1) size = a->size();
      args.push_back(std::move(*a));
    }
    for (size_t k = 0; k < size; ++k) {
      std::vector<int64_t> at;
      for (const auto& a : args) at.push_back(a.size() == 1 ? a[0] : a[k]);
      out.push_back(f(at));
    }
  };
  auto no_batch = [&](const std::vector<int64_t>& a) {
    if (std::count(a.begin(), a.end(), kBatch) > 0)
      unsupported_form(i,
                       "it computes with the batch size; NN Studio's graphs keep the batch "
                       "a size of its own");
  };
  if (op == "Shape" && is_shape(n.input(0))) {
    out = {static_cast<int64_t>(int_values(n.input(0))->size())};
  } else if (op == "Reshape" && is_shape(n.input(0))) {
    out = *int_values(n.input(0));  // a list of sizes stays one (torch writes [-1])
  } else if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") &&
             std::any_of(n.input().begin(), n.input().end(), is_shape)) {
    elementwise([&](const std::vector<int64_t>& a) {
      no_batch(a);
      int64_t r = 0;
      bool overflow = false;
      if (op == "Add") overflow = __builtin_add_overflow(a[0], a[1], &r);
      if (op == "Sub") overflow = __builtin_sub_overflow(a[0], a[1], &r);
      if (op == "Mul") overflow = __builtin_mul_overflow(a[0], a[1], &r);
      if (op == "Div") {
        if (a[1] == 0) unsupported_form(i, "it divides a size by 0");
        overflow = a[1] == -1 && a[0] == std::numeric_limits<int64_t>::min();
        if (!overflow) r = a[0] / a[1];
      }
      if (overflow) unsupported_form(i, "its sizes overflow");
      return r;
    });
  } else if (op == "Equal" && std::any_of(n.input().begin(), n.input().end(), is_shape)) {
    elementwise([](const std::vector<int64_t>& a) { return int64_t{a[0] == a[1]}; });
  } else if (op == "Where" && is_shape(n.input(0))) {
    elementwise([](const std::vector<int64_t>& a) { return a[0] != 0 ? a[1] : a[2]; });
  } else if (op == "ConstantOfShape" && is_shape(n.input(0))) {
    const std::vector<int64_t> sizes = *int_values(n.input(0));
    no_batch(sizes);
    const AttributeProto* value = find_attribute(n, "value");
    const Tensor v =
        value ? from_tensor_proto(value->t(), source_ + ": " + label(i)) : scalar_tensor(0.0);
    if (v.numel() != 1) unsupported_form(i, "its value is not one number");
    if (v.dtype() != kInt64 || sizes.size() != 1 || sizes[0] < 0 || sizes[0] > 64)
      unsupported_form(i, "only a short list of sizes (an Expand's) is made so");
    out.assign(static_cast<size_t>(sizes[0]), v.contiguous().data_ptr<int64_t>()[0]);
  } else if (op == "Slice" && is_shape(n.input(0))) {
    const std::vector<int64_t> data = *int_values(n.input(0));
    std::optional<std::vector<int64_t>> starts = int_values(n.input(1)),
                                        ends = int_values(n.input(2));
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1 ||
        (n.input_size() > 4 && !n.input(4).empty()))
      unsupported_form(i, "it slices sizes with computed bounds or a step");
    const int64_t size = static_cast<int64_t>(data.size());
    auto clamp = [size](int64_t v) { return std::clamp(v < 0 ? v + size : v, int64_t{0}, size); };
    for (int64_t k = clamp((*starts)[0]); k < clamp((*ends)[0]); ++k) out.push_back(data[k]);
  } else if (op == "Shape") {
    const SymShape& x = shape_of(n.input(0));
    batch = resolve(n.input(0));
    const int64_t rank = static_cast<int64_t>(x.size());
    auto clamp = [rank](int64_t k) { return std::clamp(k < 0 ? k + rank : k, int64_t{0}, rank); };
    const int64_t start = clamp(attr_int(n, "start", 0)), end = clamp(attr_int(n, "end", rank));
    for (int64_t k = start; k < end; ++k) out.push_back(k == 0 ? kBatch : x[k]);
  } else if (op == "Gather" && is_shape(n.input(0))) {
    const std::vector<int64_t> data = *int_values(n.input(0));
    const std::optional<std::vector<int64_t>> indices = int_values(n.input(1));
    if (!indices || attr_int(n, "axis", 0) != 0)
      unsupported_form(i, "it picks sizes of a shape with computed indices");
    for (int64_t k : *indices) {
      const int64_t size = static_cast<int64_t>(data.size());
      if (k < -size || k >= size) unsupported_form(i, "an index is out of the shape's range");
      out.push_back(data[k < 0 ? k + size : k]);
    }
  } else if ((op == "Unsqueeze" || op == "Squeeze" || op == "Cast") && is_shape(n.input(0))) {
    out = *int_values(n.input(0));  // a scalar and a list of one are the same sizes here
  } else if (op == "Concat" && std::any_of(n.input().begin(), n.input().end(), is_shape)) {
    for (const std::string& v : n.input()) {
      const std::optional<std::vector<int64_t>> part = int_values(v);
      if (!part) unsupported_form(i, "it joins a shape with computed sizes");
      out.insert(out.end(), part->begin(), part->end());
    }
  } else {
    return false;
  }
  shape_values_[n.output(0)] = out;
  if (!batch.empty() && std::count(out.begin(), out.end(), kBatch) > 0)
    batch_source_[n.output(0)] = batch;
  return true;
}

// ---- Views, slices and expands ------------------------------------------------------------------

// Flatten, Reshape, Unsqueeze and Squeeze with sizes known here, as the Flatten and Unflatten
// nodes that keep dim 0 (the batch).
void Importer::convert_reshape(int i) {
  const NodeProto& n = node(i);
  const std::string& op = n.op_type();
  const SymShape x = shape_of(n.input(0));
  SymShape target;
  auto axes_of = [&]() {
    std::vector<int64_t> axes;
    if (n.input_size() > 1 && !n.input(1).empty()) {
      if (!constants_.contains(resolve(n.input(1))))
        unsupported_form(i, "its axes are computed; NN Studio needs them fixed");
      const Tensor a = constant(n.input(1)).to(kInt64).contiguous();
      axes.assign(a.data_ptr<int64_t>(), a.data_ptr<int64_t>() + a.numel());
    } else if (auto attr = attr_ints(n, "axes")) {
      axes = *attr;
    }
    return axes;
  };
  if (op == "Flatten") {
    const int64_t axis = axis_dim(i, attr_int(n, "axis", 1), x.size() + 1);
    if (axis != 1)
      unsupported_form(
          i, "Flatten with axis " + std::to_string(axis) + " mixes the batch with other dims");
    target = {-1, 1};
    for (size_t k = 1; k < x.size(); ++k) target[1] *= x[k];
  } else if (op == "Reshape") {
    std::optional<std::vector<int64_t>> sizes = int_values(n.input(1));
    if (!sizes)
      unsupported_form(i, "its shape is computed from the input; NN Studio needs a fixed shape");
    std::vector<int64_t> shape = *sizes;
    // The batch read from the input (x.size(0)) is the batch: Reshape's 0 copies it.
    if (!shape.empty() && shape[0] == kBatch) shape[0] = 0;
    if (std::count(shape.begin(), shape.end(), kBatch) > 0)
      unsupported_form(i, "it moves the batch size to another dim");
    if (attr_int(n, "allowzero", 0) != 0 && std::count(shape.begin(), shape.end(), 0) > 0)
      unsupported_form(i, "allowzero=1 with a 0 in its shape (an empty tensor)");
    if (shape.empty() || (shape[0] != 0 && shape[0] != -1))
      unsupported_form(i, "it reshapes the batch (dim 0); NN Studio's graphs keep it");
    int64_t sample = 1;
    for (size_t k = 1; k < x.size(); ++k) sample *= x[k];
    target = {-1};
    int64_t known = 1, infer = -1;
    for (size_t k = 1; k < shape.size(); ++k) {
      int64_t d = shape[k];
      if (d == 0) {
        if (k >= x.size()) unsupported_form(i, "a 0 in its shape has no input dim to copy");
        d = x[k];
      }
      if (d == -1) {
        if (infer >= 0) unsupported_form(i, "its shape has two -1");
        infer = static_cast<int64_t>(target.size());
        target.push_back(-1);
        continue;
      }
      if (d < 0) unsupported_form(i, "its shape has a negative size");
      if (d > sample) unsupported_form(i, "its shape does not fit the input");
      known *= d;
      if (known > sample) unsupported_form(i, "its shape does not fit the input");
      target.push_back(d);
    }
    if (infer >= 0) {
      if (known == 0 || sample % known != 0)
        unsupported_form(i, "its shape does not fit the input");
      target[infer] = sample / known;
    }
    if (known * (infer >= 0 ? target[infer] : 1) != sample)
      unsupported_form(i, "its shape does not fit the input");
  } else {
    std::vector<int64_t> axes = axes_of();
    const bool unsqueeze = op == "Unsqueeze";
    const size_t rank = x.size() + (unsqueeze ? axes.size() : 0);
    for (int64_t& a : axes) a = axis_dim(i, a, rank);
    std::set<int64_t> set(axes.begin(), axes.end());
    if (set.contains(0)) unsupported_form(i, "it changes the batch (dim 0)");
    if (unsqueeze) {
      size_t from = 0;
      for (size_t k = 0; k < rank; ++k) target.push_back(set.contains(k) ? 1 : x[from++]);
    } else {
      for (size_t k = 0; k < x.size(); ++k) {
        if (set.empty() ? x[k] == 1 : set.contains(k)) {
          if (x[k] != 1) unsupported_form(i, "it squeezes a dim whose size is not 1");
          continue;
        }
        target.push_back(x[k]);
      }
    }
  }
  // [N, a, b, ...] -> [N, c, d, ...]: Flatten to [N, a*b*...], then Unflatten dim 1.
  if (x.size() < 2 || target.size() < 2)
    unsupported_form(i,
                     "its input or output has only the batch dim; NN Studio's Flatten and "
                     "Unflatten keep a sample dim");
  std::string value = n.input(0);
  const bool same = x == target;
  if (same) {
    aliases_[n.output(0)] = value;
    return;
  }
  const bool flatten = x.size() > 2;
  const bool unflatten = target.size() > 2;
  if (flatten) {
    Unit u = unit_for(i, "Flatten");
    u.inputs = {value};
    if (unflatten) u.output = n.output(0) + "#flat";
    value = u.output;
    add_unit(std::move(u));
  }
  if (unflatten) {
    Unit u = unit_for(i, "Unflatten");
    u.inputs = {value};
    u.options = {
        {"dim", 1},
        {"unflattened_size", json_list(std::vector<int64_t>(target.begin() + 1, target.end()))}};
    add_unit(std::move(u));
  }
  if (!flatten && !unflatten) aliases_[n.output(0)] = value;
}

// x.transpose(a, b) and x.permute(0, ...): the batch stays dim 0.
void Importer::convert_transpose(int i) {
  const NodeProto& n = node(i);
  const size_t rank = shape_of(n.input(0)).size();
  std::vector<int64_t> perm = attr_ints(n, "perm").value_or(std::vector<int64_t>{});
  if (perm.empty()) {
    for (size_t k = rank; k-- > 0;) perm.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted.size() != rank || sorted[k] != static_cast<int64_t>(k))
      unsupported_form(i, "its perm is not a permutation of its input's dims");
  }
  if (rank == 0 || perm[0] != 0)
    unsupported_form(i, "it moves the batch (dim 0); NN Studio's graphs keep it first");
  std::vector<int64_t> moved;
  for (size_t k = 0; k < rank; ++k) {
    if (perm[k] != static_cast<int64_t>(k)) moved.push_back(static_cast<int64_t>(k));
  }
  if (moved.empty()) {
    aliases_[n.output(0)] = n.input(0);
    return;
  }
  Unit u = unit_for(i, moved.size() == 2 ? "Transpose" : "Permute");
  u.inputs = {n.input(0)};
  u.options = moved.size() == 2 ? Json{{"dim0", moved[0]}, {"dim1", moved[1]}}
                                : Json{{"dims", json_list(perm)}};
  add_unit(std::move(u));
}

// x[:, a:b] and chunks of it: a Narrow for each dim sliced (step 1).
void Importer::convert_slice(int i) {
  const NodeProto& n = node(i);
  auto ints = [&](int k, const char* what) -> std::optional<std::vector<int64_t>> {
    if (k >= n.input_size() || n.input(k).empty()) return std::nullopt;
    std::optional<std::vector<int64_t>> v = int_values(n.input(k));
    if (!v)
      unsupported_form(i, std::string("its ") + what + " are computed; NN Studio needs them fixed");
    return v;
  };
  const std::vector<int64_t> starts = *ints(1, "starts"), ends = *ints(2, "ends");
  const SymShape x = shape_of(n.input(0));
  std::vector<int64_t> axes;
  if (auto a = ints(3, "axes")) {
    axes = *a;
  } else {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  const std::vector<int64_t> steps =
      ints(4, "steps").value_or(std::vector<int64_t>(axes.size(), 1));
  if (starts.size() != axes.size() || ends.size() != axes.size() || steps.size() != axes.size())
    unsupported_form(i, "its starts, ends, axes and steps differ in length");
  std::vector<std::array<int64_t, 3>> cuts;  // dim, start, length
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t dim = axis_dim(i, axes[k], x.size());
    if (steps[k] != 1) unsupported_form(i, "a step other than 1 has no node");
    if (dim == 0) {
      if (starts[k] == 0 && ends[k] >= std::numeric_limits<int32_t>::max()) continue;
      unsupported_form(i, "it slices the batch (dim 0)");
    }
    const int64_t size = x[dim];
    if (size < 0) unsupported_form(i, "it slices a dim of unknown size");
    auto clamp = [size](int64_t v) {
      if (v == kBatch) return size;
      return std::clamp(v < 0 ? v + size : v, int64_t{0}, size);
    };
    const int64_t start = clamp(starts[k]), end = std::max(clamp(ends[k]), start);
    if (start == 0 && end == size) continue;
    if (end == start) unsupported_form(i, "it takes nothing (an empty slice)");
    cuts.push_back({dim, start, end - start});
  }
  narrow(i, n.input(0), cuts, n.output(0));
}

// torch.chunk and torch.split as ONNX's Split: a Narrow for each output read.
void Importer::convert_split(int i) {
  const NodeProto& n = node(i);
  const SymShape x = shape_of(n.input(0));
  const int64_t dim = axis_dim(i, attr_int(n, "axis", 0), x.size());
  if (dim == 0) unsupported_form(i, "it splits the batch (dim 0)");
  if (x[dim] < 0) unsupported_form(i, "it splits a dim of unknown size");
  std::vector<int64_t> sizes;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    const std::optional<std::vector<int64_t>> v = int_values(n.input(1));
    if (!v) unsupported_form(i, "its sizes are computed; NN Studio needs them fixed");
    sizes = *v;
  } else if (auto v = attr_ints(n, "split")) {
    sizes = *v;
  } else {
    const int64_t parts = attr_int(n, "num_outputs", n.output_size());
    if (parts != n.output_size()) unsupported_form(i, "its num_outputs is not its outputs'");
    const int64_t each = parts > 0 ? (x[dim] + parts - 1) / parts : 0;
    for (int64_t k = 0, left = x[dim]; k < parts; ++k, left -= each)
      sizes.push_back(std::min(each, std::max<int64_t>(left, 0)));
  }
  if (static_cast<int>(sizes.size()) != n.output_size())
    unsupported_form(i, "its sizes do not fit its outputs");
  int64_t start = 0;
  for (int k = 0; k < n.output_size(); ++k) {
    if (sizes[k] < 0 || sizes[k] > x[dim] - start)
      unsupported_form(i, "its sizes do not fit its input");
    if (!n.output(k).empty() && (consumers_.contains(n.output(k)) || is_graph_output(n.output(k))))
      narrow(i, n.input(0), {{dim, start, sizes[k]}}, n.output(k));
    start += sizes[k];
  }
}

// One Narrow per cut, in a chain from `value` to `output` (an alias when nothing is cut).
void Importer::narrow(int i, const std::string& value,
                      const std::vector<std::array<int64_t, 3>>& cuts, const std::string& output) {
  std::string from = value;
  for (size_t k = 0; k < cuts.size(); ++k) {
    Unit u = unit_for(i, "Narrow");
    u.inputs = {from};
    u.output = k + 1 == cuts.size() ? output : output + "#" + std::to_string(k);
    u.options = {{"dim", cuts[k][0]}, {"start", cuts[k][1]}, {"length", cuts[k][2]}};
    from = u.output;
    add_unit(std::move(u));
  }
  if (cuts.empty()) aliases_[output] = value;
}

// x[:, k] (a scalar index: Select) and x[:, k:k+1] as a Gather of one index (Narrow).
void Importer::convert_select(int i) {
  const NodeProto& n = node(i);
  const SymShape x = shape_of(n.input(0));
  const int64_t dim = axis_dim(i, attr_int(n, "axis", 0), x.size());
  if (dim == 0) unsupported_form(i, "it picks entries of the batch (dim 0)");
  auto c = constants_.find(resolve(n.input(1)));
  if (c == constants_.end() || c->second.numel() != 1 || c->second.dim() > 1 ||
      c->second.dtype() != kInt64 || x[dim] < 0)
    unsupported_form(i, "only one fixed index (x[:, k]) has a node");
  int64_t index = c->second.contiguous().data_ptr<int64_t>()[0];
  if (index < -x[dim] || index >= x[dim]) unsupported_form(i, "its index is out of range");
  if (index < 0) index += x[dim];
  if (c->second.dim() == 1) {
    narrow(i, n.input(0), {{dim, index, 1}}, n.output(0));
    return;
  }
  Unit u = unit_for(i, "Select");
  u.inputs = {n.input(0)};
  u.options = {{"dim", dim}, {"index", index}};
  add_unit(std::move(u));
}

// t.expand(x.size(0), -1, ...) of a [1, ...] tensor (a class token): the Expand node, which
// takes the batch from the tensor whose size was read; an expand that changes nothing is
// the value itself.
void Importer::convert_expand(int i) {
  const NodeProto& n = node(i);
  const std::optional<std::vector<int64_t>> sizes = int_values(n.input(1));
  if (!sizes) unsupported_form(i, "its sizes are computed from values; NN Studio needs them fixed");
  const SymShape x = shape_of(n.input(0));
  if (sizes->size() != x.size())
    unsupported_form(i, "it adds dims (only a [1, ...] tensor's batch is expanded)");
  bool batch = false;
  for (size_t k = 0; k < x.size(); ++k) {
    const int64_t want = (*sizes)[k];
    if (want == 1 || want == x[k] || (k == 0 && want == kBatch && x[0] == -1)) continue;
    if (k == 0 && want == kBatch && x[0] == 1) {
      batch = true;
      continue;
    }
    unsupported_form(i, "only a [1, ...] tensor's dim 0 is expanded, to the batch");
  }
  if (!batch) {
    aliases_[n.output(0)] = n.input(0);
    return;
  }
  auto source = batch_source_.find(resolve(n.input(1)));
  if (source == batch_source_.end()) unsupported_form(i, "its batch size is read from no tensor");
  Unit u = unit_for(i, "Expand");
  u.inputs = {n.input(0), source->second};
  add_unit(std::move(u));
}

}  // namespace nns::onnx::detail
