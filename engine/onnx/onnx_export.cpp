// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/graph/builder.h"
#include "engine/graph/node_types.h"
#include "engine/onnx/tensor_proto.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"
#include "engine/tensor/generator.h"

namespace nns::onnx {
namespace {

using graph::BlockDef;
using graph::Graph;
using graph::GraphModule;
using graph::Json;
using graph::Node;
using graph::NodeId;
using graph::NodeKind;
using graph::NodeType;
using graph::Project;
using graph::SymShape;

using ElemType = ::onnx::TensorProto::DataType;

// One tensor of the ONNX graph as the export follows it: its name, its shape (-1: the batch)
// and its element type.
struct Value {
  std::string name;
  SymShape shape;
  ElemType type = ::onnx::TensorProto::FLOAT;
};

ElemType elem_type(Dtype dtype) {
  return dtype == kInt64 ? ::onnx::TensorProto::INT64 : ::onnx::TensorProto::FLOAT;
}

// A float32 Constant's tensor; dims empty for a scalar.
::onnx::TensorProto float_tensor(const std::vector<int64_t>& dims,
                                 const std::vector<float>& values) {
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

// A 1-D int64 Constant's tensor (a Reshape's shape).
::onnx::TensorProto int64_tensor(const std::vector<int64_t>& values) {
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (int64_t v : values) t.add_int64_data(v);
  return t;
}

// A 0-dim int64 Constant's tensor (a Gather's one index, which drops the dim).
::onnx::TensorProto int64_scalar(int64_t value) {
  ::onnx::TensorProto t;
  t.set_data_type(::onnx::TensorProto::INT64);
  t.add_int64_data(value);
  return t;
}

void set_int(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  ::onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

void set_ints(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  ::onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_float(::onnx::NodeProto& node, const std::string& name, double value) {
  ::onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(value));
}

// "/features/features.0/": torch.onnx's scope of the module "features.0" in node names, from
// which an importer recovers the module names; "/" for the model itself.
std::string scope_of(const std::string& qualified) {
  std::string out = "/";
  size_t at = 0;
  while (!qualified.empty()) {
    const size_t dot = qualified.find('.', at);
    out += qualified.substr(0, dot) + "/";
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  return out;
}

// The shape of a Reshape made from the output's symbolic shape: 0 (copy the input's) for the
// batch where it stays in place, -1 (inferred) for the one other unknown size.
std::vector<int64_t> reshape_target(const SymShape& in, const SymShape& out) {
  std::vector<int64_t> target(out.begin(), out.end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) target[i] = (i < in.size() && in[i] == -1) ? 0 : -1;
  }
  return target;
}

// The model's graph, one level (the model's own graph, or one block instance's) at a time.
class Exporter {
 public:
  Exporter(const Project& project, GraphModule& model, int64_t opset)
      : project_(project), model_(model), opset_(opset), state_(model.state_dict()) {
    for (const auto& [key, tensor] : model.named_buffers()) buffers_.emplace(key, tensor);
  }

  ::onnx::ModelProto run() {
    ::onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("NN Studio");
    model.set_model_version(1);
    ::onnx::OperatorSetIdProto* op = model.add_opset_import();
    op->set_domain("");
    op->set_version(opset_);
    graph_ = model.mutable_graph();
    graph_->set_name(project_.name);

    const Level top{project_.graph, Json::object(), model_, ""};
    const std::vector<std::pair<NodeId, Value>> outputs = emit_graph(top, nullptr);

    std::set<std::string> taken;
    for (const ::onnx::ValueInfoProto& in : graph_->input()) taken.insert(in.name());
    for (const auto& [id, value] : outputs) name_output(project_.graph.at(id), value, taken);
    // Every entry of the state dict, in its order, so that the file holds the weights a
    // state dict file would (an inactive switch member's too); only the BatchNorm counters
    // that no ONNX operator reads are left out.
    for (const auto& item : state_) {
      const std::string& key = item.key();
      const bool counter = key == "num_batches_tracked" || key.ends_with(".num_batches_tracked");
      if (counter && !used_.contains(key)) continue;
      *graph_->add_initializer() = to_tensor_proto(item.value(), key);
    }
    return model;
  }

 private:
  // One graph being emitted: the model's, or a block instance's with its arguments, its
  // GraphModule and the qualified name of the instance ("block.", "" for the model).
  struct Level {
    const Graph& graph;
    Json arguments;
    const GraphModule& module;
    std::string prefix;
  };

  // ---- Nodes --------------------------------------------------------------------------------

  // A node of the ONNX graph named after its scope and operator ("/fc1/Gemm", then
  // "/fc1/Gemm_1"), whose one output is "<name>_output_0".
  ::onnx::NodeProto& add(const std::string& scope, const std::string& op,
                         const std::vector<std::string>& inputs) {
    std::string name = scope + op;
    for (int i = 1; node_names_.contains(name); ++i) name = scope + op + "_" + std::to_string(i);
    node_names_.insert(name);
    ::onnx::NodeProto* node = graph_->add_node();
    node->set_name(name);
    node->set_op_type(op);
    for (const std::string& in : inputs) node->add_input(in);
    node->add_output(name + "_output_0");
    return *node;
  }

  std::string unary(const std::string& scope, const std::string& op, const std::string& x) {
    return add(scope, op, {x}).output(0);
  }
  std::string binary(const std::string& scope, const std::string& op, const std::string& a,
                     const std::string& b) {
    return add(scope, op, {a, b}).output(0);
  }

  std::string constant(const std::string& scope, ::onnx::TensorProto value) {
    ::onnx::NodeProto& node = add(scope, "Constant", {});
    ::onnx::AttributeProto* a = node.add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    *a->mutable_t() = std::move(value);
    return node.output(0);
  }
  std::string scalar(const std::string& scope, float value) {
    return constant(scope, float_tensor({}, {value}));
  }

  // A tensor of the state dict: the initializer named by its key. A non-persistent buffer,
  // which no state dict holds, becomes a Constant whose output has the key as its name.
  Value tensor(const std::string& key) {
    used_.insert(key);
    if (const Tensor* t = state_.find(key)) return {key, t->shape(), elem_type(t->dtype())};
    const Tensor& t = buffers_.at(key);
    if (!constants_.contains(key)) {
      ::onnx::NodeProto& node = add("/", "Constant", {});
      node.set_output(0, key);
      ::onnx::AttributeProto* a = node.add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      *a->mutable_t() = to_tensor_proto(t, "");
      constants_.insert(key);
    }
    return {key, t.shape(), elem_type(t.dtype())};
  }

  // A per-channel tensor [C] viewed as [C, 1, ...] to broadcast over dim 1 of a rank-`rank`
  // input (BatchNorm's and PReLU's); itself where it broadcasts already.
  std::string channel_view(const std::string& scope, const std::string& name, int64_t channels,
                           size_t rank) {
    if (rank <= 2) return name;
    std::vector<int64_t> shape{channels};
    shape.resize(rank - 1, 1);
    return binary(scope, "Reshape", name, constant(scope, int64_tensor(shape)));
  }

  // ---- Graphs -------------------------------------------------------------------------------

  // Emits the nodes of a level in the order forward runs them; returns its Output nodes' values
  // in node order. `inputs`: a block instance's arguments, in its Input nodes' order; nullptr
  // for the model, whose Input nodes become the graph's inputs.
  std::vector<std::pair<NodeId, Value>> emit_graph(const Level& level,
                                                   const std::vector<Value>* inputs) {
    const Graph& g = level.graph;
    std::map<NodeId, size_t> input_index;
    for (const Node& n : g.nodes) {
      if (graph::node_kind(n.type) == NodeKind::Input)
        input_index.emplace(n.id, input_index.size());
    }
    std::map<std::pair<NodeId, std::string>, Value> values;
    std::map<NodeId, Value> results;
    auto input_of = [&](NodeId id, const std::string& port) {
      const graph::Edge* e = g.edge_into({id, port});
      return values.at({e->from.node, e->from.port});
    };
    const std::string scope =
        scope_of(level.prefix.empty() ? "" : level.prefix.substr(0, level.prefix.size() - 1));
    for (NodeId id : order_of(g)) {
      const Node& n = g.at(id);
      const std::optional<NodeKind> kind = graph::node_kind(n.type);
      if (kind == NodeKind::Input) {
        values[{id, "out"}] = inputs ? inputs->at(input_index.at(id)) : graph_input(level, n);
      } else if (kind == NodeKind::Output) {
        results[id] = input_of(id, "in");
      } else if (kind == NodeKind::Parameter || kind == NodeKind::Buffer) {
        values[{id, "out"}] = tensor(level.prefix + n.name);
      } else if (kind == NodeKind::Functional) {
        const NodeType& type = graph::node_type(n.type);
        if (!type.plugin.empty()) refuse_plugin(n, type);
        const Json options = graph::resolved_options(project_, n, level.arguments);
        std::vector<Value> in;
        for (const std::string& port : type.input_ports(options)) in.push_back(input_of(id, port));
        values[{id, "out"}] = function(scope, type, options, in);
      } else {
        const graph::NodePorts ports = graph::project_node_ports(project_, n);
        std::vector<Value> in;
        for (const std::string& port : ports.inputs) in.push_back(input_of(id, port));
        const std::vector<Value> out = call(level, n, in);
        for (size_t i = 0; i < ports.outputs.size(); ++i)
          values[{id, ports.outputs[i]}] = out.at(i);
      }
    }
    std::vector<std::pair<NodeId, Value>> out;
    for (const Node& n : g.nodes) {
      if (graph::node_kind(n.type) == NodeKind::Output) out.emplace_back(n.id, results.at(n.id));
    }
    return out;
  }

  const std::vector<NodeId>& order_of(const Graph& g) {
    auto it = orders_.find(&g);
    if (it == orders_.end()) it = orders_.emplace(&g, graph::forward_order(project_, g)).first;
    return it->second;
  }

  // A model's Input node: a graph input of its shape with the batch as "N".
  Value graph_input(const Level& level, const Node& n) {
    if (state_.contains(n.name) || buffers_.contains(n.name))
      throw ValueError("ONNX export: the Input node '" + n.name +
                       "' has the name of a weight; ONNX needs distinct names (rename it)");
    const Json options = graph::resolved_options(project_, n, level.arguments);
    Value v{
        n.name,
        {-1},
        options.at("dtype") == "int64" ? ::onnx::TensorProto::INT64 : ::onnx::TensorProto::FLOAT};
    for (int64_t d : graph::get_list(options, "shape")) v.shape.push_back(d);
    describe_value(*graph_->add_input(), v);
    return v;
  }

  void describe_value(::onnx::ValueInfoProto& info, const Value& v) const {
    info.set_name(v.name);
    ::onnx::TypeProto_Tensor* t = info.mutable_type()->mutable_tensor_type();
    t->set_elem_type(v.type);
    ::onnx::TensorShapeProto* shape = t->mutable_shape();
    for (size_t i = 0; i < v.shape.size(); ++i) {
      ::onnx::TensorShapeProto_Dimension* d = shape->add_dim();
      if (v.shape[i] >= 0) {
        d->set_dim_value(v.shape[i]);
      } else if (i == 0) {
        d->set_dim_param("N");
      }  // a size that depends on the batch elsewhere (a flattened batch) stays unnamed
    }
  }

  // The model's Output node `n` gives `value`: the node that makes it names its output after
  // `n`; an Identity does where the value is a graph input, a weight or another output.
  void name_output(const Node& n, const Value& value, std::set<std::string>& taken) {
    if (taken.contains(n.name) || state_.contains(n.name) || buffers_.contains(n.name))
      throw ValueError("ONNX export: the Output node '" + n.name +
                       "' has the name of another input, output or weight; ONNX needs distinct "
                       "names (rename it)");
    auto it = renamed_.find(value.name);
    const std::string current = it == renamed_.end() ? value.name : it->second;
    bool made = false;
    for (const ::onnx::NodeProto& node : graph_->node()) {
      for (const std::string& out : node.output()) made |= out == current;
    }
    if (made && !taken.contains(current) && !used_.contains(current)) {
      for (::onnx::NodeProto& node : *graph_->mutable_node()) {
        for (std::string& in : *node.mutable_input()) {
          if (in == current) in = n.name;
        }
        for (std::string& out : *node.mutable_output()) {
          if (out == current) out = n.name;
        }
      }
      renamed_[value.name] = n.name;
    } else {
      ::onnx::NodeProto& node = add("/", "Identity", {current});
      node.set_output(0, n.name);
    }
    taken.insert(n.name);
    Value named = value;
    named.name = n.name;
    describe_value(*graph_->add_output(), named);
  }

  // ---- Modules ------------------------------------------------------------------------------

  [[noreturn]] void refuse_plugin(const Node& n, const NodeType& type) const {
    throw ValueError("node '" + n.name + "': the type " + type.name + " comes from the plugin '" +
                     type.plugin + "', which has no ONNX form");
  }

  // The qualified module name of a node of `level` ("features.0", "block.conv").
  std::string qualified(const Level& level, NodeId id) const {
    return level.prefix + level.module.module_name(id);
  }

  // Calls a node's module (a layer, a group, a block instance, or a Ref's target) on `in`.
  std::vector<Value> call(const Level& level, const Node& n, const std::vector<Value>& in) {
    if (graph::is_container_type(n.type)) {
      if (n.type == "Sequential") {
        Value x = in.at(0);
        for (NodeId m : n.members) x = call(level, level.graph.at(m), {x}).at(0);
        return {x};
      }
      // A switch ModuleDict: the active member only.
      const std::string active =
          graph::resolved_options(project_, n, level.arguments).at("active").get<std::string>();
      for (NodeId m : n.members) {
        if (level.graph.at(m).name == active) return call(level, level.graph.at(m), in);
      }
      throw ValueError("node '" + n.name + "': no member has the active key '" + active + "'");
    }
    if (const BlockDef* block = project_.find_block(n.type);
        block && !graph::find_node_type(n.type)) {
      const auto* module = dynamic_cast<const GraphModule*>(level.module.node_module(n.id).get());
      const Level inner{block->graph, graph::resolved_options(project_, n, level.arguments),
                        *module, qualified(level, n.id) + "."};
      std::vector<Value> out;
      for (auto& [id, value] : emit_graph(inner, &in)) out.push_back(std::move(value));
      return out;
    }
    const NodeType& type = graph::node_type(n.type);
    if (!type.plugin.empty()) refuse_plugin(n, type);
    const Json options = graph::resolved_options(project_, n, level.arguments);
    if (type.kind == NodeKind::Ref)
      return call(level, level.graph.at(options.at("target").get<NodeId>()), in);
    if (type.name == "MultiheadAttention")
      return attention(level, n, options, qualified(level, n.id), in);
    if (in.size() != 1)
      throw ValueError("node '" + n.name + "': the type " + type.name + " has no ONNX form");
    return {layer(n, type, options, qualified(level, n.id), in.at(0))};
  }

  // nn.MultiheadAttention in eval mode as torch.onnx.export writes it in substance, so that the
  // import's attention pattern reads it back: [N, L, E] to [L, N, E] when batch_first, the
  // in-projection, the heads in the batch, softmax(q k^T / sqrt(head_dim) + causal mask) v,
  // the out-projection and back. Self-attention only (query, key and value one tensor).
  std::vector<Value> attention(const Level& level, const Node& n, const Json& o,
                               const std::string& q, const std::vector<Value>& in) {
    if (in.size() != 3 || in[0].name != in[1].name || in[0].name != in[2].name)
      throw ValueError("node '" + n.name +
                       "': MultiheadAttention has an ONNX form for self-attention only (one "
                       "tensor as query, key and value)");
    const std::string s = scope_of(q);
    const int64_t e = graph::get_int(o, "embed_dim"), heads = graph::get_int(o, "num_heads");
    const int64_t hd = e / heads;
    const bool batch_first = graph::get_bool(o, "batch_first");
    const bool bias = graph::get_bool(o, "bias");
    const SymShape& shape = in[0].shape;
    if (shape.size() != 3)
      throw ValueError("node '" + n.name + "': MultiheadAttention's ONNX form takes 3-D inputs");
    const int64_t len = shape[batch_first ? 1 : 0];
    auto transpose = [&](const std::string& x, std::vector<int64_t> perm) {
      ::onnx::NodeProto& node = add(s, "Transpose", {x});
      set_ints(node, "perm", perm);
      return node.output(0);
    };
    auto reshape = [&](const std::string& x, const std::vector<int64_t>& sizes) {
      return binary(s, "Reshape", x, constant(s, int64_tensor(sizes)));
    };
    auto slice = [&](const std::string& x, int64_t from, int64_t to) {
      return add(s, "Slice",
                 {x, constant(s, int64_tensor({from})), constant(s, int64_tensor({to})),
                  constant(s, int64_tensor({2}))})
          .output(0);
    };
    std::string x = batch_first ? transpose(in[0].name, {1, 0, 2}) : in[0].name;  // [L, N, E]
    std::string qkv = binary(s, "MatMul", x, transpose(tensor(q + ".in_proj_weight").name, {1, 0}));
    if (bias) qkv = binary(s, "Add", qkv, tensor(q + ".in_proj_bias").name);
    // [L, N, E] -> [N * heads, L, head_dim] for q, k and v.
    auto heads_of = [&](int64_t part) {
      return transpose(reshape(slice(qkv, part * e, (part + 1) * e), {0, -1, hd}), {1, 0, 2});
    };
    const std::string query =
        binary(s, "Div", heads_of(0), scalar(s, static_cast<float>(std::sqrt(double(hd)))));
    std::string scores = binary(s, "MatMul", query, transpose(heads_of(1), {0, 2, 1}));
    if (graph::get_bool(o, "is_causal")) {
      if (len < 1)
        throw ValueError("node '" + n.name + "': a causal mask needs a fixed sequence length");
      std::vector<float> mask(static_cast<size_t>(len * len), 0.0f);
      for (int64_t i = 0; i < len; ++i) {
        for (int64_t j = i + 1; j < len; ++j)
          mask[i * len + j] = -std::numeric_limits<float>::infinity();
      }
      scores = binary(s, "Add", scores, constant(s, float_tensor({len, len}, mask)));
    }
    ::onnx::NodeProto& softmax = add(s, "Softmax", {scores});
    set_int(softmax, "axis", -1);
    const std::string weights = softmax.output(0);  // [N * heads, L, L]
    std::string y = reshape(transpose(binary(s, "MatMul", weights, heads_of(2)), {1, 0, 2}),
                            {0, -1, e});  // [L, N, E]
    y = binary(s, "MatMul", y, transpose(tensor(q + ".out_proj.weight").name, {1, 0}));
    if (bias) y = binary(s, "Add", y, tensor(q + ".out_proj.bias").name);
    if (batch_first) y = transpose(y, {1, 0, 2});
    std::vector<Value> out{{y, shape, in[0].type}};
    // The weights averaged over the heads, [N, L, L], only where a wire reads them (the
    // import's pattern is attention with one output).
    bool weights_read = false;
    for (const graph::Edge& edge : level.graph.edges) {
      const Node& from = level.graph.at(edge.from.node);
      weights_read = weights_read ||
                     (edge.from.port == "weights" &&
                      (from.id == n.id ||
                       (from.type == "Ref" && from.options.value("target", NodeId{0}) == n.id)));
    }
    if (weights_read) {
      if (len < 1)
        throw ValueError("node '" + n.name + "': its weights output needs a fixed sequence length");
      const std::string mean = reduce_mean(s, reshape(weights, {-1, heads, len, len}), {1}, false);
      out.push_back({mean, SymShape{-1, len, len}, in[0].type});
    } else {
      out.push_back({"", SymShape{-1, len, len}, in[0].type});
    }
    return out;
  }

  // One built-in layer, in eval mode.
  Value layer(const Node& n, const NodeType& type, const Json& o, const std::string& q,
              const Value& x) {
    const std::string s = scope_of(q);
    const std::string& t = type.name;
    const SymShape out_shape = type.infer_shapes(o, {x.shape}).at(0);
    const size_t rank = x.shape.size();
    Value y{"", out_shape, ::onnx::TensorProto::FLOAT};
    auto unary_op = [&](const std::string& op) { return unary(s, op, x.name); };

    if (t == "Linear") {
      const std::string w = tensor(q + ".weight").name;
      const bool bias = graph::get_bool(o, "bias");
      if (rank == 2) {
        std::vector<std::string> args{x.name, w};
        if (bias) args.push_back(tensor(q + ".bias").name);
        ::onnx::NodeProto& gemm = add(s, "Gemm", args);
        set_float(gemm, "alpha", 1.0);
        set_float(gemm, "beta", 1.0);
        set_int(gemm, "transB", 1);
        y.name = gemm.output(0);
      } else {
        ::onnx::NodeProto& transpose = add(s, "Transpose", {w});
        set_ints(transpose, "perm", {1, 0});
        y.name = binary(s, "MatMul", x.name, transpose.output(0));
        if (bias) y.name = binary(s, "Add", y.name, tensor(q + ".bias").name);
      }
    } else if (t == "Conv1d" || t == "Conv2d") {
      const size_t dims = t == "Conv1d" ? 1 : 2;
      auto list = [&o, dims](const char* name) {
        std::vector<int64_t> v = graph::get_list(o, name);
        v.resize(dims, v.front());
        return v;
      };
      std::vector<std::string> args{x.name, tensor(q + ".weight").name};
      if (graph::get_bool(o, "bias")) args.push_back(tensor(q + ".bias").name);
      ::onnx::NodeProto& conv = add(s, "Conv", args);
      std::vector<int64_t> pads = list("padding");
      pads.insert(pads.end(), pads.begin(), pads.end());
      set_ints(conv, "dilations", list("dilation"));
      set_int(conv, "group", graph::get_int(o, "groups"));
      set_ints(conv, "kernel_shape", list("kernel_size"));
      set_ints(conv, "pads", pads);
      set_ints(conv, "strides", list("stride"));
      y.name = conv.output(0);
    } else if (t == "BatchNorm1d" || t == "BatchNorm2d") {
      y.name = batch_norm(s, o, q, x);
    } else if (t == "LayerNorm") {
      y.name = layer_norm(s, o, q, x);
    } else if (t == "ReLU") {
      y.name = unary_op("Relu");
    } else if (t == "LeakyReLU") {
      ::onnx::NodeProto& node = add(s, "LeakyRelu", {x.name});
      set_float(node, "alpha", graph::get_float(o, "negative_slope"));
      y.name = node.output(0);
    } else if (t == "ELU") {
      ::onnx::NodeProto& node = add(s, "Elu", {x.name});
      set_float(node, "alpha", graph::get_float(o, "alpha"));
      y.name = node.output(0);
    } else if (t == "PReLU") {
      const int64_t n_params = graph::get_int(o, "num_parameters");
      const std::string w = tensor(q + ".weight").name;
      y.name = binary(s, "PRelu", x.name, n_params == 1 ? w : channel_view(s, w, n_params, rank));
    } else if (t == "GELU") {
      y.name = gelu(s, graph::get_string(o, "approximate") == "tanh", x.name);
    } else if (t == "SiLU") {
      y.name = binary(s, "Mul", x.name, unary_op("Sigmoid"));
    } else if (t == "Sigmoid" || t == "Tanh") {
      y.name = unary_op(t);
    } else if (t == "Softmax" || t == "LogSoftmax") {
      // PyTorch's legacy dim for a module made without one (engine/nn/layers.cpp).
      const std::optional<int64_t> dim = graph::get_optional_int(o, "dim");
      const int64_t axis = dim ? *dim : (rank == 0 || rank == 1 || rank == 3 ? 0 : 1);
      ::onnx::NodeProto& node = add(s, t, {x.name});
      set_int(node, "axis", axis);
      y.name = node.output(0);
    } else if (t == "MaxPool2d" || t == "AvgPool2d") {
      y.name = pool(n, s, o, x, out_shape, t == "MaxPool2d");
    } else if (t == "AdaptiveAvgPool2d") {
      y.name = adaptive_avg_pool(s, "node '" + n.name + "'", x, out_shape);
    } else if (t == "Flatten" || t == "Unflatten") {
      y.type = x.type;
      // ONNX's Flatten always makes a matrix: torch.flatten(x, 1) only.
      const int64_t start = t == "Flatten" ? graph::get_int(o, "start_dim") : 0;
      const bool to_matrix = t == "Flatten" && rank >= 2 && out_shape.size() == 2 &&
                             (start < 0 ? start + static_cast<int64_t>(rank) : start) == 1;
      if (to_matrix) {
        ::onnx::NodeProto& node = add(s, "Flatten", {x.name});
        set_int(node, "axis", 1);
        y.name = node.output(0);
      } else {
        y.name = binary(s, "Reshape", x.name,
                        constant(s, int64_tensor(reshape_target(x.shape, out_shape))));
      }
    } else if (t == "Identity") {
      y.type = x.type;
      y.name = unary_op("Identity");
    } else if (t == "Dropout") {
      return x;  // the identity in eval mode
    } else if (t == "Embedding") {
      ::onnx::NodeProto& node = add(s, "Gather", {tensor(q + ".weight").name, x.name});
      set_int(node, "axis", 0);
      y.name = node.output(0);
    } else {
      throw ValueError("node '" + n.name + "': the type " + t + " has no ONNX form");
    }
    return y;
  }

  // BatchNormalization with the running statistics; without them (track_running_stats=false)
  // eval mode normalizes with the batch's own statistics, as ReduceMean and friends.
  std::string batch_norm(const std::string& s, const Json& o, const std::string& q,
                         const Value& x) {
    const int64_t c = graph::get_int(o, "num_features");
    const bool affine = graph::get_bool(o, "affine");
    const double eps = graph::get_float(o, "eps");
    const size_t rank = x.shape.size();
    if (graph::get_bool(o, "track_running_stats")) {
      const std::string scale = affine ? tensor(q + ".weight").name
                                       : constant(s, float_tensor({c}, std::vector<float>(c, 1)));
      const std::string bias = affine ? tensor(q + ".bias").name
                                      : constant(s, float_tensor({c}, std::vector<float>(c, 0)));
      ::onnx::NodeProto& bn = add(
          s, "BatchNormalization",
          {x.name, scale, bias, tensor(q + ".running_mean").name, tensor(q + ".running_var").name});
      set_float(bn, "epsilon", eps);
      set_float(bn, "momentum", 1.0 - graph::get_float(o, "momentum"));  // ONNX's is 1 - torch's
      return bn.output(0);
    }
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
    std::string y = normalize(s, x.name, axes, eps);
    if (affine) {
      y = binary(s, "Mul", y, channel_view(s, tensor(q + ".weight").name, c, rank));
      y = binary(s, "Add", y, channel_view(s, tensor(q + ".bias").name, c, rank));
    }
    return y;
  }

  // ReduceMean over `axes`: an attribute up to opset 17, an input from 18.
  std::string reduce_mean(const std::string& s, const std::string& x,
                          const std::vector<int64_t>& axes, bool keepdims) {
    std::vector<std::string> args{x};
    if (opset_ >= 18) args.push_back(constant(s, int64_tensor(axes)));
    ::onnx::NodeProto& node = add(s, "ReduceMean", args);
    if (opset_ < 18) set_ints(node, "axes", axes);
    set_int(node, "keepdims", keepdims ? 1 : 0);
    return node.output(0);
  }

  // (x - mean) / sqrt(var + eps) over `axes`, with the biased variance: torch.onnx's
  // decomposition of layer_norm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div).
  std::string normalize(const std::string& s, const std::string& x,
                        const std::vector<int64_t>& axes, double eps) {
    const std::string centered = binary(s, "Sub", x, reduce_mean(s, x, axes, true));
    const std::string var = reduce_mean(s, binary(s, "Pow", centered, scalar(s, 2.0f)), axes, true);
    const std::string deviation =
        unary(s, "Sqrt", binary(s, "Add", var, scalar(s, static_cast<float>(eps))));
    return binary(s, "Div", centered, deviation);
  }

  // LayerNormalization from opset 17; torch.onnx's decomposition before it.
  std::string layer_norm(const std::string& s, const Json& o, const std::string& q,
                         const Value& x) {
    const Shape normalized = graph::get_list(o, "normalized_shape");
    const auto k = static_cast<int64_t>(normalized.size());
    const bool affine = graph::get_bool(o, "elementwise_affine");
    const double eps = graph::get_float(o, "eps");
    if (opset_ >= 17) {
      int64_t count = 1;
      for (int64_t d : normalized) count *= d;
      std::vector<std::string> args{
          x.name,
          affine ? tensor(q + ".weight").name
                 : constant(s, float_tensor({normalized.begin(), normalized.end()},
                                            std::vector<float>(static_cast<size_t>(count), 1)))};
      if (affine) args.push_back(tensor(q + ".bias").name);
      ::onnx::NodeProto& ln = add(s, "LayerNormalization", args);
      set_int(ln, "axis", -k);
      set_float(ln, "epsilon", eps);
      return ln.output(0);
    }
    std::vector<int64_t> axes;
    for (int64_t i = -k; i < 0; ++i) axes.push_back(i);
    std::string y = normalize(s, x.name, axes, eps);
    if (affine) {
      y = binary(s, "Mul", y, tensor(q + ".weight").name);
      y = binary(s, "Add", y, tensor(q + ".bias").name);
    }
    return y;
  }

  // torch.onnx's forms: x * 0.5 * (1 + erf(x / sqrt(2))), and with approximate="tanh"
  // x * 0.5 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
  std::string gelu(const std::string& s, bool tanh_form, const std::string& x) {
    std::string inner;
    if (tanh_form) {
      const std::string cube = binary(s, "Pow", x, scalar(s, 3.0f));
      const std::string sum = binary(s, "Add", x, binary(s, "Mul", cube, scalar(s, 0.044715f)));
      inner = unary(
          s, "Tanh",
          binary(s, "Mul", sum, scalar(s, static_cast<float>(std::sqrt(2.0 / std::numbers::pi)))));
    } else {
      inner = unary(s, "Erf", binary(s, "Div", x, scalar(s, static_cast<float>(std::sqrt(2.0)))));
    }
    const std::string one_plus = binary(s, "Add", inner, scalar(s, 1.0f));
    return binary(s, "Mul", binary(s, "Mul", x, one_plus), scalar(s, 0.5f));
  }

  std::string pool(const Node& n, const std::string& s, const Json& o, const Value& x,
                   const SymShape& out_shape, bool max) {
    const Shape k = graph::get_list(o, "kernel_size");
    const std::vector<int64_t> kernel{k.front(), k.back()};
    std::vector<int64_t> stride = kernel;
    if (!o.at("stride").is_null()) {
      const Shape st = graph::get_list(o, "stride");
      stride = {st.front(), st.back()};
    }
    const Shape p = graph::get_list(o, "padding");
    const std::vector<int64_t> pads{p.front(), p.back(), p.front(), p.back()};
    std::vector<int64_t> dilation{1, 1};
    if (max) {
      const Shape d = graph::get_list(o, "dilation");
      dilation = {d.front(), d.back()};
    }
    const bool ceil = graph::get_bool(o, "ceil_mode");
    if (ceil) {
      // ONNX rounds up without PyTorch's rule that the last window starts inside the input
      // or its left padding: where that rule drops a window the sizes differ.
      for (int i = 0; i < 2; ++i) {
        const int64_t span = x.shape[2 + i] + 2 * pads[i] - dilation[i] * (kernel[i] - 1) - 1;
        const int64_t onnx_size = (span + stride[i] - 1) / stride[i] + 1;
        if (onnx_size != out_shape[2 + i])
          throw ValueError("node '" + n.name +
                           "': with ceil_mode its last window would start in "
                           "the padding, where ONNX's pooling gives one more output than "
                           "PyTorch's; turn ceil_mode off or change the padding");
      }
    }
    ::onnx::NodeProto& node = add(s, max ? "MaxPool" : "AveragePool", {x.name});
    set_int(node, "ceil_mode", ceil ? 1 : 0);
    if (max) {
      set_ints(node, "dilations", dilation);
    } else {
      set_int(node, "count_include_pad", graph::get_bool(o, "count_include_pad") ? 1 : 0);
    }
    set_ints(node, "kernel_shape", kernel);
    set_ints(node, "pads", pads);
    set_ints(node, "strides", stride);
    return node.output(0);
  }

  // AdaptiveAvgPool2d and F.adaptive_avg_pool2d: windows that divide the input evenly.
  std::string adaptive_avg_pool(const std::string& s, const std::string& what, const Value& x,
                                const SymShape& out_shape) {
    const int64_t oh = out_shape[2], ow = out_shape[3], h = x.shape[2], w = x.shape[3];
    if (oh == 1 && ow == 1) return unary(s, "GlobalAveragePool", x.name);
    if (h % oh != 0 || w % ow != 0)
      throw ValueError(what + ": adaptive average pooling from " + std::to_string(h) + "x" +
                       std::to_string(w) + " to " + std::to_string(oh) + "x" + std::to_string(ow) +
                       " has uneven windows, which no ONNX operator computes; choose an "
                       "output_size that divides the input's size");
    ::onnx::NodeProto& node = add(s, "AveragePool", {x.name});
    set_ints(node, "kernel_shape", {h / oh, w / ow});
    set_ints(node, "strides", {h / oh, w / ow});
    return node.output(0);
  }

  // ---- Functions ----------------------------------------------------------------------------

  Value function(const std::string& s, const NodeType& type, const Json& o,
                 const std::vector<Value>& in) {
    std::vector<SymShape> shapes;
    for (const Value& v : in) shapes.push_back(v.shape);
    Value y{"", type.infer_shapes(o, shapes).at(0),
            in.empty() ? ::onnx::TensorProto::FLOAT : in[0].type};
    const std::string& t = type.name;
    const std::string x = in.empty() ? std::string() : in[0].name;
    const size_t rank = in.empty() ? 0 : in[0].shape.size();
    // A dim option as ONNX's axis (PyTorch's negative dims count from the end, as ONNX's do).
    auto dim = [&o](const char* name) { return graph::get_int(o, name); };
    if (t == "Sub" || t == "Div") {
      y.name = binary(s, t, in[0].name, in[1].name);
    } else if (t == "Constant") {
      y.name = scalar(s, static_cast<float>(graph::get_float(o, "value")));
    } else if (t == "torch.sigmoid" || t == "torch.tanh") {
      y.name = unary(s, t == "torch.sigmoid" ? "Sigmoid" : "Tanh", x);
    } else if (t == "F.silu") {
      y.name = binary(s, "Mul", x, unary(s, "Sigmoid", x));
    } else if (t == "F.gelu") {
      y.name = gelu(s, graph::get_string(o, "approximate") == "tanh", x);
    } else if (t == "F.hardtanh") {
      y.name = add(s, "Clip",
                   {x, scalar(s, static_cast<float>(graph::get_float(o, "min_val"))),
                    scalar(s, static_cast<float>(graph::get_float(o, "max_val")))})
                   .output(0);
    } else if (t == "F.hardsigmoid" || (t == "F.hardswish" && opset_ < 14)) {
      // HardSwish is an operator from opset 14; before, x * hardsigmoid(x) (as torch writes).
      ::onnx::NodeProto& node = add(s, "HardSigmoid", {x});
      set_float(node, "alpha", 1.0 / 6);
      set_float(node, "beta", 0.5);
      y.name = t == "F.hardswish" ? binary(s, "Mul", x, node.output(0)) : node.output(0);
    } else if (t == "F.hardswish") {
      y.name = unary(s, "HardSwish", x);
    } else if (t == "F.adaptive_avg_pool2d") {
      y.name = adaptive_avg_pool(s, "F.adaptive_avg_pool2d", in[0], y.shape);
    } else if (t == "torch.flatten" || t == "Reshape") {
      y.name =
          binary(s, "Reshape", x, constant(s, int64_tensor(reshape_target(in[0].shape, y.shape))));
    } else if (t == "Transpose" || t == "Permute") {
      std::vector<int64_t> perm;
      for (size_t k = 0; k < rank; ++k) perm.push_back(static_cast<int64_t>(k));
      if (t == "Permute") {
        const Shape dims = graph::get_list(o, "dims");
        for (size_t k = 0; k < rank; ++k) perm[k] = dims[k] < 0 ? dims[k] + rank : dims[k];
      } else {
        const int64_t r = static_cast<int64_t>(rank), a = dim("dim0"), b = dim("dim1");
        std::swap(perm[a < 0 ? a + r : a], perm[b < 0 ? b + r : b]);
      }
      ::onnx::NodeProto& node = add(s, "Transpose", {x});
      set_ints(node, "perm", perm);
      y.name = node.output(0);
    } else if (t == "Select") {
      ::onnx::NodeProto& node =
          add(s, "Gather", {x, constant(s, int64_scalar(graph::get_int(o, "index")))});
      set_int(node, "axis", dim("dim"));
      y.name = node.output(0);
    } else if (t == "Narrow") {
      const int64_t start = graph::get_int(o, "start");
      y.name = add(s, "Slice",
                   {x, constant(s, int64_tensor({start})),
                    constant(s, int64_tensor({start + graph::get_int(o, "length")})),
                    constant(s, int64_tensor({dim("dim")}))})
                   .output(0);
    } else if (t == "Expand") {
      // in0 [1, ...] broadcast to [N, 1, ...]: N read from in1's shape.
      const std::string n = add(s, "Slice",
                                {unary(s, "Shape", in[1].name), constant(s, int64_tensor({0})),
                                 constant(s, int64_tensor({1}))})
                                .output(0);
      const std::vector<int64_t> ones(rank - 1, 1);
      ::onnx::NodeProto& sizes = add(s, "Concat", {n, constant(s, int64_tensor(ones))});
      set_int(sizes, "axis", 0);
      y.name = binary(s, "Expand", x, sizes.output(0));
    } else if (t == "Mean") {
      const Shape dims = graph::get_list(o, "dim");
      y.name = reduce_mean(s, x, std::vector<int64_t>(dims.begin(), dims.end()),
                           graph::get_bool(o, "keepdim"));
    } else if (t == "Add" || t == "Mul") {
      y.name = in[0].name;
      for (size_t i = 1; i < in.size(); ++i) y.name = binary(s, t, y.name, in[i].name);
    } else if (t == "Concat") {
      std::vector<std::string> names;
      for (const Value& v : in) names.push_back(v.name);
      ::onnx::NodeProto& node = add(s, "Concat", names);
      set_int(node, "axis", graph::get_int(o, "dim"));
      y.name = node.output(0);
    } else if (t == "MatMul") {
      y.name = binary(s, "MatMul", in[0].name, in[1].name);
    } else if (t == "F.relu") {
      y.name = unary(s, "Relu", in[0].name);
    } else {
      throw ValueError("the function " + t + " has no ONNX form");
    }
    return y;
  }

  const Project& project_;
  GraphModule& model_;
  int64_t opset_;
  nn::StateDict state_;
  std::map<std::string, Tensor> buffers_;  // every buffer, non-persistent ones included
  ::onnx::GraphProto* graph_ = nullptr;
  std::set<std::string> node_names_;
  std::set<std::string> used_;       // the state's keys the graph reads
  std::set<std::string> constants_;  // the non-persistent buffers made Constants
  std::map<const Graph*, std::vector<NodeId>> orders_;
  std::map<std::string, std::string> renamed_;  // values renamed after the Output they feed
};

// The model as libonnx's checker can read it. Debian's libonnx 1.12 knows opsets up to 17: for a
// newer model it checks a copy at the newest opset it knows, with the operators whose form
// changed since in their older form. Of the operators the export writes, only ReduceMean
// changed at 18 (its axes an input), which the copy has as an attribute again.
::onnx::ModelProto checkable(const ::onnx::ModelProto& proto) {
  const int known = ::onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                        .Map()
                        .at(::onnx::ONNX_DOMAIN)
                        .second;
  if (proto.opset_import(0).version() <= known) return proto;
  ::onnx::ModelProto copy = proto;
  copy.mutable_opset_import(0)->set_version(known);
  std::map<std::string, const ::onnx::TensorProto*> constants;
  for (const ::onnx::NodeProto& node : proto.graph().node()) {
    if (node.op_type() == "Constant") constants[node.output(0)] = &node.attribute(0).t();
  }
  for (::onnx::NodeProto& node : *copy.mutable_graph()->mutable_node()) {
    if (node.op_type() != "ReduceMean" || node.input_size() != 2) continue;
    const ::onnx::TensorProto& axes = *constants.at(node.input(1));
    node.mutable_input()->RemoveLast();
    set_ints(node, "axes",
             std::vector<int64_t>(axes.int64_data().begin(), axes.int64_data().end()));
  }
  return copy;
}

}  // namespace

std::string export_model(const Project& project, const nn::StateDict* weights, int64_t opset) {
  check_opset(opset, "ONNX export");
  // Without weights, those a training run starts from: drawn after the project's seed.
  const std::shared_ptr<GraphModule> model =
      weights ? graph::build_model(project) : graph::build_initial_model(project);
  if (weights) serialize::load_into(*model, *weights, /*strict=*/true);
  ::onnx::ModelProto proto = Exporter(project, *model, opset).run();
  // What onnx.checker.check_model(model, full_check=True) does, on a copy (inference adds
  // the shapes it finds): a failure here is the exporter's mistake, not the project's.
  try {
    const ::onnx::ModelProto checked = checkable(proto);
    ::onnx::checker::check_model(checked);
    ::onnx::ModelProto inferred = checked;
    ::onnx::shape_inference::InferShapes(
        inferred, ::onnx::OpSchemaRegistry::Instance(),
        ::onnx::ShapeInferenceOptions(/*check_type_val=*/true, /*strict_mode_val=*/1));
  } catch (const std::exception& e) {
    throw ValueError("ONNX export of " + project.name +
                     ": the model fails ONNX's checker, which is a bug in NN Studio (please "
                     "report it): " +
                     e.what());
  }
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    throw ValueError("ONNX export of " + project.name + ": the model is too large to serialize");
  return bytes;
}

void write_model_file(const Project& project, const std::string& path, const nn::StateDict* weights,
                      int64_t opset) {
  const std::string bytes = export_model(project, weights, opset);
  serialize::write_file_atomically(path,
                                   [&bytes](serialize::ByteSink& sink) { sink.write(bytes); });
}

}  // namespace nns::onnx
