// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "engine/data/catalog.h"
#include "engine/graph/builder.h"
#include "engine/graph/repeats.h"
#include "engine/onnx/onnx.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::onnx {
namespace {

using graph::Json;
using graph::NodeId;
using graph::SymShape;
using ::onnx::AttributeProto;
using ::onnx::NodeProto;

// The operators the importer maps, alone or as part of a pattern (layer_norm's and GELU's
// decompositions also use Pow, Sqrt and Erf; ConstantOfShape, Equal and Where are read as
// shape arithmetic only).
const std::set<std::string>& supported_ops() {
  static const std::set<std::string> ops = {"Gemm",
                                            "MatMul",
                                            "Conv",
                                            "BatchNormalization",
                                            "LayerNormalization",
                                            "Relu",
                                            "LeakyRelu",
                                            "PRelu",
                                            "Elu",
                                            "Sigmoid",
                                            "Tanh",
                                            "Softmax",
                                            "LogSoftmax",
                                            "MaxPool",
                                            "AveragePool",
                                            "GlobalAveragePool",
                                            "Flatten",
                                            "Reshape",
                                            "Unsqueeze",
                                            "Squeeze",
                                            "Concat",
                                            "Add",
                                            "Mul",
                                            "Identity",
                                            "Dropout",
                                            "Gather",
                                            "Constant",
                                            "Pad",
                                            "Transpose",
                                            "Shape",
                                            "Cast",
                                            "Clip",
                                            "HardSigmoid",
                                            "HardSwish",
                                            "ReduceMean",
                                            "Sub",
                                            "Div",
                                            "Slice",
                                            "Split",
                                            "Expand",
                                            "ConstantOfShape",
                                            "Equal",
                                            "Where"};
  return ops;
}

const AttributeProto* find_attribute(const NodeProto& node, const std::string& name) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const NodeProto& node, const std::string& name, int64_t fallback) {
  const AttributeProto* a = find_attribute(node, name);
  return a ? a->i() : fallback;
}

// A float32 as the double with the shortest decimal form that rounds to it: an epsilon stored
// as 9.99999975e-06 reads as 1e-05, as the PyTorch code that wrote it said.
double shortest(double value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value)).ptr;
  return std::strtod(std::string(buffer, end).c_str(), nullptr);
}

double attr_float(const NodeProto& node, const std::string& name, double fallback) {
  const AttributeProto* a = find_attribute(node, name);
  if (a && !std::isfinite(a->f()))
    throw ValueError("node '" + node.name() + "': its attribute " + name +
                     " is not a finite number");
  return a ? shortest(a->f()) : fallback;
}

std::string attr_string(const NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const AttributeProto* a = find_attribute(node, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> attr_ints(const NodeProto& node, const std::string& name) {
  const AttributeProto* a = find_attribute(node, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Json json_list(const std::vector<int64_t>& v) {
  Json out = Json::array();
  for (int64_t x : v) out.push_back(x);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A name usable as a node's (an attribute or a ModuleDict key): no '.', no odd characters.
std::string sanitized(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  while (!out.empty() && out.front() == '_') out.erase(out.begin());
  return out.empty() ? "node" : out;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         (s == "0" || s[0] != '0');
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A module path PyTorch would write (features.0, block.conv1): dot-separated identifiers or
// indices.
bool is_module_path(const std::string& path) {
  if (path.empty()) return false;
  for (const std::string& part : split(path, '.')) {
    if (part.empty()) return false;
    if (is_index(part)) continue;
    if (!(std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_')) return false;
    for (char c : part) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
  }
  return true;
}

// The module an initializer belongs to: "features.0.weight" -> "features.0"; none for names
// an exporter made up ("onnx::Conv_12", "weight").
std::string module_of_initializer(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string path = name.substr(0, dot);
  return is_module_path(path) ? path : "";
}

// The module scope torch.onnx.export puts in a node's name, as a module path: each scope is a
// module's name in its parent, or already its path below the parent for a container's member
// ("/features/features.2/Relu" -> features.2, "/layer1/layer1.0/relu/Relu" ->
// layer1.0.relu); none for a top-level function ("/Add") or a name without scopes.
std::string scope_of_node(const NodeProto& node) {
  const std::string& name = node.name();
  if (name.empty() || name[0] != '/') return "";
  const std::vector<std::string> parts = split(name.substr(1), '/');
  std::string path;
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    if (!is_module_path(parts[k])) return "";
    path = path.empty() || parts[k].rfind(path + ".", 0) == 0 ? parts[k] : path + "." + parts[k];
  }
  return path;
}

// The scope of the module a second call comes from: torch names the n-th call of `relu`
// "relu_n" ("layer1.0.relu_1" -> "layer1.0.relu"); the scope itself otherwise.
std::string first_call_scope(const std::string& scope) {
  const size_t underscore = scope.rfind('_');
  if (underscore == std::string::npos || underscore + 1 == scope.size()) return scope;
  for (size_t k = underscore + 1; k < scope.size(); ++k) {
    if (scope[k] < '0' || scope[k] > '9') return scope;
  }
  return scope.substr(0, underscore);
}

// The custom modules whose forward is x @ self.weight (+ self.bias), with the weight [in, out]
// under the module's own key: the seeds' MyLinear. ONNX keeps no class names, so these are
// their names in an imported project.
constexpr const char* kWeightBlock = "MatMulWeight";
constexpr const char* kWeightBiasBlock = "MatMulWeightBias";

graph::BlockDef weight_block(bool bias) {
  graph::BlockDef b;
  b.name = bias ? kWeightBiasBlock : kWeightBlock;
  b.description = bias ? "(input @ weight) + bias, the weight [in_features, out_features]"
                       : "input @ weight, the weight [in_features, out_features]";
  b.arguments = {{"in_features", 1}, {"out_features", 1}};
  graph::Graph& g = b.graph;
  double y = 0;
  auto add = [&g, &y](const std::string& type, const std::string& name, Json options) {
    const NodeId id = g.add_node(type, name, std::move(options), 0, y);
    y += 74;
    return id;
  };
  const NodeId in =
      add("Input", "in", {{"shape", Json::array({"$in_features"})}, {"dtype", "float32"}});
  const NodeId weight = add("Parameter", "weight",
                            {{"shape", Json::array({"$in_features", "$out_features"})},
                             {"init", "kaiming_uniform"},
                             {"requires_grad", true}});
  NodeId last = add("MatMul", "matmul", Json::object());
  g.connect({in, "out"}, {last, "in0"});
  g.connect({weight, "out"}, {last, "in1"});
  if (bias) {
    const NodeId b_node = add(
        "Parameter", "bias",
        {{"shape", Json::array({"$out_features"})}, {"init", "zeros"}, {"requires_grad", true}});
    const NodeId sum = add("Add", "add", {{"inputs", 2}});
    g.connect({last, "out"}, {sum, "in0"});
    g.connect({b_node, "out"}, {sum, "in1"});
    last = sum;
  }
  const NodeId out = add("Output", "out", Json::object());
  g.connect({last, "out"}, {out, "in"});
  return b;
}

// One node of the project to be: a layer, function, parameter or buffer, with the ONNX values
// it reads and writes.
struct Unit {
  std::string type;  // a NodeType name
  Json options = Json::object();
  std::vector<std::string> inputs;  // values, in port order
  std::vector<std::string> ports;   // the input ports, when not in (one) or in0, in1, ...
  std::string output;
  // The module's state by entry ("weight" -> tensor), and the initializers it came from.
  std::vector<std::pair<std::string, Tensor>> state;
  std::vector<std::string> sources;
  std::string scope;      // the ONNX node's module scope, if any
  std::string label;      // the ONNX node, for messages: "Conv '/conv1/Conv'"
  bool constant = false;  // a Buffer of a Constant node's value (not an initializer)
  // A custom block instance (type is a block of kWeightBlocks), not a NodeType.
  bool block = false;
  // Filled in when named and placed.
  std::string path;              // module path ("features.0"); a node name for functions
  std::optional<size_t> ref_of;  // a second call of this unit's module
  NodeId id = 0;
};

class Importer {
 public:
  Importer(const ::onnx::ModelProto& model, std::string source)
      : model_(model), graph_(model.graph()), source_(std::move(source)) {}

  Imported run() {
    check_model();
    read_values();
    match_patterns();
    check_supported();
    convert_nodes();
    name_units();
    Imported out;
    out.project = make_project();
    out.weights = make_weights(out.project);
    choose_dataset(out);
    out.notes = notes_;
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw ValueError(source_ + ": " + message);
  }

  std::string label(int index) const {
    const NodeProto& n = graph_.node(index);
    return n.op_type() + " '" + (n.name().empty() ? "#" + std::to_string(index) : n.name()) + "'";
  }

  // ---- The model as a whole ---------------------------------------------------------------------

  void check_model() {
    int64_t opset = -1;
    for (const auto& o : model_.opset_import()) {
      if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    }
    if (opset < 0) fail("the model imports no opset of the default ONNX domain");
    check_opset(opset, source_);
    for (const NodeProto& n : graph_.node()) {
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        fail("node '" + n.name() + "' is the operator " + n.op_type() + " of the domain '" +
             n.domain() + "', which NN Studio does not read");
    }
    if (graph_.output_size() == 0) fail("the graph has no outputs");
  }

  // Initializers, graph inputs, Constants and the aliases Identity makes; the producer of every
  // value, checked to come before its consumers (ONNX's nodes are in topological order).
  void read_values() {
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
  void check_arity(int i) const {
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

  void read_input(const ::onnx::ValueInfoProto& input) {
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
  void fold_transpose(int i) {
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
  void fold_reshape(int i) {
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
  std::string source_of(const std::string& value) const {
    auto it = folded_.find(value);
    return it == folded_.end() ? value : it->second;
  }

  void read_constant(int i) {
    const NodeProto& n = graph_.node(i);
    if (n.output_size() != 1)
      fail(label(i) + " has " + std::to_string(n.output_size()) + " outputs");
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
      value = from_vector(std::vector<int64_t>(vs->ints().begin(), vs->ints().end()),
                          {vs->ints_size()});
    } else {
      fail(label(i) + " has a value NN Studio does not read (a sparse tensor or a string)");
    }
    known_.erase(out);
    constants_.emplace(out, value);
    done_.insert(i);
  }

  // Every operator NN Studio has no node for, with the nodes that use it, at once.
  void check_supported() {
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

  // ---- Patterns: layer_norm's and GELU's decompositions, MatMul + Add
  // ----------------------------

  struct Pattern {
    std::string type;
    Json options = Json::object();
    std::vector<std::string> inputs;
    std::vector<std::string> ports;  // the node's input ports, when not in/in0, in1, ...
    std::string output;
    // entry -> constant; an entry ending in ^T takes the constant transposed.
    std::vector<std::pair<std::string, std::string>> state;
    std::vector<int> nodes;
  };

  // The single node reading `value`, or -1.
  int only_consumer(const std::string& value) const {
    auto it = consumers_.find(value);
    if (it == consumers_.end() || it->second.size() != 1 || is_graph_output(value)) return -1;
    return it->second[0];
  }

  bool is_graph_output(const std::string& value) const {
    for (const auto& o : graph_.output()) {
      if (o.name() == value) return true;
    }
    return false;
  }

  const NodeProto& node(int i) const { return graph_.node(i); }

  // A scalar constant's value (a one-element tensor).
  std::optional<double> scalar(const std::string& value) const {
    auto it = constants_.find(value);
    if (it == constants_.end() || it->second.numel() != 1) return std::nullopt;
    const double v = it->second.to(kFloat64).contiguous().data_ptr<double>()[0];
    return std::isfinite(v) ? std::optional(v) : std::nullopt;
  }

  // For a binary node with one constant operand: the other operand and the constant's name.
  std::optional<std::pair<std::string, std::string>> split_constant(const NodeProto& n) const {
    if (n.input_size() != 2) return std::nullopt;
    if (constants_.contains(n.input(1)) && !constants_.contains(n.input(0)))
      return std::pair{n.input(0), n.input(1)};
    if (constants_.contains(n.input(0)) && !constants_.contains(n.input(1)) &&
        n.op_type() != "Sub" && n.op_type() != "Div")
      return std::pair{n.input(1), n.input(0)};
    return std::nullopt;
  }

  static bool near(std::optional<double> v, double want) {
    return v && std::abs(*v - want) <= 1e-4 * std::max(1.0, std::abs(want));
  }

  // Attention first: its projections would otherwise be taken as Linears.
  void match_patterns() {
    for (bool attention : {true, false}) {
      for (int i = 0; i < graph_.node_size(); ++i) {
        if (done_.contains(i)) continue;
        const std::string& op = node(i).op_type();
        std::optional<Pattern> p;
        if (attention) {
          if (op == "Softmax") p = match_attention(i);
        } else if (op == "ReduceMean") {
          p = match_layer_norm(i);
        } else if (op == "Erf") {
          p = match_gelu(i);
        } else if (op == "Tanh") {
          p = match_gelu_tanh(i);
        } else if (op == "Sigmoid") {
          p = match_silu(i);
        } else if (op == "MatMul") {
          p = match_linear(i);
        } else if (op == "HardSigmoid") {
          p = match_hardswish(i);
        }
        if (!p || std::any_of(p->nodes.begin(), p->nodes.end(),
                              [this](int k) { return done_.contains(k); }))
          continue;
        for (int k : p->nodes) done_.insert(k);
        patterns_[*std::max_element(p->nodes.begin(), p->nodes.end())] = *p;
      }
    }
  }

  // x * hardsigmoid(x): hardswish, as torch.onnx.export writes it before opset 14.
  std::optional<Pattern> match_hardswish(int hard_sigmoid) {
    if (!is_torch_hardsigmoid(node(hard_sigmoid))) return std::nullopt;
    std::optional<Pattern> p = match_silu(hard_sigmoid);
    if (p) p->type = "F.hardswish";
    return p;
  }

  // HardSigmoid with PyTorch's hardsigmoid constants (relu6(x + 3) / 6).
  static bool is_torch_hardsigmoid(const NodeProto& n) {
    return near(attr_float(n, "alpha", 0.2), 1.0 / 6) && near(attr_float(n, "beta", 0.5), 0.5);
  }

  // nn.MultiheadAttention's forward as torch.onnx.export writes it (self-attention, as
  // nn.TransformerEncoderLayer and torchvision's VisionTransformer call it): every node in the
  // module's scope around one Softmax, reading one value and making one. The in-projection is a
  // MatMul by [E, 3E] (+ [3E]), the out-projection a Gemm or MatMul by [E, E] (+ [E]); the
  // query's scale 1/sqrt(head_dim) gives the heads. It moves the batch inside (to dim 1 and into
  // the heads), which no node by node import can keep: it comes back as the layer.
  std::optional<Pattern> match_attention(int softmax) {
    const std::string scope = scope_of_node(node(softmax));
    if (scope.empty()) return std::nullopt;
    static const std::set<std::string> parts = {
        "Transpose", "Shape", "Gather", "Div",     "Cast",      "MatMul", "Add",
        "Mul",       "Slice", "Split",  "Squeeze", "Unsqueeze", "Concat", "Reshape",
        "Softmax",   "Gemm",  "Sqrt",   "Dropout", "Identity"};
    std::vector<int> region;
    std::set<std::string> made;
    for (int j = 0; j < graph_.node_size(); ++j) {
      if (done_.contains(j) || scope_of_node(node(j)) != scope) continue;
      if (!parts.contains(node(j).op_type())) return std::nullopt;
      if (node(j).op_type() == "Softmax" && j != softmax) return std::nullopt;
      region.push_back(j);
      for (const std::string& o : node(j).output()) made.insert(o);
    }
    // What the region reads from outside (not constants) and what is read of it outside.
    std::vector<std::string> reads;
    for (int j : region) {
      for (const std::string& v : node(j).input()) {
        if (v.empty() || made.contains(v) || constants_.contains(v)) continue;
        if (std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
      }
    }
    std::vector<std::string> outputs;
    for (const std::string& v : made) {
      bool outside = is_graph_output(v);
      for (int c : consumers_[v])
        outside = outside || !std::binary_search(region.begin(), region.end(), c);
      if (outside) outputs.push_back(v);
    }
    if (reads.size() != 1 || outputs.size() != 1) return std::nullopt;
    const std::string x = reads[0];
    // The projections and the scale.
    std::string in_w, in_b, out_w, out_b;
    bool out_transposed = false;
    std::vector<double> scales;
    std::vector<std::string> float_adds;  // constants added (biases; anything else is a mask)
    for (int j : region) {
      const NodeProto& n = node(j);
      const std::string& op = n.op_type();
      const auto c = split_constant(n);
      const bool float_constant = c && constants_.at(c->second).dtype() != kInt64;
      if (op == "MatMul" && c) {
        const Shape& w = constants_.at(c->second).shape();
        if (w.size() != 2) return std::nullopt;
        if (w[1] == 3 * w[0] && in_w.empty()) {
          in_w = c->second;
        } else if (w[1] == w[0] && out_w.empty()) {
          out_w = c->second;
          out_transposed = true;
        } else {
          return std::nullopt;
        }
      } else if (op == "Gemm") {
        if (n.input_size() < 2 || !constants_.contains(n.input(1)) || !out_w.empty() ||
            attr_int(n, "transA", 0) != 0 || attr_float(n, "alpha", 1) != 1 ||
            attr_float(n, "beta", 1) != 1)
          return std::nullopt;
        out_w = n.input(1);
        out_transposed = attr_int(n, "transB", 0) == 0;
        if (n.input_size() > 2 && !n.input(2).empty()) {
          if (!constants_.contains(n.input(2))) return std::nullopt;
          out_b = n.input(2);
        }
      } else if (op == "Add" && float_constant) {
        float_adds.push_back(c->second);
      } else if ((op == "Div" || op == "Mul") && float_constant) {
        const std::optional<double> v = scalar(c->second);
        if (!v || *v <= 0) return std::nullopt;
        scales.push_back(op == "Div" ? 1 / *v : *v);
      }
    }
    if (in_w.empty() || out_w.empty()) return std::nullopt;
    const int64_t e = constants_.at(in_w).shape()[0];
    if (constants_.at(out_w).shape() != Shape{e, e}) return std::nullopt;
    bool causal = false;
    for (const std::string& b : float_adds) {
      const int64_t numel = constants_.at(b).numel();
      if (constants_.at(b).dim() == 2 && is_causal_mask(constants_.at(b)) && !causal) {
        causal = true;
      } else if (numel == 3 * e && in_b.empty()) {
        in_b = b;
      } else if (numel == e && out_b.empty() && out_transposed) {
        out_b = b;
      } else {
        return std::nullopt;  // a mask, or another term: not nn.MultiheadAttention's forward
      }
    }
    if (in_b.empty() != out_b.empty()) return std::nullopt;
    // q * s (torch 1.13), or q * sqrt(s) and k * sqrt(s) (scaled_dot_product_attention's).
    double scale = 0;
    if (scales.size() == 1) scale = scales[0];
    if (scales.size() == 2 && near(scales[0], scales[1])) scale = scales[0] * scales[1];
    if (scale <= 0) return std::nullopt;
    const double head_dim = 1 / (scale * scale);
    const int64_t hd = std::llround(head_dim);
    if (hd < 1 || std::abs(head_dim - static_cast<double>(hd)) > 1e-3 * head_dim || e % hd != 0)
      return std::nullopt;
    // batch_first: the module moves [N, L, E] to [L, N, E] before anything else.
    bool batch_first = true;
    for (int c : consumers_[x]) {
      if (!std::binary_search(region.begin(), region.end(), c)) continue;  // a residual's Add
      if (node(c).op_type() != "Transpose" ||
          attr_ints(node(c), "perm") != std::vector<int64_t>{1, 0, 2})
        batch_first = false;
    }
    Pattern p;
    p.type = "MultiheadAttention";
    p.inputs = {x, x, x};
    p.ports = {"query", "key", "value"};
    p.output = outputs[0];
    p.nodes = region;
    p.options = {{"embed_dim", e},
                 {"num_heads", e / hd},
                 {"bias", !in_b.empty()},
                 {"batch_first", batch_first},
                 {"is_causal", causal}};
    p.state = {{"in_proj_weight^T", in_w}};
    if (!in_b.empty()) p.state.emplace_back("in_proj_bias", in_b);
    p.state.emplace_back(out_transposed ? "out_proj.weight^T" : "out_proj.weight", out_w);
    if (!out_b.empty()) p.state.emplace_back("out_proj.bias", out_b);
    return p;
  }

  // [L, L] with 0 on and below the diagonal and -inf above: each query sees the keys up to its
  // own position.
  static bool is_causal_mask(const Tensor& mask) {
    if (mask.dim() != 2 || mask.shape()[0] != mask.shape()[1]) return false;
    const Tensor m = mask.to(kFloat64).contiguous();
    const double* v = m.data_ptr<double>();
    const int64_t len = mask.shape()[0];
    for (int64_t i = 0; i < len; ++i) {
      for (int64_t j = 0; j < len; ++j) {
        const double x = v[i * len + j];
        if (j <= i ? x != 0 : !(std::isinf(x) && x < 0)) return false;
      }
    }
    return true;
  }

  // x - mean(x), / sqrt(mean((x - mean)^2) + eps), * weight, + bias: torch's layer_norm at
  // opsets below 17.
  std::optional<Pattern> match_layer_norm(int mean1) {
    const NodeProto& m1 = node(mean1);
    const std::string x = m1.input(0);
    const auto axes = attr_ints(m1, "axes");
    if (!axes || attr_int(m1, "keepdims", 1) != 1) return std::nullopt;
    // Both x - mean and the variance's mean read x or the difference: find Sub(x, mean).
    int sub = -1;
    for (int c : consumers_[m1.output(0)]) {
      if (node(c).op_type() == "Sub" && node(c).input(0) == x && node(c).input(1) == m1.output(0))
        sub = c;
    }
    if (sub < 0 || consumers_[m1.output(0)].size() != 1) return std::nullopt;
    const std::string d = node(sub).output(0);
    int pow = -1, div = -1;
    for (int c : consumers_[d]) {
      if (node(c).op_type() == "Pow" && node(c).input(0) == d && near(scalar(node(c).input(1)), 2))
        pow = c;
      if (node(c).op_type() == "Div" && node(c).input(0) == d) div = c;
    }
    if (pow < 0 || div < 0 || consumers_[d].size() != 2) return std::nullopt;
    const int mean2 = only_consumer(node(pow).output(0));
    if (mean2 < 0 || node(mean2).op_type() != "ReduceMean" ||
        attr_ints(node(mean2), "axes") != axes)
      return std::nullopt;
    const int add = only_consumer(node(mean2).output(0));
    if (add < 0 || node(add).op_type() != "Add") return std::nullopt;
    const auto eps_split = split_constant(node(add));
    if (!eps_split || !scalar(eps_split->second)) return std::nullopt;
    const int sqrt = only_consumer(node(add).output(0));
    if (sqrt < 0 || node(sqrt).op_type() != "Sqrt" || only_consumer(node(sqrt).output(0)) != div ||
        node(div).input(1) != node(sqrt).output(0))
      return std::nullopt;
    Pattern p;
    p.type = "LayerNorm";
    p.inputs = {x};
    p.nodes = {mean1, sub, pow, mean2, add, sqrt, div};
    p.output = node(div).output(0);
    p.options = {{"normalized_shape", json_list(*axes)},  // axes for now: made sizes below
                 {"eps", shortest(*scalar(eps_split->second))},
                 {"elementwise_affine", false}};
    // The affine part: * weight, + bias, each an initializer.
    const int mul = only_consumer(p.output);
    if (mul >= 0 && node(mul).op_type() == "Mul") {
      const auto w = split_constant(node(mul));
      if (w && w->first == p.output) {
        const int bias = only_consumer(node(mul).output(0));
        const auto b =
            bias >= 0 && node(bias).op_type() == "Add" ? split_constant(node(bias)) : std::nullopt;
        if (b && b->first == node(mul).output(0)) {
          p.nodes.insert(p.nodes.end(), {mul, bias});
          p.output = node(bias).output(0);
          p.options["elementwise_affine"] = true;
          p.state = {{"weight", w->second}, {"bias", b->second}};
        }
      }
    }
    return p;
  }

  // x * sigmoid(x): SiLU, as torch.onnx.export writes it before opset 20.
  std::optional<Pattern> match_silu(int sigmoid) {
    const std::string x = node(sigmoid).input(0);
    const int mul = only_consumer(node(sigmoid).output(0));
    if (mul < 0 || node(mul).op_type() != "Mul") return std::nullopt;
    const NodeProto& m = node(mul);
    const std::string& s = node(sigmoid).output(0);
    if (!((m.input(0) == x && m.input(1) == s) || (m.input(0) == s && m.input(1) == x)))
      return std::nullopt;
    Pattern p;
    p.type = "SiLU";
    p.inputs = {x};
    p.output = m.output(0);
    p.nodes = {sigmoid, mul};
    return p;
  }

  // x * 0.5 * (1 + erf(x / sqrt(2))) in the orders torch and other exporters write it.
  std::optional<Pattern> match_gelu(int erf) {
    const int scale = producer_of(node(erf).input(0));
    if (scale < 0) return std::nullopt;
    const NodeProto& s = node(scale);
    const auto xs = split_constant(s);
    if (!xs || only_consumer(s.output(0)) != erf) return std::nullopt;
    const bool ok = (s.op_type() == "Div" && near(scalar(xs->second), std::sqrt(2.0))) ||
                    (s.op_type() == "Mul" && near(scalar(xs->second), 1 / std::sqrt(2.0)));
    if (!ok) return std::nullopt;
    return gelu_tail(xs->first, {scale, erf}, "none");
  }

  // x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))): GELU(approximate="tanh"), with
  // x^3 as Pow(x, 3) or x * (x * x).
  std::optional<Pattern> match_gelu_tanh(int tanh) {
    const int scale = producer_of(node(tanh).input(0));
    if (scale < 0 || node(scale).op_type() != "Mul" || only_consumer(node(scale).output(0)) != tanh)
      return std::nullopt;
    const auto us = split_constant(node(scale));
    if (!us || !near(scalar(us->second), std::sqrt(2 / M_PI))) return std::nullopt;
    const int add = producer_of(us->first);
    if (add < 0 || node(add).op_type() != "Add" || only_consumer(us->first) != scale)
      return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const std::string x = node(add).input(k), term = node(add).input(1 - k);
      const int coef = producer_of(term);
      if (coef < 0 || node(coef).op_type() != "Mul" || only_consumer(term) != add) continue;
      const auto cs = split_constant(node(coef));
      if (!cs || !near(scalar(cs->second), 0.044715)) continue;
      const std::optional<std::vector<int>> cube = match_cube(cs->first, x);
      if (!cube) continue;
      std::vector<int> nodes = *cube;
      nodes.insert(nodes.end(), {coef, add, scale, tanh});
      return gelu_tail(x, nodes, "tanh");
    }
    return std::nullopt;
  }

  // The nodes that make `value` as x^3: Pow(x, 3), or x * (x * x) in either order.
  std::optional<std::vector<int>> match_cube(const std::string& value, const std::string& x) {
    const int n = producer_of(value);
    if (n < 0 || node(n).input_size() != 2) return std::nullopt;
    const NodeProto& c = node(n);
    if (c.op_type() == "Pow" && c.input(0) == x && near(scalar(c.input(1)), 3))
      return std::vector<int>{n};
    if (c.op_type() != "Mul") return std::nullopt;
    for (int k = 0; k < 2; ++k) {
      const int sq = producer_of(c.input(1 - k));
      if (c.input(k) == x && sq >= 0 && node(sq).op_type() == "Mul" && node(sq).input(0) == x &&
          node(sq).input(1) == x && only_consumer(c.input(1 - k)) == n)
        return std::vector<int>{sq, n};
    }
    return std::nullopt;
  }

  // GELU's end from its erf or tanh node (the last of `nodes`): + 1, times x, times 0.5, as
  // (x * (1 + e)) * 0.5 or (x * 0.5) * (1 + e).
  std::optional<Pattern> gelu_tail(const std::string& x, std::vector<int> nodes,
                                   const std::string& approximate) {
    const int add = only_consumer(node(nodes.back()).output(0));
    if (add < 0 || node(add).op_type() != "Add") return std::nullopt;
    const auto one = split_constant(node(add));
    if (!one || !near(scalar(one->second), 1)) return std::nullopt;
    const int mul = only_consumer(node(add).output(0));
    if (mul < 0 || node(mul).op_type() != "Mul") return std::nullopt;
    const NodeProto& m = node(mul);
    const std::string other = m.input(0) == node(add).output(0) ? m.input(1) : m.input(0);
    Pattern p;
    p.type = "GELU";
    p.options = {{"approximate", approximate}};
    p.inputs = {x};
    nodes.insert(nodes.end(), {add, mul});
    if (other == x) {
      const int half = only_consumer(m.output(0));
      if (half < 0 || node(half).op_type() != "Mul") return std::nullopt;
      const auto h = split_constant(node(half));
      if (!h || h->first != m.output(0) || !near(scalar(h->second), 0.5)) return std::nullopt;
      nodes.push_back(half);
      p.nodes = nodes;
      p.output = node(half).output(0);
      return p;
    }
    const int half = producer_of(other);
    if (half < 0 || node(half).op_type() != "Mul" || only_consumer(other) != mul)
      return std::nullopt;
    const auto h = split_constant(node(half));
    if (!h || h->first != x || !near(scalar(h->second), 0.5)) return std::nullopt;
    nodes.push_back(half);
    p.nodes = nodes;
    p.output = m.output(0);
    return p;
  }

  // x @ W (+ b) with W and b initializers: a Linear whose weight is W transposed (PyTorch's
  // exporter writes Linear on inputs of rank 3 and more so).
  std::optional<Pattern> match_linear(int matmul) {
    const NodeProto& m = node(matmul);
    if (m.input_size() != 2 || constants_.contains(m.input(0)) ||
        !constants_.contains(m.input(1)) || constants_.at(m.input(1)).dim() != 2)
      return std::nullopt;
    // A weight under a plain name of the model's own ("w_out") is a Parameter node of its
    // forward's x @ w_out, not a layer.
    if (initializers_.contains(m.input(1)) && is_module_path(m.input(1)) &&
        m.input(1).find('.') == std::string::npos)
      return std::nullopt;
    Pattern p;
    p.type = "Linear";
    p.inputs = {m.input(0)};
    p.output = m.output(0);
    p.nodes = {matmul};
    p.state = {{"weight^T", m.input(1)}};
    const int64_t out = constants_.at(m.input(1)).shape()[1];
    const int add = only_consumer(m.output(0));
    if (add >= 0 && node(add).op_type() == "Add") {
      const auto b = split_constant(node(add));
      if (b && b->first == m.output(0) && constants_.at(b->second).numel() == out) {
        p.nodes.push_back(add);
        p.output = node(add).output(0);
        p.state.emplace_back("bias", b->second);
      }
    }
    return p;
  }

  int producer_of(const std::string& value) const {
    auto it = producer_.find(value);
    return it == producer_.end() ? -1 : it->second;
  }

  // ---- One unit per node or pattern, in order, with shapes -----------------------------------

  // The value an alias (Identity) stands for.
  std::string resolve(const std::string& value) const {
    auto it = aliases_.find(value);
    return it == aliases_.end() ? value : resolve(it->second);
  }

  const SymShape& shape_of(const std::string& value) {
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
  std::string constant_unit(const std::string& name) {
    if (shapes_.contains(name)) return name;
    const Tensor& t = constants_.at(name);
    Unit u;
    const bool initializer = initializers_.contains(name);
    const int p = producer_of(name);
    u.scope = p >= 0 ? scope_of_node(node(p)) : "";
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
  void add_unit(Unit u) {
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

  Tensor constant(const std::string& name) const { return constants_.at(resolve(name)); }

  Unit unit_for(int i, std::string type) const {
    Unit u;
    u.type = std::move(type);
    u.scope = scope_of_node(node(i));
    u.label = label(i);
    u.output = node(i).output(0);
    return u;
  }

  // An axis of a rank-`rank` tensor as a dim >= 1 (dim 0 is the batch).
  int64_t axis_dim(int i, int64_t axis, size_t rank) const {
    const int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
      fail(label(i) + ": axis " + std::to_string(axis) + " is out of range");
    return axis < 0 ? axis + r : axis;
  }

  void convert_nodes() {
    for (int i = 0; i < graph_.node_size(); ++i) {
      if (auto p = patterns_.find(i); p != patterns_.end()) {
        add_pattern(i, p->second);
        continue;
      }
      if (done_.contains(i)) continue;
      convert(i);
    }
  }

  void add_pattern(int last, const Pattern& p) {
    Unit u = unit_for(last, p.type);
    u.label =
        p.type + " (ONNX nodes " + node(p.nodes.front()).name() + " .. " + node(last).name() + ")";
    u.inputs = p.inputs;
    u.ports = p.ports;
    u.output = p.output;
    u.options = p.options;
    for (const auto& [entry, init] : p.state) {
      Tensor t = constant(init);
      if (entry.ends_with("^T")) {
        u.state.emplace_back(entry.substr(0, entry.size() - 2), t.transpose(0, 1).contiguous());
        if (p.type == "Linear") {
          u.options["in_features"] = t.shape()[0];
          u.options["out_features"] = t.shape()[1];
          u.options["bias"] = false;
        }
      } else {
        u.state.emplace_back(entry, t);
        if (p.type == "Linear") u.options["bias"] = true;
      }
      u.sources.push_back(source_of(init));
    }
    if (p.type == "LayerNorm") {
      // The reduced axes must be the trailing ones; their sizes are normalized_shape.
      const SymShape& x = shape_of(p.inputs[0]);
      std::vector<int64_t> dims;
      for (const Json& a : p.options["normalized_shape"])
        dims.push_back(axis_dim(last, a.get<int64_t>(), x.size()));
      std::sort(dims.begin(), dims.end());
      std::vector<int64_t> sizes;
      for (size_t k = 0; k < dims.size(); ++k) {
        if (dims[k] != static_cast<int64_t>(x.size() - dims.size() + k) || dims[k] == 0)
          fail(u.label + ": normalizes over dims that are not the trailing ones");
        sizes.push_back(x[dims[k]]);
      }
      u.options["normalized_shape"] = json_list(sizes);
      for (auto& [entry, t] : u.state) t = t.reshape(Shape(sizes.begin(), sizes.end()));
    }
    if (p.type == "Linear" && u.state.size() == 2)
      u.state[1].second = u.state[1].second.reshape({-1});
    // x @ self.weight (+ self.bias) with the weight under its own key ("embed.weight", [in,
    // out]) is a custom module's code, not a Linear's (whose exported matrix has a made-up
    // name): a block instance keeps its keys and the weight's shape.
    const std::string& w = p.state.empty() ? std::string() : p.state[0].second;
    if (p.type == "Linear" && initializers_.contains(w) && !module_of_initializer(w).empty() &&
        shape_of(p.inputs[0]).size() == 2) {
      const Tensor weight = constant(w);
      u.block = true;
      u.type = u.state.size() == 2 ? kWeightBiasBlock : kWeightBlock;
      u.options = {{"in_features", weight.shape()[0]}, {"out_features", weight.shape()[1]}};
      u.state[0].second = weight;
      const SymShape& x = shape_of(p.inputs[0]);
      if (x.back() != weight.shape()[0])
        fail(u.label + ": its input has " + std::to_string(x.back()) + " features; its weight '" +
             w + "' takes " + std::to_string(weight.shape()[0]));
      for (std::string& v : u.inputs) v = resolve(v);
      shapes_[u.output] = {x[0], weight.shape()[1]};
      used_blocks_.insert(u.type);
      units_.push_back(std::move(u));
      return;
    }
    add_unit(std::move(u));
  }

  [[noreturn]] void unsupported_form(int i, const std::string& why) const {
    fail(label(i) + ": " + why);
  }

  void convert(int i) {
    const NodeProto& n = node(i);
    const std::string& op = n.op_type();
    auto input = [&n](int k) { return k < n.input_size() ? n.input(k) : std::string(); };
    auto need_constant = [&](int k, const std::string& what) {
      if (input(k).empty() || !constants_.contains(resolve(input(k))))
        unsupported_form(i,
                         what + " must be an initializer (NN Studio's layers own their weights)");
      return constant(input(k));
    };
    if (op == "Split") {
      convert_split(i);
      return;
    }
    for (int k = 1; k < n.output_size(); ++k) {
      if (!n.output(k).empty() && consumers_.contains(n.output(k)))
        unsupported_form(i, "its output " + std::to_string(k) + " ('" + n.output(k) +
                                "') is used; NN Studio's node gives only the first");
    }
    if (op == "Identity") {
      aliases_[n.output(0)] = input(0);
      return;
    }
    if (op == "Pad") {
      convert_pad(i);
      return;
    }
    if (convert_shape_arithmetic(i)) return;
    if (op == "Transpose") {
      convert_transpose(i);
      return;
    }
    if (op == "Slice") {
      convert_slice(i);
      return;
    }
    if (op == "Expand") {
      convert_expand(i);
      return;
    }
    if (op == "Equal" || op == "Where" || op == "ConstantOfShape")
      unsupported_form(i, "only sizes read from a shape are computed so (an Expand's sizes)");
    if (op == "Clip") {
      // torch writes relu6 and hardtanh so, with both bounds; min 0 alone is a ReLU.
      const bool has_lo = !input(1).empty(), has_hi = !input(2).empty();
      const double lo = has_lo ? scalar(resolve(input(1))).value_or(NAN) : 0;
      const double hi = has_hi ? scalar(resolve(input(2))).value_or(NAN) : 0;
      if (std::isnan(lo) || std::isnan(hi))
        unsupported_form(i, "its bounds are computed; NN Studio needs them fixed");
      Unit u = unit_for(i, has_hi ? "F.hardtanh" : "ReLU");
      u.inputs = {input(0)};
      if (has_lo && has_hi) {
        u.options = {{"min_val", shortest(lo)}, {"max_val", shortest(hi)}};
      } else if (has_hi || !has_lo || lo != 0) {
        unsupported_form(i, "a Clip with one bound has a node only as a ReLU (min 0)");
      }
      add_unit(std::move(u));
      return;
    }
    if (op == "HardSigmoid") {
      if (!is_torch_hardsigmoid(n))
        unsupported_form(i, "only PyTorch's hardsigmoid (alpha 1/6, beta 0.5) has a node");
      Unit u = unit_for(i, "F.hardsigmoid");
      u.inputs = {input(0)};
      add_unit(std::move(u));
      return;
    }
    if (op == "HardSwish") {
      Unit u = unit_for(i, "F.hardswish");
      u.inputs = {input(0)};
      add_unit(std::move(u));
      return;
    }
    if (op == "ReduceMean") {
      // Axes as an attribute up to opset 17, as an input from 18.
      std::vector<int64_t> axes = attr_ints(n, "axes").value_or(std::vector<int64_t>{});
      if (!input(1).empty()) {
        const std::optional<std::vector<int64_t>> a = int_values(input(1));
        if (!a) unsupported_form(i, "its axes are computed; NN Studio needs them fixed");
        axes = *a;
      }
      const size_t rank = shape_of(input(0)).size();
      if (axes.empty()) unsupported_form(i, "it averages over every dim, the batch's too");
      for (int64_t& a : axes) {
        a = axis_dim(i, a, rank);
        if (a == 0) unsupported_form(i, "it averages over the batch (dim 0)");
      }
      Unit u = unit_for(i, "Mean");
      u.inputs = {input(0)};
      u.options = {{"dim", json_list(axes)}, {"keepdim", attr_int(n, "keepdims", 1) != 0}};
      add_unit(std::move(u));
      return;
    }
    if (op == "Sub" || op == "Div") {
      Unit u = unit_for(i, op);
      u.inputs = {input(0), input(1)};
      add_unit(std::move(u));
      return;
    }
    if (op == "Dropout") {
      Unit u = unit_for(i, "Dropout");
      u.inputs = {input(0)};
      const std::optional<double> ratio = input(1).empty() ? 0.5 : scalar(resolve(input(1)));
      if (!ratio) unsupported_form(i, "its ratio is computed; NN Studio's Dropout has a fixed p");
      u.options = {{"p", *ratio}};
      add_unit(std::move(u));
      return;
    }
    if (op == "Gemm") {
      if (attr_int(n, "transA", 0) != 0) unsupported_form(i, "transA=1 is not a Linear");
      const std::string a = input(0);
      if (constants_.contains(resolve(a))) unsupported_form(i, "its input A is a constant");
      Tensor w = need_constant(1, "its B (the weight)");
      if (w.dim() != 2) unsupported_form(i, "its weight is not a matrix");
      if (attr_int(n, "transB", 0) == 0) w = w.transpose(0, 1).contiguous();
      const double alpha = attr_float(n, "alpha", 1), beta = attr_float(n, "beta", 1);
      if (alpha != 1) w = w * alpha;
      Unit u = unit_for(i, "Linear");
      u.inputs = {a};
      u.options = {{"in_features", w.shape()[1]}, {"out_features", w.shape()[0]}, {"bias", false}};
      u.state = {{"weight", w}};
      u.sources = {input(1)};
      if (!input(2).empty()) {
        Tensor b = need_constant(2, "its C (the bias)");
        if (b.numel() != w.shape()[0] && b.numel() != 1)
          unsupported_form(i, "its bias does not have one value per output");
        b = b.numel() == 1 ? full({w.shape()[0]}, b.to(kFloat64).contiguous().data_ptr<double>()[0])
                           : b.reshape({w.shape()[0]});
        if (beta != 1) b = b * beta;
        u.options["bias"] = true;
        u.state.emplace_back("bias", b);
        u.sources.push_back(input(2));
      }
      add_unit(std::move(u));
      return;
    }
    if (op == "MatMul" || op == "Add" || op == "Mul") {
      Unit u = unit_for(i, op);
      u.inputs = {input(0), input(1)};
      if (op != "MatMul") u.options = {{"inputs", 2}};
      add_unit(std::move(u));
      return;
    }
    if (op == "Concat") {
      Unit u = unit_for(i, "Concat");
      for (const std::string& v : n.input()) u.inputs.push_back(v);
      if (u.inputs.size() < 2) {
        aliases_[n.output(0)] = input(0);
        return;
      }
      const size_t rank = shape_of(input(0)).size();
      const int64_t dim = axis_dim(i, attr_int(n, "axis", 0), rank);
      if (dim == 0) unsupported_form(i, "it concatenates along the batch (dim 0)");
      u.options = {{"inputs", static_cast<int64_t>(u.inputs.size())}, {"dim", dim}};
      add_unit(std::move(u));
      return;
    }
    if (op == "Conv") {
      const Tensor w = need_constant(1, "its weight");
      const int64_t spatial = w.dim() - 2;
      if (spatial != 1 && spatial != 2)
        unsupported_form(
            i, std::to_string(spatial) + "-D convolution (NN Studio has Conv1d and Conv2d)");
      const std::string auto_pad = attr_string(n, "auto_pad", "NOTSET");
      if (auto_pad != "NOTSET" && auto_pad != "VALID")
        unsupported_form(i, "auto_pad " + auto_pad + " (the padding must be explicit)");
      std::vector<int64_t> pads =
          attr_ints(n, "pads").value_or(std::vector<int64_t>(2 * spatial, 0));
      if (static_cast<int64_t>(pads.size()) != 2 * spatial)
        unsupported_form(i, "its pads do not fit");
      for (int64_t k = 0; k < spatial; ++k) {
        if (pads[k] != pads[k + spatial])
          unsupported_form(i, "its padding differs at the two ends of a dim");
      }
      pads.resize(spatial);
      const std::string in = take_padding(input(0), pads);
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
                   {"bias", !input(2).empty()}};
      if (auto ks = attr_ints(n, "kernel_shape"); ks && *ks != kernel)
        unsupported_form(i, "its kernel_shape differs from its weight's");
      u.state = {{"weight", w}};
      u.sources = {input(1)};
      if (!input(2).empty()) {
        u.state.emplace_back("bias", need_constant(2, "its bias").reshape({-1}));
        u.sources.push_back(input(2));
      }
      add_unit(std::move(u));
      return;
    }
    if (op == "BatchNormalization") {
      if (attr_int(n, "training_mode", 0) != 0) unsupported_form(i, "training_mode=1");
      const size_t rank = shape_of(input(0)).size();
      if (rank != 2 && rank != 3 && rank != 4)
        unsupported_form(
            i, "its input has rank " + std::to_string(rank) + " (2 to 4 fit BatchNorm1d/2d)");
      Unit u = unit_for(i, rank == 4 ? "BatchNorm2d" : "BatchNorm1d");
      u.inputs = {input(0)};
      const Tensor scale = need_constant(1, "its scale");
      u.options = {{"num_features", scale.numel()},
                   {"eps", attr_float(n, "epsilon", 1e-5)},
                   {"momentum", shortest(1 - attr_float(n, "momentum", 0.9))}};
      const char* entries[] = {"weight", "bias", "running_mean", "running_var"};
      for (int k = 0; k < 4; ++k) {
        u.state.emplace_back(entries[k],
                             need_constant(k + 1, std::string("its ") + entries[k]).reshape({-1}));
        u.sources.push_back(input(k + 1));
      }
      add_unit(std::move(u));
      return;
    }
    if (op == "LayerNormalization") {
      const SymShape& x = shape_of(input(0));
      const int64_t axis = axis_dim(i, attr_int(n, "axis", -1), x.size());
      if (axis == 0) unsupported_form(i, "it normalizes over the batch");
      if (attr_int(n, "stash_type", 1) != 1) unsupported_form(i, "stash_type other than float");
      std::vector<int64_t> sizes(x.begin() + axis, x.end());
      Unit u = unit_for(i, "LayerNorm");
      u.inputs = {input(0)};
      const Shape shape(sizes.begin(), sizes.end());
      u.options = {{"normalized_shape", json_list(sizes)},
                   {"eps", attr_float(n, "epsilon", 1e-5)},
                   {"elementwise_affine", true}};
      u.state = {{"weight", need_constant(1, "its scale").reshape(shape)}};
      u.sources = {input(1)};
      if (!input(2).empty()) {
        u.state.emplace_back("bias", need_constant(2, "its bias").reshape(shape));
        u.sources.push_back(input(2));
      } else {
        u.state.emplace_back("bias", zeros(shape));
      }
      add_unit(std::move(u));
      return;
    }
    static const std::map<std::string, std::string> plain = {
        {"Relu", "ReLU"}, {"Sigmoid", "Sigmoid"}, {"Tanh", "Tanh"}};
    if (auto it = plain.find(op); it != plain.end()) {
      Unit u = unit_for(i, it->second);
      u.inputs = {input(0)};
      add_unit(std::move(u));
      return;
    }
    if (op == "LeakyRelu" || op == "Elu") {
      Unit u = unit_for(i, op == "Elu" ? "ELU" : "LeakyReLU");
      u.inputs = {input(0)};
      u.options = op == "Elu" ? Json{{"alpha", attr_float(n, "alpha", 1.0)}}
                              : Json{{"negative_slope", attr_float(n, "alpha", 0.01)}};
      add_unit(std::move(u));
      return;
    }
    if (op == "PRelu") {
      const Tensor slope = need_constant(1, "its slope");
      const SymShape& x = shape_of(input(0));
      // One slope, or one per channel (dim 1) broadcast as [C, 1, ...].
      if (slope.numel() != 1 && (x.size() < 2 || slope.numel() != x[1]))
        unsupported_form(i, "its slope is neither one value nor one per channel (dim 1)");
      Unit u = unit_for(i, "PReLU");
      u.inputs = {input(0)};
      u.options = {{"num_parameters", slope.numel()}};
      u.state = {{"weight", slope.reshape({-1})}};
      u.sources = {source_of(resolve(input(1)))};
      add_unit(std::move(u));
      return;
    }
    if (op == "Softmax" || op == "LogSoftmax") {
      const size_t rank = shape_of(input(0)).size();
      Unit u = unit_for(i, op);
      u.inputs = {input(0)};
      const int64_t axis = attr_int(n, "axis", -1);
      axis_dim(i, axis, rank);  // checked; kept as written (dim=-1 as PyTorch's code says)
      u.options = {{"dim", axis}};
      add_unit(std::move(u));
      return;
    }
    if (op == "MaxPool" || op == "AveragePool") {
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
      const bool max = op == "MaxPool";
      if (max && attr_int(n, "storage_order", 0) != 0) unsupported_form(i, "storage_order=1");
      // A zero Pad before an average pool is its padding, with the padded zeros counted.
      const bool padded = !max && zero_pads_.contains(resolve(input(0)));
      const std::string in = max ? input(0) : take_padding(input(0), pads);
      Unit u = unit_for(i, max ? "MaxPool2d" : "AvgPool2d");
      u.inputs = {in};
      u.options = {
          {"kernel_size", json_list(*kernel)},
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
      return;
    }
    if (op == "GlobalAveragePool") {
      if (shape_of(input(0)).size() != 4)
        unsupported_form(i, "only [N, C, H, W] inputs have a node");
      Unit u = unit_for(i, "AdaptiveAvgPool2d");
      u.inputs = {input(0)};
      u.options = {{"output_size", Json::array({1, 1})}};
      add_unit(std::move(u));
      return;
    }
    if (op == "Gather" && !constants_.contains(resolve(input(0)))) {
      convert_select(i);
      return;
    }
    if (op == "Gather") {
      const Tensor w = need_constant(0, "its data (the embedding table)");
      if (w.dim() != 2 || attr_int(n, "axis", 0) != 0)
        unsupported_form(i, "only a lookup of rows of a matrix is an Embedding");
      Unit u = unit_for(i, "Embedding");
      u.inputs = {input(1)};
      u.options = {{"num_embeddings", w.shape()[0]}, {"embedding_dim", w.shape()[1]}};
      u.state = {{"weight", w}};
      u.sources = {input(0)};
      add_unit(std::move(u));
      return;
    }
    if (op == "Flatten" || op == "Reshape" || op == "Unsqueeze" || op == "Squeeze") {
      convert_reshape(i);
      return;
    }
    unsupported_form(i, "this form of " + op + " has no node in NN Studio");
  }

  // x.transpose(a, b) and x.permute(0, ...): the batch stays dim 0.
  void convert_transpose(int i) {
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
  void convert_slice(int i) {
    const NodeProto& n = node(i);
    auto ints = [&](int k, const char* what) -> std::optional<std::vector<int64_t>> {
      if (k >= n.input_size() || n.input(k).empty()) return std::nullopt;
      std::optional<std::vector<int64_t>> v = int_values(n.input(k));
      if (!v)
        unsupported_form(i,
                         std::string("its ") + what + " are computed; NN Studio needs them fixed");
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
  void convert_split(int i) {
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
      if (!n.output(k).empty() &&
          (consumers_.contains(n.output(k)) || is_graph_output(n.output(k))))
        narrow(i, n.input(0), {{dim, start, sizes[k]}}, n.output(k));
      start += sizes[k];
    }
  }

  // One Narrow per cut, in a chain from `value` to `output` (an alias when nothing is cut).
  void narrow(int i, const std::string& value, const std::vector<std::array<int64_t, 3>>& cuts,
              const std::string& output) {
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
  void convert_select(int i) {
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
  void convert_expand(int i) {
    const NodeProto& n = node(i);
    const std::optional<std::vector<int64_t>> sizes = int_values(n.input(1));
    if (!sizes)
      unsupported_form(i, "its sizes are computed from values; NN Studio needs them fixed");
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

  // A constant zero Pad of the dims after N and C: nothing when it pads nothing, else the
  // padding of the Conv or AveragePool that reads it (torch.onnx.export writes avg_pool2d so).
  void convert_pad(int i) {
    const NodeProto& n = node(i);
    if (attr_string(n, "mode", "constant") != "constant")
      unsupported_form(i, "only constant padding has a node (in a Conv's or pool's padding)");
    if (n.input_size() > 2 && !n.input(2).empty() && !near(scalar(resolve(n.input(2))), 0))
      unsupported_form(i, "only zero padding has a node");
    if (n.input_size() > 3 && !n.input(3).empty()) unsupported_form(i, "padding some axes only");
    if (n.input_size() < 2 || !constants_.contains(resolve(n.input(1))))
      unsupported_form(i, "its pads are computed; NN Studio needs them fixed");
    const Tensor p = constant(n.input(1)).to(kInt64).contiguous();
    const std::vector<int64_t> pads(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
    const size_t rank = shape_of(n.input(0)).size();
    if (pads.size() != 2 * rank) unsupported_form(i, "its pads do not fit its input's rank");
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

  // The value a Conv or pool reads, with a zero Pad before it folded into its own pads.
  std::string take_padding(const std::string& value, std::vector<int64_t>& pads) {
    auto it = zero_pads_.find(resolve(value));
    if (it == zero_pads_.end()) return value;
    const auto& [input, extra] = it->second;
    if (extra.size() != pads.size()) fail("a Pad's dims do not fit the Conv or pool that reads it");
    for (size_t k = 0; k < pads.size(); ++k) pads[k] += extra[k];
    return input;
  }

  // The integers of a shape value or an integer constant; nullopt for anything else.
  std::optional<std::vector<int64_t>> int_values(const std::string& value) const {
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
  bool convert_shape_arithmetic(int i) {
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

  // Flatten, Reshape, Unsqueeze and Squeeze with sizes known here, as the Flatten and Unflatten
  // nodes that keep dim 0 (the batch).
  void convert_reshape(int i) {
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

  // ---- Names ---------------------------------------------------------------------------------

  // A unit that is a module: a layer, or a block instance.
  static bool is_module(const Unit& u) {
    return u.block || graph::node_kind(u.type) == graph::NodeKind::Module;
  }

  bool path_free(const std::string& path) const {
    if (leaves_.contains(path) || prefixes_.contains(path)) return false;
    const std::vector<std::string> parts = split(path, '.');
    std::string prefix;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      prefix += (k ? "." : "") + parts[k];
      if (leaves_.contains(prefix)) return false;
    }
    return true;
  }

  void take(const std::string& path) {
    leaves_.insert(path);
    const std::vector<std::string> parts = split(path, '.');
    std::string prefix;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      prefix += (k ? "." : "") + parts[k];
      prefixes_.insert(prefix);
    }
  }

  // The path, or a free one made by numbering the component that clashes: the first whose
  // prefix is another module (fc1 taken: fc1.weight's module fc1.x becomes fc1_1.x), else the
  // last.
  std::string unique(const std::string& path) const {
    if (path_free(path)) return path;
    const std::vector<std::string> parts = split(path, '.');
    size_t at = parts.size() - 1;
    std::string prefix;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      prefix += (k ? "." : "") + parts[k];
      if (leaves_.contains(prefix)) {
        at = k;
        break;
      }
    }
    for (int n = 1;; ++n) {
      std::string p;
      for (size_t k = 0; k < parts.size(); ++k)
        p += (k ? "." : "") + parts[k] + (k == at ? "_" + std::to_string(n) : "");
      if (path_free(p)) return p;
    }
  }

  void name_units() {
    std::map<std::vector<std::string>, size_t> by_sources;
    std::map<std::string, size_t> by_scope;  // parameterless modules by scope
    for (size_t k = 0; k < units_.size(); ++k) {
      Unit& u = units_[k];
      const std::optional<graph::NodeKind> kind = graph::node_kind(u.type);
      if (kind == graph::NodeKind::Parameter || kind == graph::NodeKind::Buffer) {
        std::string base = sanitized(u.sources[0]);
        if (u.constant && !u.scope.empty()) base = sanitized(u.scope) + "_constant";
        u.path = unique(base);
        take(u.path);
        continue;
      }
      if (!is_module(u)) {
        const std::string base = (u.scope.empty() ? "" : sanitized(u.scope) + "_") + lower(u.type);
        u.path = unique(base);
        take(u.path);
        continue;
      }
      // A module called twice (shared weights, or one activation used twice) is one node and a
      // Ref to it.
      if (!u.sources.empty()) {
        auto [it, fresh] = by_sources.emplace(u.sources, k);
        if (!fresh && units_[it->second].type == u.type &&
            units_[it->second].options == u.options) {
          u.ref_of = it->second;
          u.path = unique(sanitized(units_[it->second].path) + "_call");
          take(u.path);
          continue;
        }
      }
      // The module an initializer names: its key less the entry it fills ("a.out_proj.weight"
      // for MultiheadAttention's "out_proj.weight" -> "a"), else less its last part.
      std::string path;
      for (size_t s = 0; s < u.sources.size() && path.empty(); ++s) {
        const std::string& source = u.sources[s];
        const std::string entry = s < u.state.size() ? "." + u.state[s].first : std::string();
        if (entry.size() > 1 && source.size() > entry.size() && source.ends_with(entry) &&
            is_module_path(source.substr(0, source.size() - entry.size()))) {
          path = source.substr(0, source.size() - entry.size());
        } else {
          path = module_of_initializer(source);
        }
      }
      if (path.empty()) path = u.scope;
      if (path.empty()) path = lower(u.type);
      if (u.sources.empty() && !u.scope.empty()) {
        auto it = by_scope.find(first_call_scope(u.scope));
        if (it == by_scope.end()) it = by_scope.find(u.scope);
        if (it == by_scope.end()) {
          by_scope.emplace(u.scope, k);
        } else if (units_[it->second].type == u.type && units_[it->second].options == u.options) {
          u.ref_of = it->second;
          u.path = unique(sanitized(units_[it->second].path) + "_call");
          take(u.path);
          continue;
        }
      }
      u.path = unique(path);
      take(u.path);
    }
  }

  // ---- The project ---------------------------------------------------------------------------

  // A group of the module tree: dotted paths as nested groups.
  struct Tree {
    std::string key;
    std::optional<size_t> unit;                   // a leaf
    std::vector<std::unique_ptr<Tree>> children;  // in first-use order
    bool sequential = false;
    std::string in, out;  // for a chain: the value it reads and the one it makes
    NodeId id = 0;        // its node, once made
  };

  Tree* child(Tree& t, const std::string& key) {
    for (auto& c : t.children) {
      if (c->key == key) return c.get();
    }
    t.children.push_back(std::make_unique<Tree>());
    t.children.back()->key = key;
    return t.children.back().get();
  }

  size_t uses(const std::string& value) const {
    size_t n = is_graph_output(value) ? 1 : 0;
    for (const Unit& u : units_) n += std::count(u.inputs.begin(), u.inputs.end(), value);
    return n;
  }

  // Whether a group's members, by index, form a chain that only its last member's value leaves:
  // then it is a Sequential (the gaps of an exporter's removed Dropout filled with Identity).
  void decide(Tree& t) {
    for (auto& c : t.children) {
      if (!c->unit) decide(*c);
    }
    if (t.children.empty()) return;
    std::map<int64_t, Tree*> by_index;
    for (auto& c : t.children) {
      if (!is_index(c->key)) return;
      by_index[std::stoll(c->key)] = c.get();
    }
    std::string prev;
    Tree* first = nullptr;
    for (auto& [index, c] : by_index) {
      std::string in, out;
      if (c->unit) {
        const Unit& u = units_[*c->unit];
        if (u.inputs.size() != 1 || !is_module(u) || u.ref_of) return;
        in = u.inputs[0];
        out = u.output;
      } else {
        if (!c->sequential) return;
        in = c->in;
        out = c->out;
      }
      if (!first) {
        first = c;
        t.in = in;
      } else if (in != prev || uses(prev) != 1) {
        return;
      }
      prev = out;
    }
    // Gaps are an exporter's left-out Dropout: a few, not a made-up index in the millions.
    if (by_index.rbegin()->first > 2 * static_cast<int64_t>(by_index.size()) + 16) return;
    t.out = prev;
    t.sequential = true;
    // Fill the gaps, in index order.
    std::vector<std::unique_ptr<Tree>> ordered;
    const int64_t last = by_index.rbegin()->first;
    for (int64_t k = 0; k <= last; ++k) {
      auto it = std::find_if(t.children.begin(), t.children.end(),
                             [k](const auto& c) { return c && c->key == std::to_string(k); });
      if (it != t.children.end()) {
        ordered.push_back(std::move(*it));
      } else {
        auto gap = std::make_unique<Tree>();
        gap->key = std::to_string(k);
        ordered.push_back(std::move(gap));
      }
    }
    t.children = std::move(ordered);
  }

  graph::Project make_project() {
    graph::Project project;
    // The graph's name, unless it is an exporter's placeholder: then the file's.
    static const std::set<std::string> placeholders = {"torch_jit", "torch-jit-export",
                                                       "main_graph", "graph", ""};
    project.name = sanitized(placeholders.contains(graph_.name())
                                 ? std::filesystem::path(source_).stem().string()
                                 : graph_.name());
    if (std::isdigit(static_cast<unsigned char>(project.name[0])))
      project.name = "Net" + project.name;
    for (const std::string& name : used_blocks_)
      project.blocks.push_back(weight_block(name == kWeightBiasBlock));
    // Training settings that work as they are: Adam at PyTorch's default rate.
    project.training.optimizer = "Adam";
    project.training.optimizer_options = {{"lr", 0.001}};
    graph::Graph& g = project.graph;
    std::map<std::string, graph::PortRef> value_port;
    for (const auto& in : inputs_) {
      const NodeId id =
          g.add_node("Input", sanitized(in.name), {{"shape", in.shape}, {"dtype", in.dtype}});
      value_port[in.name] = {id, "out"};
    }
    // The module tree; functions, parameters and buffers stay at the top level (a group holds
    // modules only, and ONNX keeps no class to make a block of).
    Tree root;
    for (size_t k = 0; k < units_.size(); ++k) {
      const Unit& u = units_[k];
      Tree* t = &root;
      const bool tree = is_module(u) && !u.ref_of;
      const std::vector<std::string> parts = tree ? split(u.path, '.') : std::vector{u.path};
      for (const std::string& part : parts) t = child(*t, part);
      t->unit = k;
    }
    for (auto& c : root.children) {
      if (!c->unit) decide(*c);
    }
    // Nodes in the tree's order (a group before its members); edges once every node is made.
    std::function<NodeId(Tree&, bool)> add = [&](Tree& t, bool in_sequence) -> NodeId {
      if (t.unit) {
        Unit& u = units_[*t.unit];
        Json options = u.options;
        std::string type = u.type;
        if (u.ref_of) {
          type = "Ref";
          options = {{"target", units_[*u.ref_of].id}};
        }
        u.id = g.add_node(type, in_sequence ? lower(u.type) : sanitized(t.key), options);
        if (!in_sequence) value_port[u.output] = {u.id, "out"};
        return u.id;
      }
      if (t.children.empty()) return g.add_node("Identity", "identity");  // a Sequential's gap
      const NodeId id = g.add_node(t.sequential ? "Sequential" : "ModuleDict", sanitized(t.key));
      t.id = id;
      std::vector<NodeId> members;
      for (auto& c : t.children) members.push_back(add(*c, t.sequential));
      g.at(id).members = members;
      if (t.sequential && !in_sequence) value_port[t.out] = {id, "out"};
      return id;
    };
    for (auto& c : root.children) add(*c, false);
    for (const auto& out : graph_.output()) {
      const NodeId id = g.add_node("Output", sanitized(out.name()));
      connect(g, value_port, resolve(out.name()), {id, "in"});
    }
    // Edges into each wired node, in node order.
    std::function<void(Tree&, bool)> wire = [&](Tree& t, bool in_sequence) {
      if (t.unit) {
        const Unit& u = units_[*t.unit];
        if (in_sequence) return;
        const std::vector<std::string> ports = input_ports(u);
        for (size_t k = 0; k < u.inputs.size(); ++k)
          connect(g, value_port, u.inputs[k], {u.id, ports[k]});
        return;
      }
      if (t.sequential && !in_sequence) {
        connect(g, value_port, t.in, {t.id, "in"});
        return;
      }
      for (auto& c : t.children) wire(*c, t.sequential || in_sequence);
    };
    for (auto& c : root.children) wire(*c, false);
    graph::fold_all_repeats(project);  // repeated blocks open as one box xN
    return project;
  }

  static std::vector<std::string> input_ports(const Unit& u) {
    if (!u.ports.empty()) return u.ports;
    if (u.inputs.size() == 1) return {"in"};
    std::vector<std::string> ports;
    for (size_t k = 0; k < u.inputs.size(); ++k) ports.push_back("in" + std::to_string(k));
    return ports;
  }

  void connect(graph::Graph& g, const std::map<std::string, graph::PortRef>& value_port,
               const std::string& value, graph::PortRef to) const {
    auto it = value_port.find(resolve(value));
    if (it == value_port.end())
      fail("internal: the value '" + value + "' has no node (please report this model)");
    g.connect(it->second, to);
  }

  // The built model's state dict with the initializers in place of its initial tensors.
  nn::StateDict make_weights(const graph::Project& project) {
    std::shared_ptr<graph::GraphModule> model;
    try {
      model = graph::build_model(project);
    } catch (const graph::GraphError& e) {
      fail(std::string("the imported graph does not build (please report this model): ") +
           e.what());
    }
    nn::StateDict state = model->state_dict();
    for (const Unit& u : units_) {
      if (u.ref_of) continue;
      const std::string prefix = is_module(u) ? model->module_name(u.id) + "." : "";
      for (const auto& [entry, tensor] : u.state) {
        const std::string key = prefix + (entry.empty() ? project.graph.at(u.id).name : entry);
        const Tensor* target = state.find(key);
        if (!target) fail("internal: the model has no '" + key + "' (please report this model)");
        if (target->shape() != tensor.shape())
          fail(u.label + ": '" + (u.sources.empty() ? key : u.sources[0]) + "' has shape " +
               graph::shape_str(SymShape(tensor.shape().begin(), tensor.shape().end())) + "; its " +
               u.type + " needs " +
               graph::shape_str(SymShape(target->shape().begin(), target->shape().end())));
        state.insert_or_assign(key, tensor.to(target->dtype()).contiguous());
      }
    }
    serialize::load_into(*model, state, /*strict=*/true);
    return model->state_dict();
  }

  // A built-in data set whose samples and classes fit the model, when there is one.
  void choose_dataset(Imported& out) {
    if (inputs_.size() != 1 || graph_.output_size() != 1 || inputs_[0].dtype != "float32") return;
    const Json& sample = inputs_[0].shape;
    const SymShape& y = shapes_.at(resolve(graph_.output(0).name()));
    if (y.size() != 2) return;
    for (const data::DatasetInfo& info : data::dataset_catalog()) {
      data::DatasetOptions options;
      if (sample.size() == 3 && sample[0] == 1 && sample[1] == sample[2]) {
        try {
          info.option("size");
          options["size"] = sample[1].get<double>();
        } catch (const Error&) {
        }
      }
      try {
        const data::Dataset d = data::make_dataset(info.name, options);
        Json shape = Json::array();
        for (size_t k = 1; k < d.inputs.shape().size(); ++k) shape.push_back(d.inputs.shape()[k]);
        const int64_t classes = d.task == data::TaskKind::Classification ? d.num_classes : 1;
        if (shape != sample || classes != y[1]) continue;
        out.project.dataset.name = info.name;
        out.project.dataset.options = Json::object();
        for (const auto& [k, v] : options) out.project.dataset.options[k] = std::get<double>(v);
        if (d.task != data::TaskKind::Classification) out.project.training.loss = "MSELoss";
        return;
      } catch (const Error&) {
      }
    }
    notes_.push_back("no built-in data set has samples of shape " + sample.dump() + " and " +
                     std::to_string(y[1]) +
                     " classes: choose a data set (or a CSV file) for it before training");
  }

  struct InputInfo {
    std::string name, dtype;
    Json shape;
  };

  const ::onnx::ModelProto& model_;
  const ::onnx::GraphProto& graph_;
  std::string source_;
  std::map<std::string, Tensor> constants_;
  std::set<std::string> initializers_;
  std::set<std::string> known_;  // values nodes or inputs make
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::map<std::string, std::string> aliases_;
  std::map<std::string, std::string> folded_;  // a folded transpose or reshape -> its initializer
  // Sizes computed from shapes (convert_shape_arithmetic), kBatch for the batch's.
  std::map<std::string, std::vector<int64_t>> shape_values_;
  static constexpr int64_t kBatch = std::numeric_limits<int64_t>::min();
  // A shape value that holds the batch -> a tensor whose dim 0 that is (for an Expand).
  std::map<std::string, std::string> batch_source_;
  std::set<std::string> used_blocks_;  // kWeightBlock, kWeightBiasBlock
  // A Pad's output -> what it pads and its padding per spatial dim (convert_pad).
  std::map<std::string, std::pair<std::string, std::vector<int64_t>>> zero_pads_;
  std::set<int> done_;               // nodes read already (constants) or part of a pattern
  std::map<int, Pattern> patterns_;  // by their last node
  std::vector<InputInfo> inputs_;
  std::map<std::string, SymShape> shapes_;
  std::vector<Unit> units_;
  std::set<std::string> leaves_, prefixes_;
  std::vector<std::string> notes_;
};

}  // namespace

Imported import_model(std::string_view bytes, const std::string& source) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ValueError(source +
                     ": not an ONNX model (the file is not a readable ModelProto; is it "
                     "truncated?)");
  if (!model.has_graph() || model.ir_version() <= 0)
    throw ValueError(source + ": not an ONNX model (it has no graph or no IR version)");
  return Importer(model, source).run();
}

Imported import_model_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ValueError("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return import_model(bytes.str(), path);
}

std::string weights_path_for(const std::string& project_path) {
  return std::filesystem::path(project_path).replace_extension(".safetensors").string();
}

void write_imported(const Imported& imported, const std::string& project_path) {
  serialize::save_state_dict_file(imported.weights, weights_path_for(project_path));
  graph::save_project(imported.project, project_path);
}

}  // namespace nns::onnx
