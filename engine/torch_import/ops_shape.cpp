// SPDX-License-Identifier: GPL-3.0-or-later
// Shapes and indexing: torch.flatten / x.flatten, x.view / x.reshape (with sizes read from
// x.size(), folded), x.mean, x.transpose, x.permute, x[:, 0] and x[:, a:b].
#include "engine/torch_import/convert.h"

namespace nns::torch_import::detail {
namespace {

bool one_of(const std::string& target, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (target == n) return true;
  }
  return false;
}

const Value& tensor_arg(const Call& call, Emitter& out) {
  const Value* x = call.arg(0, "input");
  if (!x || !x->is_tensor()) out.refuse("expected a tensor");
  return *x;
}

int64_t int_or(const Call& call, size_t i, const std::string& name, int64_t fallback,
               Emitter& out) {
  const Value* v = call.arg(i, name);
  return v ? constant_int(*v, name, out) : fallback;
}

Value reshape(const Call& call, const Value& x, Emitter& out) {
  const std::vector<Value> sizes = int_list(call, 1, "shape");
  if (sizes.empty()) out.refuse("expected the new shape");
  // The batch must stay dim 0, as x.size(0) or -1 with every other size fixed.
  std::vector<int64_t> shape;
  bool batch_first = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Value& s = sizes[i];
    if (!s.is_number()) out.refuse("a size is neither a number nor x.size(...)");
    const bool is_batch = s.first == 2 && s.second == 3;
    if (i == 0 && is_batch) {
      batch_first = true;
      continue;
    }
    if (!s.is_constant())
      out.refuse("size " + std::to_string(i) +
                 " depends on the batch size: NN Studio's reshape keeps the batch as dim 0");
    shape.push_back(static_cast<int64_t>(s.first));
  }
  if (!batch_first) {
    // view(-1, c, h, w): -1 takes the batch when the other sizes make one sample.
    const SymShape result = out.result_shape();
    if (result.empty() || result[0] != -1 || sizes[0].first != -1)
      out.refuse("it reshapes the batch (dim 0): NN Studio's reshape keeps the batch as dim 0");
    shape.assign(result.begin() + 1, result.end());
  }
  return out.add("Reshape", {{"shape", shape}}, {x}, out.result_shape());
}

// x[index]: ints select, slices narrow, one entry per dim from dim 0.
Value getitem(const Value& x, const Value& index, Emitter& out) {
  std::vector<Value> entries;
  if (index.kind == Value::Kind::Tuple) {
    entries = index.items;
  } else {
    entries = {index};
  }
  Value y = x;
  int64_t dim = 0;
  for (const Value& e : entries) {
    if (e.is_number()) {
      const int64_t i = constant_int(e, "the index", out);
      SymShape shape = y.shape;
      shape.erase(shape.begin() + dim);
      y = out.add("Select", {{"dim", dim}, {"index", i}}, {y}, shape);
      continue;
    }
    if (e.kind == Value::Kind::Other && e.raw.is_object() && e.raw.contains("slice")) {
      const Json& s = e.raw["slice"];
      if (!s[2].is_null() && s[2] != 1) out.refuse("a slice with a step is not supported");
      if (dim >= static_cast<int64_t>(y.shape.size())) out.refuse("too many indices");
      const int64_t size = y.shape[static_cast<size_t>(dim)];
      if (s[0].is_null() && s[1].is_null()) {
        ++dim;
        continue;
      }
      if ((!s[0].is_null() && !s[0].is_number_integer()) ||
          (!s[1].is_null() && !s[1].is_number_integer()))
        out.refuse("a slice's bounds must be numbers written in the code");
      if (size == -1) out.refuse("slicing the batch (dim 0) is not supported");
      auto clamp = [&](int64_t v) {
        if (v < 0) v += size;
        return std::max<int64_t>(0, std::min(v, size));
      };
      const int64_t start = s[0].is_null() ? 0 : clamp(s[0].get<int64_t>());
      const int64_t stop = s[1].is_null() ? size : clamp(s[1].get<int64_t>());
      if (stop <= start) out.refuse("an empty slice");
      SymShape shape = y.shape;
      shape[static_cast<size_t>(dim)] = stop - start;
      y = out.add("Narrow", {{"dim", dim}, {"start", start}, {"length", stop - start}}, {y}, shape);
      ++dim;
      continue;
    }
    out.refuse("only integers and slices index a tensor here (no None, ..., or tensor index)");
  }
  return y;
}

}  // namespace

std::optional<Value> convert_shape(const Call& call, Emitter& out) {
  const std::string& t = call.target;
  if (one_of(t, {"torch.flatten", "flatten"})) {
    const Value& x = tensor_arg(call, out);
    return out.add("torch.flatten",
                   {{"start_dim", int_or(call, 1, "start_dim", 0, out)},
                    {"end_dim", int_or(call, 2, "end_dim", -1, out)}},
                   {x}, out.result_shape());
  }
  if (one_of(t, {"view", "reshape", "torch.reshape"})) {
    const Value& x = tensor_arg(call, out);
    return reshape(call, x, out);
  }
  if (one_of(t, {"mean", "torch.mean"})) {
    const Value& x = tensor_arg(call, out);
    const Value* dim = call.arg(1, "dim");
    if (!dim) out.refuse("the mean over all dims (the batch included) is not supported");
    std::vector<int64_t> dims;
    if (dim->kind == Value::Kind::Tuple) {
      for (const Value& d : dim->items) dims.push_back(constant_int(d, "dim", out));
    } else {
      dims.push_back(constant_int(*dim, "dim", out));
    }
    const Value* keep = call.arg(2, "keepdim");
    const bool keepdim = keep && keep->is_constant() && keep->first != 0;
    if (call.kwargs.count("dtype")) out.refuse("dtype is not supported");
    return out.add("Mean", {{"dim", dims}, {"keepdim", keepdim}}, {x}, out.result_shape());
  }
  if (one_of(t, {"transpose", "torch.transpose"})) {
    const Value& x = tensor_arg(call, out);
    return out.add(
        "Transpose",
        {{"dim0", int_or(call, 1, "dim0", 0, out)}, {"dim1", int_or(call, 2, "dim1", 1, out)}}, {x},
        out.result_shape());
  }
  if (one_of(t, {"permute", "torch.permute"})) {
    const Value& x = tensor_arg(call, out);
    std::vector<int64_t> dims;
    for (const Value& d : int_list(call, 1, "dims")) dims.push_back(constant_int(d, "dims", out));
    return out.add("Permute", {{"dims", dims}}, {x}, out.result_shape());
  }
  if (one_of(t, {"chunk", "torch.chunk", "split", "torch.split", "unbind", "torch.unbind"})) {
    // Pieces along a dim, as Narrow (Select for unbind) nodes: their sizes are the traced ones.
    const Value& x = tensor_arg(call, out);
    const bool unbind = t.find("unbind") != std::string::npos;
    const Value* dim_arg = unbind ? call.arg(1, "dim") : call.arg(2, "dim");
    const int64_t dim = dim_arg ? constant_int(*dim_arg, "dim", out) : 0;
    const auto rank = static_cast<int64_t>(x.shape.size());
    if (dim < -rank || dim >= rank) out.refuse("dim " + std::to_string(dim) + " is out of range");
    const int64_t d = dim < 0 ? dim + rank : dim;
    if (x.shape[static_cast<size_t>(d)] == -1) out.refuse("splitting the batch is not supported");
    const std::vector<SymShape> pieces = out.result_shapes();
    if (pieces.empty()) out.refuse("its pieces were not traced as tensors");
    Value tuple;
    tuple.kind = Value::Kind::Tuple;
    int64_t start = 0;
    for (const SymShape& piece : pieces) {
      if (unbind) {
        tuple.items.push_back(out.add("Select", {{"dim", d}, {"index", start++}}, {x}, piece));
        continue;
      }
      const int64_t length = piece.at(static_cast<size_t>(d));
      tuple.items.push_back(
          out.add("Narrow", {{"dim", d}, {"start", start}, {"length", length}}, {x}, piece));
      start += length;
    }
    return tuple;
  }
  if (one_of(t, {"F.adaptive_avg_pool2d", "torch.adaptive_avg_pool2d"})) {
    const Value& x = tensor_arg(call, out);
    const Value* size = call.arg(1, "output_size");
    if (!size) out.refuse("expected output_size");
    std::vector<int64_t> hw;
    if (size->kind == Value::Kind::Tuple) {
      for (const Value& s : size->items) hw.push_back(constant_int(s, "output_size", out));
    } else {
      const int64_t s = constant_int(*size, "output_size", out);
      hw = {s, s};
    }
    if (hw.size() != 2) out.refuse("output_size must be one or two numbers");
    return out.add("F.adaptive_avg_pool2d", {{"output_size", hw}}, {x}, out.result_shape());
  }
  if (one_of(t, {"expand"})) {
    // class_token.expand(n, -1, -1) with n = x.shape[0]: the [1, ...] token repeated along
    // x's batch.
    const Value& x = tensor_arg(call, out);
    const std::vector<Value> sizes = int_list(call, 1, "size");
    if (sizes.size() != x.shape.size()) out.refuse("expand must name every dim");
    for (size_t i = 1; i < sizes.size(); ++i) {
      if (!sizes[i].is_constant() ||
          (sizes[i].first != -1 && sizes[i].first != static_cast<double>(x.shape[i])))
        out.refuse("only the batch dim (0) may grow");
    }
    if (x.shape.empty()) out.refuse("expected a tensor with dims");
    if (x.shape[0] == -1) return x;  // already batched: -1 or the batch keeps it
    const Value& n = sizes[0];
    if (x.shape[0] != 1 || !(n.first == 2 && n.second == 3) || !n.read_from)
      out.refuse(
          "only a [1, ...] tensor expands, to a batch size read from a tensor "
          "(x.shape[0])");
    Value like;
    like.kind = Value::Kind::Tensor;
    like.port = *n.read_from;
    return out.add("Expand", Json::object(), {x, like}, out.result_shape());
  }
  if (t == "operator.getitem") {
    const Value* x = call.arg(0, "");
    const Value* index = call.arg(1, "");
    if (!x || !index) out.refuse("expected a value and an index");
    if (x->kind == Value::Kind::Tuple) {
      const int64_t i = constant_int(*index, "the index", out);
      const auto n = static_cast<int64_t>(x->items.size());
      if (i < -n || i >= n) out.refuse("index " + std::to_string(i) + " is out of range");
      return x->items[static_cast<size_t>(i < 0 ? i + n : i)];
    }
    if (!x->is_tensor()) out.refuse("indexes something that is neither a tensor nor a tuple");
    return getitem(*x, *index, out);
  }
  return std::nullopt;
}

}  // namespace nns::torch_import::detail
