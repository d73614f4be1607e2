// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/export/pytorch_code.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/data/sources.h"
#include "engine/data/transforms.h"
#include "engine/export/train_template.h"
#include "engine/graph/builder.h"
#include "engine/graph/node_types.h"
#include "engine/nn/layers.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"
#include "engine/train/losses.h"
#include "engine/train/optimizers.h"
#include "engine/train/run_store_schema.h"
#include "engine/train/session.h"

namespace nns::exporting {
namespace {

using graph::BlockDef;
using graph::Graph;
using graph::Json;
using graph::Node;
using graph::NodeId;
using graph::NodeKind;
using graph::NodeType;
using graph::OptionSpec;
using graph::PortRef;
using graph::Project;

const std::set<std::string>& python_keywords() {
  static const std::set<std::string> words = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  return words;
}

// Whether a name can be written as a Python attribute (self.fc1) or local: an identifier and
// no keyword. A module an ONNX import named by an index ("0", from an exported nn.Sequential)
// cannot, nor a keyword.
bool python_identifier(const std::string& name) {
  if (name.empty() || python_keywords().contains(name) ||
      std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

// A node name as a Python local: keywords get a trailing underscore, other names that are no
// identifier a leading "v_" and underscores for odd characters.
std::string local_name(const std::string& name) {
  if (python_keywords().contains(name)) return name + "_";
  if (python_identifier(name)) return name;
  std::string out = "v_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// A Python string literal (JSON's escapes are Python's too).
std::string quoted(const std::string& text) {
  return Json(text).dump();
}

std::string join(const std::vector<std::string>& parts, const std::string& sep = ", ") {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// An option value as Python source; a block argument ("$hidden") is the constructor argument
// of that name.
std::string py(const Json& v) {
  if (v.is_null()) return "None";
  if (v.is_boolean()) return v.get<bool>() ? "True" : "False";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return nn::python_float(v.get<double>());
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    return s.size() > 1 && s[0] == '$' ? local_name(s.substr(1)) : quoted(s);
  }
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const Json& x : v) items.push_back(py(x));
    return "(" + join(items) + (items.size() == 1 ? ",)" : ")");
  }
  return v.dump();
}

// A list option as PyTorch takes it: one number where a fixed-length list repeats it
// (kernel_size=3 for (3, 3)) or a list holds one (LayerNorm(16)).
std::string py_option(const OptionSpec& spec, const Json& v) {
  if (spec.kind == OptionSpec::Kind::IntList && v.is_array() && !v.empty() &&
      std::all_of(v.begin(), v.end(), [&v](const Json& x) { return x == v[0]; }) &&
      (v.size() == 1 || spec.length > 1))
    return py(v[0]);
  return py(v);
}

// How many leading options PyTorch's constructor requires: they are written positionally.
size_t required_options(const std::string& type) {
  static const std::map<std::string, size_t> required = {{"Linear", 2},
                                                         {"Conv1d", 3},
                                                         {"Conv2d", 3},
                                                         {"BatchNorm1d", 1},
                                                         {"BatchNorm2d", 1},
                                                         {"LayerNorm", 1},
                                                         {"Embedding", 2},
                                                         {"MaxPool2d", 1},
                                                         {"AvgPool2d", 1},
                                                         {"AdaptiveAvgPool2d", 1},
                                                         {"Unflatten", 2},
                                                         {"RNN", 2},
                                                         {"LSTM", 2},
                                                         {"GRU", 2},
                                                         {"MultiheadAttention", 2},
                                                         {"TransformerEncoderLayer", 2},
                                                         {"TransformerDecoderLayer", 2}};
  auto it = required.find(type);
  return it == required.end() ? 0 : it->second;
}

// Options that PyTorch takes in forward, not in the constructor: MultiheadAttention's
// is_causal is an attn_mask argument of each call (expression() writes it).
bool forward_option(const std::string& type, const std::string& option) {
  return type == "MultiheadAttention" && option == "is_causal";
}

// nn.Linear(2, 64), nn.Dropout(p=0.2): the required options, then those not at their default.
std::string module_constructor(const NodeType& type, const Json& options) {
  std::vector<std::string> args;
  const size_t required = required_options(type.name);
  for (size_t i = 0; i < type.options.size(); ++i) {
    const OptionSpec& spec = type.options[i];
    if (forward_option(type.name, spec.name)) continue;
    const bool given = options.is_object() && options.contains(spec.name);
    const Json& value = given ? options[spec.name] : spec.default_value;
    if (i < required) {
      args.push_back(py_option(spec, value));
    } else if (given && value != spec.default_value) {
      args.push_back(spec.name + "=" + py_option(spec, value));
    }
  }
  return "nn." + type.name + "(" + join(args) + ")";
}

// torch.zeros(3, 4), nn.init.xavier_uniform_(torch.empty(3, 4)): a Parameter or Buffer node's
// initial tensor, as engine/graph/node_types.h's initial_tensor draws it.
std::string initial_tensor(const Json& options, std::set<std::string>& imports) {
  std::vector<std::string> dims;
  const Json& shape = options.at("shape");
  if (shape.is_array()) {
    for (const Json& d : shape) dims.push_back(py(d));
  } else {
    dims.push_back(py(shape));
  }
  const std::string size = join(dims);
  const std::string init = options.at("init").get<std::string>();
  if (init == "zeros" || init == "ones" || init == "randn" || init == "rand")
    return "torch." + init + "(" + size + ")";
  if (init == "uniform") return "torch.empty(" + size + ").uniform_(-1, 1)";
  if (init == "kaiming_uniform") {
    imports.insert("math");
    return "nn.init.kaiming_uniform_(torch.empty(" + size + "), a=math.sqrt(5))";
  }
  return "nn.init." + init + "_(torch.empty(" + size + "))";
}

// The options with the spec's defaults for those not given, unchecked: inside a block they may
// hold $arguments, which the code names.
Json with_defaults(const NodeType& type, const Json& options) {
  Json out = Json::object();
  for (const OptionSpec& spec : type.options)
    out[spec.name] = options.is_object() && options.contains(spec.name) ? options[spec.name]
                                                                        : spec.default_value;
  return out;
}

// One class: a block's or the model's.
class ClassWriter {
 public:
  ClassWriter(const Project& project, const Graph& graph, std::string class_name, Json arguments,
              std::set<std::string>& imports, std::set<std::string>& plugin_sources)
      : project_(project),
        graph_(graph),
        class_name_(std::move(class_name)),
        arguments_(std::move(arguments)),
        parents_(graph::parent_index(graph)),
        imports_(imports),
        plugin_sources_(plugin_sources) {
    for (const Node& n : graph_.nodes) {
      if (graph::is_switch_dict(n)) switches_.push_back(n.id);
    }
  }

  std::string write(const std::vector<std::string>& frozen) {
    std::string out = "class " + class_name_ + "(nn.Module):\n";
    std::vector<std::string> params{"self"};
    if (arguments_.is_object()) {
      for (const auto& [name, value] : arguments_.items())
        params.push_back(local_name(name) + "=" + py(value));
    }
    out += "    def __init__(" + join(params) + "):\n        super().__init__()\n";
    for (const Node& n : graph_.nodes) {
      if (parents_.contains(n.id)) continue;
      out += registration(n);
    }
    for (const std::string& name : frozen)
      out += "        self.get_parameter(" + quoted(name) + ").requires_grad_(False)\n";
    out += "\n" + forward();
    return out;
  }

 private:
  // self.fc1, getattr(self, "lambda"), self.blocks[0], self.act["relu"]: a node's module.
  std::string path(NodeId id) const {
    const Node& n = graph_.at(id);
    auto parent = parents_.find(id);
    if (parent == parents_.end())
      return !python_identifier(n.name) ? "getattr(self, " + quoted(n.name) + ")"
                                        : "self." + n.name;
    const Node& group = graph_.at(parent->second);
    if (group.type == "ModuleDict") return path(group.id) + "[" + quoted(n.name) + "]";
    const auto index =
        std::find(group.members.begin(), group.members.end(), id) - group.members.begin();
    return path(group.id) + "[" + std::to_string(index) + "]";
  }

  // The attribute that holds a switch ModuleDict's active key: self.active when the class has
  // one switch.
  std::string active_attribute(const Node& dict) const {
    return switches_.size() == 1 ? "active" : dict.name + "_active";
  }

  // The module a member or attribute holds, as an expression (containers over several lines).
  std::string module_expression(const Node& n, const std::string& indent) const {
    if (n.type == "Sequential" || n.type == "ModuleList" || n.type == "ModuleDict") {
      const std::string inner = indent + "    ";
      std::string items;
      for (NodeId id : n.members) {
        const Node& m = graph_.at(id);
        items += inner + (n.type == "ModuleDict" ? quoted(m.name) + ": " : "") +
                 module_expression(m, inner) + ",\n";
      }
      if (n.type == "Sequential") return "nn.Sequential(\n" + items + indent + ")";
      if (n.type == "ModuleList") return "nn.ModuleList([\n" + items + indent + "])";
      return "nn.ModuleDict({\n" + items + indent + "})";
    }
    if (const BlockDef* block = project_.find_block(n.type)) {
      std::vector<std::string> args;
      if (n.options.is_object()) {
        for (const auto& [name, value] : n.options.items())
          args.push_back(local_name(name) + "=" + py(value));
      }
      return block->name + "(" + join(args) + ")";
    }
    const NodeType& type = graph::node_type(n.type);
    // A type with its own PyTorch class: a plugin's, or NN Studio's positional encodings.
    if (!type.plugin.empty() || !type.pytorch_source.empty()) {
      if (type.pytorch_source.empty())
        throw ValueError("node '" + n.name + "': its type " + n.type + " comes from the plugin '" +
                         type.plugin + "', which has no PyTorch code to export");
      // The twin class, written into model.py once, made with every option.
      plugin_sources_.insert(type.name);
      std::vector<std::string> args;
      const Json options = with_defaults(type, n.options);
      for (const OptionSpec& spec : type.options)
        args.push_back(spec.name + "=" + py(options.at(spec.name)));
      return type.name + "(" + join(args) + ")";
    }
    return module_constructor(type, n.options);
  }

  // __init__'s line(s) for a top-level node.
  std::string registration(const Node& n) {
    const std::string ind = "        ";
    // Not writable as self.<name>: registered by name (register_parameter, add_module).
    const bool by_name = !python_identifier(n.name);
    const std::optional<NodeKind> kind = graph::node_kind(n.type);
    if (kind == NodeKind::Parameter) {
      const Json& o = n.options;
      const bool trains = !o.contains("requires_grad") || o["requires_grad"] != false;
      const Json filled = with_defaults(graph::node_type("Parameter"), o);
      const std::string value = "nn.Parameter(" + initial_tensor(filled, imports_) +
                                (trains ? "" : ", requires_grad=False") + ")";
      return ind +
             (by_name ? "self.register_parameter(" + quoted(n.name) + ", " + value + ")"
                      : "self." + n.name + " = " + value) +
             "\n";
    }
    if (kind == NodeKind::Buffer) {
      const Json filled = with_defaults(graph::node_type("Buffer"), n.options);
      const bool persistent = filled.at("persistent") != false;
      return ind + "self.register_buffer(" + quoted(n.name) + ", " +
             initial_tensor(filled, imports_) + (persistent ? "" : ", persistent=False") + ")\n";
    }
    const bool module = (kind == NodeKind::Module || kind == NodeKind::Container ||
                         (!kind && project_.find_block(n.type)));
    if (!module) return "";
    const std::string value = module_expression(n, ind);
    std::string out = ind +
                      (by_name ? "self.add_module(" + quoted(n.name) + ", " + value + ")"
                               : "self." + n.name + " = " + value) +
                      "\n";
    if (graph::is_switch_dict(n)) {
      const std::string active = n.options.contains("active") && n.options["active"].is_string()
                                     ? n.options["active"].get<std::string>()
                                     : graph_.at(n.members.front()).name;
      out += ind + "self." + active_attribute(n) + " = " + quoted(active) + "\n";
    }
    return out;
  }

  // forward: the nodes in the order the builder runs them, one line each. A value's variable is
  // reused by the node that consumes it last (x = self.fc1(x), h = h + r).
  std::string forward() {
    const std::vector<NodeId> order = graph::forward_order(project_, graph_);
    std::map<std::pair<NodeId, std::string>, int> uses;
    for (const graph::Edge& e : graph_.edges) ++uses[{e.from.node, e.from.port}];
    std::map<std::pair<NodeId, std::string>, std::string> value;  // (node, port) -> expression
    std::multiset<std::string> live;
    std::vector<std::string> inputs;
    std::map<NodeId, std::string> returned;
    std::string body;
    auto fresh = [&live, &inputs](const std::string& preferred) {
      auto taken = [&](const std::string& n) {
        return live.contains(n) || std::find(inputs.begin(), inputs.end(), n) != inputs.end();
      };
      if (!preferred.empty() && !taken(preferred)) return preferred;
      for (const std::string n : {"h", "r"}) {
        if (!taken(n)) return std::string(n);
      }
      for (int i = 2;; ++i) {
        if (!taken("h" + std::to_string(i))) return "h" + std::to_string(i);
      }
    };
    for (const Node& n : graph_.nodes) {
      if (graph::node_kind(n.type) == NodeKind::Input) inputs.push_back(local_name(n.name));
    }
    for (NodeId id : order) {
      const Node& n = graph_.at(id);
      const std::optional<NodeKind> kind = graph::node_kind(n.type);
      const graph::NodePorts ports = graph::project_node_ports(project_, n);
      if (kind == NodeKind::Input) {
        value[{id, "out"}] = local_name(n.name);
        live.insert(local_name(n.name));
        continue;
      }
      if (kind == NodeKind::Parameter || kind == NodeKind::Buffer) {
        value[{id, "out"}] =
            !python_identifier(n.name) ? "getattr(self, " + quoted(n.name) + ")" : "self." + n.name;
        continue;
      }
      std::vector<std::string> args;
      std::string reusable;
      for (const std::string& port : ports.inputs) {
        const graph::Edge* e = graph_.edge_into({id, port});
        const std::pair<NodeId, std::string> from{e->from.node, e->from.port};
        const std::string arg = value.at(from);
        args.push_back(arg);
        if (--uses[from] == 0 && live.contains(arg)) {
          live.erase(live.find(arg));
          if (reusable.empty() && !live.contains(arg)) reusable = arg;
        }
      }
      if (kind == NodeKind::Output) {
        returned[id] = args.at(0);
        continue;
      }
      const std::string call = expression(n, kind, args);
      std::vector<std::string> outs;
      for (const std::string& port : ports.outputs) {
        std::string name;
        if (ports.outputs.size() == 1) {
          name = !reusable.empty() ? reusable : fresh("");
        } else {
          name = fresh(local_name(port));
        }
        live.insert(name);
        value[{id, port}] = name;
        outs.push_back(name);
        if (uses[{id, port}] == 0) live.erase(live.find(name));
      }
      // nn.LSTM returns (output, (h_n, c_n)).
      const Node& callee =
          kind == NodeKind::Ref ? graph_.at(n.options.at("target").get<NodeId>()) : n;
      const std::string targets = callee.type == "LSTM" && outs.size() == 3
                                      ? outs[0] + ", (" + outs[1] + ", " + outs[2] + ")"
                                      : join(outs);
      body += "        " + (outs.empty() ? std::string() : targets + " = ") + call + "\n";
    }
    std::vector<std::string> results;
    for (const Node& n : graph_.nodes) {
      if (graph::node_kind(n.type) == NodeKind::Output) results.push_back(returned.at(n.id));
    }
    std::vector<std::string> params{"self"};
    params.insert(params.end(), inputs.begin(), inputs.end());
    return "    def forward(" + join(params) + "):\n" + body + "        return " + join(results) +
           "\n";
  }

  // The call a running node makes on its arguments.
  std::string expression(const Node& n, std::optional<NodeKind> kind,
                         const std::vector<std::string>& args) {
    if (kind == NodeKind::Functional) {
      if (n.type == "Add") return join(args, " + ");
      if (n.type == "Mul") return join(args, " * ");
      if (n.type == "MatMul") return args.at(0) + " @ " + args.at(1);
      if (n.type == "Concat") {
        const Json o = with_defaults(graph::node_type("Concat"), n.options);
        return "torch.cat([" + join(args) + "], dim=" + py(o.at("dim")) + ")";
      }
      if (n.type == "F.relu") {
        imports_.insert("F");
        return "F.relu(" + args.at(0) + ")";
      }
      // The tensor functions a PyTorch import makes (engine/graph/types/tensor_functions.cpp).
      if (n.type == "Sub") return args.at(0) + " - " + args.at(1);
      if (n.type == "Div") return args.at(0) + " / " + args.at(1);
      if (const NodeType* t = graph::find_node_type(n.type); t && t->plugin.empty()) {
        const Json o = with_defaults(*t, n.options);
        if (n.type == "Constant") return py(o.at("value"));
        if (n.type == "F.hardtanh")
          return "F.hardtanh(" + args.at(0) + ", " + py(o.at("min_val")) + ", " +
                 py(o.at("max_val")) + ")";
        if (n.type == "Expand") {
          return args.at(0) + ".expand(" + args.at(1) + ".size(0), *" + args.at(0) + ".shape[1:])";
        }
        if (n.type == "F.adaptive_avg_pool2d") {
          imports_.insert("F");
          return "F.adaptive_avg_pool2d(" + args.at(0) + ", " + py(o.at("output_size")) + ")";
        }
        if (n.type == "F.gelu")
          return "F.gelu(" + args.at(0) + ", approximate=" + py(o.at("approximate")) + ")";
        if (n.type.rfind("F.", 0) == 0 || n.type.rfind("torch.", 0) == 0) {
          if (n.type.rfind("F.", 0) == 0) imports_.insert("F");
          if (n.type != "torch.flatten") return n.type + "(" + args.at(0) + ")";
        }
        if (n.type == "torch.flatten")
          return "torch.flatten(" + args.at(0) + ", " + py(o.at("start_dim")) + ", " +
                 py(o.at("end_dim")) + ")";
        if (n.type == "Reshape") {
          std::string sizes;
          for (const Json& s : o.at("shape")) sizes += ", " + py(s);
          return args.at(0) + ".reshape(" + args.at(0) + ".size(0)" + sizes + ")";
        }
        if (n.type == "Mean")
          return args.at(0) + ".mean(" + py(o.at("dim")) + ", keepdim=" + py(o.at("keepdim")) + ")";
        if (n.type == "Transpose")
          return args.at(0) + ".transpose(" + py(o.at("dim0")) + ", " + py(o.at("dim1")) + ")";
        if (n.type == "Permute") return args.at(0) + ".permute(" + py(o.at("dims")) + ")";
        if (n.type == "Select")
          return args.at(0) + ".select(" + py(o.at("dim")) + ", " + py(o.at("index")) + ")";
        if (n.type == "Narrow")
          return args.at(0) + ".narrow(" + py(o.at("dim")) + ", " + py(o.at("start")) + ", " +
                 py(o.at("length")) + ")";
      }
      const NodeType& type = graph::node_type(n.type);
      throw ValueError("node '" + n.name + "': the function " + n.type +
                       (type.plugin.empty() ? std::string(" has no PyTorch code")
                                            : " comes from the plugin '" + type.plugin +
                                                  "', which has no PyTorch code to export"));
    }
    if (kind == NodeKind::Ref) {
      const NodeId target = n.options.at("target").get<NodeId>();
      return expression(graph_.at(target), graph::node_kind(graph_.at(target).type), args);
    }
    if (graph::is_switch_dict(n))
      return path(n.id) + "[self." + active_attribute(n) + "](" + join(args) + ")";
    if (n.type == "MultiheadAttention" && n.options.value("is_causal", false) == true) {
      // A query attends to the keys up to its own position: -inf above the diagonal.
      const std::string dim = n.options.value("batch_first", false) == true ? "1" : "0";
      imports_.insert("math");
      const std::string mask = "torch.triu(torch.full((" + args.at(0) + ".size(" + dim + "), " +
                               args.at(1) + ".size(" + dim + ")), -math.inf, device=" + args.at(0) +
                               ".device), diagonal=1)";
      return path(n.id) + "(" + join(args) + ", attn_mask=" + mask + ")";
    }
    return path(n.id) + "(" + join(args) + ")";
  }

  const Project& project_;
  const Graph& graph_;
  std::string class_name_;
  Json arguments_;
  std::unordered_map<NodeId, NodeId> parents_;
  std::vector<NodeId> switches_;
  std::set<std::string>& imports_;
  std::set<std::string>& plugin_sources_;  // the plugin types whose twin classes model.py needs
};

}  // namespace

namespace {

// model.py for a project that builds.
std::string model_code(const Project& project) {
  std::set<std::string> imports, plugin_types;
  std::string classes;
  for (const BlockDef& b : project.blocks)
    classes += "\n\n" +
               ClassWriter(project, b.graph, b.name, b.arguments, imports, plugin_types).write({});
  classes += "\n\n" + ClassWriter(project, project.graph, project.name, Json::object(), imports,
                                  plugin_types)
                          .write(project.frozen_parameters);
  // The plugins' twin classes first, as their plugins wrote them; the import lines they start
  // with join the file's.
  std::string twins;
  std::set<std::string> twin_imports;
  for (const std::string& type : plugin_types) {
    const NodeType& t = graph::node_type(type);
    std::string source = t.pytorch_source;
    while (source.rfind("import ", 0) == 0 || source.rfind("from ", 0) == 0 ||
           source.rfind("\n", 0) == 0) {
      const size_t end = source.find('\n');
      const std::string line = source.substr(0, end);
      if (!line.empty()) twin_imports.insert(line);
      source = end == std::string::npos ? std::string() : source.substr(end + 1);
    }
    const std::string origin = t.plugin.empty()
                                   ? std::string("NN Studio's layer")
                                   : "from the plugin " + t.plugin + " " + t.plugin_version;
    twins += "\n\n# " + type + ", " + origin + ".\n" + source;
    if (twins.back() != '\n') twins += "\n";
  }
  if (twin_imports.erase("import math")) imports.insert("math");
  classes = twins + classes;
  std::string out = "\"\"\"" + project.name +
                    ", exported from NN Studio.\n\n"
                    "Its state_dict() has NN Studio's keys in NN Studio's order, so the weights "
                    "saved there\nload here with model.load_state_dict(torch.load(\"weights.pt\"), "
                    "strict=True).\n\"\"\"\n";
  if (imports.contains("math")) out += "import math\n\n";
  out += "import torch\n";
  if (imports.contains("F")) out += "import torch.nn.functional as F\n";
  out += "from torch import nn\n";
  for (const std::string& line : twin_imports) out += line + "\n";
  return out + classes;
}

}  // namespace

std::string pytorch_model_code(const Project& project) {
  graph::build_model(project);  // the builder's own check: a GraphError naming every problem
  return model_code(project);
}

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// name(a=1, b=2) from a settings object's entries, as the project has them.
std::string call(const std::string& name, std::vector<std::string> args, const Json& options) {
  if (options.is_object()) {
    for (const auto& [key, value] : options.items()) args.push_back(key + "=" + py(value));
  }
  return name + "(" + join(args) + ")";
}

// A user's files ("files" data) that train.py reads itself, as NN Studio reads them: an image
// folder, MNIST or CIFAR files through the project's transforms, or NumPy arrays. data.pt then
// holds the split: which samples train and which test.
struct FilesSource {
  std::string kind;  // data::source_kind()
  std::string path;  // absolute
  // Images: where in `path` each split lies ("." for `path` itself; "MNIST/raw" in
  // torchvision's root layout, "train" and "test" for split image folders).
  std::string train_part;
  std::string test_part;  // empty without a test split of its own
  bool own_test_split = false;
  std::vector<data::Transform> transforms;
  bool classification = true;
  // The samples of the source's train split that train, and of its test split (or, without
  // one, of its train split) that test: NN Studio's split, less any image it could not read.
  std::vector<int64_t> train_indices;
  std::vector<int64_t> test_indices;
};

bool is_image_kind(const std::string& kind) {
  return kind == "image folder" || kind == "MNIST" || kind == "Fashion-MNIST" ||
         kind == "CIFAR-10" || kind == "CIFAR-100";
}

// "the MNIST files", as train.py's comments and the README name the source.
std::string source_words(const std::string& kind) {
  if (kind == "image folder") return "the image folder";
  if (kind == "NumPy") return "the NumPy arrays";
  if (kind == "CIFAR-10" || kind == "CIFAR-100") return "the " + kind + " binary batches";
  return "the " + kind + " files";
}

std::string export_readme(const Project& project, bool with_weights, const FilesSource* files) {
  const std::string& name = project.name;
  std::string out = "# " + name + ", exported from NN Studio\n\n";
  out += "- `model.py`: `" + name +
         "`, an `nn.Module` with NN Studio's module names. Its `state_dict()` has the\n"
         "  keys, in the order, of the model NN Studio builds, so the weight files NN Studio "
         "saves (`.pt`)\n  load into it with `strict=True`.\n"
         "- `train.py`: trains it with the project's settings on ";
  if (files) {
    const bool images = files->kind != "NumPy";
    out +=
        "its data, recording the run into `runs/`\n  (`nnstudio-cli runs runs/`). It reads " +
        source_words(files->kind) + " from where they are (`--data PATH` reads\n  them from " +
        "elsewhere), `" + files->path + "`,\n  " +
        (images ? "as torchvision reads them, through the project's transforms:\n  `" +
                      data::transforms_text(files->transforms) + "`.\n"
                : std::string("x as float32 and y as classes (int64) or values (float32).\n")) +
        "- `data.pt`: NN Studio's train/test split: `train_indices`, the samples of the "
        "source's train split\n  that train, and `test_indices`, those of its " +
        (files->own_test_split ? "test split" : "train split (it has no test split of its own)") +
        " that test" +
        (images ? std::string(", through\n  the test transforms (each RandomCrop its "
                              "CenterCrop, no flips).\n")
                : ".\n");
  } else {
    out +=
        "`data.pt`, the project's data with its\n  exact train/test split, recording the run "
        "into `runs/` (`nnstudio-cli runs runs/`).\n";
  }
  out +=
      "- `nnstudio_runs.py`: the recorder, for any training loop: "
      "`nnstudio_runs.Recorder(\"runs\", model, probes=[...])`, with "
      "`nnstudio_runs_schema.json`, the run store's layout it reads.\n";
  if (with_weights) out += "- `weights.pt`: the weights NN Studio had when it exported.\n";
  out += "\n## Use the model\n\n```python\nimport torch\nfrom model import " + name +
         "\n\nmodel = " + name + "()\n";
  if (with_weights) out += "model.load_state_dict(torch.load(\"weights.pt\"), strict=True)\n";
  out +=
      "```\n\n## Train it\n\n"
      "```sh\npython3 train.py                             # one process\n"
      "python3 train.py --steps 100 --save ckpt.pt  # a checkpoint NN Studio opens\n"
      "torchrun --nproc_per_node 4 train.py         # DistributedDataParallel, 4 processes\n"
      "torchrun --nnodes 2 --node_rank 0 --master_addr HOST --nproc_per_node 8 train.py "
      "--device cuda\n```\n\n"
      "Under `torchrun` it trains with `DistributedDataParallel` and a `DistributedSampler` "
      "(gloo on the\nCPU, nccl on GPUs); each process takes its share of every batch, so a "
      "step sees the batch one\nprocess would. Rank 0 prints the progress and writes `--save` "
      "as a checkpoint in NN Studio's\nlayout: `nnstudio-cli train PROJECT --resume ckpt.pt` "
      "and the window's Load Checkpoint\ncontinue from it.\n\n"
      "The code runs on PyTorch 1.13 and 2.x. (Debian's PyTorch 1.13 `torchrun` fails under "
      "Python 3.11;\nstart the processes with the variables it sets instead: RANK, WORLD_SIZE, "
      "LOCAL_RANK,\nMASTER_ADDR, MASTER_PORT.)\n";
  return out;
}

// The transforms as torchvision code, `T.Compose([...])` one call a line, each call prefixed
// with `T.` (train.py imports torchvision.transforms as T). A list without ToTensor has it
// implied at its end, as NN Studio applies it; here it is written out.
std::string compose_code(const std::vector<data::Transform>& transforms) {
  std::string out = "T.Compose([\n";
  bool tensor = false;
  for (const data::Transform& t : transforms) {
    out += "    T." + data::transform_text(t) + ",\n";
    tensor = tensor || t.kind == data::Transform::Kind::ToTensor;
  }
  if (!tensor) out += "    T.ToTensor(),\n";
  return out + "])";
}

// train.py's imports: what its data code uses, beside what every train.py does.
std::string imports_code(const FilesSource* files) {
  const std::string kind = files ? files->kind : "";
  const bool mnist = kind == "MNIST" || kind == "Fashion-MNIST";
  const bool cifar = kind == "CIFAR-10" || kind == "CIFAR-100";
  const bool numpy = kind == "NumPy";
  std::string out = "import argparse\n";
  if (mnist) out += "import gzip\n";
  out += "import os\nimport time\n\n";
  if (mnist || cifar || numpy) out += "import numpy as np\n";
  out += "import torch\nimport torch.distributed as dist\n";
  if (kind == "image folder") out += "import torchvision\n";
  if (mnist || cifar) out += "from PIL import Image\n";
  out += "from torch import nn\nfrom torch.nn.parallel import DistributedDataParallel\n";
  std::vector<std::string> names{"DataLoader"};
  if (mnist || cifar) names.push_back("Dataset");
  names.push_back("DistributedSampler");
  if (files) names.push_back("Subset");
  if (!files || numpy) names.push_back("TensorDataset");
  out += "from torch.utils.data import " + join(names) + "\n";
  if (files && !numpy) out += "from torchvision import transforms as T\n";
  return out;
}

// Fills train.py's data placeholders: data.pt's tensors, or the user's files.
std::string with_data_code(std::string out, const FilesSource* files) {
  out = replace_all(out, "{{IMPORTS}}", imports_code(files));
  if (!files) {
    out = replace_all(out, "{{DATA_DOC}}", "its data (data.pt, its exact train/test split)");
    out = replace_all(out, "{{DATA_OPTION}}",
                      "--data FILE trains on another file of data.pt's tensors");
    out = replace_all(out, "{{DATA_SETTINGS}}", "");
    out = replace_all(out, "{{DATA_DEFAULT}}", "os.path.join(HERE, \"data.pt\")");
    out = replace_all(out, "{{DATA_HELP}}",
                      "\"the tensors to train on (default data.pt beside train.py)\"");
    return replace_all(out, "{{DATA_CODE}}", kDataPtLoader);
  }
  const std::string& kind = files->kind;
  const bool numpy = kind == "NumPy";
  const std::string what = source_words(kind);
  out = replace_all(out, "{{DATA_DOC}}",
                    "its data: " + what + " at DATA,\n" +
                        (numpy ? std::string("read as NN Studio reads them")
                               : "read as torchvision reads them, through the project's "
                                 "transforms") +
                        ", in NN Studio's exact\ntrain/test split (data.pt: which samples train "
                        "and which test)");
  out = replace_all(out, "{{DATA_OPTION}}",
                    "--data PATH reads " + what + " at PATH instead (laid out as at DATA)");
  std::string settings = "\n# The data: " + what + " (--data PATH reads them from elsewhere).\n";
  settings += "DATA = " + quoted(files->path) + "\n";
  if (kind == "image folder") {
    settings += "TRAIN_FOLDER = " + quoted(files->train_part) + "  # the train split's, in DATA\n";
    settings += "TEST_FOLDER = " + (files->own_test_split
                                        ? quoted(files->test_part) + "  # the test split's\n"
                                        : std::string("None  # no test split of its own\n"));
  } else if (!numpy) {
    settings += "FILES = " + quoted(files->train_part) + "  # the folder in DATA that holds them\n";
  }
  settings += files->own_test_split
                  ? "OWN_TEST_SPLIT = True  # its test split is the test set\n"
                  : "OWN_TEST_SPLIT = False  # no test split of its own: some train samples test\n";
  if (numpy) {
    settings += "TRAIN_TRANSFORM = TEST_TRANSFORM = None  # arrays have no transforms\n";
  } else {
    settings += "TRAIN_TRANSFORM = " + compose_code(files->transforms) + "\n";
    settings += "# The test set's: each RandomCrop its CenterCrop, no flips.\n";
    settings += "TEST_TRANSFORM = " + compose_code(data::test_transforms(files->transforms)) + "\n";
  }
  out = replace_all(out, "{{DATA_SETTINGS}}", settings);
  out = replace_all(out, "{{DATA_DEFAULT}}", "DATA");
  out = replace_all(out, "{{DATA_HELP}}", quoted("where " + what + " are (default %(default)s)"));
  std::string source;
  if (kind == "image folder") {
    source = kImageFolderSource;
  } else if (kind == "MNIST" || kind == "Fashion-MNIST") {
    source = kMnistSource;
  } else if (numpy) {
    source = kNumpySource;
  } else {
    source = replace_all(kCifarSource, "{{HUNDRED}}", kind == "CIFAR-100" ? "True" : "False");
  }
  return replace_all(out, "{{DATA_CODE}}", source + "\n\n" + kFilesLoader);
}

// The indices of the samples load_source() kept: all of them unless it skipped images it
// could not read, which are then found again.
std::vector<int64_t> kept_samples(const std::string& path, data::Split split,
                                  const data::LoadedSource& loaded) {
  std::vector<int64_t> kept;
  if (loaded.dataset.skipped.empty()) {
    kept.resize(static_cast<size_t>(loaded.dataset.size()));
    std::iota(kept.begin(), kept.end(), int64_t{0});
    return kept;
  }
  const std::unique_ptr<data::ImageSet> set = data::open_image_set(path, split);
  for (int64_t i = 0; i < set->size(); ++i) {
    try {
      set->image(i);
      kept.push_back(i);
    } catch (const serialize::FileError&) {
    }
  }
  if (static_cast<int64_t>(kept.size()) != loaded.dataset.size()) {
    throw ValueError(path + ": its images changed while it was read; export again");
  }
  return kept;
}

// The project's "files" data as train.py reads it, loaded and split as a session does
// (engine/train/make_session.cpp, files_split), so that what cannot be read fails here;
// nullopt for a source train.py does not read itself (CSV), which data.pt holds.
std::optional<FilesSource> files_source(const graph::DatasetSettings& d,
                                        const std::string& base_dir) {
  namespace fs = std::filesystem;
  if (d.name != "files" || d.path.empty()) return std::nullopt;
  const std::string path = (fs::path(base_dir) / d.path).string();
  FilesSource files;
  files.kind = data::source_kind(path);
  if (!is_image_kind(files.kind) && files.kind != "NumPy") return std::nullopt;
  fs::path absolute = fs::absolute(path).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();  // a trailing '/'
  files.path = absolute.string();
  files.transforms = data::parse_transforms(d.transforms);
  files.own_test_split = data::has_test_split(path);

  data::SourceOptions options;
  options.transforms = files.transforms;
  options.seed = static_cast<uint64_t>(d.seed);
  options.defer_random = true;
  const data::LoadedSource train = data::load_source(path, options);
  files.classification = train.dataset.task == data::TaskKind::Classification;
  const std::vector<int64_t> kept = kept_samples(path, data::Split::Train, train);
  // Where in the source each split's files lie, as the engine found them.
  auto part = [&](data::Split split) {
    const fs::path found = fs::absolute(data::open_image_set(path, split)->path());
    const fs::path relative = found.lexically_normal().lexically_relative(absolute);
    return relative.empty() ? std::string(".") : relative.string();
  };
  if (is_image_kind(files.kind)) files.train_part = part(data::Split::Train);
  if (files.own_test_split) {
    options.split = data::Split::Test;
    options.transforms = data::test_transforms(files.transforms);
    const data::LoadedSource test = data::load_source(path, options);
    files.train_indices = kept;
    files.test_indices = kept_samples(path, data::Split::Test, test);
    if (is_image_kind(files.kind)) files.test_part = part(data::Split::Test);
    return files;
  }
  // The session's split of the samples it loaded (Dataset::split looks at the targets alone),
  // made on their indices in the source.
  data::Dataset indices = train.dataset;
  indices.augmentation = nullptr;
  indices.stream = nullptr;
  indices.stream_rows.clear();
  indices.inputs = from_vector(kept, {static_cast<int64_t>(kept.size())});
  const data::DatasetSplit split = indices.split(d.test_fraction, static_cast<uint64_t>(d.seed));
  files.train_indices = split.train.inputs.to_vector<int64_t>();
  files.test_indices = split.test.inputs.to_vector<int64_t>();
  return files;
}

std::string train_code(const Project& project, bool classification, const FilesSource* files) {
  const graph::TrainingSettings& t = project.training;
  // Checked as a session checks them, so that the code gets only options PyTorch takes.
  train::make_loss(t.loss, t.loss_options);
  train::optimizer_option_list(t.optimizer, t.optimizer_options);
  std::string scheduler = "None";
  bool per_step = false;
  if (!t.scheduler.empty()) {
    std::vector<std::string> args{"optimizer"};
    per_step = t.scheduler == "OneCycleLR";
    const bool has_length =
        t.scheduler_options.is_object() &&
        (t.scheduler_options.contains("total_steps") || t.scheduler_options.contains("epochs"));
    Json options = t.scheduler_options;
    if (per_step && !has_length) {
      // As NN Studio runs it: without a length of its own, it spans the whole run.
      options["epochs"] = "$epochs";
      options["steps_per_epoch"] = "$steps_per_epoch";
    }
    scheduler = call("torch.optim.lr_scheduler." + t.scheduler, args, options);
  }
  std::string out = kTrainTemplate;
  out = replace_all(out, "{{CLASS}}", project.name);
  out = replace_all(out, "{{BATCH}}", std::to_string(t.batch_size));
  out = replace_all(out, "{{EPOCHS}}", std::to_string(t.epochs));
  out = replace_all(out, "{{SEED}}", std::to_string(t.seed));
  out = replace_all(out, "{{CLIP}}", nn::python_float(t.clip_grad_norm));
  out = replace_all(out, "{{CLASSIFICATION}}", classification ? "True" : "False");
  out = replace_all(out, "{{PER_STEP}}", per_step ? "True" : "False");
  out = replace_all(out, "{{LOSS}}", call("nn." + t.loss, {}, t.loss_options));
  out = replace_all(out, "{{OPTIMIZER}}",
                    call("torch.optim." + t.optimizer, {"parameters"}, t.optimizer_options));
  out = replace_all(out, "{{SCHEDULER}}", scheduler);
  // The project's probes, by their modules' names in the model (the same in model.py), for
  // the run's recorder (nnstudio_runs.py); the densest probe's interval for all.
  const std::shared_ptr<graph::GraphModule> model = graph::build_model(project);
  Json probes = Json::array();
  int64_t every = 0;
  for (const graph::ProbeSpec& spec : project.probes) {
    if (!model->node_module(spec.node)) continue;  // a node without a module has no probe
    probes.push_back(model->module_name(spec.node));
    every = every ? std::min(every, spec.every) : spec.every;
  }
  out = replace_all(out, "{{PROBES}}", probes.dump());
  out = replace_all(out, "{{PROBE_EVERY}}", std::to_string(every > 0 ? every : 10));
  // Last: the data's text holds the user's path.
  return with_data_code(out, files);
}

}  // namespace

std::string pytorch_train_code(const Project& project, bool classification) {
  return train_code(project, classification, nullptr);
}

void write_pytorch_export(const Project& project, const std::string& dir,
                          const std::string& base_dir, const nn::StateDict* weights, bool replace) {
  namespace fs = std::filesystem;
  const fs::path target(dir);
  std::error_code ec;
  if (fs::exists(target, ec) && !replace)
    throw ValueError("'" + dir + "' exists; choose a new folder, or replace it (--force)");
  // Made and checked in memory first: a project that does not build writes nothing.
  const std::shared_ptr<graph::GraphModule> model = graph::build_model(project);
  if (weights) serialize::load_into(*model, *weights, /*strict=*/true);
  const std::string model_py = model_code(project);
  // A user's images or arrays are read by train.py itself, from where they are; data.pt holds
  // the split. Other data goes into data.pt whole.
  const std::optional<FilesSource> files = files_source(project.dataset, base_dir);
  nn::StateDict data;
  std::string train_py;
  if (files) {
    train_py = train_code(project, files->classification, &*files);
    auto indices = [](const std::vector<int64_t>& v) {
      return from_vector(v, {static_cast<int64_t>(v.size())});
    };
    data.insert("train_indices", indices(files->train_indices));
    data.insert("test_indices", indices(files->test_indices));
  } else {
    const data::DatasetSplit split = train::project_split(project, base_dir);
    train_py = train_code(project, split.train.task == data::TaskKind::Classification, nullptr);
    data.insert("x_train", split.train.inputs);
    data.insert("y_train", split.train.targets);
    data.insert("x_test", split.test.inputs);
    data.insert("y_test", split.test.targets);
  }
  const std::string readme = export_readme(project, weights != nullptr, files ? &*files : nullptr);

  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string stem = target.filename().string();
  const fs::path staging = parent / ("." + stem + ".export-" + std::to_string(::getpid()));
  const fs::path old = parent / ("." + stem + ".replaced-" + std::to_string(::getpid()));
  fs::remove_all(staging, ec);
  try {
    fs::create_directories(staging);
    auto write = [&staging](const std::string& name, const std::string& text) {
      serialize::write_file_atomically((staging / name).string(),
                                       [&text](serialize::ByteSink& sink) { sink.write(text); });
    };
    write("model.py", model_py);
    write("train.py", train_py);
    write("nnstudio_runs.py", kRecorderModule);
    write("nnstudio_runs_schema.json", train::kRunStoreSchemaText);  // nnstudio_runs.py reads it
    write("README.md", readme);
    serialize::save_state_dict_file(data, (staging / "data.pt").string());
    if (weights) serialize::save_state_dict_file(*weights, (staging / "weights.pt").string());
    if (fs::exists(target)) fs::rename(target, old);
    fs::rename(staging, target);
    fs::remove_all(old, ec);
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(staging, ec);
    throw ValueError("cannot write the export folder '" + dir + "': " + e.code().message());
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace nns::exporting
