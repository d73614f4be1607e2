// SPDX-License-Identifier: GPL-3.0-or-later
// From the tracer's folder (trace.json, state_dict.pt, io.pt) to a project: one graph per
// traced module (the model's own, and one block per custom class structure), the containers
// as groups, the functional calls through the op families (ops_*.cpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "engine/autograd/grad_mode.h"
#include "engine/graph/builder.h"
#include "engine/graph/repeats.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"
#include "engine/torch_import/convert.h"
#include "engine/torch_import/module_options.h"
#include "engine/torch_import/torch_import.h"

namespace nns::torch_import {
namespace detail {

const Value* Call::arg(size_t i, const std::string& name) const {
  if (i < args.size()) return &args[i];
  auto it = kwargs.find(name);
  return it == kwargs.end() ? nullptr : &it->second;
}

int64_t constant_int(const Value& v, const std::string& what, Emitter& out) {
  if (!v.is_number()) out.refuse(what + " must be a number");
  if (!v.is_constant()) out.refuse(what + " depends on the batch size");
  if (v.first != std::floor(v.first)) out.refuse(what + " must be an integer");
  return static_cast<int64_t>(v.first);
}

std::vector<Value> int_list(const Call& call, size_t first, const std::string& name) {
  if (call.args.size() == first + 1 && call.args[first].kind == Value::Kind::Tuple)
    return call.args[first].items;
  if (call.args.size() > first) return {call.args.begin() + first, call.args.end()};
  if (const Value* v = call.arg(first, name)) {
    if (v->kind == Value::Kind::Tuple) return v->items;
    return {*v};
  }
  return {};
}

}  // namespace detail

namespace {

using namespace detail;
using graph::BlockDef;
using graph::Graph;
using graph::Node;
using graph::NodeId;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ValueError("cannot open '" + path + "'");
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string last_segment(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string join_path(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "." + b;
}

// The tracer's shape of a value at the two batch sizes: -1 where they differ (the batch).
SymShape sym_shape(const Json& first, const Json& second) {
  SymShape out;
  const Json& a = first.at("shape");
  const Json& b = second.is_object() && second.contains("shape") ? second.at("shape") : a;
  for (size_t i = 0; i < a.size(); ++i) {
    const int64_t x = a[i].get<int64_t>();
    out.push_back(i < b.size() && b[i].get<int64_t>() != x ? -1 : x);
  }
  return out;
}

// A non-tensor traced value (a size, a tuple of sizes), folded: no node makes it.
std::optional<Value> folded(const Json& first, const Json& second) {
  const std::string t = first.value("t", "");
  Value v;
  if (t == "int" || t == "float" || t == "bool") {
    auto number = [](const Json& j) {
      return j.is_boolean() ? (j.get<bool>() ? 1.0 : 0.0) : j.get<double>();
    };
    v.kind = Value::Kind::Number;
    v.first = number(first.at("v"));
    v.second = second.is_object() && second.contains("v") ? number(second.at("v")) : v.first;
    return v;
  }
  if (t == "none") {
    v.kind = Value::Kind::None;
    return v;
  }
  if (t == "tuple") {
    v.kind = Value::Kind::Tuple;
    const Json& a = first.at("items");
    const Json& b = second.is_object() && second.contains("items") ? second.at("items") : a;
    for (size_t i = 0; i < a.size(); ++i) {
      std::optional<Value> item = folded(a[i], i < b.size() ? b[i] : a[i]);
      if (!item) return std::nullopt;
      v.items.push_back(*item);
    }
    return v;
  }
  return std::nullopt;
}

class Reader;

// One module's graph as it is made: the project's own (the root) or a custom block's.
struct Scope {
  std::string path;  // "" for the model
  std::string cls;
  Graph graph;
  std::map<std::string, NodeId> modules;  // module path -> its node
  std::set<NodeId> called;                // module nodes wired already (a second call: a Ref)
  std::map<std::string, Value> values;    // fx node name -> value
};

class Reader {
 public:
  explicit Reader(const std::string& dir) : dir_(dir) {
    trace_ = Json::parse(read_text((std::filesystem::path(dir) / "trace.json").string()));
    const Json& b = trace_.at("batches");
    batches_ = {b.at(0).get<int64_t>(), b.at(1).get<int64_t>()};
    modules_ = trace_.at("modules");
    graphs_ = trace_.at("graphs");
  }

  graph::ImportedProject run() {
    Scope root;
    root.path = "";
    root.cls = modules_.at("").at("class").get<std::string>();
    build_scope(root);
    out_.project.name = root.cls;
    // What the ONNX import sets too: Adam at PyTorch's usual rate (SGD has no default one).
    out_.project.training.optimizer = "Adam";
    out_.project.training.optimizer_options = {{"lr", 0.001}};
    out_.project.graph = std::move(root.graph);
    for (auto& [key, block] : blocks_) out_.project.blocks.push_back(block);
    std::sort(out_.project.blocks.begin(), out_.project.blocks.end(),
              [&](const BlockDef& a, const BlockDef& b) {
                return block_order_.at(a.name) < block_order_.at(b.name);
              });
    merge_arguments();
    frozen();
    check();
    // Repeated blocks (resnet's equal Bottlenecks, a transformer's layers) open as one box xN.
    graph::fold_all_repeats(out_.project);
    note("the project's data set is still the default (" + out_.project.dataset.name +
         "): choose one that fits the model's input before training (your own: an image folder, "
         "MNIST or CIFAR files, NumPy arrays or a CSV file; nnstudio-cli train --data SOURCE)");
    out_.notes = notes_;
    return std::move(out_);
  }

 private:
  friend class ScopeEmitter;

  const Json& module(const std::string& path) const {
    if (!modules_.contains(path)) throw ValueError("the trace has no module '" + path + "'");
    return modules_.at(path);
  }
  std::string kind(const std::string& path) const {
    return module(path).at("kind").get<std::string>();
  }
  std::string describe(const std::string& path) const {
    return path.empty() ? "the model (" + module("").at("class").get<std::string>() + ")"
                        : "'" + path + "' (" + module(path).at("class").get<std::string>() + ")";
  }

  [[noreturn]] void refuse(const Scope& scope, const Json& node, const std::string& what,
                           const std::string& why) {
    const std::string source = node.value("source", "");
    throw ValueError("cannot import " + what + " in the forward of " + describe(scope.path) +
                     (source.empty() ? std::string() : " at " + source) + ": " + why);
  }

  void note(const std::string& text) {
    if (std::find(notes_.begin(), notes_.end(), text) == notes_.end()) notes_.push_back(text);
  }

  // ---- Nodes for modules ----------------------------------------------------------------------

  // The node of a module (a leaf, a block instance or a group) of the scope, made with the
  // groups it is in on first use.
  NodeId module_node(Scope& scope, const std::string& path, bool by_group = false) {
    if (auto it = scope.modules.find(path); it != scope.modules.end()) return it->second;
    // A container's member comes with its container (which makes all of its members).
    if (const size_t dot = path.rfind('.');
        !by_group && dot != std::string::npos && dot > scope.path.size()) {
      const std::string parent = path.substr(0, dot);
      const std::string pk = kind(parent);
      if (pk == "sequential" || pk == "modulelist" || pk == "moduledict") {
        module_node(scope, parent);
        return scope.modules.at(path);
      }
    }
    const Json& m = module(path);
    const std::string k = kind(path);
    const std::string name = last_segment(path);
    NodeId id = 0;
    if (k == "leaf") {
      const std::string cls = m.at("class").get<std::string>();
      const graph::NodeType& type = graph::node_type(cls);
      Json options;
      try {
        options = module_options(type, m.value("attributes", Json::object()),
                                 m.value("parameters", Json::object()));
      } catch (const Error& e) {
        throw ValueError("cannot import " + describe(path) + ": its settings do not fit NN " +
                         "Studio's " + cls + ": " + e.what());
      }
      // Only the options that differ from the defaults, as a user would write them.
      Json given = Json::object();
      const Json defaults = type.default_options();
      for (const auto& [key, value] : options.items()) {
        if (!defaults.contains(key) || defaults.at(key) != value) given[key] = value;
      }
      id = scope.graph.add_node(cls, name, given);
    } else if (k == "custom") {
      if (m.value("uncalled", false) || !graphs_.contains(path))
        throw ValueError("cannot import " + describe(path) +
                         ": its forward is never called (NN Studio keeps the modules a forward "
                         "calls)");
      auto [block, args] = block_for(path);
      id = scope.graph.add_node(block, name, args);
    } else if (k == "sequential" || k == "modulelist" || k == "moduledict") {
      std::string type = k == "sequential"   ? "Sequential"
                         : k == "modulelist" ? "ModuleList"
                                             : "ModuleDict";
      // nn.Sequential(OrderedDict(...)) names its members: NN Studio's Sequential numbers
      // them, so it is a ModuleDict (the same keys) whose members a call wires in a chain.
      size_t position = 0;
      for (const Json& child : m.at("children")) {
        if (type == "Sequential" && child.get<std::string>() != std::to_string(position)) {
          type = "ModuleDict";
          note(describe(path) +
               " names its members: it is a ModuleDict of them, called in a "
               "chain (NN Studio's Sequential numbers its members)");
        }
        ++position;
      }
      std::vector<NodeId> members;
      size_t index = 0;
      for (const Json& child : m.at("children")) {
        const std::string c = child.get<std::string>();
        if (type != "ModuleDict" && c != std::to_string(index))
          throw ValueError("cannot import " + describe(path) + ": its member '" + c +
                           "' has a name, and NN Studio's " + type +
                           " numbers its members 0, 1, ... (the state-dict keys would change)");
        ++index;
        members.push_back(module_node(scope, join_path(path, c), true));
      }
      id = scope.graph.add_node(type, name);
      scope.graph.at(id).members = members;
    } else {
      throw ValueError("cannot import " + describe(path) + ": a module of kind " + k +
                       " where a submodule was expected");
    }
    scope.modules[path] = id;
    return id;
  }

  // The block for a custom module and the instance's options: one block per class and
  // structure; option values that differ between instances (BasicBlock's channels) become
  // the block's arguments, which the instances set.
  std::pair<std::string, Json> block_for(const std::string& path) {
    Scope inner;
    inner.path = path;
    inner.cls = module(path).at("class").get<std::string>();
    build_scope(inner);
    Graph& g = inner.graph;
    const std::string key = inner.cls + "\n" + skeleton(g);
    auto it = blocks_.find(key);
    if (it == blocks_.end()) {
      std::string name = inner.cls;
      for (int k = 2; taken(name); ++k) name = inner.cls + "_" + std::to_string(k);
      BlockDef block;
      block.name = name;
      block.description = "imported from PyTorch: " + inner.cls + " (first as " + path + ")";
      block.graph = std::move(g);
      block_names_[key] = name;
      block_order_[name] = block_order_.size();
      blocks_[key] = std::move(block);
      return {name, Json::object()};
    }
    BlockDef& def = it->second;
    // Arguments are named by the module path inside the block (downsample_0_in_channels).
    std::map<graph::NodeId, std::string> names;
    for (const auto& [p, id] : inner.modules) {
      std::string local = p.substr(path.size() + 1);
      std::replace(local.begin(), local.end(), '.', '_');
      names[id] = local;
    }
    Json args = Json::object();
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      Node& d = def.graph.nodes[i];
      // A block's Input takes the instance's shapes: its own shape option is not used.
      if (n.type == "Input") continue;
      for (const auto& [option, value] : n.options.items()) {
        Json& current = d.options[option];
        if (current.is_string() && current.get<std::string>().rfind("$", 0) == 0) {
          const std::string a = current.get<std::string>().substr(1);
          if (def.arguments.contains(a)) {
            if (def.arguments[a] != value) args[a] = value;
            continue;
          }
        }
        if (current == value) continue;
        const std::string base = (names.count(n.id) ? names.at(n.id) : d.name) + "_" + option;
        std::string a = base;
        for (int k = 2; def.arguments.contains(a); ++k) a = base + "_" + std::to_string(k);
        def.arguments[a] = current;
        current = "$" + a;
        args[a] = value;
      }
    }
    return {def.name, args};
  }

  // A graph without its option values (their names kept): what instances of one block share.
  static std::string skeleton(const Graph& graph) {
    Graph g = graph;
    for (Node& n : g.nodes) {
      Json keys = Json::array();
      if (n.type != "Input") {
        for (const auto& [k, v] : n.options.items()) keys.push_back(k);
      }
      n.options = {{"keys", keys}};
    }
    return graph::graph_to_json(g).dump();
  }

  bool taken(const std::string& name) const {
    if (graph::find_node_type(name) || graph::is_container_type(name)) return true;
    if (name == module("").at("class").get<std::string>()) return true;
    for (const auto& [key, n] : block_names_) {
      if (n == name) return true;
    }
    return false;
  }

  // ---- One traced graph -----------------------------------------------------------------------

  void build_scope(Scope& scope);
  void add_parameters(Scope& scope);
  Value resolve(Scope& scope, const Json& arg);
  void call_module(Scope& scope, const Json& node);
  void output(Scope& scope, const Json& node);
  void check_all_called(Scope& scope);

  Value tensor_value(const Json& node, PortRef port) {
    const Json& values = node.at("values");
    Value v;
    v.kind = Value::Kind::Tensor;
    v.port = std::move(port);
    if (!values.empty() && values[0].value("t", "") == "tensor")
      v.shape = sym_shape(values[0], values.size() > 1 ? values[1] : values[0]);
    return v;
  }

  // Arguments that every instance gives the same value (BasicBlock's conv1_out_channels and
  // bn1_num_features) become one, under the first one's name.
  void merge_arguments() {
    std::vector<Graph*> graphs{&out_.project.graph};
    for (BlockDef& b : out_.project.blocks) graphs.push_back(&b.graph);
    for (BlockDef& def : out_.project.blocks) {
      std::vector<Node*> instances;
      for (Graph* g : graphs) {
        for (Node& n : g->nodes) {
          if (n.type == def.name) instances.push_back(&n);
        }
      }
      auto values = [&](const std::string& a) {
        Json v = Json::array({def.arguments.at(a)});
        for (Node* n : instances) v.push_back(n->options.value(a, def.arguments.at(a)));
        return v;
      };
      std::map<std::string, std::string> renamed;  // merged argument -> the one kept
      std::vector<std::pair<std::string, Json>> kept;
      for (const auto& [a, value] : def.arguments.items()) {
        const Json v = values(a);
        auto same =
            std::find_if(kept.begin(), kept.end(), [&](const auto& k) { return k.second == v; });
        if (same == kept.end()) {
          kept.emplace_back(a, v);
        } else {
          renamed[a] = same->first;
        }
      }
      if (renamed.empty()) continue;
      for (const auto& [from, to] : renamed) {
        def.arguments.erase(from);
        for (Node* n : instances) n->options.erase(from);
        for (Node& n : def.graph.nodes) {
          for (auto& [k, v] : n.options.items()) {
            if (v.is_string() && v.get<std::string>() == "$" + from) v = "$" + to;
          }
        }
      }
    }
  }

  void frozen() {
    for (const auto& [path, m] : modules_.items()) {
      const Json parameters = m.value("parameters", Json::object());
      for (const auto& [name, p] : parameters.items()) {
        if (!p.value("requires_grad", true))
          out_.project.frozen_parameters.push_back(join_path(path, name));
      }
    }
  }

  // The built project must load PyTorch's state dict strictly and give PyTorch's outputs.
  void check() {
    const graph::Analysis analysis = graph::analyze(out_.project);
    if (!analysis.ok()) {
      std::string text;
      for (const graph::Problem& p : analysis.problems) {
        text += "\n  " + (p.block.empty() ? std::string() : "block " + p.block + ": ") + p.message;
        if (text.size() > 2000) break;
      }
      throw ValueError(
          "the project made from the trace does not build (a bug in the import; "
          "please report it):" +
          text);
    }
    auto model = graph::build_model(out_.project);
    const std::string dir = dir_;
    const nn::StateDict state = serialize::load_state_dict_file(dir + "/state_dict.pt");
    const serialize::LoadReport report = serialize::compare_state_dict(*model, state);
    if (!report.loadable(true))
      throw ValueError("the project's state-dict keys differ from the PyTorch module's:\n" +
                       report.str());
    serialize::load_into(*model, state, true);
    model->train(false);
    const nn::StateDict io = serialize::load_state_dict_file(dir + "/io.pt");
    std::vector<Tensor> inputs;
    for (size_t k = 0; const Tensor* t = io.find("input." + std::to_string(k)); ++k)
      inputs.push_back(*t);
    std::vector<Tensor> outputs;
    {
      NoGradGuard no_grad;
      outputs = model->forward(inputs);
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      const Tensor* expected = io.find("output." + std::to_string(k));
      if (!expected) continue;
      if (expected->shape() != outputs[k].shape())
        throw ValueError("the imported model's output " + std::to_string(k) + " has shape " +
                         graph::shape_str(outputs[k].shape()) + ", PyTorch's " +
                         graph::shape_str(expected->shape()));
      const double diff =
          (outputs[k].to(Dtype::Float32) - expected->to(Dtype::Float32)).abs().max().item();
      const double scale = expected->to(Dtype::Float32).abs().max().item();
      if (!(diff <= 1e-3 * std::max(1.0, scale)))
        throw ValueError("the imported model's output " + std::to_string(k) +
                         " differs from PyTorch's by up to " + std::to_string(diff) +
                         " (outputs up to " + std::to_string(scale) +
                         "): a module's settings that NN Studio does not have (e.g. "
                         "padding_mode, dilation of a pool) or an op read wrongly");
    }
    out_.weights = model->state_dict();
  }

  std::string dir_;
  Json trace_, modules_, graphs_;
  std::pair<int64_t, int64_t> batches_;
  std::map<std::string, BlockDef> blocks_;          // structure key -> block
  std::map<std::string, std::string> block_names_;  // structure key -> name
  std::map<std::string, size_t> block_order_;       // name -> order made
  std::vector<std::string> notes_;
  graph::ImportedProject out_;
};

// The op families' view of one scope and one traced call.
class ScopeEmitter : public Emitter {
 public:
  ScopeEmitter(Reader& reader, Scope& scope, const Json& node, std::string what)
      : reader_(reader), scope_(scope), node_(node), what_(std::move(what)) {}

  Value add(const std::string& type, Json options, const std::vector<Value>& inputs,
            const SymShape& shape) override {
    const graph::NodeType& t = graph::node_type(type);
    const std::string base = node_.at("name").get<std::string>();
    const std::string name = count_ == 0 ? base : base + "_" + std::to_string(count_ + 1);
    ++count_;
    const NodeId id = scope_.graph.add_node(type, name, options);
    const std::vector<std::string> ports = t.input_ports(t.checked_options(options));
    if (ports.size() != inputs.size())
      refuse("expected " + std::to_string(ports.size()) + " inputs");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].is_tensor()) refuse("input " + std::to_string(i) + " is no tensor");
      scope_.graph.connect(inputs[i].port, {id, ports[i]});
    }
    Value v;
    v.kind = Value::Kind::Tensor;
    v.port = {id, "out"};
    v.shape = shape;
    return v;
  }

  Value constant(double value) override {
    const NodeId id = scope_.graph.add_node("Constant", "const", {{"value", value}});
    Value v;
    v.kind = Value::Kind::Tensor;
    v.port = {id, "out"};
    return v;
  }

  SymShape result_shape() const override {
    const Json& values = node_.at("values");
    if (values.empty() || values[0].value("t", "") != "tensor") return {};
    return sym_shape(values[0], values.size() > 1 ? values[1] : values[0]);
  }

  std::vector<SymShape> result_shapes() const override {
    const Json& values = node_.at("values");
    std::vector<SymShape> out;
    if (values.empty() || values[0].value("t", "") != "tuple") return out;
    const Json& a = values[0].at("items");
    const Json& b = values.size() > 1 && values[1].contains("items") ? values[1].at("items") : a;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].value("t", "") != "tensor") return {};
      out.push_back(sym_shape(a[i], i < b.size() ? b[i] : a[i]));
    }
    return out;
  }

  [[noreturn]] void refuse(const std::string& why) override {
    reader_.refuse(scope_, node_, what_, why);
  }

  void note(const std::string& text) override { reader_.note(text); }

 private:
  Reader& reader_;
  Scope& scope_;
  const Json& node_;
  std::string what_;
  int count_ = 0;
};

void Reader::add_parameters(Scope& scope) {
  const Json& m = module(scope.path);
  const Json parameters = m.value("parameters", Json::object());
  const Json buffers = m.value("buffers", Json::object());
  for (const auto& [name, p] : parameters.items()) {
    if (p.at("shape").empty())
      throw ValueError("cannot import " + describe(scope.path) + ": its parameter '" + name +
                       "' has no dims (NN Studio's Parameter node holds a tensor of 1 dim or "
                       "more)");
    const NodeId id = scope.graph.add_node(
        "Parameter", name,
        {{"shape", p.at("shape")}, {"requires_grad", p.value("requires_grad", true)}});
    scope.modules[join_path(scope.path, name)] = id;
  }
  for (const auto& [name, b] : buffers.items()) {
    if (!b.value("persistent", true))
      throw ValueError("cannot import " + describe(scope.path) + ": its buffer '" + name +
                       "' is not persistent (no state-dict entry would keep its values)");
    if (b.at("shape").empty())
      throw ValueError("cannot import " + describe(scope.path) + ": its buffer '" + name +
                       "' has no dims (NN Studio's Buffer node holds a tensor of 1 dim or more)");
    if (b.value("dtype", "float32") != "float32")
      throw ValueError("cannot import " + describe(scope.path) + ": its buffer '" + name + "' is " +
                       b.value("dtype", "") + " (NN Studio's Buffer node is float32)");
    const NodeId id = scope.graph.add_node("Buffer", name, {{"shape", b.at("shape")}});
    scope.modules[join_path(scope.path, name)] = id;
  }
}

Value Reader::resolve(Scope& scope, const Json& arg) {
  Value v;
  if (arg.is_object() && arg.contains("node")) {
    const std::string name = arg.at("node").get<std::string>();
    auto it = scope.values.find(name);
    if (it == scope.values.end()) throw ValueError("the trace uses '" + name + "' before it");
    return it->second;
  }
  if (arg.is_number() || arg.is_boolean()) {
    v.kind = Value::Kind::Number;
    v.first = v.second = arg.is_boolean() ? (arg.get<bool>() ? 1.0 : 0.0) : arg.get<double>();
    return v;
  }
  if (arg.is_null()) {
    v.kind = Value::Kind::None;
    return v;
  }
  if (arg.is_array()) {
    v.kind = Value::Kind::Tuple;
    for (const Json& a : arg) v.items.push_back(resolve(scope, a));
    return v;
  }
  v.kind = Value::Kind::Other;
  v.raw = arg;
  return v;
}

void Reader::build_scope(Scope& scope) {
  add_parameters(scope);
  const Json& nodes = graphs_.at(scope.path);
  const bool root = scope.path.empty();
  size_t input_index = 0;
  for (const Json& node : nodes) {
    const std::string op = node.at("op").get<std::string>();
    const std::string name = node.at("name").get<std::string>();
    const std::string target = node.at("target").get<std::string>();
    if (op == "placeholder") {
      const Json& values = node.at("values");
      if (values.empty() || values[0].value("t", "") != "tensor")
        refuse(scope, node, "the argument '" + target + "'",
               "every forward argument must be a tensor");
      const SymShape shape = sym_shape(values[0], values.size() > 1 ? values[1] : values[0]);
      Json options = Json::object();
      if (root && input_index < trace_.at("inputs").size()) {
        const Json& in = trace_.at("inputs")[input_index];
        options["shape"] = in.at("shape");
        options["dtype"] = in.at("dtype");
      } else {
        Json sample = Json::array();
        for (size_t i = 1; i < shape.size(); ++i) sample.push_back(shape[i] == -1 ? 1 : shape[i]);
        if (sample.empty()) sample.push_back(1);
        options["shape"] = sample;
        if (values[0].value("dtype", "float32") == "int64") options["dtype"] = "int64";
      }
      ++input_index;
      const NodeId id = scope.graph.add_node("Input", target, options);
      scope.values[name] = tensor_value(node, {id, "out"});
    } else if (op == "output") {
      output(scope, node);
    } else if (op == "get_attr") {
      auto it = scope.modules.find(join_path(scope.path, target));
      if (it == scope.modules.end())
        refuse(scope, node, "self." + target,
               "it is no parameter or buffer of this module itself (a submodule's tensor used "
               "in its parent's forward)");
      scope.values[name] = tensor_value(node, {it->second, "out"});
    } else if (op == "call_module") {
      call_module(scope, node);
    } else {
      // Sizes and other numbers fold: x.size(0), c // 2, ...
      const Json& values = node.at("values");
      if (!values.empty()) {
        if (std::optional<Value> v = folded(values[0], values.size() > 1 ? values[1] : values[0])) {
          // The tensor it was read from: an argument tensor, or the one its numbers came from.
          std::optional<PortRef> from;
          const std::function<void(const Value&)> find = [&](const Value& a) {
            if (from) return;
            if (a.is_tensor()) from = a.port;
            if (a.read_from) from = a.read_from;
            for (const Value& i : a.items) find(i);
          };
          for (const Json& a : node.at("args")) find(resolve(scope, a));
          const std::function<void(Value&)> mark = [&](Value& x) {
            x.read_from = from;
            for (Value& i : x.items) mark(i);
          };
          mark(*v);
          scope.values[name] = *v;
          continue;
        }
      }
      Call call;
      call.target = target;
      call.method = op == "call_method";
      for (const Json& a : node.at("args")) call.args.push_back(resolve(scope, a));
      for (const auto& [k, a] : node.at("kwargs").items()) call.kwargs[k] = resolve(scope, a);
      const std::string what = call.method ? "the method ." + target + "()" : target;
      ScopeEmitter emitter(*this, scope, node, what);
      std::optional<Value> result = convert_arithmetic(call, emitter);
      if (!result) result = convert_shape(call, emitter);
      if (!result) refuse(scope, node, what, "NN Studio has no node for it");
      scope.values[name] = *result;
    }
  }
  check_all_called(scope);
}

void Reader::call_module(Scope& scope, const Json& node) {
  const std::string target = node.at("target").get<std::string>();
  const std::string path = join_path(scope.path, target);
  const std::string name = node.at("name").get<std::string>();
  const std::string k = kind(path);
  const std::string what = "self." + target + "(...)";
  // A member of a Sequential runs in its chain only.
  const size_t dot = path.rfind('.');
  if (dot != std::string::npos && dot >= scope.path.size() + (scope.path.empty() ? 0 : 1)) {
    const std::string parent = path.substr(0, dot);
    if (modules_.contains(parent) && kind(parent) == "sequential")
      refuse(scope, node, what,
             "it calls a member of the Sequential '" + parent +
                 "' on its own; NN Studio runs a Sequential's members as a chain only");
  }
  if (k == "modulelist" || k == "moduledict")
    refuse(scope, node, what,
           "a " + module(path).at("class").get<std::string>() + " has no forward to call");
  NodeId id = module_node(scope, path);
  if (k == "sequential" && scope.graph.at(id).type == "ModuleDict") {
    // A named Sequential (a ModuleDict here): its members called one after the other.
    if (scope.called.contains(id))
      refuse(scope, node, what, "a Sequential with named members is called twice");
    scope.called.insert(id);
    const Json& args = node.at("args");
    if (args.size() != 1 || !node.at("kwargs").empty())
      refuse(scope, node, what, "a Sequential takes one input");
    Value x = resolve(scope, args[0]);
    graph::Project probe;
    for (auto& [key, b] : blocks_) probe.blocks.push_back(b);
    std::map<NodeId, std::string> paths;
    for (const auto& [p, n] : scope.modules) paths[n] = p;
    // Members in order; a member that is a named Sequential too chains its own members.
    const std::function<void(NodeId)> chain = [&](NodeId group) {
      for (NodeId member : std::vector<NodeId>(scope.graph.at(group).members)) {
        if (!x.is_tensor()) refuse(scope, node, what, "its input is no tensor");
        scope.called.insert(member);
        if (scope.graph.at(member).type == "ModuleDict" && paths.count(member) &&
            kind(paths.at(member)) == "sequential") {
          chain(member);
          continue;
        }
        probe.graph = scope.graph;
        const graph::NodePorts ports = graph::project_node_ports(probe, scope.graph.at(member));
        if (ports.inputs.size() != 1 || ports.outputs.empty())
          refuse(scope, node, what,
                 "its member '" + scope.graph.at(member).name + "' does not take one input");
        scope.graph.connect(x.port, {member, ports.inputs[0]});
        x.port = {member, ports.outputs[0]};
      }
    };
    chain(id);
    scope.values[name] = tensor_value(node, x.port);
    return;
  }
  // A second call of the same module: a Ref to it.
  if (scope.called.contains(id)) {
    const NodeId ref = scope.graph.add_node("Ref", name, {{"target", id}});
    id = ref;
  } else {
    scope.called.insert(id);
  }
  const graph::NodePorts ports = [&] {
    graph::Project probe;  // project_node_ports needs the blocks made so far
    for (auto& [key, b] : blocks_) probe.blocks.push_back(b);
    probe.graph = scope.graph;
    return graph::project_node_ports(probe, scope.graph.at(id));
  }();
  // Tensor arguments to the input ports in order, keywords by port name; None and
  // need_weights (MultiheadAttention's, for outputs the graph keeps anyway) are left out.
  std::vector<std::pair<std::string, Value>> wired;
  const Json& args = node.at("args");
  for (size_t i = 0; i < args.size(); ++i) {
    Value v = resolve(scope, args[i]);
    if (v.kind == Value::Kind::None) continue;
    if (i >= ports.inputs.size())
      refuse(scope, node, what,
             "it is called with " + std::to_string(args.size()) + " arguments; its node takes " +
                 std::to_string(ports.inputs.size()));
    wired.emplace_back(ports.inputs[i], v);
  }
  for (const auto& [key, a] : node.at("kwargs").items()) {
    Value v = resolve(scope, a);
    if (v.kind == Value::Kind::None || key == "need_weights") continue;
    if (std::find(ports.inputs.begin(), ports.inputs.end(), key) == ports.inputs.end())
      refuse(scope, node, what, "its argument '" + key + "' has no input port on NN Studio's node");
    wired.emplace_back(key, v);
  }
  for (const auto& [port, v] : wired) {
    if (!v.is_tensor()) refuse(scope, node, what, "its argument for '" + port + "' is no tensor");
    scope.graph.connect(v.port, {id, port});
  }
  // Its result: one output, or a tuple of its ports (LSTM: out, (h_n, c_n)).
  const Node& n = scope.graph.at(id);
  const std::string type = n.type == "Ref" ? scope.graph.at(n.options.at("target")).type : n.type;
  if (ports.outputs.size() == 1) {
    scope.values[name] = tensor_value(node, {id, ports.outputs[0]});
    return;
  }
  Value tuple;
  tuple.kind = Value::Kind::Tuple;
  const Json& values = node.at("values");
  auto item = [&](const std::string& port, const Json* s1, const Json* s2) {
    Value v;
    v.kind = Value::Kind::Tensor;
    v.port = {id, port};
    if (s1 && s1->value("t", "") == "tensor") v.shape = sym_shape(*s1, s2 ? *s2 : *s1);
    return v;
  };
  auto summary = [&](size_t run, std::vector<size_t> at) -> const Json* {
    if (values.size() <= run) return nullptr;
    const Json* s = &values[run];
    for (size_t i : at) {
      if (!s->contains("items") || s->at("items").size() <= i) return nullptr;
      s = &s->at("items")[i];
    }
    return s;
  };
  if (type == "LSTM" && ports.outputs.size() == 3) {
    tuple.items.push_back(item(ports.outputs[0], summary(0, {0}), summary(1, {0})));
    Value state;
    state.kind = Value::Kind::Tuple;
    state.items.push_back(item(ports.outputs[1], summary(0, {1, 0}), summary(1, {1, 0})));
    state.items.push_back(item(ports.outputs[2], summary(0, {1, 1}), summary(1, {1, 1})));
    tuple.items.push_back(state);
  } else {
    for (size_t i = 0; i < ports.outputs.size(); ++i)
      tuple.items.push_back(item(ports.outputs[i], summary(0, {i}), summary(1, {i})));
  }
  scope.values[name] = tuple;
}

void Reader::output(Scope& scope, const Json& node) {
  const Value result = resolve(scope, node.at("args").at(0));
  std::vector<Value> tensors;
  std::function<void(const Value&)> collect = [&](const Value& v) {
    if (v.is_tensor()) {
      tensors.push_back(v);
    } else if (v.kind == Value::Kind::Tuple) {
      for (const Value& i : v.items) collect(i);
    } else {
      refuse(scope, node, "return", "a forward must return tensors (or tuples of them)");
    }
  };
  collect(result);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string name = tensors.size() == 1 ? "out" : "out" + std::to_string(i);
    const NodeId id = scope.graph.add_node("Output", name);
    scope.graph.connect(tensors[i].port, {id, "in"});
  }
}

// Every module of the scope that holds state is a node some call wires: a submodule the
// forward never calls is refused (its keys would be lost), one without state is left out.
void Reader::check_all_called(Scope& scope) {
  // self.acts[self.active](x) calls one member of a ModuleDict: the dict is a switch (its
  // "active" member runs through the dict's ports), as NN Studio's switch ModuleDict does.
  for (Node& dict : scope.graph.nodes) {
    if (dict.type != "ModuleDict") continue;
    std::vector<NodeId> called;
    for (NodeId m : dict.members) {
      if (scope.called.contains(m)) called.push_back(m);
    }
    if (called.size() != 1 || dict.members.size() < 2) continue;
    const NodeId member = called[0];
    std::vector<graph::Edge> in, out;
    for (const graph::Edge& e : scope.graph.edges) {
      if (e.to.node == member) in.push_back(e);
      if (e.from.node == member) out.push_back(e);
    }
    if (in.size() != 1) continue;
    bool single = true;
    for (const graph::Edge& e : out) single &= e.from.port == out[0].from.port;
    if (!single) continue;
    const NodeId id = dict.id;
    dict.options = {{"switch", true}, {"active", scope.graph.at(member).name}};
    for (const graph::Edge& e : in) scope.graph.disconnect(e.to);
    for (const graph::Edge& e : out) scope.graph.disconnect(e.to);
    scope.graph.connect(in[0].from, {id, "in"});
    for (const graph::Edge& e : out) scope.graph.connect({id, "out"}, e.to);
    scope.called.insert(id);
    for (NodeId m : scope.graph.at(id).members) scope.called.insert(m);
  }

  const std::function<void(const std::string&)> visit = [&](const std::string& path) {
    const std::string k = kind(path);
    if (k == "modulelist" || k == "moduledict" || k == "sequential") {
      if (k == "sequential" && scope.modules.contains(path) &&
          scope.called.contains(scope.modules.at(path)))
        return;
      for (const Json& c : module(path).at("children"))
        visit(join_path(path, c.get<std::string>()));
      return;
    }
    auto it = scope.modules.find(path);
    if (it != scope.modules.end() && scope.called.contains(it->second)) return;
    // Without state anywhere inside (StochasticDepth where a block adds no residual), it
    // changes no key: left out.
    bool stateless = true;
    for (const auto& [p, m] : modules_.items()) {
      if (p != path && p.rfind(path + ".", 0) != 0) continue;
      stateless &= m.value("parameters", Json::object()).empty() &&
                   m.value("buffers", Json::object()).empty();
    }
    if (it == scope.modules.end() && stateless) {
      note(describe(path) + " is never called in forward: left out");
      return;
    }
    throw ValueError("cannot import " + describe(path) + ": the forward of " +
                     describe(scope.path) +
                     " never calls it (NN Studio keeps the modules a forward calls; its "
                     "state-dict keys would be lost)");
  };
  for (const Json& c : module(scope.path).at("children"))
    visit(join_path(scope.path, c.get<std::string>()));
}

}  // namespace

graph::ImportedProject read_trace(const std::string& dir) {
  return Reader(dir).run();
}

}  // namespace nns::torch_import
