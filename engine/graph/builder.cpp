// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/builder.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>

#include "engine/graph/id_index.h"
#include "engine/nn/nn.h"
#include "engine/tensor/generator.h"

namespace nns::graph {
namespace {

using Shapes = std::vector<SymShape>;

// "Linear 'fc1'": how problems name a node.
std::string describe(const Node& node) {
  return node.type + " '" + node.name + "'";
}

std::string join(const std::vector<std::string>& parts, const std::string& sep = ", ") {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// The problems of one analysis, without repeats (a block's problem shows once however many
// instances it has).
class Problems {
 public:
  void add(const std::string& block, NodeId node, const std::string& port, std::string message) {
    if (seen_.insert(block + "\n" + std::to_string(node) + "\n" + port + "\n" + message).second)
      list.push_back({node, port, std::move(message), block});
  }
  std::vector<Problem> list;

 private:
  std::set<std::string> seen_;
};

// The port a shape error is about: node types phrase them "input 'in0' has shape ...".
std::string port_of(const std::string& message) {
  const std::string prefix = "input '";
  if (message.rfind(prefix, 0) != 0) return "";
  const size_t end = message.find('\'', prefix.size());
  return end == std::string::npos ? "" : message.substr(prefix.size(), end - prefix.size());
}

// One node of a graph, as the analysis sees it.
struct Resolved {
  enum class Kind { Type, Container, Block, Unknown };
  const Node* node = nullptr;
  Kind kind = Kind::Unknown;
  const NodeType* type = nullptr;
  const BlockDef* block = nullptr;
  // Checked options (Type), instance arguments (Block), as given (others); and the port names.
  // The analysis cache's when the node came from it or went into it (no copy per node).
  const Json& options() const;
  const std::vector<std::string>& inputs() const;
  const std::vector<std::string>& outputs() const;
  Json own_options;
  std::vector<std::string> own_inputs, own_outputs;
  bool ok = false;  // options are usable
  bool ports_known = false;
  const Node* parent = nullptr;            // the group it is a member of
  bool runs = false;                       // a step of the forward (not run by its group)
  AnalysisCache::Entry* cached = nullptr;  // where the analysis keeps what it found
  bool shaped = false;                     // its output shapes were found in this pass

  bool is(NodeKind k) const { return kind == Kind::Type && type->kind == k; }
  bool is_switch() const { return kind == Kind::Container && is_switch_dict(*node); }
  // A module the tree holds: what a group may contain and a Ref may call.
  bool is_module() const {
    return is(NodeKind::Module) || kind == Kind::Block || kind == Kind::Container;
  }
  // Callable with tensors: a module with a forward (ModuleList and plain ModuleDict have none).
  bool is_callable() const {
    return is(NodeKind::Module) || kind == Kind::Block ||
           (kind == Kind::Container && (node->type == "Sequential" || is_switch()));
  }
};

// A switch ModuleDict's "active" option, or "" when it is missing or no string.
std::string active_key(const Node& dict) {
  const Json& o = dict.options;
  return o.is_object() && o.contains("active") && o["active"].is_string()
             ? o["active"].get<std::string>()
             : std::string();
}

bool valid_attribute(const std::string& name) {
  return !name.empty() && name.find('.') == std::string::npos;
}

// Replaces the "$name" strings in `value` by arguments[name]; returns the first "$name" that
// `arguments` lacks, or "" when every one was replaced.
std::string substitute_arguments(Json& value, const Json& arguments) {
  if (value.is_array() || value.is_object()) {
    for (auto& v : value) {
      std::string missing = substitute_arguments(v, arguments);
      if (!missing.empty()) return missing;
    }
    return "";
  }
  if (!value.is_string()) return "";
  const std::string s = value.get<std::string>();
  if (s.size() < 2 || s[0] != '$') return "";
  if (!arguments.is_object() || !arguments.contains(s.substr(1))) return s;
  value = arguments.at(s.substr(1));
  return "";
}

}  // namespace

// One node of the top level as the last analysis found it: the node (its type and options),
// what resolving them made (checked options, ports, problems), and the last inference (input
// shapes, output shapes, problems).
struct AnalysisCache::Entry {
  uint64_t generation = 0;
  std::string type, name;  // the problems found name the node
  Json given;
  const NodeType* node_type = nullptr;
  Resolved::Kind kind = Resolved::Kind::Unknown;
  Json options;
  bool ok = false;
  std::vector<std::string> inputs, outputs;
  std::vector<Problem> resolve_problems;
  bool inferred = false;
  Shapes in;
  std::optional<Shapes> out;
  std::vector<Problem> infer_problems;
};

const Json& Resolved::options() const {
  return cached ? cached->options : own_options;
}

const std::vector<std::string>& Resolved::inputs() const {
  return cached ? cached->inputs : own_inputs;
}

const std::vector<std::string>& Resolved::outputs() const {
  return cached ? cached->outputs : own_outputs;
}

AnalysisCache::AnalysisCache() = default;
AnalysisCache::~AnalysisCache() = default;

void AnalysisCache::clear() {
  entries_.clear();
}

// Checks one graph (the top level, or a block's inside for one instance's arguments) and
// infers its shapes; then, if asked and nothing was wrong, makes its GraphModule.
class Builder {
 public:
  // cache: for the top level only (what a node resolves to inside a block depends on the
  // instance's arguments).
  Builder(const Project& project, const Graph& graph, std::string block, Json args,
          std::vector<std::string> stack, Problems& problems, AnalysisCache* cache = nullptr)
      : project_(project),
        graph_(graph),
        block_(std::move(block)),
        args_(std::move(args)),
        stack_(std::move(stack)),
        problems_(problems),
        cache_(cache) {}

  // input_shapes: what a block instance feeds its Input nodes; nullptr at the top level (the
  // Input nodes' own shape options). Returns the Output nodes' shapes when all are known.
  std::optional<Shapes> analyze(const Shapes* input_shapes) {
    resolve_nodes();
    check_groups();
    check_names();
    check_edges();
    order();
    infer(input_shapes);
    std::optional<Shapes> out = Shapes{};
    for (const Resolved& r : nodes_) {
      if (!r.is(NodeKind::Output)) continue;
      const Edge* e = edge_into(r.node->id, "in");
      auto it = e ? shape_of(e->from) : nullptr;
      if (!it) return std::nullopt;
      out->push_back(*it);
    }
    return out;
  }

  // Every node's output shapes. reanalyze() hands in the last analysis' map: only what differs
  // is written, and the nodes it differs at go into *changed (forget_unshaped() at the end).
  std::map<NodeId, std::map<std::string, SymShape>> shapes;
  std::set<NodeId>* changed = nullptr;

  // The entries of nodes that got no shapes in this pass (gone, or no longer inferred). When every
  // entry is a shaped node's (most edits), none is looked at.
  void forget_unshaped() {
    if (shaped_ == shapes.size()) return;
    for (auto it = shapes.begin(); it != shapes.end();) {
      const std::optional<size_t> r = index_.find(it->first);
      if (r && nodes_[*r].shaped) {
        ++it;
        continue;
      }
      if (changed) changed->insert(it->first);
      it = shapes.erase(it);
    }
  }

  // After analyze(): the nodes forward runs, in the order it runs them.
  const std::vector<NodeId>& run_order() const { return order_; }

  // Only after analyze() found nothing wrong.
  std::shared_ptr<GraphModule> build(const std::string& class_name);

 private:
  void problem(const Node& node, const std::string& port, const std::string& message) {
    problems_.add(block_, node.id, port, message);
  }
  void problem(const std::string& message) { problems_.add(block_, 0, "", message); }

  Resolved& resolved(NodeId id) { return nodes_[index_.at(id)]; }

  // ---- Options and ports --------------------------------------------------------------------

  // Replaces "$name" strings by the block's arguments.
  bool substitute(Json& value, const Node& node, const std::string& option) {
    const std::string s = substitute_arguments(value, args_);
    if (s.empty()) return true;
    std::vector<std::string> names;
    if (args_.is_object())
      for (const auto& [k, v] : args_.items()) names.push_back(k);
    problem(
        node, "",
        describe(node) + ": option '" + option + "' refers to '" + s + "', which is no " +
            (block_.empty() ? std::string("argument: only a custom block's nodes take $arguments")
                            : "argument of block '" + block_ + "' (its arguments: " +
                                  (names.empty() ? std::string("none") : join(names)) + ")"));
    return false;
  }

  // The group a node is a member of (Graph::parent_of, from one index for the whole pass).
  const Node* parent_of(NodeId id) const {
    const std::optional<size_t> i = index_.find(id);
    return i ? parents_[*i] : nullptr;
  }

  // The edge feeding an input port (Graph::edge_into, from one index for the whole pass: a
  // scan of every edge for each port made a 10,000-node analysis quadratic).
  const Edge* edge_into(NodeId node, const std::string& port) const {
    auto it = std::lower_bound(edges_into_.begin(), edges_into_.end(), node,
                               [](const Edge* e, NodeId id) { return e->to.node < id; });
    for (; it != edges_into_.end() && (*it)->to.node == node; ++it) {
      if ((*it)->to.port == port) return *it;
    }
    return nullptr;
  }

  void resolve_nodes() {
    // Sized once: at 10,000 nodes the growth of these was a tenth of an analysis.
    nodes_.reserve(graph_.nodes.size());
    index_.build(graph_.nodes);  // nodes_ is in the same order
    parents_.assign(graph_.nodes.size(), nullptr);
    edges_into_.reserve(graph_.edges.size());  // one array, not a vector per node
    for (const Node& n : graph_.nodes) {
      for (NodeId m : n.members) {
        const std::optional<size_t> i = index_.find(m);
        if (i && !parents_[*i]) parents_[*i] = &n;  // the first group that lists it
      }
    }
    for (const Edge& e : graph_.edges) edges_into_.push_back(&e);
    std::stable_sort(edges_into_.begin(), edges_into_.end(),
                     [](const Edge* a, const Edge* b) { return a->to.node < b->to.node; });
    // The problems each node resolved now added: [first, end) of problems_.list.
    std::vector<std::pair<size_t, size_t>> found(graph_.nodes.size());
    for (const Node& node : graph_.nodes) {
      Resolved r;
      r.node = &node;
      r.parent = parent_of(node.id);
      if (from_cache(r)) {
        nodes_.push_back(std::move(r));
        continue;
      }
      found[nodes_.size()].first = problems_.list.size();
      Json options = node.options;
      bool substituted = true;
      if (options.is_object()) {
        for (auto& [key, value] : options.items()) substituted &= substitute(value, node, key);
      }
      // The options are moved, not copied, where nothing reads them after: a copy per node was
      // a tenth of a 10,000-node analysis.
      if (is_container_type(node.type)) {
        r.kind = Resolved::Kind::Container;
        r.own_options = std::move(options);
        r.ok = substituted && check_container_options(node);
      } else if (const NodeType* t = find_node_type(node.type)) {
        r.kind = Resolved::Kind::Type;
        r.type = t;
        if (substituted) {
          try {
            r.own_options = t->checked_options(options);
            r.ok = true;
          } catch (const Error& e) {
            problem(node, "", describe(node) + ": " + e.what());
          }
        }
        if (!r.ok) r.own_options = std::move(options);
      } else if (const BlockDef* b = project_.find_block(node.type)) {
        r.kind = Resolved::Kind::Block;
        r.block = b;
        r.ok = substituted && resolve_block_arguments(node, *b, options, r.own_options);
      } else if (auto plugin = project_.plugin_types.find(node.type);
                 plugin != project_.plugin_types.end()) {
        // A type the project records as a plugin's (project.h): name the plugin to install.
        const PluginRef& ref = plugin->second;
        problem(node, "",
                "node '" + node.name + "': plugin '" + ref.plugin + "' " + ref.version +
                    " is not installed (it provides the node type '" + node.type +
                    "'); install it and restart NN Studio (nnstudio-cli plugins lists what "
                    "loaded)");
      } else {
        std::string message;
        try {
          node_type(node.type);
        } catch (const KeyError& e) {
          message = e.what();
        }
        problem(node, "",
                "node '" + node.name + "': " + message +
                    " (nor a container or a custom block of this project)");
      }
      found[nodes_.size()].second = problems_.list.size();
      nodes_.push_back(std::move(r));
    }
    for (Resolved& r : nodes_) {
      if (!r.cached) resolve_ports(r);
    }
    if (cache_) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i].cached) to_cache(nodes_[i], found[i].first, found[i].second);
      }
    }
  }

  // The entry is one of this pass's nodes': it stays in the cache (evict_unseen).
  void stamp(AnalysisCache::Entry& c) {
    if (c.generation == cache_->generation_) return;
    c.generation = cache_->generation_;
    ++cache_->seen_;
  }

  // What the cache kept of a node as it is now (the same type and options): taken as it was.
  bool from_cache(Resolved& r) {
    if (!cache_) return false;
    auto it = cache_->entries_.find(r.node->id);
    if (it == cache_->entries_.end()) return false;
    AnalysisCache::Entry& c = *it->second;
    if (c.type != r.node->type || c.name != r.node->name || c.given != r.node->options ||
        (c.kind == Resolved::Kind::Type && c.node_type != find_node_type(r.node->type))) {
      return false;
    }
    stamp(c);
    r.kind = c.kind;
    r.type = c.node_type;
    r.ok = c.ok;
    r.ports_known = true;
    r.cached = &c;
    for (const Problem& p : c.resolve_problems) problems_.add(p.block, p.node, p.port, p.message);
    return true;
  }

  // Keeps what resolving a node found, where that depends on the node alone: a layer or function
  // (not a Ref, whose ports are its target's) or a group. problems_.list[first, end) are its.
  void to_cache(Resolved& r, size_t first, size_t end) {
    const bool alone = (r.kind == Resolved::Kind::Type && !r.is(NodeKind::Ref)) ||
                       r.kind == Resolved::Kind::Container;
    if (!alone || !r.ports_known) {
      cache_->entries_.erase(r.node->id);
      return;
    }
    auto& slot = cache_->entries_[r.node->id];
    slot = std::make_unique<AnalysisCache::Entry>();
    AnalysisCache::Entry& c = *slot;
    stamp(c);
    c.type = r.node->type;
    c.name = r.node->name;
    c.given = r.node->options;
    c.node_type = r.type;
    c.kind = r.kind;
    c.options = std::move(r.own_options);
    c.ok = r.ok;
    c.inputs = std::move(r.own_inputs);
    c.outputs = std::move(r.own_outputs);
    c.resolve_problems.assign(problems_.list.begin() + static_cast<std::ptrdiff_t>(first),
                              problems_.list.begin() + static_cast<std::ptrdiff_t>(end));
    r.cached = &c;
  }

  bool check_container_options(const Node& node) {
    if (!node.options.is_object()) {
      problem(node, "", describe(node) + ": options must be a JSON object");
      return false;
    }
    for (const auto& [key, value] : node.options.items()) {
      const bool known = node.type == "ModuleDict" && (key == "switch" || key == "active");
      if (!known) {
        problem(node, "",
                describe(node) + " has no option '" + key + "'" +
                    (node.type == "ModuleDict" ? "; its options are: switch, active"
                                               : "; it takes none"));
        return false;
      }
      if (key == "switch" && !value.is_boolean()) {
        problem(node, "",
                describe(node) + " option 'switch': expected true or false, got " + value.dump());
        return false;
      }
      if (key == "active" && !value.is_string()) {
        problem(node, "",
                describe(node) + " option 'active': expected a member's key, got " + value.dump());
        return false;
      }
    }
    return true;
  }

  bool resolve_block_arguments(const Node& node, const BlockDef& b, const Json& given, Json& out) {
    out = b.arguments.is_object() ? b.arguments : Json::object();
    if (!given.is_object()) {
      problem(node, "", describe(node) + ": options must be a JSON object");
      return false;
    }
    for (const auto& [key, value] : given.items()) {
      if (!out.contains(key)) {
        std::vector<std::string> names;
        for (const auto& [k, v] : out.items()) names.push_back(k);
        problem(node, "",
                describe(node) + ": block '" + b.name + "' has no argument '" + key +
                    "'; its arguments are: " + (names.empty() ? std::string("none") : join(names)));
        return false;
      }
      out[key] = value;
    }
    return true;
  }

  void resolve_ports(Resolved& r) {
    if (r.kind == Resolved::Kind::Block) {
      const NodePorts ports = block_ports(*r.block);
      r.own_inputs = ports.inputs;
      r.own_outputs = ports.outputs;
      r.ports_known = true;
    } else if (r.is(NodeKind::Ref)) {
      if (!r.ok) return;
      const NodeId target = r.options().at("target").get<NodeId>();
      const std::optional<size_t> it = index_.find(target);
      if (!it) {
        problem(*r.node, "",
                describe(*r.node) + ": its target " + std::to_string(target) +
                    " is no node of this graph");
        r.ok = false;
        return;
      }
      Resolved& t = nodes_[*it];
      if (!t.is_callable()) {
        problem(*r.node, "",
                describe(*r.node) + ": its target " + describe(*t.node) +
                    " has no module to call (a Ref calls a layer, block, "
                    "Sequential or switch ModuleDict again)");
        r.ok = false;
        return;
      }
      if (!t.ports_known) resolve_ports(t);
      r.own_inputs = t.inputs();
      r.own_outputs = t.outputs();
      r.ports_known = t.ports_known;
    } else if (r.kind != Resolved::Kind::Unknown) {
      std::optional<NodePorts> p = node_ports(*r.node);
      r.own_inputs = std::move(p->inputs);
      r.own_outputs = std::move(p->outputs);
      r.ports_known = true;
    }
  }

  // ---- Groups and names -----------------------------------------------------------------------

  void check_groups() {
    for (Resolved& r : nodes_) {
      // Groups nested in a loop (A in B in A) have no place in a tree.
      size_t depth = 1;
      for (const Node* p = r.parent; p; p = parent_of(p->id)) {
        ++depth;
        if (p == r.node || depth > graph_.nodes.size() + 1) {
          // The names along the loop only when there is one (a vector per node was slow).
          std::vector<std::string> chain{r.node->name};
          for (const Node* q = r.parent; chain.size() < depth; q = parent_of(q->id))
            chain.push_back(q->name);
          problem(*r.node, "", "groups contain each other: " + join(chain, " in "));
          r.ok = false;
          break;
        }
      }
      if (r.kind == Resolved::Kind::Container) check_group(r);
      const bool run_by_group =
          r.parent && (r.parent->type == "Sequential" || resolved(r.parent->id).is_switch());
      const bool portless =
          r.kind == Resolved::Kind::Container && r.node->type != "Sequential" && !r.is_switch();
      r.runs = !run_by_group && !portless && r.kind != Resolved::Kind::Unknown;
    }
  }

  void check_group(const Resolved& g) {
    const Node& group = *g.node;
    const bool chained = group.type == "Sequential" || g.is_switch();
    std::set<std::string> keys;
    for (NodeId id : group.members) {
      const Resolved& m = resolved(id);
      if (m.kind == Resolved::Kind::Unknown) continue;
      if (!m.is_module()) {
        problem(*m.node, "",
                describe(*m.node) + " cannot be a member of " + describe(group) +
                    ": a group holds modules (layers, blocks, groups), and this node "
                    "has none");
        continue;
      }
      if (chained) {
        if (m.ports_known && (m.inputs().size() != 1 || m.outputs().size() != 1))
          problem(*m.node, "",
                  describe(*m.node) + " cannot be a member of " + describe(group) +
                      ": its members take one input and give one output");
        if (m.kind == Resolved::Kind::Container && !m.is_callable())
          problem(*m.node, "",
                  describe(*m.node) + " cannot be a member of " + describe(group) +
                      ": it has no forward to chain");
      }
      if (group.type == "ModuleDict" && !keys.insert(m.node->name).second)
        problem(*m.node, "",
                describe(group) + " has two members with the key '" + m.node->name + "'");
      if (group.type == "ModuleDict" && !valid_attribute(m.node->name))
        problem(*m.node, "",
                describe(*m.node) +
                    ": a ModuleDict key must be non-empty and "
                    "without '.'");
    }
    if (g.is_switch()) {
      const std::string active = active_key(group);
      if (!keys.contains(active))
        problem(group, "",
                describe(group) + ": the active key '" + active + "' is none of its members' (" +
                    (keys.empty() ? std::string("it has none") : join({keys.begin(), keys.end()})) +
                    ")");
    }
    if (chained && group.members.empty())
      problem(group, "", describe(group) + " has no members to run");
  }

  // A node that registers something on the module (a module, parameter or buffer) outside a
  // group is an attribute: its name must be usable and unique.
  void check_names() {
    std::map<std::string, const Node*> taken;
    for (const Resolved& r : nodes_) {
      if (r.parent || r.kind == Resolved::Kind::Unknown) continue;
      const bool attribute = r.is_module() || r.is(NodeKind::Parameter) || r.is(NodeKind::Buffer);
      if (!attribute) continue;
      if (!valid_attribute(r.node->name)) {
        problem(*r.node, "",
                describe(*r.node) +
                    ": an attribute name must be non-empty and "
                    "without '.'");
        continue;
      }
      auto [it, inserted] = taken.emplace(r.node->name, r.node);
      if (!inserted)
        problem(*r.node, "",
                "duplicate attribute name '" + r.node->name + "': " + describe(*it->second) +
                    " (id " + std::to_string(it->second->id) + ") has it too");
    }
  }

  // ---- Edges and order ------------------------------------------------------------------------

  static bool has(const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  }

  void check_edges() {
    for (const Edge& e : graph_.edges) {
      Resolved& from = resolved(e.from.node);
      Resolved& to = resolved(e.to.node);
      bool ok = true;
      for (Resolved* r : {&from, &to}) {
        if (r->kind != Resolved::Kind::Unknown && !r->runs) {
          problem(*r->node, "",
                  describe(*r->node) + " has an edge, but " +
                      (r->parent ? "it is run by its group " + describe(*r->parent) +
                                       ": connect the group's ports instead"
                                 : std::string("it has no ports")));
          ok = false;
        }
      }
      if (from.ports_known && !has(from.outputs(), e.from.port)) {
        problem(*from.node, e.from.port,
                describe(*from.node) + " has no output port '" + e.from.port + "'");
        ok = false;
      }
      if (to.ports_known && !has(to.inputs(), e.to.port)) {
        problem(*to.node, e.to.port, describe(*to.node) + " has no input port '" + e.to.port + "'");
        ok = false;
      }
      if (ok && from.ports_known && to.ports_known) edges_.push_back(&e);
    }
    for (const Resolved& r : nodes_) {
      if (!r.runs) continue;
      for (const std::string& port : r.inputs()) {
        if (!edge_into(r.node->id, port))
          problem(*r.node, port, describe(*r.node) + ": input '" + port + "' is not connected");
      }
    }
    bool has_input = false, has_output = false;
    for (const Resolved& r : nodes_) {
      has_input |= r.is(NodeKind::Input);
      has_output |= r.is(NodeKind::Output);
    }
    const std::string where = block_.empty() ? "the model" : "block '" + block_ + "'";
    if (!has_input) problem(where + " has no Input node");
    if (!has_output) problem(where + " has no Output node");
  }

  // Kahn's algorithm, taking the earliest node (in node order) that is ready, so the order is
  // stable under unrelated edits.
  void order() {
    // By index in nodes_ (a map per node made a 10,000-node analysis slow); a min-heap of the
    // ready indices takes the earliest first.
    constexpr int kNotRun = -1;
    std::vector<int> pending(nodes_.size(), kNotRun);
    size_t running = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (nodes_[i].runs) {
        pending[i] = 0;
        ++running;
      }
    }
    // Each node's successors in edge order, all in one array: next[first[i], first[i + 1]) are
    // node i's (a vector per node was a tenth of a 10,000-node analysis, most of it allocation).
    std::vector<std::pair<size_t, size_t>> links;
    links.reserve(edges_.size());
    std::vector<size_t> first(nodes_.size() + 1, 0);
    for (const Edge* e : edges_) {
      const size_t from = index_.at(e->from.node), to = index_.at(e->to.node);
      ++pending[to];
      ++first[from + 1];
      links.emplace_back(from, to);
    }
    for (size_t i = 0; i < nodes_.size(); ++i) first[i + 1] += first[i];
    std::vector<size_t> next(links.size());
    std::vector<size_t> filled(first.begin(), first.end() - 1);
    for (const auto& [from, to] : links) next[filled[from]++] = to;
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (pending[i] == 0) ready.push(i);
    }
    while (!ready.empty()) {
      const size_t i = ready.top();
      ready.pop();
      order_.push_back(nodes_[i].node->id);
      for (size_t k = first[i]; k < first[i + 1]; ++k) {
        if (--pending[next[k]] == 0) ready.push(next[k]);
      }
    }
    if (order_.size() == running) return;
    // Walk back along edges among the nodes left until a node repeats: that is a cycle. It
    // starts at the lowest id left.
    auto left = [&](NodeId id) { return pending[index_.at(id)] > 0; };
    NodeId start = 0;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const NodeId id = nodes_[i].node->id;
      if (pending[i] > 0 && (start == 0 || id < start)) start = id;
    }
    std::vector<NodeId> path{start};
    while (true) {
      NodeId prev = 0;
      for (const Edge* e : edges_) {
        if (e->to.node == path.back() && left(e->from.node)) prev = e->from.node;
      }
      auto seen = std::find(path.begin(), path.end(), prev);
      if (seen != path.end()) {
        // path[i + 1] feeds path[i]: the cycle runs prev -> path.back() -> ... -> prev.
        const std::string& first = resolved(prev).node->name;
        std::vector<std::string> names{first};
        for (auto it = path.rbegin(); *it != prev; ++it) names.push_back(resolved(*it).node->name);
        names.push_back(first);
        problem(*resolved(prev).node, "", "the graph has a cycle: " + join(names, " -> "));
        return;
      }
      path.push_back(prev);
    }
  }

  // ---- Shapes ---------------------------------------------------------------------------------

  const SymShape* shape_of(const PortRef& p) const {
    // The map may still hold the last analysis' entry of a node this pass found none for.
    const std::optional<size_t> r = index_.find(p.node);
    if (!r || !nodes_[*r].shaped) return nullptr;
    auto n = shapes.find(p.node);
    if (n == shapes.end()) return nullptr;
    auto s = n->second.find(p.port);
    return s == n->second.end() ? nullptr : &s->second;
  }

  void infer(const Shapes* input_shapes) {
    size_t input_index = 0;
    std::vector<const SymShape*> inputs;
    for (NodeId id : order_) {
      Resolved& r = resolved(id);
      inputs.clear();
      for (const std::string& port : r.inputs()) {
        const Edge* e = edge_into(id, port);
        const SymShape* s = e ? shape_of(e->from) : nullptr;
        if (!s) break;
        inputs.push_back(s);
      }
      // A layer whose input shapes are those the cache saw: its outputs (and problems) as then,
      // without copying the shapes in (most nodes of an edit's analysis).
      if (AnalysisCache::Entry* c = r.cached;
          c && c->inferred && r.kind == Resolved::Kind::Type && !r.is(NodeKind::Ref) &&
          inputs.size() == r.inputs().size() && c->in.size() == inputs.size() &&
          std::equal(inputs.begin(), inputs.end(), c->in.begin(),
                     [](const SymShape* a, const SymShape& b) { return *a == b; })) {
        for (const Problem& p : c->infer_problems) {
          problems_.add(p.block, p.node, p.port, p.message);
        }
        if (c->out) put_shapes(r, r.outputs(), c->out->data(), c->out->size());
        continue;
      }
      Shapes in;
      in.reserve(inputs.size());
      for (const SymShape* s : inputs) in.push_back(*s);
      std::optional<Shapes> out;
      if (r.is(NodeKind::Input) && input_shapes) {
        if (input_index < input_shapes->size()) out = Shapes{(*input_shapes)[input_index]};
        ++input_index;
      } else if (in.size() == r.inputs().size()) {
        out = infer_call(r, r, in);
      }
      if (out) put_shapes(r, r.outputs(), out->data(), out->size());
    }
  }

  // A node's output shapes, port by port. An entry that is as it was (the last analysis') is
  // left alone: an edit of a 10,000-node graph writes a handful, not the map.
  void put_shapes(Resolved& r, const std::vector<std::string>& ports, const SymShape* out,
                  size_t count) {
    const size_t n = std::min(count, ports.size());
    if (n == 0) return;
    auto [it, added] = shapes.try_emplace(r.node->id);
    std::map<std::string, SymShape>& m = it->second;
    bool differs = added;
    if (!r.shaped) {
      // The first write of this pass: the last analysis' ports go unless they are these.
      r.shaped = true;
      ++shaped_;
      bool same_ports = m.size() == n;
      for (size_t i = 0; i < n && same_ports; ++i) same_ports = m.count(ports[i]) != 0;
      if (!same_ports) {
        m.clear();
        differs = true;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      auto [port, fresh] = m.try_emplace(ports[i], out[i]);
      if (fresh) {
        differs = true;
      } else if (port->second != out[i]) {
        port->second = out[i];
        differs = true;
      }
    }
    if (differs && changed) changed->insert(r.node->id);
  }
  void put_shape(NodeId id, const SymShape& shape) {
    static const std::vector<std::string> out_port{"out"};
    put_shapes(resolved(id), out_port, &shape, 1);
  }

  // The outputs of calling `callee`'s module (or function) on `in`; problems go to `blame`
  // (a Ref blames itself for what its input does to its target).
  std::optional<Shapes> infer_call(const Resolved& blame, const Resolved& callee,
                                   const Shapes& in) {
    if (!callee.ok) return std::nullopt;
    try {
      switch (callee.kind) {
        case Resolved::Kind::Type:
          if (callee.is(NodeKind::Ref)) {
            const Resolved& target = resolved(callee.options().at("target").get<NodeId>());
            return infer_call(blame, target, in);
          }
          return infer_layer(blame, callee, in);
        case Resolved::Kind::Container: {
          if (callee.is_switch()) {
            const Node* active = member_by_key(*callee.node);
            if (!active) return std::nullopt;
            const Resolved& m = resolved(active->id);
            auto out = infer_call(&blame == &callee ? m : blame, m, in);
            if (out && !out->empty()) put_shape(active->id, out->front());
            return out;
          }
          Shapes x = in;
          for (NodeId id : callee.node->members) {
            const Resolved& m = resolved(id);
            auto out = infer_call(&blame == &callee ? m : blame, m, x);
            if (!out || out->size() != 1) return std::nullopt;
            put_shape(id, out->front());
            x = std::move(*out);
          }
          return x;
        }
        case Resolved::Kind::Block:
          return infer_block(blame, callee, in);
        case Resolved::Kind::Unknown:
          return std::nullopt;
      }
    } catch (const Error& e) {
      problem(*blame.node, port_of(e.what()), describe(*blame.node) + ": " + e.what());
    }
    return std::nullopt;
  }

  // A layer's or function's output shapes; the cache's when its inputs are as they were then.
  std::optional<Shapes> infer_layer(const Resolved& blame, const Resolved& callee,
                                    const Shapes& in) {
    AnalysisCache::Entry* c = &blame == &callee ? callee.cached : nullptr;
    if (c && c->inferred && c->in == in) {
      for (const Problem& p : c->infer_problems) problems_.add(p.block, p.node, p.port, p.message);
      return c->out;
    }
    const size_t first = problems_.list.size();
    std::optional<Shapes> out;
    try {
      out = callee.type->infer_shapes(callee.options(), in);
    } catch (const Error& e) {
      problem(*blame.node, port_of(e.what()), describe(*blame.node) + ": " + e.what());
    }
    if (c) {
      c->inferred = true;
      c->in = in;
      c->out = out;
      c->infer_problems.assign(problems_.list.begin() + static_cast<std::ptrdiff_t>(first),
                               problems_.list.end());
    }
    return out;
  }

  const Node* member_by_key(const Node& dict) {
    const std::string active = active_key(dict);
    for (NodeId id : dict.members) {
      if (graph_.at(id).name == active) return &graph_.at(id);
    }
    return nullptr;
  }

  std::optional<Shapes> infer_block(const Resolved& blame, const Resolved& callee,
                                    const Shapes& in) {
    const BlockDef& b = *callee.block;
    if (std::find(stack_.begin(), stack_.end(), b.name) != stack_.end()) {
      std::vector<std::string> chain = stack_;
      chain.push_back(b.name);
      problem(*blame.node, "",
              describe(*blame.node) + ": block '" + b.name + "' contains itself (" +
                  join(chain, " -> ") + "); a block cannot hold an instance of itself");
      return std::nullopt;
    }
    std::vector<std::string> stack = stack_;
    stack.push_back(b.name);
    Builder inner(project_, b.graph, b.name, callee.options(), std::move(stack), problems_);
    return inner.analyze(&in);
  }

  // ---- Building -------------------------------------------------------------------------------

  nn::ModulePtr make_module(const Resolved& r);

  const Project& project_;
  const Graph& graph_;
  std::vector<const Node*> parents_;     // each node's group, by its place in graph_.nodes
  std::vector<const Edge*> edges_into_;  // by the node they feed, then in edge order
  std::string block_;
  Json args_;
  std::vector<std::string> stack_;
  Problems& problems_;
  AnalysisCache* cache_;

  std::vector<Resolved> nodes_;  // in node order
  IdIndex index_;                // places in nodes_
  size_t shaped_ = 0;  // how many nodes have shapes in this pass (each has an entry in shapes)
  std::vector<const Edge*> edges_;  // the edges between known ports
  std::vector<NodeId> order_;       // the running nodes, in topological order
};

// One thing forward does: run a node's module or function on some slots, writing others.
struct GraphModule::Step {
  enum class Kind { Input, Output, Module, Function, Parameter, Buffer };
  Kind kind = Kind::Module;
  NodeId node = 0;
  nn::Module* module = nullptr;  // owned by the module tree
  const NodeType* type = nullptr;
  Json options;
  size_t member_index = 0;     // Parameter/Buffer: the index in this module's dict
  std::vector<size_t> inputs;  // slots
  size_t output = 0;           // the first output slot
  size_t outputs = 0;          // how many
};

GraphModule::GraphModule(std::string class_name) : Module(std::move(class_name)) {}
GraphModule::~GraphModule() = default;

nn::ModulePtr Builder::make_module(const Resolved& r) {
  switch (r.kind) {
    case Resolved::Kind::Type:
      return r.type->make_module(r.options());
    case Resolved::Kind::Block: {
      std::vector<std::string> stack = stack_;
      stack.push_back(r.block->name);
      // The instance's shapes were checked by analyze(); this pass only orders the block's
      // nodes, so what it finds about the block's own Input shapes does not matter.
      Problems scratch;
      Builder inner(project_, r.block->graph, r.block->name, r.options(), std::move(stack),
                    scratch);
      inner.analyze(nullptr);
      return inner.build(r.block->name);
    }
    case Resolved::Kind::Container: {
      nn::NamedList<nn::ModulePtr> members;
      for (NodeId id : r.node->members)
        members.emplace_back(graph_.at(id).name, make_module(resolved(id)));
      if (r.node->type == "ModuleDict") return std::make_shared<nn::ModuleDict>(members);
      std::vector<nn::ModulePtr> modules;
      for (auto& [key, m] : members) modules.push_back(m);
      if (r.node->type == "Sequential") return std::make_shared<nn::Sequential>(modules);
      return std::make_shared<nn::ModuleList>(modules);
    }
    case Resolved::Kind::Unknown:
      break;
  }
  return nullptr;
}

std::shared_ptr<GraphModule> Builder::build(const std::string& class_name) {
  std::shared_ptr<GraphModule> gm(new GraphModule(class_name));
  // Registration in node order: the order of named_parameters() and of the repr.
  for (const Resolved& r : nodes_) {
    if (r.parent) continue;
    const std::string& name = r.node->name;
    if (r.is(NodeKind::Parameter)) {
      gm->register_parameter(name, nn::Parameter(initial_tensor(r.options()),
                                                 r.options().at("requires_grad").get<bool>()));
    } else if (r.is(NodeKind::Buffer)) {
      gm->register_buffer(name, initial_tensor(r.options()),
                          r.options().at("persistent").get<bool>());
    } else if (r.is_module()) {
      nn::ModulePtr m = make_module(r);
      gm->register_module(name, m);
      gm->node_modules_[r.node->id] = {m, name};
    }
  }
  // Members' modules, under their qualified names ("features.0").
  std::function<void(const Node&, const nn::ModulePtr&, const std::string&)> add_members =
      [&](const Node& group, const nn::ModulePtr& module, const std::string& prefix) {
        size_t i = 0;
        for (NodeId id : group.members) {
          const Node& m = graph_.at(id);
          const std::string key = group.type == "ModuleDict" ? m.name : std::to_string(i);
          const nn::ModulePtr child = module->children_dict()[key];
          gm->node_modules_[id] = {child, prefix + "." + key};
          if (!m.members.empty()) add_members(m, child, prefix + "." + key);
          ++i;
        }
      };
  for (const Resolved& r : nodes_) {
    if (!r.parent && r.kind == Resolved::Kind::Container)
      add_members(*r.node, gm->node_modules_.at(r.node->id).first, r.node->name);
  }

  // The callable module of a node: its own, or for a switch the active member's.
  std::function<nn::Module*(const Resolved&)> callable = [&](const Resolved& r) -> nn::Module* {
    if (r.is(NodeKind::Ref)) return callable(resolved(r.options().at("target").get<NodeId>()));
    if (r.is_switch()) return callable(resolved(member_by_key(*r.node)->id));
    return gm->node_modules_.at(r.node->id).first.get();
  };

  std::map<std::pair<NodeId, std::string>, size_t> slot;
  size_t slots = 0;
  for (NodeId id : order_) {
    const Resolved& r = resolved(id);
    GraphModule::Step step;
    step.node = id;
    for (const std::string& port : r.inputs()) {
      const Edge* e = edge_into(id, port);
      step.inputs.push_back(slot.at({e->from.node, e->from.port}));
    }
    step.output = slots;
    step.outputs = r.outputs().size();
    for (const std::string& port : r.outputs()) slot[{id, port}] = slots++;
    if (r.is(NodeKind::Input)) {
      step.kind = GraphModule::Step::Kind::Input;
      step.member_index = gm->inputs_.size();
      gm->inputs_.push_back(id);
    } else if (r.is(NodeKind::Output)) {
      step.kind = GraphModule::Step::Kind::Output;
      step.member_index = gm->outputs_.size();
      gm->outputs_.push_back(id);
    } else if (r.is(NodeKind::Parameter) || r.is(NodeKind::Buffer)) {
      const bool param = r.is(NodeKind::Parameter);
      step.kind = param ? GraphModule::Step::Kind::Parameter : GraphModule::Step::Kind::Buffer;
      const std::vector<std::string> keys =
          param ? gm->parameters_dict().keys() : gm->buffers_dict().keys();
      step.member_index =
          static_cast<size_t>(std::find(keys.begin(), keys.end(), r.node->name) - keys.begin());
    } else if (r.is(NodeKind::Functional)) {
      step.kind = GraphModule::Step::Kind::Function;
      step.type = r.type;
      step.options = r.options();
    } else {
      step.kind = GraphModule::Step::Kind::Module;
      step.module = callable(r);
    }
    gm->steps_.push_back(std::move(step));
  }
  // Outputs in node order, as documented (the steps run them in topological order).
  std::vector<NodeId> outputs;
  for (const Resolved& r : nodes_) {
    if (r.is(NodeKind::Output)) outputs.push_back(r.node->id);
  }
  std::vector<NodeId> inputs;
  for (const Resolved& r : nodes_) {
    if (r.is(NodeKind::Input)) inputs.push_back(r.node->id);
  }
  for (GraphModule::Step& s : gm->steps_) {
    if (s.kind == GraphModule::Step::Kind::Output)
      s.member_index =
          static_cast<size_t>(std::find(outputs.begin(), outputs.end(), s.node) - outputs.begin());
    if (s.kind == GraphModule::Step::Kind::Input)
      s.member_index =
          static_cast<size_t>(std::find(inputs.begin(), inputs.end(), s.node) - inputs.begin());
  }
  gm->inputs_ = inputs;
  gm->outputs_ = outputs;
  gm->slot_count_ = slots;
  return gm;
}

std::vector<Tensor> GraphModule::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != inputs_.size())
    throw ValueError(name() + ".forward: expected " + std::to_string(inputs_.size()) +
                     " input tensor(s), one per Input node, got " + std::to_string(inputs.size()));
  std::vector<Tensor> slots(slot_count_);
  std::vector<Tensor> outputs(outputs_.size());
  std::vector<Tensor> args;
  for (const Step& s : steps_) {
    args.clear();
    for (size_t i : s.inputs) args.push_back(slots[i]);
    switch (s.kind) {
      case Step::Kind::Input:
        slots[s.output] = inputs[s.member_index];
        break;
      case Step::Kind::Output:
        outputs[s.member_index] = args[0];
        break;
      case Step::Kind::Parameter:
        slots[s.output] = parameters_dict().items()[s.member_index].value();
        break;
      case Step::Kind::Buffer:
        slots[s.output] = buffers_dict().items()[s.member_index].value();
        break;
      case Step::Kind::Function:
      case Step::Kind::Module: {
        std::vector<Tensor> out =
            s.kind == Step::Kind::Module ? (*s.module)(args) : s.type->apply(args, s.options);
        if (out.size() != s.outputs)
          throw ValueError(name() + ": node " + std::to_string(s.node) + " gave " +
                           std::to_string(out.size()) + " outputs, expected " +
                           std::to_string(s.outputs));
        std::move(out.begin(), out.end(), slots.begin() + static_cast<std::ptrdiff_t>(s.output));
        break;
      }
    }
    if (node_output_observer && s.kind != Step::Kind::Output)
      node_output_observer(
          s.node,
          std::vector<Tensor>(slots.begin() + static_cast<std::ptrdiff_t>(s.output),
                              slots.begin() + static_cast<std::ptrdiff_t>(s.output + s.outputs)));
  }
  return outputs;
}

Tensor GraphModule::forward(const Tensor& input) {
  if (inputs_.size() != 1 || outputs_.size() != 1)
    throw ValueError(name() + ".forward: this model has " + std::to_string(inputs_.size()) +
                     " inputs and " + std::to_string(outputs_.size()) +
                     " outputs; call it with a std::vector<Tensor>");
  return forward(std::vector<Tensor>{input})[0];
}

nn::ModulePtr GraphModule::node_module(NodeId node) const {
  auto it = node_modules_.find(node);
  return it == node_modules_.end() ? nullptr : it->second.first;
}

std::string GraphModule::module_name(NodeId node) const {
  auto it = node_modules_.find(node);
  return it == node_modules_.end() ? "" : it->second.second;
}

CarriedState carry_state(GraphModule& from, GraphModule& to, const Graph& graph) {
  CarriedState carried;
  nn::StateDict state;
  const nn::StateDict from_own = from.state_dict();
  const nn::StateDict to_own = to.state_dict();
  const auto parents = parent_index(graph);
  for (const Node& node : graph.nodes) {
    const nn::ModulePtr now = to.node_module(node.id);
    if (!now) {
      // A Parameter or Buffer node of the model itself: its entry is named after the node (so
      // a renamed one starts fresh; the old graph's names are not known here).
      const Tensor* mine = parents.count(node.id) ? nullptr : to_own.find(node.name);
      if (!mine) continue;
      const Tensor* value = from_own.find(node.name);
      if (value && value->sizes() == mine->sizes() && value->dtype() == mine->dtype()) {
        state.insert(node.name, *value);
        carried.kept.push_back(node.id);
      } else {
        carried.fresh.push_back(node.id);
      }
      continue;
    }
    const nn::ModulePtr before = from.node_module(node.id);
    const nn::StateDict old = before ? before->state_dict() : nn::StateDict();
    const std::string path = to.module_name(node.id);
    size_t same = 0, entries = 0;
    for (const auto& entry : now->state_dict()) {
      ++entries;
      const Tensor* value = old.find(entry.key());
      if (!value || value->sizes() != entry.value().sizes() ||
          value->dtype() != entry.value().dtype()) {
        continue;
      }
      ++same;
      // A group's entries are also its members': each is copied once.
      const std::string key = path.empty() ? entry.key() : path + "." + entry.key();
      if (!state.contains(key)) state.insert(key, *value);
    }
    if (entries == 0) continue;
    (same == entries ? carried.kept : same == 0 ? carried.fresh : carried.mixed).push_back(node.id);
  }
  carried.tensors = state.size();
  // Copies into the new model's tensors (their requires_grad and the optimizer's hold on them
  // stay); every entry was checked above, so nothing is refused.
  to.load_state_dict(state, /*strict=*/false);
  return carried;
}

namespace {

// Nodes gone (or no longer kept) leave the cache; when this pass saw every entry (an edit that
// removed nothing) none is looked at.
void evict_unseen(std::unordered_map<NodeId, std::unique_ptr<AnalysisCache::Entry>>& entries,
                  uint64_t generation, size_t seen) {
  if (seen == entries.size()) return;
  std::erase_if(entries, [&](const auto& entry) { return entry.second->generation != generation; });
}

// Each top-level node's problems, as "port: message" in the order found.
std::map<NodeId, std::vector<std::string>> problems_by_node(const std::vector<Problem>& list) {
  std::map<NodeId, std::vector<std::string>> out;
  for (const Problem& p : list) {
    if (p.block.empty()) out[p.node].push_back(p.port + ": " + p.message);
  }
  return out;
}

}  // namespace

Analysis analyze(const Project& project, AnalysisCache* cache) {
  Problems problems;
  if (cache) cache->next_generation();
  Builder b(project, project.graph, "", Json::object(), {}, problems, cache);
  b.analyze(nullptr);
  if (cache) evict_unseen(cache->entries_, cache->generation_, cache->seen_);
  return {std::move(b.shapes), std::move(problems.list)};
}

void reanalyze(const Project& project, AnalysisCache& cache, Analysis& last,
               std::set<NodeId>& changed) {
  Problems problems;
  cache.next_generation();
  Builder b(project, project.graph, "", Json::object(), {}, problems, &cache);
  b.shapes = std::move(last.output_shapes);
  last.output_shapes.clear();
  b.changed = &changed;
  b.analyze(nullptr);
  b.forget_unshaped();
  evict_unseen(cache.entries_, cache.generation_, cache.seen_);
  // Both maps are ordered by node: one walk through the two side by side.
  const auto before = problems_by_node(last.problems);
  const auto after = problems_by_node(problems.list);
  auto i = before.begin();
  auto j = after.begin();
  while (i != before.end() || j != after.end()) {
    if (j == after.end() || (i != before.end() && i->first < j->first)) {
      changed.insert((i++)->first);
    } else if (i == before.end() || j->first < i->first) {
      changed.insert((j++)->first);
    } else {
      if (i->second != j->second) changed.insert(i->first);
      ++i;
      ++j;
    }
  }
  changed.erase(0);  // the graph as a whole is no node
  last.output_shapes = std::move(b.shapes);
  last.problems = std::move(problems.list);
}

namespace {

// The one message for a graph that does not build: every problem, each with its block.
GraphError graph_error(const Project& project, std::vector<Problem> problems) {
  std::string message = project.name + ": the graph has " + std::to_string(problems.size()) +
                        (problems.size() == 1 ? " problem: " : " problems: ");
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem& p = problems[i];
    message +=
        (i ? "; " : "") + (p.block.empty() ? "" : "in block '" + p.block + "': ") + p.message;
  }
  return GraphError(message, std::move(problems));
}

}  // namespace

void check_model(const Project& project) {
  Problems problems;
  Builder b(project, project.graph, "", Json::object(), {}, problems);
  b.analyze(nullptr);
  if (!problems.list.empty()) throw graph_error(project, std::move(problems.list));
}

std::shared_ptr<GraphModule> build_model(const Project& project) {
  Problems problems;
  Builder b(project, project.graph, "", Json::object(), {}, problems);
  b.analyze(nullptr);
  if (!problems.list.empty()) throw graph_error(project, std::move(problems.list));
  return b.build(project.name);
}

std::shared_ptr<GraphModule> build_initial_model(const Project& project) {
  return with_seed(static_cast<uint64_t>(project.training.seed),
                   [&] { return build_model(project); });
}

namespace {

// Whether the block holds an instance of itself, at any depth (its module could not be made).
bool holds_itself(const Project& project, const BlockDef& block, std::vector<std::string>& stack) {
  if (std::find(stack.begin(), stack.end(), block.name) != stack.end()) return true;
  stack.push_back(block.name);
  for (const Node& n : block.graph.nodes) {
    if (const BlockDef* inner = project.find_block(n.type);
        inner && holds_itself(project, *inner, stack)) {
      return true;
    }
  }
  stack.pop_back();
  return false;
}

}  // namespace

std::optional<int64_t> parameter_count(const Project& project, NodeId id,
                                       std::unordered_map<std::string, int64_t>& memo) {
  const Node* node = project.graph.find(id);
  if (!node) return std::nullopt;
  if (is_container_type(node->type)) {
    int64_t total = 0;
    for (NodeId m : node->members) {
      const std::optional<int64_t> count = parameter_count(project, m, memo);
      if (!count) return std::nullopt;
      total += *count;
    }
    return total;
  }
  const std::string key = node->type + "\n" + node->options.dump();
  if (auto it = memo.find(key); it != memo.end()) return it->second;
  nn::ModulePtr module;
  try {
    if (const NodeType* type = find_node_type(node->type)) {
      if (type->make_module) module = type->make_module(type->checked_options(node->options));
    } else if (const BlockDef* block = project.find_block(node->type)) {
      std::vector<std::string> stack;
      if (holds_itself(project, *block, stack)) return std::nullopt;
      // As the builder makes an instance's module (make_module).
      Problems scratch;
      Builder inner(project, block->graph, block->name,
                    resolved_options(project, *node, Json::object()), {block->name}, scratch);
      inner.analyze(nullptr);
      module = inner.build(block->name);
    } else {
      return std::nullopt;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  int64_t count = 0;
  if (module) {
    for (const auto& [name, p] : module->named_parameters()) count += p.numel();
  }
  memo.emplace(key, count);
  return count;
}

Json resolved_options(const Project& project, const Node& node, const Json& arguments) {
  Json options = node.options;
  if (options.is_object()) {
    for (auto& [key, value] : options.items()) {
      const std::string missing = substitute_arguments(value, arguments);
      if (!missing.empty())
        throw ValueError(describe(node) + ": option '" + key + "' refers to '" + missing +
                         "', which is no argument");
    }
  }
  if (is_container_type(node.type)) return options;
  if (const NodeType* type = find_node_type(node.type)) return type->checked_options(options);
  const BlockDef* block = project.find_block(node.type);
  if (!block) node_type(node.type);  // the KeyError naming the unknown type
  Json out = block->arguments.is_object() ? block->arguments : Json::object();
  if (options.is_object()) {
    for (const auto& [key, value] : options.items()) out[key] = value;
  }
  return out;
}

std::vector<NodeId> forward_order(const Project& project, const Graph& graph) {
  std::string block;
  Json args = Json::object();
  for (const BlockDef& b : project.blocks) {
    if (&b.graph == &graph) {
      block = b.name;
      args = b.arguments;
    }
  }
  // A block's graph on its own: its Input shapes come from each instance, so the problems
  // found here (of shapes) are not the block's; the order is.
  Problems problems;
  Builder b(project, graph, block, args,
            block.empty() ? std::vector<std::string>{} : std::vector<std::string>{block}, problems);
  b.analyze(nullptr);
  return b.run_order();
}

NodePorts block_ports(const BlockDef& block) {
  NodePorts ports;
  for (const Node& n : block.graph.nodes) {
    const std::optional<NodeKind> kind = node_kind(n.type);
    if (kind == NodeKind::Input) ports.inputs.push_back(n.name);
    if (kind == NodeKind::Output) ports.outputs.push_back(n.name);
  }
  return ports;
}

namespace {

// The ports the wires of an unknown type's node use (a plugin that is not installed): the
// node keeps them on the canvas, so that its wires are drawn and saved as they were.
NodePorts ports_of_wires(const Project& project, const Node& node) {
  const Graph* graph = nullptr;
  auto holds = [&node](const Graph& g) {
    const Node* n = g.find(node.id);
    return n == &node;
  };
  if (holds(project.graph)) graph = &project.graph;
  for (const BlockDef& b : project.blocks) {
    if (!graph && holds(b.graph)) graph = &b.graph;
  }
  NodePorts ports;
  if (!graph) return ports;
  auto add = [](std::vector<std::string>& list, const std::string& port) {
    if (std::find(list.begin(), list.end(), port) == list.end()) list.push_back(port);
  };
  for (const Edge& e : graph->edges) {
    if (e.to.node == node.id) add(ports.inputs, e.to.port);
    if (e.from.node == node.id) add(ports.outputs, e.from.port);
  }
  return ports;
}

}  // namespace

NodePorts project_node_ports(const Project& project, const Node& node) {
  try {
    if (auto ports = node_ports(node)) return *ports;
  } catch (const std::exception&) {
    // Options the analysis reports as invalid still get the type's declared ports, so the
    // node stays wired while the user fixes them.
    NodePorts ports;
    const NodeType& type = node_type(node.type);
    for (const PortSpec& p : type.inputs) ports.inputs.push_back(p.name);
    for (const PortSpec& p : type.outputs) ports.outputs.push_back(p.name);
    return ports;
  }
  if (const BlockDef* block = project.find_block(node.type)) return block_ports(*block);
  if (!node_kind(node.type)) return ports_of_wires(project, node);
  if (node_kind(node.type) == NodeKind::Ref && node.options.contains("target") &&
      node.options["target"].is_number_integer()) {
    const Node* target = project.graph.find(node.options["target"].get<NodeId>());
    if (target && node_kind(target->type) != NodeKind::Ref)
      return project_node_ports(project, *target);
  }
  return {};
}

}  // namespace nns::graph
