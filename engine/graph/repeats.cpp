// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/repeats.h"

#include <algorithm>
#include <optional>

#include "engine/graph/node_types.h"

namespace nns::graph {
namespace {

// The graph's lookups, made once for a whole fold: nodes by id and edges by their tail and
// their head.
struct Index {
  // Every node and wire of the graph.
  explicit Index(const Graph& g) {
    nodes.reserve(g.nodes.size());
    for (const Node& n : g.nodes) nodes[n.id] = &n;
    add_edges(g, [](NodeId) { return true; });
  }
  // Only the groups' nodes (themselves and all they hold) and their wires: the canvas asks for
  // the runs of the few open folded groups of a 10,000-node model after every edit.
  Index(const Graph& g, const std::vector<const Node*>& groups) {
    std::vector<NodeId> to_visit;
    for (const Node* group : groups) {
      nodes[group->id] = group;
      to_visit.insert(to_visit.end(), group->members.begin(), group->members.end());
    }
    while (!to_visit.empty()) {
      const Node& n = g.at(to_visit.back());
      to_visit.pop_back();
      if (!nodes.emplace(n.id, &n).second) continue;
      to_visit.insert(to_visit.end(), n.members.begin(), n.members.end());
    }
    add_edges(g, [&](NodeId id) { return nodes.count(id) > 0; });
  }
  std::unordered_map<NodeId, const Node*> nodes;
  std::unordered_map<NodeId, std::vector<const Edge*>> out, in;

 private:
  template <typename Indexed>
  void add_edges(const Graph& g, Indexed indexed) {
    for (const Edge& e : g.edges) {
      if (indexed(e.from.node)) out[e.from.node].push_back(&e);
      if (indexed(e.to.node)) in[e.to.node].push_back(&e);
    }
  }
};

// A member's subtree (itself, then its members' depth first).
void subtree(const Index& index, NodeId id, std::vector<NodeId>& out) {
  out.push_back(id);
  for (NodeId m : index.nodes.at(id)->members) subtree(index, m, out);
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
    const Node& node = *index.nodes.at(n);
    out += node.type + node.options.dump() + "#" + std::to_string(node.members.size());
    // A ModuleDict's keys are part of its structure (the state dict's keys), a list's are not.
    if (node.type == "ModuleDict") {
      for (NodeId m : node.members) out += "." + index.nodes.at(m)->name;
    }
    out += ";";
  }
  std::vector<std::string> wires;
  for (NodeId n : nodes) {
    auto it = index.out.find(n);
    if (it == index.out.end()) continue;
    for (const Edge* e : it->second) {
      auto to = position.find(e->to.node);
      if (to == position.end()) continue;
      wires.push_back(std::to_string(position.at(n)) + ":" + e->from.port + ">" +
                      std::to_string(to->second) + ":" + e->to.port);
    }
  }
  std::sort(wires.begin(), wires.end());
  for (const std::string& w : wires) out += w + ",";
  return out;
}

std::vector<RepeatRun> runs_of(const Index& index, const Node& group) {
  if (group.type != "Sequential" && group.type != "ModuleList") return {};
  const std::vector<NodeId>& members = group.members;
  const int count = static_cast<int>(members.size());
  if (count < 2) return {};
  // Which member each node of the group belongs to, then the wires that cross members: member
  // k joins k - 1's run only if k is fed by k - 1 alone and k - 1 feeds k alone.
  std::unordered_map<NodeId, int> owner;
  for (int k = 0; k < count; ++k) {
    std::vector<NodeId> nodes;
    subtree(index, members[k], nodes);
    for (NodeId n : nodes) owner[n] = k;
  }
  std::vector<bool> fed_from_elsewhere(count, false), feeds_elsewhere(count, false);
  auto owner_of = [&](NodeId id) {
    auto it = owner.find(id);
    return it == owner.end() ? -1 : it->second;
  };
  // Only the wires at the group's nodes (a scan of every wire for each group made folding a
  // 1,650-block model quadratic); a wire between two of them is seen twice, to the same end.
  auto cross = [&](const Edge* e) {
    const int from = owner_of(e->from.node), to = owner_of(e->to.node);
    if (from == to) return;
    if (to >= 0 && from != to - 1) fed_from_elsewhere[to] = true;
    if (from >= 0 && to != from + 1) feeds_elsewhere[from] = true;
  };
  for (const auto& [node, k] : owner) {
    for (const auto* edges : {&index.out, &index.in}) {
      if (auto it = edges->find(node); it != edges->end()) {
        for (const Edge* e : it->second) cross(e);
      }
    }
  }
  // Each member's structure is made only where the wiring lets it join its neighbour: a
  // ModuleList of blocks wired from outside (1,650 residual blocks) makes none.
  std::vector<std::optional<std::string>> shapes(members.size());
  auto shape = [&](int k) -> const std::string& {
    if (!shapes[k]) shapes[k] = structure(index, members[k]);
    return *shapes[k];
  };
  std::vector<RepeatRun> runs;
  RepeatRun run{{members[0]}};
  for (int k = 1; k <= count; ++k) {
    const bool joins =
        k < count && !fed_from_elsewhere[k] && !feeds_elsewhere[k - 1] && shape(k) == shape(k - 1);
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
  return runs_of(Index(project.graph), group);
}

bool has_repeats(const Project& project, const Node& group) {
  return !repeat_runs(project, group).empty();
}

int fold_all_repeats(Project& project) {
  const Index index(project.graph);
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
  const Index index(project.graph, groups);
  for (const Node* n : groups) {
    for (const RepeatRun& run : runs_of(index, *n)) {
      out.count[run.members[0]] = static_cast<int>(run.members.size());
      for (size_t k = 1; k < run.members.size(); ++k) out.hidden[run.members[k]] = run.members[0];
    }
  }
  return out;
}

}  // namespace nns::graph
