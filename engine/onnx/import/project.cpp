// SPDX-License-Identifier: GPL-3.0-or-later
// The project: the units named (module paths from the initializers and scopes, a second call
// as a Ref), grouped by their paths into Sequentials and ModuleDicts, wired, and the weights
// put in the built model's state dict; a built-in data set that fits.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "engine/data/catalog.h"
#include "engine/graph/builder.h"
#include "engine/graph/repeats.h"
#include "engine/onnx/import/importer.h"
#include "engine/serialize/serialize.h"

namespace nns::onnx::detail {

// ---- Names --------------------------------------------------------------------------------------

// A unit that is a module: a layer, or a block instance.
bool Importer::is_module(const Unit& u) {
  return u.block || graph::node_kind(u.type) == graph::NodeKind::Module;
}

bool Importer::path_free(const std::string& path) const {
  if (leaves_.contains(path) || prefixes_.contains(path)) return false;
  const std::vector<std::string> parts = split(path, '.');
  std::string prefix;
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    prefix += (k ? "." : "") + parts[k];
    if (leaves_.contains(prefix)) return false;
  }
  return true;
}

void Importer::take(const std::string& path) {
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
std::string Importer::unique(const std::string& path) const {
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

void Importer::name_units() {
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
      if (!fresh && units_[it->second].type == u.type && units_[it->second].options == u.options) {
        u.ref_of = it->second;
        u.path = unique(sanitized(units_[it->second].path) + "_call");
        take(u.path);
        continue;
      }
    }
    // The module an initializer names: its key less the entry it fills ("a.out_proj.weight"
    // for MultiheadAttention's "out_proj.weight" -> "a"), else less its last part.
    std::string path = u.module;
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

// ---- The project --------------------------------------------------------------------------------

Importer::Tree* Importer::child(Tree& t, const std::string& key) {
  for (auto& c : t.children) {
    if (c->key == key) return c.get();
  }
  t.children.push_back(std::make_unique<Tree>());
  t.children.back()->key = key;
  return t.children.back().get();
}

size_t Importer::uses(const std::string& value) const {
  size_t n = is_graph_output(value) ? 1 : 0;
  for (const Unit& u : units_) n += std::count(u.inputs.begin(), u.inputs.end(), value);
  return n;
}

// Whether a group's members, by index, form a chain that only its last member's value leaves:
// then it is a Sequential (the gaps of an exporter's removed Dropout filled with Identity).
void Importer::decide(Tree& t) {
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

graph::Project Importer::make_project() {
  graph::Project project;
  // The graph's name, unless it is an exporter's placeholder: then the file's.
  static const std::set<std::string> placeholders = {"torch_jit", "torch-jit-export", "main_graph",
                                                     "graph", ""};
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

std::vector<std::string> Importer::input_ports(const Unit& u) {
  if (!u.ports.empty()) return u.ports;
  if (u.inputs.size() == 1) return {"in"};
  std::vector<std::string> ports;
  for (size_t k = 0; k < u.inputs.size(); ++k) ports.push_back("in" + std::to_string(k));
  return ports;
}

void Importer::connect(graph::Graph& g, const std::map<std::string, graph::PortRef>& value_port,
                       const std::string& value, graph::PortRef to) const {
  auto it = value_port.find(resolve(value));
  if (it == value_port.end())
    fail("internal: the value '" + value + "' has no node (please report this model)");
  g.connect(it->second, to);
}

// The built model's state dict with the initializers in place of its initial tensors.
nn::StateDict Importer::make_weights(const graph::Project& project) {
  std::shared_ptr<graph::GraphModule> model;
  try {
    model = graph::build_model(project);
  } catch (const graph::GraphError& e) {
    fail(std::string("the imported graph does not build (please report this model): ") + e.what());
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
void Importer::choose_dataset(graph::ImportedProject& out) {
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

}  // namespace nns::onnx::detail
