// SPDX-License-Identifier: GPL-3.0-or-later
// The operator table Importer::convert dispatches each node through, and the layers and
// functions one ONNX node each becomes (Gemm -> Linear, Conv -> Conv2d, Relu -> ReLU, Sub ->
// Sub, ...), one converter per operator or per operators alike; a zero Pad as the padding of
// the Conv or pool after it.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/onnx/import/importer.h"
#include "engine/tensor/factories.h"

namespace nns::onnx::detail {

// ---- The operator table -------------------------------------------------------------------------

// Every operator the importer converts a node of, with its converter (here or in shapes.cpp).
// One table for both, so that what check_supported accepts is what convert can dispatch.
const std::map<std::string, Importer::Converter>& Importer::converters() {
  static const std::map<std::string, Converter> table = {
      // No node of their own: an alias, and a Conv's or pool's padding.
      {"Identity", &Importer::convert_identity},
      {"Pad", &Importer::convert_pad},
      // Views, slices and expands (shapes.cpp).
      {"Flatten", &Importer::convert_reshape},
      {"Reshape", &Importer::convert_reshape},
      {"Unsqueeze", &Importer::convert_reshape},
      {"Squeeze", &Importer::convert_reshape},
      {"Transpose", &Importer::convert_transpose},
      {"Slice", &Importer::convert_slice},
      {"Split", &Importer::convert_split},
      {"Expand", &Importer::convert_expand},
      // Read as sizes (convert_shape_arithmetic) or as a constant (read_values) only, so a
      // node of them that reaches its converter has none.
      {"Shape", &Importer::no_node},
      {"Cast", &Importer::no_node},
      {"Constant", &Importer::no_node},
      {"ConstantOfShape", &Importer::only_sizes},
      {"Equal", &Importer::only_sizes},
      {"Where", &Importer::only_sizes},
      // Activations.
      {"Clip", &Importer::convert_clip},
      {"HardSigmoid", &Importer::convert_hardsigmoid},
      {"HardSwish", &Importer::convert_hardswish},
      {"Relu", &Importer::convert_plain_activation},
      {"Sigmoid", &Importer::convert_plain_activation},
      {"Tanh", &Importer::convert_plain_activation},
      {"LeakyRelu", &Importer::convert_leaky_relu},
      {"Elu", &Importer::convert_elu},
      {"PRelu", &Importer::convert_prelu},
      {"Softmax", &Importer::convert_softmax},
      {"LogSoftmax", &Importer::convert_softmax},
      {"Gelu", &Importer::convert_gelu},
      // Functions on tensors.
      {"ReduceMean", &Importer::convert_reduce},
      {"ReduceSum", &Importer::convert_reduce},
      {"ReduceSumSquare", &Importer::convert_reduce},
      {"Add", &Importer::convert_binary},
      {"Sub", &Importer::convert_binary},
      {"Mul", &Importer::convert_binary},
      {"Div", &Importer::convert_binary},
      {"MatMul", &Importer::convert_binary},
      {"Concat", &Importer::convert_concat},
      // Layers with weights or options.
      {"Dropout", &Importer::convert_dropout},
      {"Gemm", &Importer::convert_gemm},
      {"Conv", &Importer::convert_conv},
      {"BatchNormalization", &Importer::convert_batch_norm},
      {"LayerNormalization", &Importer::convert_layer_norm},
      {"MaxPool", &Importer::convert_pool},
      {"AveragePool", &Importer::convert_pool},
      {"GlobalAveragePool", &Importer::convert_global_average_pool},
      {"Gather", &Importer::convert_gather},
  };
  return table;
}

// The operators the importer maps alone: the table's. The ones read only as parts of a
// pattern (Pow, Sqrt and Erf in layer_norm's and GELU's decompositions) are not among them;
// check_supported passes a pattern's nodes without asking.
const std::set<std::string>& supported_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> names;
    for (const auto& entry : Importer::converters()) names.insert(entry.first);
    return names;
  }();
  return ops;
}

// A node of an operator in a form that has no node in NN Studio.
void Importer::no_node(int i) {
  unsupported_form(i, "this form of " + node(i).op_type() + " has no node in NN Studio");
}

// ConstantOfShape, Equal and Where of tensors rather than sizes.
void Importer::only_sizes(int i) {
  unsupported_form(i, "only sizes read from a shape are computed so (an Expand's sizes)");
}

// Input k of node i, or "" where it has none.
std::string Importer::input(int i, int k) const {
  const NodeProto& n = node(i);
  return k < n.input_size() ? n.input(k) : std::string();
}

// Input k of node i as a constant, which a layer's weight must be.
Tensor Importer::need_constant(int i, int k, const std::string& what) const {
  if (input(i, k).empty() || !constants_.contains(resolve(input(i, k))))
    unsupported_form(i, what + " must be an initializer (NN Studio's layers own their weights)");
  return constant(input(i, k));
}

// ---- Activations --------------------------------------------------------------------------------

// Clip: torch writes relu6 and hardtanh so, with both bounds; min 0 alone is a ReLU.
void Importer::convert_clip(int i) {
  const bool has_lo = !input(i, 1).empty(), has_hi = !input(i, 2).empty();
  const double lo = has_lo ? scalar(resolve(input(i, 1))).value_or(NAN) : 0;
  const double hi = has_hi ? scalar(resolve(input(i, 2))).value_or(NAN) : 0;
  if (std::isnan(lo) || std::isnan(hi))
    unsupported_form(i, "its bounds are computed; NN Studio needs them fixed");
  Unit u = unit_for(i, has_hi ? "F.hardtanh" : "ReLU");
  u.inputs = {input(i, 0)};
  if (has_lo && has_hi) {
    u.options = {{"min_val", shortest(lo)}, {"max_val", shortest(hi)}};
  } else if (has_hi || !has_lo || lo != 0) {
    unsupported_form(i, "a Clip with one bound has a node only as a ReLU (min 0)");
  }
  add_unit(std::move(u));
}

void Importer::convert_hardsigmoid(int i) {
  if (!is_torch_hardsigmoid(node(i)))
    unsupported_form(i, "only PyTorch's hardsigmoid (alpha 1/6, beta 0.5) has a node");
  Unit u = unit_for(i, "F.hardsigmoid");
  u.inputs = {input(i, 0)};
  add_unit(std::move(u));
}

void Importer::convert_hardswish(int i) {
  Unit u = unit_for(i, "F.hardswish");
  u.inputs = {input(i, 0)};
  add_unit(std::move(u));
}

// Relu, Sigmoid and Tanh, which have no options.
void Importer::convert_plain_activation(int i) {
  const std::string& op = node(i).op_type();
  Unit u = unit_for(i, op == "Relu" ? "ReLU" : op);
  u.inputs = {input(i, 0)};
  add_unit(std::move(u));
}

void Importer::convert_leaky_relu(int i) {
  Unit u = unit_for(i, "LeakyReLU");
  u.inputs = {input(i, 0)};
  u.options = {{"negative_slope", attr_float(node(i), "alpha", 0.01)}};
  add_unit(std::move(u));
}

void Importer::convert_elu(int i) {
  Unit u = unit_for(i, "ELU");
  u.inputs = {input(i, 0)};
  u.options = {{"alpha", attr_float(node(i), "alpha", 1.0)}};
  add_unit(std::move(u));
}

void Importer::convert_prelu(int i) {
  const Tensor slope = need_constant(i, 1, "its slope");
  const SymShape& x = shape_of(input(i, 0));
  // One slope, or one per channel (dim 1) broadcast as [C, 1, ...].
  if (slope.numel() != 1 && (x.size() < 2 || slope.numel() != x[1]))
    unsupported_form(i, "its slope is neither one value nor one per channel (dim 1)");
  Unit u = unit_for(i, "PReLU");
  u.inputs = {input(i, 0)};
  u.options = {{"num_parameters", slope.numel()}};
  u.state = {{"weight", slope.reshape({-1})}};
  u.sources = {source_of(resolve(input(i, 1)))};
  add_unit(std::move(u));
}

// Softmax and LogSoftmax, the nodes of the operators' own names.
void Importer::convert_softmax(int i) {
  const NodeProto& n = node(i);
  const size_t rank = shape_of(input(i, 0)).size();
  Unit u = unit_for(i, n.op_type());
  u.inputs = {input(i, 0)};
  const int64_t axis = attr_int(n, "axis", -1);
  axis_dim(i, axis, rank);  // checked; kept as written (dim=-1 as PyTorch's code says)
  u.options = {{"dim", axis}};
  add_unit(std::move(u));
}

// ---- Functions on tensors -----------------------------------------------------------------------

// The axes a reduction names: its attribute (up to opset 17; ReduceSum's up to 12) or its
// second input (from 18; ReduceSum's from 13); empty for none, nullopt for computed ones.
std::optional<std::vector<int64_t>> Importer::reduction_axes(int i) const {
  if (auto attr = attr_ints(node(i), "axes")) return attr;
  if (input(i, 1).empty()) return std::vector<int64_t>{};
  auto c = constants_.find(resolve(input(i, 1)));
  if (c == constants_.end() || c->second.dtype() != kInt64) return std::nullopt;
  const Tensor t = c->second.contiguous();
  return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
}

// ReduceMean as a Mean over dims after the batch. ReduceSum and ReduceSumSquare as that Mean
// (of x * x for the squares) times the number of entries it averages: NN Studio has no sum
// node, and the product is the sum.
void Importer::convert_reduce(int i) {
  const NodeProto& n = node(i);
  const std::optional<std::vector<int64_t>> given = reduction_axes(i);
  if (!given) unsupported_form(i, "its axes are computed; NN Studio needs them fixed");
  std::vector<int64_t> axes = *given;
  if (axes.empty()) {
    // No axes reduce every dim, or (noop_with_empty_axes, opset 18; ReduceSum's 13) none.
    if (attr_int(n, "noop_with_empty_axes", 0) != 0) {
      aliases_[n.output(0)] = input(i, 0);
      return;
    }
    unsupported_form(i, "it reduces over every dim, the batch's too");
  }
  const SymShape x = shape_of(input(i, 0));
  int64_t count = 1;
  for (int64_t& a : axes) {
    a = axis_dim(i, a, x.size());
    if (a == 0) unsupported_form(i, "it reduces over the batch (dim 0)");
    count *= x[a];
  }
  if (std::set<int64_t>(axes.begin(), axes.end()).size() != axes.size())
    unsupported_form(i, "it names an axis twice");
  const std::string& op = n.op_type();
  std::string value = input(i, 0);
  if (op == "ReduceSumSquare") {
    Unit square = unit_for(i, "Mul");
    square.inputs = {value, value};
    square.options = {{"inputs", 2}};
    square.output = n.output(0) + "#square";
    value = square.output;
    add_unit(std::move(square));
  }
  Unit mean = unit_for(i, "Mean");
  mean.inputs = {value};
  mean.options = {{"dim", json_list(axes)}, {"keepdim", attr_int(n, "keepdims", 1) != 0}};
  if (op == "ReduceMean") {
    add_unit(std::move(mean));
    return;
  }
  mean.output = n.output(0) + "#mean";
  const std::string count_value = n.output(0) + "#count";
  constants_.emplace(count_value, scalar_tensor(static_cast<double>(count)));
  Unit times = unit_for(i, "Mul");
  times.inputs = {mean.output, count_value};
  times.options = {{"inputs", 2}};
  add_unit(std::move(mean));
  add_unit(std::move(times));
}

// Gelu (opset 20) as GELU, exact or with its tanh approximation.
void Importer::convert_gelu(int i) {
  const std::string approximate = attr_string(node(i), "approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    unsupported_form(i, "approximate '" + approximate + "' (GELU's are none and tanh)");
  Unit u = unit_for(i, "GELU");
  u.inputs = {input(i, 0)};
  u.options = {{"approximate", approximate}};
  add_unit(std::move(u));
}

// Add, Sub, Mul, Div and MatMul of two tensors, as the nodes of their names; Add's and Mul's
// nodes take any number of inputs, so they say how many.
void Importer::convert_binary(int i) {
  const std::string& op = node(i).op_type();
  Unit u = unit_for(i, op);
  u.inputs = {input(i, 0), input(i, 1)};
  if (op == "Add" || op == "Mul") u.options = {{"inputs", 2}};
  add_unit(std::move(u));
}

// Concat of two or more tensors; of one, an alias.
void Importer::convert_concat(int i) {
  const NodeProto& n = node(i);
  Unit u = unit_for(i, "Concat");
  for (const std::string& v : n.input()) u.inputs.push_back(v);
  if (u.inputs.size() < 2) {
    aliases_[n.output(0)] = input(i, 0);
    return;
  }
  const size_t rank = shape_of(input(i, 0)).size();
  const int64_t dim = axis_dim(i, attr_int(n, "axis", 0), rank);
  if (dim == 0) unsupported_form(i, "it concatenates along the batch (dim 0)");
  u.options = {{"inputs", static_cast<int64_t>(u.inputs.size())}, {"dim", dim}};
  add_unit(std::move(u));
}

// ---- Layers with weights or options -------------------------------------------------------------

void Importer::convert_dropout(int i) {
  Unit u = unit_for(i, "Dropout");
  u.inputs = {input(i, 0)};
  const std::optional<double> ratio = input(i, 1).empty() ? 0.5 : scalar(resolve(input(i, 1)));
  if (!ratio) unsupported_form(i, "its ratio is computed; NN Studio's Dropout has a fixed p");
  u.options = {{"p", *ratio}};
  add_unit(std::move(u));
}

// Gemm as a Linear, alpha and beta folded into its weight and bias.
void Importer::convert_gemm(int i) {
  const NodeProto& n = node(i);
  if (attr_int(n, "transA", 0) != 0) unsupported_form(i, "transA=1 is not a Linear");
  const std::string a = input(i, 0);
  if (constants_.contains(resolve(a))) unsupported_form(i, "its input A is a constant");
  Tensor w = need_constant(i, 1, "its B (the weight)");
  if (w.dim() != 2) unsupported_form(i, "its weight is not a matrix");
  if (attr_int(n, "transB", 0) == 0) w = w.transpose(0, 1).contiguous();
  const double alpha = attr_float(n, "alpha", 1), beta = attr_float(n, "beta", 1);
  if (alpha != 1) w = w * alpha;
  Unit u = unit_for(i, "Linear");
  u.inputs = {a};
  u.options = {{"in_features", w.shape()[1]}, {"out_features", w.shape()[0]}, {"bias", false}};
  u.state = {{"weight", w}};
  u.sources = {input(i, 1)};
  if (!input(i, 2).empty()) {
    Tensor b = need_constant(i, 2, "its C (the bias)");
    if (b.numel() != w.shape()[0] && b.numel() != 1)
      unsupported_form(i, "its bias does not have one value per output");
    b = b.numel() == 1 ? full({w.shape()[0]}, b.to(kFloat64).contiguous().data_ptr<double>()[0])
                       : b.reshape({w.shape()[0]});
    if (beta != 1) b = b * beta;
    u.options["bias"] = true;
    u.state.emplace_back("bias", b);
    u.sources.push_back(input(i, 2));
  }
  add_unit(std::move(u));
}

// Conv as a Conv1d or Conv2d, a zero Pad before it folded into its padding.
void Importer::convert_conv(int i) {
  const NodeProto& n = node(i);
  const Tensor w = need_constant(i, 1, "its weight");
  const int64_t spatial = w.dim() - 2;
  if (spatial != 1 && spatial != 2)
    unsupported_form(i,
                     std::to_string(spatial) + "-D convolution (NN Studio has Conv1d and Conv2d)");
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    unsupported_form(i, "auto_pad " + auto_pad + " (the padding must be explicit)");
  std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (static_cast<int64_t>(pads.size()) != 2 * spatial) unsupported_form(i, "its pads do not fit");
  for (int64_t k = 0; k < spatial; ++k) {
    if (pads[k] != pads[k + spatial])
      unsupported_form(i, "its padding differs at the two ends of a dim");
  }
  pads.resize(spatial);
  const std::string in = take_padding(input(i, 0), pads);
  const int64_t groups = attr_int(n, "group", 1);
  if (groups < 1 || groups > w.shape()[0]) unsupported_form(i, "its group is out of range");
  Unit u = unit_for(i, spatial == 1 ? "Conv1d" : "Conv2d");
  u.inputs = {in};
  const std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
  // Conv1d takes single integers, Conv2d lists of two.
  auto sizes = [spatial](const std::vector<int64_t>& v) {
    return spatial == 1 && v.size() == 1 ? Json(v[0]) : json_list(v);
  };
  const std::vector<int64_t> ones(spatial, 1);
  u.options = {{"in_channels", w.shape()[1] * groups},
               {"out_channels", w.shape()[0]},
               {"kernel_size", sizes(kernel)},
               {"stride", sizes(attr_ints(n, "strides").value_or(ones))},
               {"padding", sizes(pads)},
               {"dilation", sizes(attr_ints(n, "dilations").value_or(ones))},
               {"groups", groups},
               {"bias", !input(i, 2).empty()}};
  if (auto ks = attr_ints(n, "kernel_shape"); ks && *ks != kernel)
    unsupported_form(i, "its kernel_shape differs from its weight's");
  u.state = {{"weight", w}};
  u.sources = {input(i, 1)};
  if (!input(i, 2).empty()) {
    u.state.emplace_back("bias", need_constant(i, 2, "its bias").reshape({-1}));
    u.sources.push_back(input(i, 2));
  }
  add_unit(std::move(u));
}

// BatchNormalization in inference mode as a BatchNorm1d or BatchNorm2d.
void Importer::convert_batch_norm(int i) {
  const NodeProto& n = node(i);
  if (attr_int(n, "training_mode", 0) != 0) unsupported_form(i, "training_mode=1");
  const size_t rank = shape_of(input(i, 0)).size();
  if (rank != 2 && rank != 3 && rank != 4)
    unsupported_form(i,
                     "its input has rank " + std::to_string(rank) + " (2 to 4 fit BatchNorm1d/2d)");
  Unit u = unit_for(i, rank == 4 ? "BatchNorm2d" : "BatchNorm1d");
  u.inputs = {input(i, 0)};
  const Tensor scale = need_constant(i, 1, "its scale");
  u.options = {{"num_features", scale.numel()},
               {"eps", attr_float(n, "epsilon", 1e-5)},
               {"momentum", shortest(1 - attr_float(n, "momentum", 0.9))}};
  const char* entries[] = {"weight", "bias", "running_mean", "running_var"};
  for (int k = 0; k < 4; ++k) {
    u.state.emplace_back(entries[k],
                         need_constant(i, k + 1, std::string("its ") + entries[k]).reshape({-1}));
    u.sources.push_back(input(i, k + 1));
  }
  add_unit(std::move(u));
}

// LayerNormalization as a LayerNorm over the dims from its axis, with a zero bias if it has none.
void Importer::convert_layer_norm(int i) {
  const NodeProto& n = node(i);
  const SymShape& x = shape_of(input(i, 0));
  const int64_t axis = axis_dim(i, attr_int(n, "axis", -1), x.size());
  if (axis == 0) unsupported_form(i, "it normalizes over the batch");
  if (attr_int(n, "stash_type", 1) != 1) unsupported_form(i, "stash_type other than float");
  std::vector<int64_t> sizes(x.begin() + axis, x.end());
  Unit u = unit_for(i, "LayerNorm");
  u.inputs = {input(i, 0)};
  const Shape shape(sizes.begin(), sizes.end());
  u.options = {{"normalized_shape", json_list(sizes)},
               {"eps", attr_float(n, "epsilon", 1e-5)},
               {"elementwise_affine", true}};
  u.state = {{"weight", need_constant(i, 1, "its scale").reshape(shape)}};
  u.sources = {input(i, 1)};
  if (!input(i, 2).empty()) {
    u.state.emplace_back("bias", need_constant(i, 2, "its bias").reshape(shape));
    u.sources.push_back(input(i, 2));
  } else {
    u.state.emplace_back("bias", zeros(shape));
  }
  add_unit(std::move(u));
}

// MaxPool and AveragePool as MaxPool2d and AvgPool2d.
void Importer::convert_pool(int i) {
  const NodeProto& n = node(i);
  const auto kernel = attr_ints(n, "kernel_shape");
  if (!kernel || kernel->size() != 2)
    unsupported_form(i, "only 2-D pooling (MaxPool2d, AvgPool2d) has a node");
  const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID")
    unsupported_form(i, "auto_pad " + auto_pad + " (the padding must be explicit)");
  std::vector<int64_t> pads = attr_ints(n, "pads").value_or(std::vector<int64_t>(4, 0));
  if (pads.size() != 4 || pads[0] != pads[2] || pads[1] != pads[3])
    unsupported_form(i, "its padding differs at the two ends of a dim");
  pads.resize(2);
  const bool max = n.op_type() == "MaxPool";
  if (max && attr_int(n, "storage_order", 0) != 0) unsupported_form(i, "storage_order=1");
  // A zero Pad before an average pool is its padding, with the padded zeros counted.
  const bool padded = !max && zero_pads_.contains(resolve(input(i, 0)));
  const std::string in = max ? input(i, 0) : take_padding(input(i, 0), pads);
  Unit u = unit_for(i, max ? "MaxPool2d" : "AvgPool2d");
  u.inputs = {in};
  u.options = {{"kernel_size", json_list(*kernel)},
               {"stride", json_list(attr_ints(n, "strides").value_or(std::vector<int64_t>{1, 1}))},
               {"padding", json_list(pads)},
               {"ceil_mode", attr_int(n, "ceil_mode", 0) != 0}};
  if (max) {
    u.options["dilation"] =
        json_list(attr_ints(n, "dilations").value_or(std::vector<int64_t>{1, 1}));
  } else {
    u.options["count_include_pad"] = padded || attr_int(n, "count_include_pad", 0) != 0;
    if (attr_ints(n, "dilations").value_or(std::vector<int64_t>{1, 1}) !=
        std::vector<int64_t>{1, 1})
      unsupported_form(i, "dilated average pooling");
  }
  add_unit(std::move(u));
}

void Importer::convert_global_average_pool(int i) {
  if (shape_of(input(i, 0)).size() != 4)
    unsupported_form(i, "only [N, C, H, W] inputs have a node");
  Unit u = unit_for(i, "AdaptiveAvgPool2d");
  u.inputs = {input(i, 0)};
  u.options = {{"output_size", Json::array({1, 1})}};
  add_unit(std::move(u));
}

// Gather of an activation is a Select or Narrow (shapes.cpp), of a constant an Embedding.
void Importer::convert_gather(int i) {
  if (constants_.contains(resolve(input(i, 0)))) {
    convert_embedding(i);
  } else {
    convert_select(i);
  }
}

void Importer::convert_embedding(int i) {
  const Tensor w = need_constant(i, 0, "its data (the embedding table)");
  if (w.dim() != 2 || attr_int(node(i), "axis", 0) != 0)
    unsupported_form(i, "only a lookup of rows of a matrix is an Embedding");
  Unit u = unit_for(i, "Embedding");
  u.inputs = {input(i, 1)};
  u.options = {{"num_embeddings", w.shape()[0]}, {"embedding_dim", w.shape()[1]}};
  u.state = {{"weight", w}};
  u.sources = {input(i, 0)};
  add_unit(std::move(u));
}

// ---- Identity and padding: no node of their own -------------------------------------------------

void Importer::convert_identity(int i) {
  aliases_[node(i).output(0)] = input(i, 0);
}

// A constant zero Pad of the dims after N and C: nothing when it pads nothing, else the
// padding of the Conv or AveragePool that reads it (torch.onnx.export writes avg_pool2d so).
void Importer::convert_pad(int i) {
  const NodeProto& n = node(i);
  if (attr_string(n, "mode", "constant") != "constant")
    unsupported_form(i, "only constant padding has a node (in a Conv's or pool's padding)");
  if (n.input_size() > 2 && !n.input(2).empty() && !near(scalar(resolve(n.input(2))), 0))
    unsupported_form(i, "only zero padding has a node");
  if (n.input_size() < 2 || !constants_.contains(resolve(n.input(1))))
    unsupported_form(i, "its pads are computed; NN Studio needs them fixed");
  const Tensor p = constant(n.input(1)).to(kInt64).contiguous();
  const std::vector<int64_t> given(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
  const size_t rank = shape_of(n.input(0)).size();
  const std::vector<int64_t> pads = pads_of_every_axis(i, given, rank);
  if (std::all_of(pads.begin(), pads.end(), [](int64_t v) { return v == 0; })) {
    aliases_[n.output(0)] = n.input(0);
    return;
  }
  std::vector<int64_t> spatial;
  for (size_t k = 0; k < rank; ++k) {
    if (pads[k] != pads[k + rank] || pads[k] < 0 || (k < 2 && pads[k] != 0))
      unsupported_form(i,
                       "only the same padding at both ends of the dims after N and C has a "
                       "node (in a Conv's or pool's padding)");
    if (k >= 2) spatial.push_back(pads[k]);
  }
  for (int c : consumers_[n.output(0)]) {
    const std::string& op = node(c).op_type();
    if ((op != "Conv" && op != "AveragePool") || node(c).input(0) != n.output(0) ||
        is_graph_output(n.output(0)))
      unsupported_form(i, "its output is read by " + label(c) +
                              "; a Pad has a node only as a Conv's or AveragePool's padding");
  }
  zero_pads_[n.output(0)] = {n.input(0), spatial};
}

// A Pad's pads for every axis: as given, or (its axes input, opset 18) spread over the axes it
// names, the others unpadded.
std::vector<int64_t> Importer::pads_of_every_axis(int i, const std::vector<int64_t>& given,
                                                  size_t rank) const {
  if (input(i, 3).empty()) {
    if (given.size() != 2 * rank) unsupported_form(i, "its pads do not fit its input's rank");
    return given;
  }
  const std::optional<std::vector<int64_t>> axes = int_values(input(i, 3));
  if (!axes) unsupported_form(i, "its axes are computed; NN Studio needs them fixed");
  if (given.size() != 2 * axes->size()) unsupported_form(i, "its pads do not fit its axes");
  std::vector<int64_t> pads(2 * rank, 0);
  std::set<int64_t> seen;
  for (size_t k = 0; k < axes->size(); ++k) {
    const int64_t a = axis_dim(i, (*axes)[k], rank);
    if (!seen.insert(a).second) unsupported_form(i, "it names an axis twice");
    pads[a] = given[k];
    pads[a + rank] = given[k + axes->size()];
  }
  return pads;
}

// The value a Conv or pool reads, with a zero Pad before it folded into its own pads.
std::string Importer::take_padding(const std::string& value, std::vector<int64_t>& pads) {
  auto it = zero_pads_.find(resolve(value));
  if (it == zero_pads_.end()) return value;
  const auto& [input, extra] = it->second;
  if (extra.size() != pads.size()) fail("a Pad's dims do not fit the Conv or pool that reads it");
  for (size_t k = 0; k < pads.size(); ++k) pads[k] += extra[k];
  return input;
}

}  // namespace nns::onnx::detail
