// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/diff.h"

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/graph/builder.h"
#include "engine/graph/layout.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

// One end of a wire as matching sees it: an edge, or a group's implicit link (a Sequential's
// chain, a switch's branches), so that a Sequential's members have neighbours too.
struct Link {
  NodeId node = 0;         // the node at the other end
  std::string port;        // this end's port
  std::string other_port;  // the other end's
};

// One project's top-level graph, indexed for matching and comparing.
struct Side {
  explicit Side(const Project& p) : project(p), graph(p.graph), analysis(analyze(p)) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) place.emplace(graph.nodes[i].id, i);
    const std::unordered_map<NodeId, NodeId> parents = parent_index(graph);
    for (const Node& n : graph.nodes) {
      if (!parents.count(n.id)) name(n, n.name);
    }
    // Members of groups that hold each other (a file no builder takes) by their own names.
    for (const Node& n : graph.nodes) {
      if (!paths.count(n.id)) name(n, n.name);
    }
    auto wire = [this](const Edge& e) {
      outputs[e.from.node].push_back({e.to.node, e.from.port, e.to.port});
      inputs[e.to.node].push_back({e.from.node, e.to.port, e.from.port});
    };
    for (const Edge& e : graph.edges) wire(e);
    const auto lookup = [this](NodeId id) -> const Node& { return node(id); };
    for (const Node& n : graph.nodes) {
      if (n.members.empty() ||
          !std::all_of(n.members.begin(), n.members.end(), [this](NodeId m) { return has(m); }))
        continue;
      for (const Edge& e : implicit_links(project, n, lookup)) wire(e);
    }
  }

  const Node& node(NodeId id) const { return graph.nodes[place.at(id)]; }
  bool has(NodeId id) const { return place.count(id) != 0; }
  const std::string& path(NodeId id) const { return paths.at(id); }

  const Project& project;
  const Graph& graph;
  Analysis analysis;
  std::unordered_map<NodeId, size_t> place;  // the node's index in graph.nodes
  std::unordered_map<NodeId, std::string> paths;
  std::unordered_map<std::string, NodeId> by_path;
  std::unordered_map<NodeId, std::vector<Link>> inputs, outputs;
  std::unordered_map<std::string, int64_t> memo;  // parameter_count's

 private:
  // A node's module path and its members', as the builder registers them (builder.cpp's
  // add_members): a ModuleDict's members by their keys, other groups' by index.
  void name(const Node& n, const std::string& path) {
    if (!paths.emplace(n.id, path).second) return;  // a group that holds itself: named once
    by_path.emplace(path, n.id);
    size_t i = 0;
    for (NodeId id : n.members) {
      if (!has(id)) continue;
      const Node& m = node(id);
      name(m, path + "." + (n.type == "ModuleDict" ? m.name : std::to_string(i)));
      ++i;
    }
  }
};

bool is_chain_container(const Node& n) {
  return n.type == "Sequential" || n.type == "ModuleList";
}

bool is_port_node(const Node& n) {
  const std::optional<NodeKind> kind = node_kind(n.type);
  return kind == NodeKind::Input || kind == NodeKind::Output;
}

bool has_module(const Project& project, const Node& n) {
  const std::optional<NodeKind> kind = node_kind(n.type);
  if (kind) return kind == NodeKind::Module || kind == NodeKind::Container;
  return project.find_block(n.type) != nullptr;
}

// How a pair was matched (the passes of diff.h).
enum class Via { Path, Sequence, Neighbours, PathOnly };

class Matcher {
 public:
  Matcher(const Side& a, const Side& b) : a_(a), b_(b) {}

  void run() {
    for (const Node& x : a_.graph.nodes) {
      const auto y = b_.by_path.find(a_.path(x.id));
      if (y != b_.by_path.end() && free_b(y->second) && b_.node(y->second).type == x.type)
        match(x.id, y->second, Via::Path);
    }
    for (const Node& x : a_.graph.nodes) {
      const auto y = a_to_b.find(x.id);
      if (y != a_to_b.end()) match_members(x.id, y->second);
    }
    by_neighbours();
    for (const Node& x : a_.graph.nodes) {
      if (!free_a(x.id)) continue;
      const auto y = b_.by_path.find(a_.path(x.id));
      if (y != b_.by_path.end() && free_b(y->second)) match(x.id, y->second, Via::PathOnly);
    }
    by_neighbours();
  }

  std::unordered_map<NodeId, NodeId> a_to_b, b_to_a;
  std::unordered_map<NodeId, Via> via;  // by A's id

 private:
  bool free_a(NodeId x) const { return !a_to_b.count(x); }
  bool free_b(NodeId y) const { return !b_to_a.count(y); }

  void match(NodeId x, NodeId y, Via how) {
    a_to_b[x] = y;
    b_to_a[y] = x;
    via[x] = how;
    // Its neighbours may now match by position (pass 3).
    for (const auto* links : {&a_.inputs, &a_.outputs}) {
      if (auto it = links->find(x); it != links->end()) {
        for (const Link& l : it->second) {
          if (free_a(l.node)) queue_.push_back(l.node);
        }
      }
    }
  }

  // Pass 2: the members of a matched Sequential or ModuleList pair by the longest common
  // subsequence of their types, the pairs matched already kept (they weigh more than any
  // number of new ones), nested groups in turn.
  void match_members(NodeId x, NodeId y) {
    const Node& ga = a_.node(x);
    const Node& gb = b_.node(y);
    if (!is_chain_container(ga) || ga.type != gb.type) return;
    std::vector<NodeId> ma, mb;
    for (NodeId id : ga.members) {
      if (a_.has(id)) ma.push_back(id);
    }
    for (NodeId id : gb.members) {
      if (b_.has(id)) mb.push_back(id);
    }
    const int64_t kept = static_cast<int64_t>(ma.size() + mb.size()) + 1;
    auto weight = [&](size_t i, size_t j) -> int64_t {
      const auto it = a_to_b.find(ma[i]);
      if (it != a_to_b.end()) return it->second == mb[j] ? kept : 0;
      return free_b(mb[j]) && a_.node(ma[i]).type == b_.node(mb[j]).type ? 1 : 0;
    };
    std::vector<std::pair<size_t, size_t>> pairs;
    // A common head and tail need no table (a long chain with one layer inserted).
    size_t head = 0;
    while (head < ma.size() && head < mb.size() && weight(head, head) > 0) {
      pairs.emplace_back(head, head);
      ++head;
    }
    size_t ea = ma.size(), eb = mb.size();
    while (ea > head && eb > head && weight(ea - 1, eb - 1) > 0) {
      pairs.emplace_back(--ea, --eb);
    }
    const size_t n = ea - head, m = eb - head;
    std::vector<int64_t> table((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> int64_t& { return table[i * (m + 1) + j]; };
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 1; j <= m; ++j) {
        const int64_t w = weight(head + i - 1, head + j - 1);
        at(i, j) = std::max({at(i - 1, j), at(i, j - 1), w > 0 ? at(i - 1, j - 1) + w : 0});
      }
    }
    for (size_t i = n, j = m; i > 0 && j > 0;) {
      const int64_t w = weight(head + i - 1, head + j - 1);
      if (w > 0 && at(i, j) == at(i - 1, j - 1) + w) {
        pairs.emplace_back(head + i - 1, head + j - 1);
        --i, --j;
      } else if (at(i - 1, j) >= at(i, j - 1)) {
        --i;
      } else {
        --j;
      }
    }
    std::sort(pairs.begin(), pairs.end());
    for (const auto& [i, j] : pairs) {
      if (free_a(ma[i])) match(ma[i], mb[j], Via::Sequence);
      match_members(ma[i], mb[j]);
    }
  }

  // Pass 3: each unmatched node of A against the unmatched nodes of B of its type wired to the
  // counterparts of its matched neighbours through the same ports; the one most of them point
  // to (the first in B's order on a tie). Each match queues the neighbours it may decide.
  void by_neighbours() {
    queue_.clear();
    for (const Node& x : a_.graph.nodes) {
      if (free_a(x.id)) queue_.push_back(x.id);
    }
    while (!queue_.empty()) {
      const NodeId x = queue_.front();
      queue_.pop_front();
      if (!free_a(x)) continue;
      const std::string& type = a_.node(x).type;
      std::map<NodeId, int> votes;
      auto vote = [&](const std::unordered_map<NodeId, std::vector<Link>>& mine,
                      const std::unordered_map<NodeId, std::vector<Link>>& theirs) {
        const auto own = mine.find(x);
        if (own == mine.end()) return;
        for (const Link& l : own->second) {
          const auto u = a_to_b.find(l.node);
          if (u == a_to_b.end()) continue;
          const auto across = theirs.find(u->second);
          if (across == theirs.end()) continue;
          for (const Link& k : across->second) {
            if (k.port == l.other_port && k.other_port == l.port && free_b(k.node) &&
                b_.node(k.node).type == type)
              ++votes[k.node];
          }
        }
      };
      vote(a_.inputs, b_.outputs);
      vote(a_.outputs, b_.inputs);
      NodeId best = 0;
      int most = 0;
      for (const auto& [y, n] : votes) {
        if (n > most || (n == most && b_.place.at(y) < b_.place.at(best))) {
          best = y;
          most = n;
        }
      }
      if (!best) continue;
      match(x, best, Via::Neighbours);
      match_members(x, best);
    }
  }

  const Side& a_;
  const Side& b_;
  std::deque<NodeId> queue_;
};

std::string value_text(const Json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// The options a node runs with (defaults filled in, block arguments resolved), or nullopt for
// a node whose options do not check.
std::optional<Json> runs_with(const Side& s, const Node& n) {
  try {
    return resolved_options(s.project, n, Json::object());
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "option NAME" for each option that differs: as the nodes run where both check, else as
// written.
void compare_options(const Side& a, const Node& na, const Side& b, const Node& nb,
                     std::vector<FieldChange>& changes) {
  const std::optional<Json> ra = runs_with(a, na), rb = runs_with(b, nb);
  const Json& oa = ra && rb ? *ra : na.options;
  const Json& ob = ra && rb ? *rb : nb.options;
  if (!oa.is_object() || !ob.is_object()) {
    if (oa != ob) changes.push_back({"options", oa.dump(), ob.dump()});
    return;
  }
  const std::string unset = "(unset)";
  for (const auto& [key, value] : oa.items()) {
    const auto other = ob.find(key);
    if (other == ob.end()) {
      changes.push_back({"option " + key, value_text(value), unset});
    } else if (*other != value) {
      changes.push_back({"option " + key, value_text(value), value_text(*other)});
    }
  }
  for (const auto& [key, value] : ob.items()) {
    if (!oa.contains(key)) changes.push_back({"option " + key, unset, value_text(value)});
  }
}

// The node's output shapes as the canvas writes them ("[N, 16]"; "out: [N, 16], h: [2, N, 8]"
// for several ports), or nullopt where the analysis found none.
std::optional<std::string> output_shapes(const Side& s, NodeId id) {
  const auto it = s.analysis.output_shapes.find(id);
  if (it == s.analysis.output_shapes.end() || it->second.empty()) return std::nullopt;
  if (it->second.size() == 1) return shape_str(it->second.begin()->second);
  std::string out;
  for (const auto& [port, shape] : it->second)
    out += (out.empty() ? "" : ", ") + port + ": " + shape_str(shape);
  return out;
}

std::optional<int64_t> parameters(Side& s, const Node& n) {
  if (!has_module(s.project, n)) return std::nullopt;
  return parameter_count(s.project, n.id, s.memo);
}

NodeDiff one_sided(Side& s, const Node& n, bool in_a) {
  NodeDiff d;
  d.kind = in_a ? DiffKind::Removed : DiffKind::Added;
  (in_a ? d.a : d.b) = n.id;
  (in_a ? d.path_a : d.path_b) = s.path(n.id);
  (in_a ? d.type_a : d.type_b) = n.type;
  (in_a ? d.parameters_a : d.parameters_b) = parameters(s, n);
  return d;
}

// A matched pair's ids, paths and types, and what differs of its type or options.
NodeDiff pair_of(const Side& a, const Node& na, const Side& b, const Node& nb) {
  NodeDiff d;
  d.a = na.id;
  d.b = nb.id;
  d.path_a = a.path(na.id);
  d.path_b = b.path(nb.id);
  d.type_a = na.type;
  d.type_b = nb.type;
  if (na.type != nb.type) {
    d.changes.push_back({"type", na.type, nb.type});
  } else {
    compare_options(a, na, b, nb, d.changes);
  }
  return d;
}

NodeDiff matched_pair(Side& a, const Node& na, Side& b, const Node& nb, Via via) {
  NodeDiff d = pair_of(a, na, b, nb);
  const bool renamed = via == Via::Neighbours && d.path_a != d.path_b;
  if (renamed) d.changes.insert(d.changes.begin(), {"name", d.path_a, d.path_b});
  const std::optional<std::string> sa = output_shapes(a, na.id), sb = output_shapes(b, nb.id);
  if (sa && sb && *sa != *sb) d.changes.push_back({"output shape", *sa, *sb});
  d.parameters_a = parameters(a, na);
  d.parameters_b = parameters(b, nb);
  if (d.parameters_a && d.parameters_b && *d.parameters_a != *d.parameters_b) {
    d.changes.push_back(
        {"parameters", std::to_string(*d.parameters_a), std::to_string(*d.parameters_b)});
  }
  d.kind = renamed ? DiffKind::Renamed : d.changes.empty() ? DiffKind::Same : DiffKind::Changed;
  return d;
}

// A matched Input or Output pair is a difference by its options (the shape) or its type, not by
// its name or its wires: nullopt when it is none.
std::optional<NodeDiff> port_pair(const Side& a, const Node& na, const Side& b, const Node& nb) {
  NodeDiff d = pair_of(a, na, b, nb);
  if (d.changes.empty()) return std::nullopt;
  d.kind = DiffKind::Changed;
  return d;
}

bool has_port(const Node& node, const std::string& port, bool input) {
  const std::optional<NodePorts> ports = node_ports(node);
  if (!ports) return true;  // a block instance's or a Ref's: the analysis checks them
  const auto& names = input ? ports->inputs : ports->outputs;
  return std::find(names.begin(), names.end(), port) != names.end();
}

// Whether the graph's wires close a cycle (Kahn's algorithm: some node never gets free).
bool has_cycle(const Graph& g) {
  std::unordered_map<NodeId, size_t> waiting;
  std::unordered_map<NodeId, std::vector<NodeId>> next;
  for (const Edge& e : g.edges) {
    ++waiting[e.to.node];
    next[e.from.node].push_back(e.to.node);
  }
  std::vector<NodeId> free;
  for (const Node& n : g.nodes) {
    if (!waiting.count(n.id)) free.push_back(n.id);
  }
  size_t done = 0;
  while (!free.empty()) {
    const NodeId n = free.back();
    free.pop_back();
    ++done;
    for (NodeId m : next[n]) {
      if (--waiting[m] == 0) free.push_back(m);
    }
  }
  return done < g.nodes.size();
}

// Adds the wires Graph::connect would take: each end's port of its type, a free input port, no
// Sequential member's, no cycle. Checked together rather than by connect, which searches the
// whole graph for a cycle at every wire (two large models that differ much have thousands of
// wires to add); only when the wires together close a cycle are they added one by one by it.
void add_wires(Graph& g, const std::vector<Edge>& wires) {
  const std::unordered_map<NodeId, NodeId> parents = parent_index(g);
  auto in_chain = [&](NodeId id) {
    const auto p = parents.find(id);
    return p != parents.end() && g.at(p->second).type == "Sequential";
  };
  std::set<std::pair<NodeId, std::string>> fed;
  for (const Edge& e : g.edges) fed.emplace(e.to.node, e.to.port);
  std::vector<Edge> taken;
  for (const Edge& e : wires) {
    if (!has_port(g.at(e.from.node), e.from.port, false) ||
        !has_port(g.at(e.to.node), e.to.port, true) || in_chain(e.from.node) ||
        in_chain(e.to.node) || !fed.emplace(e.to.node, e.to.port).second)
      continue;
    taken.push_back(e);
  }
  const size_t before = g.edges.size();
  g.edges.insert(g.edges.end(), taken.begin(), taken.end());
  if (!has_cycle(g)) return;
  g.edges.resize(before);
  for (const Edge& e : taken) {
    try {
      g.connect(e.from, e.to);
    } catch (const Error&) {
      // It closes a cycle with the wires before it: left out.
    }
  }
}

}  // namespace

std::string diff_kind_name(DiffKind kind) {
  switch (kind) {
    case DiffKind::Same:
      return "same";
    case DiffKind::Changed:
      return "changed";
    case DiffKind::Renamed:
      return "renamed";
    case DiffKind::Removed:
      return "removed";
    case DiffKind::Added:
      return "added";
  }
  return "same";
}

std::vector<const NodeDiff*> ProjectDiff::differences() const {
  std::vector<const NodeDiff*> out;
  for (const NodeDiff& d : nodes) {
    if (d.kind != DiffKind::Same) out.push_back(&d);
  }
  return out;
}

ProjectDiff diff_projects(const Project& a, const Project& b) {
  Side sa(a), sb(b);
  Matcher m(sa, sb);
  m.run();

  // Every node of A in its order (Input and Output ones too, as places to insert after), then
  // B's added ones after the node before them in B's order.
  struct Entry {
    std::optional<NodeDiff> diff;  // nullopt: an Input or Output that is no difference
  };
  std::list<Entry> entries;
  std::unordered_map<NodeId, std::list<Entry>::iterator> at_a, at_b;
  ProjectDiff out;
  for (const Node& x : a.graph.nodes) {
    Entry e;
    const auto y = m.a_to_b.find(x.id);
    if (y == m.a_to_b.end()) {
      e.diff = one_sided(sa, x, true);
    } else {
      out.matched.emplace_back(x.id, y->second);
      const Node& ny = sb.node(y->second);
      e.diff = is_port_node(x) || is_port_node(ny) ? port_pair(sa, x, sb, ny)
                                                   : matched_pair(sa, x, sb, ny, m.via.at(x.id));
    }
    at_a[x.id] = entries.insert(entries.end(), std::move(e));
  }
  for (size_t i = 0; i < b.graph.nodes.size(); ++i) {
    const Node& y = b.graph.nodes[i];
    if (const auto x = m.b_to_a.find(y.id); x != m.b_to_a.end()) {
      at_b[y.id] = at_a.at(x->second);
      continue;
    }
    const auto after = i == 0 ? entries.begin() : std::next(at_b.at(b.graph.nodes[i - 1].id));
    at_b[y.id] = entries.insert(after, Entry{one_sided(sb, y, false)});
  }
  for (Entry& e : entries) {
    if (e.diff) out.nodes.push_back(std::move(*e.diff));
  }
  return out;
}

NodeId UnionProject::node_of(const NodeDiff& diff) const {
  if (diff.a) return diff.a;
  const auto it =
      std::lower_bound(added_ids.begin(), added_ids.end(), std::make_pair(diff.b, NodeId{0}));
  return it != added_ids.end() && it->first == diff.b ? it->second : 0;
}

UnionProject union_project(const Project& a, const Project& b, const ProjectDiff& diff) {
  UnionProject u;
  u.project = a;
  Graph& g = u.project.graph;
  // B's custom blocks that A lacks: an added instance needs its ports to be drawn.
  for (const BlockDef& block : b.blocks) {
    if (!a.find_block(block.name)) u.project.blocks.push_back(block);
  }

  std::unordered_map<NodeId, NodeId> to_union;  // B's id -> the union's
  std::unordered_set<NodeId> added;             // B's ids
  for (const auto& [x, y] : diff.matched) to_union[y] = x;
  for (const Node& n : b.graph.nodes) {
    if (to_union.count(n.id)) continue;
    to_union[n.id] = g.next_id;
    added.insert(n.id);
    u.added_ids.emplace_back(n.id, g.next_id++);
  }
  std::sort(u.added_ids.begin(), u.added_ids.end());

  // Each run of added nodes in B's order goes into the node list after the matched node before
  // it (0: first).
  std::unordered_map<NodeId, std::vector<Node>> runs;
  NodeId anchor = 0;
  for (const Node& n : b.graph.nodes) {
    if (!added.count(n.id)) {
      anchor = to_union.at(n.id);
      continue;
    }
    Node copy = n;
    copy.id = to_union.at(n.id);
    copy.members.clear();
    for (NodeId m : n.members) {
      if (added.count(m)) copy.members.push_back(to_union.at(m));
    }
    if (node_kind(n.type) == NodeKind::Ref && n.options.is_object() &&
        n.options.contains("target") && n.options["target"].is_number_integer()) {
      const auto target = to_union.find(n.options["target"].get<NodeId>());
      if (target != to_union.end()) copy.options["target"] = target->second;
    }
    runs[anchor].push_back(std::move(copy));
  }
  std::vector<Node> nodes;
  auto place_run = [&](NodeId id) {
    const auto it = runs.find(id);
    if (it == runs.end()) return;
    for (Node& n : it->second) nodes.push_back(std::move(n));
  };
  place_run(0);
  for (Node& n : g.nodes) {
    const NodeId id = n.id;
    nodes.push_back(std::move(n));
    place_run(id);
  }
  g.nodes = std::move(nodes);

  // Added members of matched groups, after the member before them in B's group.
  for (const Node& group : b.graph.nodes) {
    if (added.count(group.id)) continue;
    Node* target = g.find(to_union.at(group.id));
    if (!is_container_type(target->type)) continue;
    for (size_t k = 0; k < group.members.size(); ++k) {
      if (!added.count(group.members[k])) continue;
      auto at = target->members.begin();
      if (k > 0) {
        const auto before = to_union.find(group.members[k - 1]);
        at = before == to_union.end()
                 ? target->members.end()
                 : std::find(target->members.begin(), target->members.end(), before->second);
        if (at != target->members.end()) ++at;
      }
      target->members.insert(at, to_union.at(group.members[k]));
    }
  }

  // B's wires of the added nodes; one that cannot be drawn in A's graph (a port A's node lacks
  // or already takes, a Sequential member's, a cycle) is left out.
  std::vector<Edge> wires;
  for (const Edge& e : b.graph.edges) {
    if (!added.count(e.from.node) && !added.count(e.to.node)) continue;
    wires.push_back({{to_union.at(e.from.node), e.from.port}, {to_union.at(e.to.node), e.to.port}});
  }
  add_wires(g, wires);
  apply_layout(u.project, layout_graph(u.project));
  return u;
}

}  // namespace nns::graph
