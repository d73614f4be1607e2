// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/repeats.h"

#include <algorithm>
#include <optional>

#include "engine/graph/id_index.h"
#include "engine/graph/node_types.h"

namespace nns::graph {
namespace {

// The graph's lookups, made once for a whole fold: nodes by id, each node's wires out and in
// (all in two arrays, by the node's place), and a member number for each place that runs_of
// sets for one group at a time. Tables, not hash maps: folding a 10,000-node model as it opens
// looks up every node and wire, and a hash map's entries were most of that time.
class Index {
 public:
  explicit Index(const Graph& g) : graph_(g) {
    places_.build(g.nodes);
    const size_t n = g.nodes.size();
    out_.first.assign(n + 1, 0);
    in_.first.assign(n + 1, 0);
    // A wire with an end the graph lacks (a file being checked) meets no member.
    for (const Edge& e : g.edges) {
      if (const auto from = places_.find(e.from.node)) ++out_.first[*from + 1];
      if (const auto to = places_.find(e.to.node)) ++in_.first[*to + 1];
    }
    for (size_t i = 0; i < n; ++i) {
      out_.first[i + 1] += out_.first[i];
      in_.first[i + 1] += in_.first[i];
    }
    out_.wires.resize(out_.first[n]);
    in_.wires.resize(in_.first[n]);
    std::vector<size_t> out_next(out_.first.begin(), out_.first.end() - 1);
    std::vector<size_t> in_next(in_.first.begin(), in_.first.end() - 1);
    for (const Edge& e : g.edges) {
      if (const auto from = places_.find(e.from.node)) out_.wires[out_next[*from]++] = &e;
      if (const auto to = places_.find(e.to.node)) in_.wires[in_next[*to]++] = &e;
    }
    owner_.assign(n, -1);
  }

  const Node& node(NodeId id) const { return graph_.nodes[places_.at(id)]; }
  // f(edge) for each wire out of the node.
  template <typename F>
  void each_wire_out(NodeId id, F f) const {
    each_in(out_, id, f);
  }
  // f(edge) for each wire out of, then into, the node.
  template <typename F>
  void each_wire(NodeId id, F f) const {
    each_in(out_, id, f);
    each_in(in_, id, f);
  }
  // Which member of the group runs_of is looking at holds a node (-1: none).
  int owner(NodeId id) const {
    const std::optional<size_t> i = places_.find(id);
    return i ? owner_[*i] : -1;
  }
  void set_owner(NodeId id, int member) { owner_[places_.at(id)] = member; }

 private:
  struct Wires {
    std::vector<size_t> first;  // a node's wires are wires[first[i], first[i + 1])
    std::vector<const Edge*> wires;
  };
  template <typename F>
  void each_in(const Wires& w, NodeId id, F& f) const {
    const size_t i = places_.at(id);
    for (size_t k = w.first[i]; k < w.first[i + 1]; ++k) f(*w.wires[k]);
  }
  const Graph& graph_;
  IdIndex places_;
  Wires out_, in_;
  std::vector<int> owner_;
};

// A member's subtree (itself, then its members' depth first).
void subtree(const Index& index, NodeId id, std::vector<NodeId>& out) {
  out.push_back(id);
  for (NodeId m : index.node(id).members) subtree(index, m, out);
}

// What a member is, up to ids and names of Sequential/ModuleList members: its nodes' types,
// options and member counts in depth-first order, and the wires among them by position.
std::string structure(const Index& index, NodeId id) {
  std::vector<NodeId> nodes;
  subtree(index, id, nodes);
  std::unordered_map<NodeId, size_t> position;
  for (size_t i = 0; i < nodes.size(); ++i) position[nodes[i]] = i;
  std::string out;
  for (NodeId n : nodes) {
    const Node& node = index.node(n);
    out += node.type + node.options.dump() + "#" + std::to_string(node.members.size());
    // A ModuleDict's keys are part of its structure (the state dict's keys), a list's are not.
    if (node.type == "ModuleDict") {
      for (NodeId m : node.members) out += "." + index.node(m).name;
    }
    out += ";";
  }
  std::vector<std::string> wires;
  for (NodeId n : nodes) {
    index.each_wire_out(n, [&](const Edge& e) {
      auto to = position.find(e.to.node);
      if (to == position.end()) return;
      wires.push_back(std::to_string(position.at(n)) + ":" + e.from.port + ">" +
                      std::to_string(to->second) + ":" + e.to.port);
    });
  }
  std::sort(wires.begin(), wires.end());
  for (const std::string& w : wires) out += w + ",";
  return out;
}

std::vector<RepeatRun> runs_of(Index& index, const Node& group) {
  if (group.type != "Sequential" && group.type != "ModuleList") return {};
  const std::vector<NodeId>& members = group.members;
  const int count = static_cast<int>(members.size());
  if (count < 2) return {};
  // Which member each node of the group belongs to, then the wires that cross members: member
  // k joins k - 1's run only if k is fed by k - 1 alone and k - 1 feeds k alone.
  std::vector<NodeId> nodes;
  for (int k = 0; k < count; ++k) {
    const size_t from = nodes.size();
    subtree(index, members[k], nodes);
    for (size_t i = from; i < nodes.size(); ++i) index.set_owner(nodes[i], k);
  }
  std::vector<bool> fed_from_elsewhere(count, false), feeds_elsewhere(count, false);
  // Only the wires at the group's nodes (a scan of every wire for each group made folding a
  // 1,650-block model quadratic); a wire between two of them is seen twice, to the same end.
  auto cross = [&](const Edge& e) {
    const int from = index.owner(e.from.node), to = index.owner(e.to.node);
    if (from == to) return;
    if (to >= 0 && from != to - 1) fed_from_elsewhere[to] = true;
    if (from >= 0 && to != from + 1) feeds_elsewhere[from] = true;
  };
  for (NodeId n : nodes) index.each_wire(n, cross);
  for (NodeId n : nodes) index.set_owner(n, -1);  // for the next group
  // Each member's structure is made only where the wiring lets it join its neighbour: a
  // ModuleList of blocks wired from outside (1,650 residual blocks) makes none.
  std::vector<std::optional<std::string>> shapes(members.size());
  auto shape = [&](int k) -> const std::string& {
    if (!shapes[k]) shapes[k] = structure(index, members[k]);
    return *shapes[k];
  };
  // Two layers (no members) are alike when their types and options are: compared as they are,
  // without writing out their structures (a Sequential's Linear, ReLU, Linear of 1,650 blocks).
  auto same = [&](int a, int b) {
    const Node& x = index.node(members[a]);
    const Node& y = index.node(members[b]);
    if (x.type != y.type || x.members.size() != y.members.size()) return false;
    if (x.members.empty()) return x.options == y.options;
    return shape(a) == shape(b);
  };
  std::vector<RepeatRun> runs;
  RepeatRun run{{members[0]}};
  for (int k = 1; k <= count; ++k) {
    const bool joins =
        k < count && !fed_from_elsewhere[k] && !feeds_elsewhere[k - 1] && same(k, k - 1);
    if (joins) {
      run.members.push_back(members[k]);
      continue;
    }
    if (run.members.size() >= 2) runs.push_back(run);
    if (k < count) run = RepeatRun{{members[k]}};
  }
  return runs;
}

}  // namespace

std::vector<RepeatRun> repeat_runs(const Project& project, const Node& group) {
  if (group.type != "Sequential" && group.type != "ModuleList") return {};
  Index index(project.graph);
  return runs_of(index, group);
}

bool has_repeats(const Project& project, const Node& group) {
  return !repeat_runs(project, group).empty();
}

int fold_all_repeats(Project& project) {
  Index index(project.graph);
  std::vector<NodeId> groups;
  for (const Node& n : project.graph.nodes) {
    if (!n.folded && !runs_of(index, n).empty()) groups.push_back(n.id);
  }
  for (NodeId id : groups) project.graph.at(id).folded = true;
  return static_cast<int>(groups.size());
}

FoldedRepeats folded_repeats(const Project& project) {
  FoldedRepeats out;
  // A collapsed group shows none of its runs: when every folded group is collapsed (a large
  // model as opened) the index is not made at all (the canvas asks after every edit).
  std::vector<const Node*> groups;
  for (const Node& n : project.graph.nodes) {
    if (n.folded && !n.collapsed) groups.push_back(&n);
  }
  if (groups.empty()) return out;
  Index index(project.graph);
  for (const Node* n : groups) {
    for (const RepeatRun& run : runs_of(index, *n)) {
      out.count[run.members[0]] = static_cast<int>(run.members.size());
      for (size_t k = 1; k < run.members.size(); ++k) out.hidden[run.members[k]] = run.members[0];
    }
  }
  return out;
}

}  // namespace nns::graph
