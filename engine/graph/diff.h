// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What differs between two projects' models, node by node: the structure half of a model diff
// (File > Compare With... in the window, `nnstudio-cli diff`); engine/train/model_diff.h adds
// the numbers (outputs, gradients and weights on one batch).
//
//   nns::graph::ProjectDiff d = nns::graph::diff_projects(a, b);
//   for (const nns::graph::NodeDiff& n : d.nodes) if (n.kind != DiffKind::Same) ...
//   nns::graph::Project both = nns::graph::union_project(a, b, d);   // what the canvas draws
//
// Nodes are matched in three passes, each over the nodes the passes before left unmatched:
//   1. by module path (the top-level node's name, a group member's "features.0"; a functional
//      node by its name), when both sides have the same type there;
//   2. inside each matched Sequential or ModuleList, members by the longest common
//      subsequence of their types (a layer inserted into a Sequential shifts its neighbours'
//      indices but they are still the same layers);
//   3. by type and position: a node whose input comes from (or whose output goes to) a pair
//      matched already, with the same type on both sides, repeated until nothing more matches
//      (a renamed layer). A node matched by path with another type is "changed" only when
//      pass 3 finds nothing better for it.
// What is left is removed (only in A) or added (only in B). A Sequential's chain counts as
// wires here (its "in" feeds member 0, ...), so its members have neighbours too. A member that
// pass 2 matched at another index (a layer inserted before it) is not renamed: its paths differ
// and it is "same" unless something else does.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/project.h"

namespace nns::graph {

enum class DiffKind {
  Same,     // matched, nothing differs
  Changed,  // matched; type, options, shapes or parameter count differ (see NodeDiff::changes)
  Renamed,  // matched by type and position under another path (changes may list more)
  Removed,  // only in A
  Added,    // only in B
};
// "same", "changed", "renamed", "removed", "added".
std::string diff_kind_name(DiffKind kind);

// One difference of a matched pair: what, and its text on each side.
struct FieldChange {
  std::string field;  // "name", "type", "option out_features", "output shape", "parameters"
  std::string a;      // "fc2", "Linear", "16", "[N, 16]", "272"
  std::string b;
};

struct NodeDiff {
  DiffKind kind = DiffKind::Same;
  NodeId a = 0;  // the node in A's top-level graph (0 when added)
  NodeId b = 0;  // the node in B's (0 when removed)
  // The module path ("features.0"; a functional node's name) and type on each side ("" on a
  // side that lacks the node).
  std::string path_a, path_b;
  std::string type_a, type_b;
  std::vector<FieldChange> changes;  // empty for Same, Added and Removed
  // The parameter values the node's module holds on each side (nullopt: none, or it does not
  // build).
  std::optional<int64_t> parameters_a, parameters_b;
};

struct ProjectDiff {
  // Every node of both graphs that has a module or is a functional node, once: A's in A's
  // node order with B's added ones after the node they follow in B. Input and Output nodes
  // only where they differ: a matched pair whose options (an Input's shape) differ, or one that
  // only one side has (a model with another input is another model); their wires alone are
  // no difference.
  std::vector<NodeDiff> nodes;
  // Every matched pair (A's id, B's id), Input and Output nodes included, in A's node order:
  // what union_project maps B's wires by.
  std::vector<std::pair<NodeId, NodeId>> matched;
  // The differences only (kind != Same), in the same order.
  std::vector<const NodeDiff*> differences() const;
};

// Never throws for a project that does not build: nodes whose shapes or parameter counts
// cannot be worked out compare by type and options alone.
ProjectDiff diff_projects(const Project& a, const Project& b);

// The union of both graphs, for drawing: A's graph with B's added nodes (fresh ids, recorded
// in `added_ids`: B's id -> the union's), their edges to each other and to the matched
// nodes, and their group memberships, laid out afresh (engine/graph/layout.h). A removed node
// keeps A's id; a matched node keeps A's id; added nodes get ids above A's. An edge of B into an
// input port A already feeds is left out (a port takes one wire).
struct UnionProject {
  Project project;
  std::vector<std::pair<NodeId, NodeId>> added_ids;  // B's id, the union's id; by B's id
  // The node of the union that shows a NodeDiff (its `a`, or its added id).
  NodeId node_of(const NodeDiff& diff) const;
};
UnionProject union_project(const Project& a, const Project& b, const ProjectDiff& diff);

}  // namespace nns::graph
