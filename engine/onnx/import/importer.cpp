// SPDX-License-Identifier: GPL-3.0-or-later
// The importer's core: the model read and checked whole, one unit per node or pattern, and each
// node dispatched through the operator table to its converter (layers.cpp, shapes.cpp).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/onnx/import/importer.h"
#include "engine/onnx/onnx.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/tensor/factories.h"

namespace nns::onnx::detail {

graph::ImportedProject Importer::run() {
  check_model();
  read_values();
  match_patterns();
  check_supported();
  convert_nodes();
  name_units();
  graph::ImportedProject out;
  out.project = make_project();
  out.weights = make_weights(out.project);
  choose_dataset(out);
  out.notes = notes_;
  return out;
}

std::string Importer::label(int index) const {
  const NodeProto& n = graph_.node(index);
  return n.op_type() + " '" + (n.name().empty() ? "#" + std::to_string(index) : n.name()) + "'";
}

// ---- The model as a whole -----------------------------------------------------------------------

void Importer::check_model() {
  int64_t opset = -1;
  for (const auto& o : model_.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0) fail("the model imports no opset of the default ONNX domain");
  check_import_opset(opset, source_);
  for (const NodeProto& n : graph_.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx")
      fail("node '" + n.name() + "' is the operator " + n.op_type() + " of the domain '" +
           n.domain() + "', which NN Studio does not read");
  }
  if (graph_.output_size() == 0) fail("the graph has no outputs");
}

// Initializers, graph inputs, Constants and the aliases Identity makes; the producer of every
// value, checked to come before its consumers (ONNX's nodes are in topological order).
void Importer::read_values() {
  for (const auto& init : graph_.initializer()) {
    if (init.name().empty()) fail("an initializer has no name");
    if (!constants_.emplace(init.name(), from_tensor_proto(init, source_)).second)
      fail("two initializers are named '" + init.name() + "'");
    initializers_.insert(init.name());
  }
  for (const auto& input : graph_.input()) {
    if (constants_.contains(input.name())) continue;  // an initializer listed as an input
    read_input(input);
  }
  for (int i = 0; i < graph_.node_size(); ++i) {
    const NodeProto& n = graph_.node(i);
    scopes_.push_back(scope_of_node(n));
    check_arity(i);
    for (const std::string& in : n.input()) {
      if (in.empty()) continue;
      if (!known_.contains(in) && !constants_.contains(in))
        fail(label(i) + " reads '" + in +
             "', which no earlier node, input or initializer makes (the nodes must be in "
             "topological order)");
      consumers_[in].push_back(i);
    }
    for (const std::string& out : n.output()) {
      if (out.empty()) continue;
      if (known_.contains(out) || constants_.contains(out))
        fail(label(i) + " writes '" + out + "', which is already defined");
      producer_[out] = i;
      known_.insert(out);
    }
    if (n.op_type() == "Constant") read_constant(i);
    if (n.op_type() == "Transpose") fold_transpose(i);
    if (n.op_type() == "Reshape" || n.op_type() == "Unsqueeze" || n.op_type() == "Squeeze")
      fold_reshape(i);
    if (n.op_type() == "Identity" && n.input_size() == 1 && constants_.contains(n.input(0))) {
      // torch.onnx.export writes equal initializers once, and the others as its Identity.
      const std::string& out = n.output(0);
      constants_.emplace(out, constants_.at(n.input(0)));
      if (initializers_.contains(n.input(0))) initializers_.insert(out);
      known_.erase(out);
      done_.insert(i);
    }
  }
  for (const auto& out : graph_.output()) {
    if (constants_.contains(out.name()))
      fail("the output '" + out.name() + "' is a constant, not computed from the inputs");
    if (!known_.contains(out.name())) fail("the output '" + out.name() + "' is made by no node");
  }
}

// The inputs an operator needs are there, so that no later step reads one that is not.
void Importer::check_arity(int i) const {
  static const std::map<std::string, int> needed = {{"Gemm", 2},
                                                    {"MatMul", 2},
                                                    {"Conv", 2},
                                                    {"BatchNormalization", 5},
                                                    {"LayerNormalization", 2},
                                                    {"Relu", 1},
                                                    {"LeakyRelu", 1},
                                                    {"PRelu", 2},
                                                    {"Elu", 1},
                                                    {"Sigmoid", 1},
                                                    {"Tanh", 1},
                                                    {"Softmax", 1},
                                                    {"LogSoftmax", 1},
                                                    {"MaxPool", 1},
                                                    {"AveragePool", 1},
                                                    {"GlobalAveragePool", 1},
                                                    {"Flatten", 1},
                                                    {"Reshape", 2},
                                                    {"Unsqueeze", 2},
                                                    {"Squeeze", 1},
                                                    {"Concat", 1},
                                                    {"Add", 2},
                                                    {"Mul", 2},
                                                    {"Identity", 1},
                                                    {"Dropout", 1},
                                                    {"Gather", 2},
                                                    {"Constant", 0},
                                                    {"Pad", 2},
                                                    {"ReduceMean", 1},
                                                    {"ReduceSum", 1},
                                                    {"ReduceSumSquare", 1},
                                                    {"Gelu", 1},
                                                    {"Sub", 2},
                                                    {"Pow", 2},
                                                    {"Sqrt", 1},
                                                    {"Div", 2},
                                                    {"Erf", 1},
                                                    {"Transpose", 1},
                                                    {"Shape", 1},
                                                    {"Cast", 1},
                                                    {"Clip", 1},
                                                    {"HardSigmoid", 1},
                                                    {"HardSwish", 1},
                                                    {"Slice", 3},
                                                    {"Split", 1},
                                                    {"Expand", 2},
                                                    {"ConstantOfShape", 1},
                                                    {"Equal", 2},
                                                    {"Where", 3}};
  const NodeProto& n = node(i);
  if (n.output_size() < 1 || n.output(0).empty()) fail(label(i) + " has no output");
  auto it = needed.find(n.op_type());
  if (it == needed.end()) return;  // not read: check_supported lists it
  for (int k = 0; k < it->second; ++k) {
    if (k >= n.input_size() || n.input(k).empty())
      fail(label(i) + " lacks its input " + std::to_string(k + 1) + " (it needs " +
           std::to_string(it->second) + ")");
  }
}

void Importer::read_input(const ::onnx::ValueInfoProto& input) {
  const std::string what = "input '" + input.name() + "'";
  if (!input.type().has_tensor_type()) fail(what + " is not a tensor");
  const auto& t = input.type().tensor_type();
  std::string dtype;
  if (t.elem_type() == ::onnx::TensorProto::FLOAT) {
    dtype = "float32";
  } else if (t.elem_type() == ::onnx::TensorProto::INT64) {
    dtype = "int64";
  } else {
    fail(what + " has the element type " +
         ::onnx::TensorProto::DataType_Name(
             static_cast<::onnx::TensorProto::DataType>(t.elem_type())) +
         "; NN Studio's inputs are float32 or int64");
  }
  if (!t.has_shape() || t.shape().dim_size() == 0)
    fail(what + " has no shape; NN Studio needs [batch, ...] with fixed sizes after the batch");
  SymShape shape{-1};
  Json sample = Json::array();
  int64_t elements = 1;
  for (int d = 1; d < t.shape().dim_size(); ++d) {
    const auto& dim = t.shape().dim(d);
    if (!dim.has_dim_value() || dim.dim_value() <= 0)
      fail(what + ": dim " + std::to_string(d) +
           " has no fixed size; NN Studio's inputs have fixed sizes apart from the batch (dim "
           "0)");
    // Bounds that keep every size computed from them far from overflowing.
    elements *= std::min<int64_t>(dim.dim_value(), int64_t{1} << 31);
    if (dim.dim_value() > (int64_t{1} << 31) || elements > (int64_t{1} << 40))
      fail(what + " has more than 2^40 elements in a sample");
    shape.push_back(dim.dim_value());
    sample.push_back(dim.dim_value());
  }
  if (t.shape().dim(0).has_dim_value())
    notes_.push_back(what + " has a fixed batch size of " +
                     std::to_string(t.shape().dim(0).dim_value()) +
                     "; NN Studio takes dim 0 as the batch of any size");
  if (sample.empty())
    fail(what + " has one dim, the batch; NN Studio's inputs have a sample shape after it");
  inputs_.push_back({input.name(), dtype, sample});
  shapes_[input.name()] = shape;
  known_.insert(input.name());
}

// A constant matrix's transpose (an exporter's W^T for x @ W^T) is a constant; its name
// stays the initializer's for naming the module.
void Importer::fold_transpose(int i) {
  const NodeProto& n = node(i);
  if (n.input_size() != 1 || !constants_.contains(n.input(0))) return;
  const Tensor& t = constants_.at(n.input(0));
  const std::vector<int64_t> perm = attr_ints(n, "perm").value_or(std::vector<int64_t>{1, 0});
  if (t.dim() != 2 || perm != std::vector<int64_t>{1, 0}) return;
  constants_.emplace(n.output(0), t.transpose(0, 1).contiguous());
  if (initializers_.contains(n.input(0))) folded_[n.output(0)] = n.input(0);
  known_.erase(n.output(0));
  done_.insert(i);
}

// A constant reshaped by constant sizes is a constant (NN Studio's own export views PReLU's
// slope [C] as [C, 1, 1] so); its name stays the initializer's for naming the module.
void Importer::fold_reshape(int i) {
  const NodeProto& n = node(i);
  if (!constants_.contains(n.input(0))) return;
  const Tensor& t = constants_.at(n.input(0));
  std::vector<int64_t> sizes;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    auto c = constants_.find(n.input(1));
    if (c == constants_.end() || c->second.dtype() != kInt64) return;
    const Tensor v = c->second.contiguous();
    sizes.assign(v.data_ptr<int64_t>(), v.data_ptr<int64_t>() + v.numel());
  } else if (auto axes = attr_ints(n, "axes")) {
    sizes = *axes;
  }
  Shape shape;
  const int64_t rank = t.dim();
  if (n.op_type() == "Reshape") {
    for (size_t k = 0; k < sizes.size(); ++k)
      shape.push_back(sizes[k] == 0 && static_cast<int64_t>(k) < rank ? t.shape()[k] : sizes[k]);
  } else {
    const bool unsqueeze = n.op_type() == "Unsqueeze";
    const int64_t out_rank = rank + (unsqueeze ? static_cast<int64_t>(sizes.size()) : 0);
    std::set<int64_t> axes;
    for (int64_t a : sizes) {
      if (a < -out_rank || a >= out_rank) return;
      axes.insert(a < 0 ? a + out_rank : a);
    }
    if (axes.size() != sizes.size()) return;  // an axis twice
    for (int64_t k = 0, from = 0; k < (unsqueeze ? out_rank : rank); ++k) {
      if (unsqueeze) {
        shape.push_back(axes.contains(k) ? 1 : t.shape()[from++]);
      } else if (!(axes.empty() ? t.shape()[k] == 1 : axes.contains(k))) {
        shape.push_back(t.shape()[k]);
      }
    }
  }
  Tensor folded;
  try {
    folded = t.reshape(shape);
  } catch (const Error&) {
    return;  // sizes that do not fit: left to the node's own conversion, which names it
  }
  constants_.emplace(n.output(0), folded);
  if (initializers_.contains(n.input(0))) {
    initializers_.insert(n.output(0));
    folded_[n.output(0)] = source_of(n.input(0));
  }
  known_.erase(n.output(0));
  done_.insert(i);
}

// The initializer a folded constant came from (itself when it is one).
std::string Importer::source_of(const std::string& value) const {
  auto it = folded_.find(value);
  return it == folded_.end() ? value : it->second;
}

void Importer::read_constant(int i) {
  const NodeProto& n = graph_.node(i);
  if (n.output_size() != 1) fail(label(i) + " has " + std::to_string(n.output_size()) + " outputs");
  const std::string& out = n.output(0);
  Tensor value;
  if (const AttributeProto* a = find_attribute(n, "value")) {
    value = from_tensor_proto(a->t(), source_ + ": " + label(i));
  } else if (const AttributeProto* f = find_attribute(n, "value_float")) {
    value = scalar_tensor(f->f());
  } else if (const AttributeProto* fs = find_attribute(n, "value_floats")) {
    value = from_vector(std::vector<float>(fs->floats().begin(), fs->floats().end()),
                        {fs->floats_size()});
  } else if (const AttributeProto* v = find_attribute(n, "value_int")) {
    value = scalar_tensor(static_cast<double>(v->i()), kInt64);
  } else if (const AttributeProto* vs = find_attribute(n, "value_ints")) {
    value =
        from_vector(std::vector<int64_t>(vs->ints().begin(), vs->ints().end()), {vs->ints_size()});
  } else {
    fail(label(i) + " has a value NN Studio does not read (a sparse tensor or a string)");
  }
  known_.erase(out);
  constants_.emplace(out, value);
  done_.insert(i);
}

// Every operator NN Studio has no node for, with the nodes that use it, at once.
void Importer::check_supported() {
  std::map<std::string, std::vector<std::string>> unsupported;
  for (int i = 0; i < graph_.node_size(); ++i) {
    const NodeProto& n = graph_.node(i);
    // Pow, Sqrt, Erf, ... are read only as parts of layer_norm's and GELU's decompositions.
    if (done_.contains(i) || supported_ops().contains(n.op_type())) continue;
    unsupported[n.op_type()].push_back(n.name().empty() ? "#" + std::to_string(i) : n.name());
  }
  if (unsupported.empty()) return;
  std::string message = "the model uses operators NN Studio has no node for:";
  for (const auto& [op, nodes] : unsupported) {
    message += "\n  " + op + " (" + std::to_string(nodes.size()) + "): ";
    for (size_t k = 0; k < nodes.size() && k < 8; ++k) message += (k ? ", " : "") + nodes[k];
    if (nodes.size() > 8) message += ", ...";
  }
  fail(message);
}

// ---- The graph's values and nodes ---------------------------------------------------------------

// The single node reading `value`, or -1.
int Importer::only_consumer(const std::string& value) const {
  auto it = consumers_.find(value);
  if (it == consumers_.end() || it->second.size() != 1 || is_graph_output(value)) return -1;
  return it->second[0];
}

bool Importer::is_graph_output(const std::string& value) const {
  for (const auto& o : graph_.output()) {
    if (o.name() == value) return true;
  }
  return false;
}

// A scalar constant's value (a one-element tensor).
std::optional<double> Importer::scalar(const std::string& value) const {
  auto it = constants_.find(value);
  if (it == constants_.end() || it->second.numel() != 1) return std::nullopt;
  const double v = it->second.to(kFloat64).contiguous().data_ptr<double>()[0];
  return std::isfinite(v) ? std::optional(v) : std::nullopt;
}

// For a binary node with one constant operand: the other operand and the constant's name.
std::optional<std::pair<std::string, std::string>> Importer::split_constant(
    const NodeProto& n) const {
  if (n.input_size() != 2) return std::nullopt;
  if (constants_.contains(n.input(1)) && !constants_.contains(n.input(0)))
    return std::pair{n.input(0), n.input(1)};
  if (constants_.contains(n.input(0)) && !constants_.contains(n.input(1)) && n.op_type() != "Sub" &&
      n.op_type() != "Div")
    return std::pair{n.input(1), n.input(0)};
  return std::nullopt;
}

int Importer::producer_of(const std::string& value) const {
  auto it = producer_.find(value);
  return it == producer_.end() ? -1 : it->second;
}

// ---- One unit per node or pattern, in order, with shapes ----------------------------------------

// The value an alias (Identity) stands for.
std::string Importer::resolve(const std::string& value) const {
  auto it = aliases_.find(value);
  return it == aliases_.end() ? value : resolve(it->second);
}

const SymShape& Importer::shape_of(const std::string& value) {
  const std::string v = resolve(value);
  auto it = shapes_.find(v);
  if (it != shapes_.end()) return it->second;
  if (shape_values_.contains(v))
    fail("the value '" + v +
         "' holds sizes read from a tensor's shape; NN Studio reads such "
         "sizes only as a Reshape's shape");
  // A constant operand becomes a Parameter (an initializer) or Buffer (a Constant's value).
  if (!constants_.contains(v))
    fail("the value '" + v + "' is read but no node it maps to makes it");
  return shapes_[constant_unit(v)];
}

// The Parameter or Buffer unit of a constant, made on first use; returns its value name.
std::string Importer::constant_unit(const std::string& name) {
  if (shapes_.contains(name)) return name;
  const Tensor& t = constants_.at(name);
  Unit u;
  const bool initializer = initializers_.contains(name);
  const int p = producer_of(name);
  u.scope = p >= 0 ? scope(p) : "";
  // A number in the code (x / 2, x - 1) is a Constant node, not a tensor of the state dict.
  if (!initializer && t.numel() == 1 && t.dim() <= 1 && is_floating_point(t.dtype())) {
    u.type = "Constant";
    u.options = {{"value", shortest(t.to(kFloat64).contiguous().data_ptr<double>()[0])}};
    u.output = name;
    u.label = "the constant '" + name + "'";
    units_.push_back(u);
    shapes_[name] = SymShape{};
    return name;
  }
  u.type = initializer ? "Parameter" : "Buffer";
  u.constant = !initializer;
  Shape shape = t.shape();
  if (shape.empty()) shape = {1};
  u.options = {{"shape", json_list(shape)}, {"init", "zeros"}};
  u.state = {{"", t.reshape(shape)}};
  u.sources = {name};
  u.output = name;
  u.label = "the constant '" + name + "'";
  units_.push_back(u);
  shapes_[name] = SymShape(shape.begin(), shape.end());
  return name;
}

// Adds a unit: its options checked and its output's shape inferred by the node type, so a
// model that does not fit is refused here, naming the ONNX node.
void Importer::add_unit(Unit u) {
  const graph::NodeType& type = graph::node_type(u.type);
  std::vector<SymShape> in;
  for (std::string& v : u.inputs) {
    v = resolve(v);
    if (constants_.contains(v)) v = constant_unit(v);
    in.push_back(shape_of(v));
  }
  try {
    const Json options = type.checked_options(u.options);
    const std::vector<SymShape> out = type.infer_shapes(options, in);
    if (out.empty()) fail(u.label + ": its node gives no output");
    shapes_[u.output] = out[0];
  } catch (const Error& e) {
    fail(u.label + ": " + e.what());
  }
  units_.push_back(std::move(u));
}

Unit Importer::unit_for(int i, std::string type) const {
  Unit u;
  u.type = std::move(type);
  u.scope = scope(i);
  u.label = label(i);
  u.output = node(i).output(0);
  return u;
}

void Importer::convert_nodes() {
  for (int i = 0; i < graph_.node_size(); ++i) {
    if (auto p = patterns_.find(i); p != patterns_.end()) {
      add_pattern(i, p->second);
      continue;
    }
    if (done_.contains(i)) continue;
    convert(i);
  }
}

void Importer::convert(int i) {
  const NodeProto& n = node(i);
  // Split's node gives each of its outputs (convert_split); every other node only its first.
  if (n.op_type() != "Split") {
    for (int k = 1; k < n.output_size(); ++k) {
      if (!n.output(k).empty() && consumers_.contains(n.output(k)))
        unsupported_form(i, "its output " + std::to_string(k) + " ('" + n.output(k) +
                                "') is used; NN Studio's node gives only the first");
    }
  }
  // Sizes PyTorch code computes from a shape come before the operators' tensor forms.
  if (convert_shape_arithmetic(i)) return;
  const auto it = converters().find(n.op_type());
  if (it == converters().end()) no_node(i);
  (this->*it->second)(i);
}

}  // namespace nns::onnx::detail
