#include "engine/graph/node_types.h"

#include <algorithm>
#include <cmath>

#include "engine/data/catalog.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"

namespace nns::graph {
namespace {

using Kind = OptionSpec::Kind;

// ---- Option specs ---------------------------------------------------------------------------

OptionSpec int_option(std::string name, int64_t value, std::string help,
                      std::optional<double> min = std::nullopt) {
  return {std::move(name), Kind::Int, value, std::move(help), {}, min, std::nullopt};
}
OptionSpec float_option(std::string name, double value, std::string help,
                        std::optional<double> min = std::nullopt,
                        std::optional<double> max = std::nullopt) {
  return {std::move(name), Kind::Float, value, std::move(help), {}, min, max};
}
OptionSpec bool_option(std::string name, bool value, std::string help) {
  return {std::move(name), Kind::Bool, value, std::move(help), {}, std::nullopt, std::nullopt};
}
OptionSpec choice_option(std::string name, std::string value, std::vector<std::string> choices,
                         std::string help) {
  return {std::move(name),    Kind::Choice, value,       std::move(help),
          std::move(choices), std::nullopt, std::nullopt};
}
OptionSpec list_option(std::string name, Json value, std::string help, size_t length,
                       std::optional<double> min) {
  OptionSpec spec{std::move(name), Kind::IntList, std::move(value), std::move(help), {}, min,
                  std::nullopt};
  spec.length = length;
  return spec;
}
OptionSpec optional_int_option(std::string name, std::string help) {
  return {std::move(name), Kind::OptionalInt, nullptr, std::move(help), {},
          std::nullopt,    std::nullopt};
}

// How an option value is described in errors: the JSON text.
std::string json_text(const Json& value) {
  return value.dump();
}

std::string kind_text(const OptionSpec& spec) {
  switch (spec.kind) {
    case Kind::Int:
      return "an integer";
    case Kind::Float:
      return "a number";
    case Kind::Bool:
      return "true or false";
    case Kind::String:
      return "a string";
    case Kind::Choice: {
      std::string out = "one of";
      for (const std::string& c : spec.choices) out += " \"" + c + "\"";
      return out;
    }
    case Kind::IntList:
      return spec.length ? "an integer or a list of " + std::to_string(spec.length) + " integers"
                         : "a non-empty list of integers";
    case Kind::OptionalInt:
      return "an integer or null";
  }
  return "";
}

std::string range_text(const OptionSpec& spec) {
  if (spec.min && spec.max)
    return " between " + nn::python_float(*spec.min) + " and " + nn::python_float(*spec.max);
  if (spec.min) return " >= " + std::to_string(static_cast<int64_t>(*spec.min));
  return "";
}

bool in_range(const OptionSpec& spec, double v) {
  return (!spec.min || v >= *spec.min) && (!spec.max || v <= *spec.max);
}

// Whether value fits spec (kind and range). null fits an option whose default is null (an
// optional one: a pooling's stride=None).
bool fits(const OptionSpec& spec, const Json& value) {
  if (value.is_null() && spec.default_value.is_null()) return true;
  switch (spec.kind) {
    case Kind::Int:
      return value.is_number_integer() && in_range(spec, value.get<double>());
    case Kind::Float:
      return value.is_number() && std::isfinite(value.get<double>()) &&
             in_range(spec, value.get<double>());
    case Kind::Bool:
      return value.is_boolean();
    case Kind::String:
      return value.is_string();
    case Kind::Choice:
      return value.is_string() && std::find(spec.choices.begin(), spec.choices.end(),
                                            value.get<std::string>()) != spec.choices.end();
    case Kind::IntList: {
      if (spec.length && value.is_number_integer()) return in_range(spec, value.get<double>());
      if (!value.is_array() || value.empty()) return false;
      if (spec.length && value.size() != spec.length) return false;
      return std::all_of(value.begin(), value.end(), [&spec](const Json& v) {
        return v.is_number_integer() && in_range(spec, v.get<double>());
      });
    }
    case Kind::OptionalInt:
      return value.is_null() || value.is_number_integer();
  }
  return false;
}

// ---- Reading checked options ------------------------------------------------------------------

int64_t get_int(const Json& o, const char* name) {
  return o.at(name).get<int64_t>();
}
double get_float(const Json& o, const char* name) {
  return o.at(name).get<double>();
}
bool get_bool(const Json& o, const char* name) {
  return o.at(name).get<bool>();
}
std::string get_string(const Json& o, const char* name) {
  return o.at(name).get<std::string>();
}
std::optional<int64_t> get_optional_int(const Json& o, const char* name) {
  const Json& v = o.at(name);
  return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
}
Shape get_list(const Json& o, const char* name) {
  const Json& v = o.at(name);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  return v.get<Shape>();
}
// null (an optional stride) is {0, 0}, which the pooling modules read as "the kernel size".
Int2 get_int2(const Json& o, const char* name) {
  if (o.at(name).is_null()) return {0, 0};
  const Shape s = get_list(o, name);
  return s.size() == 1 ? Int2{s[0], s[0]} : Int2{s[0], s[1]};
}

// ---- Shape inference helpers -----------------------------------------------------------------

using Shapes = std::vector<SymShape>;

[[noreturn]] void bad_input(const std::string& port, const SymShape& got,
                            const std::string& expected) {
  throw ShapeError("input '" + port + "' has shape " + shape_str(got) + ", expected " + expected);
}

const SymShape& one_input(const Shapes& in) {
  return in.at(0);
}

Shapes same_shape(const Json&, const Shapes& in) {
  return {one_input(in)};
}

// Wraps a dim against a rank, naming the option when it is out of range.
int64_t wrap(int64_t dim, size_t rank, const std::string& option, const SymShape& shape) {
  const auto n = static_cast<int64_t>(rank);
  if (dim < -n || dim >= n)
    throw ShapeError("option " + option + "=" + std::to_string(dim) +
                     " is out of range for input 'in' of shape " + shape_str(shape) + " (" +
                     std::to_string(n) + " dims)");
  return dim < 0 ? dim + n : dim;
}

// Sizes along a dim after a sliding window (convolution or pooling), as PyTorch computes it.
int64_t window_out(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                   bool ceil_mode) {
  const int64_t span = size + 2 * padding - dilation * (kernel - 1) - 1;
  if (span < 0) return 0;
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // With ceil_mode the last window must start inside the input or its left padding.
  if (ceil_mode && (out - 1) * stride >= size + padding) --out;
  return out;
}

// Broadcast of two shapes where -1 (the batch) matches anything.
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

std::string port_name(size_t i) {
  return "in" + std::to_string(i);
}

// ---- The registry ------------------------------------------------------------------------------

const std::vector<PortSpec> kIn{{"in", "the input tensor"}};
const std::vector<PortSpec> kOut{{"out", "the output tensor"}};

NodeType module_type(std::string name, std::string category, std::string description,
                     std::vector<OptionSpec> options,
                     std::function<nn::ModulePtr(const Json&)> make,
                     std::function<Shapes(const Json&, const Shapes&)> infer) {
  NodeType t;
  t.name = std::move(name);
  t.category = std::move(category);
  t.description = std::move(description);
  t.options = std::move(options);
  t.inputs = kIn;
  t.outputs = kOut;
  t.make_module = std::move(make);
  t.infer_shapes = std::move(infer);
  return t;
}

template <class M>
NodeType activation(std::string name, std::string description) {
  return module_type(
      std::move(name), "Activation", std::move(description), {},
      [](const Json&) { return std::make_shared<M>(); }, same_shape);
}

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

template <size_t... Ranks>
Shapes infer_batchnorm(const Json& o, const Shapes& in, const std::string& expected) {
  const SymShape& x = one_input(in);
  const int64_t features = get_int(o, "num_features");
  if (((x.size() != Ranks) && ...) || x[1] != features)
    bad_input("in", x, expected + " with C = num_features = " + std::to_string(features));
  return {x};
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

Shapes infer_softmax(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  if (const std::optional<int64_t> dim = get_optional_int(o, "dim"))
    wrap(*dim, std::max<size_t>(x.size(), 1), "dim", x);
  return {x};
}

Tensor sum_all(const std::vector<Tensor>& inputs, bool multiply) {
  Tensor acc = inputs.at(0);
  for (size_t i = 1; i < inputs.size(); ++i) acc = multiply ? acc * inputs[i] : acc + inputs[i];
  return acc;
}

Shapes infer_broadcast(const Json&, const Shapes& in) {
  SymShape out = in.at(0);
  for (size_t i = 1; i < in.size(); ++i) out = broadcast(out, in[i], port_name(i));
  return {out};
}

Shapes infer_concat(const Json& o, const Shapes& in) {
  const SymShape& first = in.at(0);
  const int64_t dim = wrap(get_int(o, "dim"), std::max<size_t>(first.size(), 1), "dim", first);
  SymShape out = first;
  for (size_t i = 1; i < in.size(); ++i) {
    const SymShape& x = in[i];
    bool ok = x.size() == first.size();
    for (size_t d = 0; ok && d < x.size(); ++d) {
      if (static_cast<int64_t>(d) != dim && x[d] != first[d]) ok = false;
    }
    if (!ok) {
      SymShape expected = first;
      expected[static_cast<size_t>(dim)] = -2;
      std::string text = shape_str(expected);
      // -2 prints as a plain number; show it as "*" (any size along the concatenated dim).
      const std::string star = std::to_string(-2);
      text.replace(text.find(star), star.size(), "*");
      bad_input(port_name(i), x,
                text + " (sizes equal to in0's except along dim " + std::to_string(dim) + ")");
    }
    const int64_t size = x[static_cast<size_t>(dim)];
    int64_t& acc = out[static_cast<size_t>(dim)];
    acc = (acc == -1 || size == -1) ? -1 : acc + size;
  }
  return {out};
}

Shapes infer_matmul(const Json&, const Shapes& in) {
  SymShape a = in.at(0), b = in.at(1);
  if (a.empty()) bad_input("in0", a, "at least 1 dim");
  if (b.empty()) bad_input("in1", b, "at least 1 dim");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t k = a.back(), kb = b[b.size() - 2];
  if (k != kb && k != -1 && kb != -1)
    bad_input("in1", in[1],
              "[" + std::to_string(k) + ", *] (its rows must match the " + std::to_string(k) +
                  " columns of in0 " + shape_str(in[0]) + ")");
  const SymShape batch =
      broadcast(SymShape(a.begin(), a.end() - 2), SymShape(b.begin(), b.end() - 2), "in1");
  SymShape out = batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
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

Shapes infer_embedding(const Json& o, const Shapes& in) {
  SymShape out = one_input(in);
  out.push_back(get_int(o, "embedding_dim"));
  return {out};
}

Shapes infer_prelu(const Json& o, const Shapes& in) {
  const SymShape& x = one_input(in);
  const int64_t n = get_int(o, "num_parameters");
  if (n != 1 && (x.size() < 2 || x[1] != n))
    bad_input("in", x, "[N, " + std::to_string(n) + ", ...] (dim 1 = num_parameters)");
  return {x};
}

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

Shapes infer_fixed(const Json& o, const Shapes&) {
  return {get_list(o, "shape")};
}

std::vector<NodeType> make_registry() {
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

  types.push_back(activation<nn::ReLU>("ReLU", "max(0, x)"));
  types.push_back(module_type(
      "LeakyReLU", "Activation", "x for x >= 0, negative_slope * x otherwise",
      {float_option("negative_slope", 0.01, "slope for negative inputs")},
      [](const Json& o) { return std::make_shared<nn::LeakyReLU>(get_float(o, "negative_slope")); },
      same_shape));
  types.push_back(activation<nn::Tanh>("Tanh", "hyperbolic tangent"));
  types.push_back(activation<nn::Sigmoid>("Sigmoid", "1 / (1 + exp(-x))"));
  types.push_back(module_type(
      "GELU", "Activation", "x * Phi(x), the Gaussian error linear unit",
      {choice_option("approximate", "none", {"none", "tanh"},
                     "the exact erf form or the tanh one")},
      [](const Json& o) { return std::make_shared<nn::GELU>(get_string(o, "approximate")); },
      same_shape));
  types.push_back(activation<nn::SiLU>("SiLU", "x * sigmoid(x)"));
  types.push_back(module_type(
      "ELU", "Activation", "x for x > 0, alpha * (exp(x) - 1) otherwise",
      {float_option("alpha", 1.0, "the value approached for large negative inputs")},
      [](const Json& o) { return std::make_shared<nn::ELU>(get_float(o, "alpha")); }, same_shape));
  types.push_back(module_type(
      "PReLU", "Activation", "LeakyReLU with a learned slope (one, or one per channel)",
      {int_option("num_parameters", 1, "1, or the number of channels (dim 1)", 1),
       float_option("init", 0.25, "the initial slope")},
      [](const Json& o) {
        return std::make_shared<nn::PReLU>(get_int(o, "num_parameters"), get_float(o, "init"));
      },
      infer_prelu));
  types.push_back(module_type(
      "Softmax", "Activation", "exp(x) / sum(exp(x)) along dim",
      {optional_int_option("dim", "the dim that sums to 1 (null: PyTorch's legacy choice)")},
      [](const Json& o) { return std::make_shared<nn::Softmax>(get_optional_int(o, "dim")); },
      infer_softmax));

  types.push_back(module_type(
      "LogSoftmax", "Activation", "log(softmax(x)) along dim, computed stably",
      {optional_int_option("dim", "the dim of the softmax (null: PyTorch's legacy choice)")},
      [](const Json& o) { return std::make_shared<nn::LogSoftmax>(get_optional_int(o, "dim")); },
      infer_softmax));

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

  types.push_back(module_type(
      "Dropout", "Dropout", "zeroes elements with probability p while training",
      {float_option("p", 0.5, "probability of an element to be zeroed", 0, 1)},
      [](const Json& o) { return std::make_shared<nn::Dropout>(get_float(o, "p")); }, same_shape));

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

  auto functional =
      [](std::string name, std::string category, std::string description,
         std::vector<OptionSpec> options, bool variadic,
         std::function<std::vector<Tensor>(const std::vector<Tensor>&, const Json&)> apply,
         std::function<Shapes(const Json&, const Shapes&)> infer) {
        NodeType t;
        t.name = std::move(name);
        t.category = std::move(category);
        t.description = std::move(description);
        t.options = std::move(options);
        t.variadic = variadic;
        if (variadic) {
          t.options.insert(t.options.begin(), int_option("inputs", 2, "number of input ports", 2));
        } else {
          t.inputs = {{"in0", "the left operand"}, {"in1", "the right operand"}};
        }
        t.outputs = kOut;
        t.apply = std::move(apply);
        t.infer_shapes = std::move(infer);
        return t;
      };
  types.push_back(functional(
      "Add", "Merge", "in0 + in1 + ... (broadcasting), e.g. a residual connection", {}, true,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{sum_all(x, false)};
      },
      infer_broadcast));
  types.push_back(functional(
      "Mul", "Merge", "in0 * in1 * ... elementwise (broadcasting)", {}, true,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{sum_all(x, true)};
      },
      infer_broadcast));
  types.push_back(functional(
      "Concat", "Merge", "torch.cat of the inputs along dim",
      {int_option("dim", 1, "the dim to concatenate along (0 is the batch)")}, true,
      [](const std::vector<Tensor>& x, const Json& o) {
        return std::vector<Tensor>{cat(x, get_int(o, "dim"))};
      },
      infer_concat));
  types.push_back(functional(
      "MatMul", "Math", "in0 @ in1 (torch.matmul)", {}, false,
      [](const std::vector<Tensor>& x, const Json&) {
        return std::vector<Tensor>{matmul(x.at(0), x.at(1))};
      },
      infer_matmul));
  // F.relu in a forward: an activation that is no attribute (the seeds' Net calls it so).
  NodeType relu_fn = functional(
      "F.relu", "Activation", "torch.nn.functional.relu: max(0, x) without a module", {}, false,
      [](const std::vector<Tensor>& x, const Json&) { return std::vector<Tensor>{relu(x.at(0))}; },
      same_shape);
  relu_fn.inputs = kIn;
  types.push_back(std::move(relu_fn));

  NodeType input;
  input.name = "Input";
  input.category = "Input / Output";
  input.description = "a model input: a batch of tensors of the given shape";
  input.options = {
      list_option("shape", Json::array({2}), "shape of one sample (without the batch)", 0, 1),
      choice_option("dtype", "float32", {"float32", "int64"},
                    "float32 for features, int64 for class indices (Embedding)")};
  input.outputs = kOut;
  input.infer_shapes = [](const Json& o, const Shapes&) {
    SymShape s{-1};
    const Shape sample = get_list(o, "shape");
    s.insert(s.end(), sample.begin(), sample.end());
    return Shapes{s};
  };
  types.push_back(std::move(input));

  NodeType output;
  output.name = "Output";
  output.category = "Input / Output";
  output.description = "a model output: forward returns the tensor fed to it";
  output.inputs = kIn;
  output.infer_shapes = [](const Json&, const Shapes&) { return Shapes{}; };
  types.push_back(std::move(output));

  const std::vector<std::string> inits{"zeros",          "ones",         "randn",
                                       "rand",           "uniform",      "kaiming_uniform",
                                       "xavier_uniform", "xavier_normal"};
  NodeType parameter;
  parameter.name = "Parameter";
  parameter.category = "Parameters";
  parameter.description =
      "nn.Parameter: a learnable tensor registered on the model or block under the node's name";
  parameter.options = {list_option("shape", Json::array({1}), "the tensor's shape", 0, 0),
                       choice_option("init", "randn", inits,
                                     "initial values (uniform: in [-1, 1); kaiming_uniform: as "
                                     "Linear's weight)"),
                       bool_option("requires_grad", true, "trained by the optimizer")};
  parameter.outputs = kOut;
  parameter.infer_shapes = infer_fixed;
  types.push_back(std::move(parameter));

  NodeType buffer;
  buffer.name = "Buffer";
  buffer.category = "Parameters";
  buffer.description =
      "register_buffer: a tensor of the module's state that is not trained (running statistics)";
  buffer.options = {list_option("shape", Json::array({1}), "the tensor's shape", 0, 0),
                    choice_option("init", "zeros", inits, "initial values"),
                    bool_option("persistent", true, "part of the state dict")};
  buffer.outputs = kOut;
  buffer.infer_shapes = infer_fixed;
  types.push_back(std::move(buffer));

  NodeType ref;
  ref.name = "Ref";
  ref.category = "Reshape";
  ref.description =
      "calls another node's module again, sharing its parameters (a second call of one attribute)";
  ref.options = {int_option("target", 0, "the id of the node whose module is called", 0)};
  ref.inputs = kIn;
  ref.outputs = kOut;
  types.push_back(std::move(ref));
  return types;
}

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Tensor initial_tensor(const Json& options) {
  const Shape shape = get_list(options, "shape");
  const std::string init = get_string(options, "init");
  NoGradGuard no_grad;
  if (init == "ones") return ones(shape);
  if (init == "randn") return randn(shape);
  if (init == "rand") return rand(shape);
  Tensor t = zeros(shape);
  if (init == "zeros") return t;
  if (init == "uniform") return nn::init::uniform_(t, -1, 1);
  if (shape.size() < 2)
    throw ValueError("init '" + init +
                     "' needs a shape of at least 2 dims (fan in and fan out), got " +
                     shape_str(shape));
  if (init == "kaiming_uniform") return nn::init::kaiming_uniform_(t, std::sqrt(5.0));
  if (init == "xavier_uniform") return nn::init::xavier_uniform_(t);
  return nn::init::xavier_normal_(t);
}

std::string shape_str(const SymShape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i] == -1 ? "N" : std::to_string(shape[i]);
  }
  return out + "]";
}

OptionSpec option_spec(const data::OptionInfo& option) {
  OptionSpec spec;
  spec.name = option.name;
  spec.help = option.description;
  switch (option.type) {
    case data::OptionType::Integer:
      spec.kind = Kind::Int;
      spec.default_value = static_cast<int64_t>(option.default_value);
      break;
    case data::OptionType::Real:
      spec.kind = Kind::Float;
      spec.default_value = option.default_value;
      break;
    case data::OptionType::Choice:
      spec.kind = Kind::Choice;
      spec.default_value = option.default_choice;
      spec.choices = option.choices;
      return spec;
  }
  spec.min = option.min;
  spec.max = option.max;
  return spec;
}

Json NodeType::default_options() const {
  Json out = Json::object();
  for (const OptionSpec& o : options) out[o.name] = o.default_value;
  return out;
}

Json NodeType::checked_options(const Json& given) const {
  if (!given.is_object())
    throw ValueError(name + ": options must be a JSON object, got " + json_text(given));
  for (const auto& [key, value] : given.items()) {
    const bool known = std::any_of(options.begin(), options.end(),
                                   [&k = key](const OptionSpec& o) { return o.name == k; });
    if (known) continue;
    std::string list;
    for (const OptionSpec& o : options) list += (list.empty() ? "" : ", ") + o.name;
    throw KeyError(name + " has no option '" + key + "'" +
                   (list.empty() ? std::string("; it takes none") : "; its options are: " + list));
  }
  Json out = Json::object();
  for (const OptionSpec& spec : options) {
    const Json& value = given.contains(spec.name) ? given.at(spec.name) : spec.default_value;
    if (!fits(spec, value))
      throw ValueError(name + " option '" + spec.name + "': expected " + kind_text(spec) +
                       range_text(spec) + ", got " + json_text(value));
    out[spec.name] = value;
  }
  return out;
}

std::vector<std::string> NodeType::input_ports(const Json& options) const {
  if (!variadic) {
    std::vector<std::string> out;
    for (const PortSpec& p : inputs) out.push_back(p.name);
    return out;
  }
  const Json* n = options.is_object() && options.contains("inputs") ? &options["inputs"] : nullptr;
  const int64_t count = n && n->is_number_integer() ? std::max<int64_t>(n->get<int64_t>(), 2) : 2;
  std::vector<std::string> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(port_name(static_cast<size_t>(i)));
  return out;
}

const std::vector<NodeType>& node_types() {
  static const std::vector<NodeType> types = make_registry();
  return types;
}

const NodeType* find_node_type(const std::string& name) {
  const std::vector<NodeType>& types = node_types();
  auto it = std::find_if(types.begin(), types.end(),
                         [&name](const NodeType& t) { return t.name == name; });
  return it == types.end() ? nullptr : &*it;
}

const NodeType& node_type(const std::string& name) {
  if (const NodeType* t = find_node_type(name)) return *t;
  std::vector<std::pair<size_t, std::string>> close;
  for (const NodeType& t : node_types()) {
    const size_t d = edit_distance(name, t.name);
    if (d <= std::max<size_t>(2, name.size() / 3)) close.emplace_back(d, t.name);
  }
  std::sort(close.begin(), close.end());
  std::string hint;
  for (size_t i = 0; i < close.size() && i < 3; ++i)
    hint += (i ? ", " : "") + std::string("'") + close[i].second + "'";
  throw KeyError("unknown node type '" + name + "'" +
                 (hint.empty() ? std::string("") : "; did you mean " + hint + "?"));
}

bool is_container_type(const std::string& type) {
  return type == "Sequential" || type == "ModuleList" || type == "ModuleDict";
}

std::optional<NodePorts> node_ports(const Node& node) {
  if (node.type == "Sequential") return NodePorts{{"in"}, {"out"}};
  if (node.type == "ModuleDict") {
    const bool is_switch = node.options.is_object() && node.options.contains("switch") &&
                           node.options["switch"] == true;
    return is_switch ? NodePorts{{"in"}, {"out"}} : NodePorts{};
  }
  if (node.type == "ModuleList") return NodePorts{};
  const NodeType* t = find_node_type(node.type);
  if (!t || t->name == "Ref") return std::nullopt;
  NodePorts ports;
  ports.inputs = t->input_ports(node.options);
  for (const PortSpec& p : t->outputs) ports.outputs.push_back(p.name);
  return ports;
}

}  // namespace nns::graph
