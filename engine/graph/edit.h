// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The graph edits that change more than one node: grouping, custom blocks, paste. Each is a
// pure function on the spec that checks everything first and changes nothing when it throws
// (a ValueError naming the node and the reason), so the window's undo commands can call it
// and keep a JSON snapshot to undo it.
//
//   NodeId seq = nns::graph::group_nodes(g, {fc1, relu, fc2}, "Sequential", "features");
//   nns::graph::ungroup(g, seq);                    // the chain, wired again
//   NodeId inst = nns::graph::make_block(project, project.graph, {w, b, mm, add}, "MyLinear");
//   nns::graph::inline_block(project, project.graph, inst);
#include <string>
#include <vector>

#include "engine/graph/project.h"
#include "engine/graph/spec.h"

namespace nns::graph {

// Puts the nodes into a new group node (type "Sequential", "ModuleList" or "ModuleDict") named
// `name`, placed in the node list where the first of them was (so the module registers there).
// Sequential: the nodes must form a chain (each feeds the next, one input and one output, no
// other edges inside); the edge into the chain's head is moved to the group's "in", the edges
// out of its tail to the group's "out", and the edges inside are dropped. ModuleList and
// ModuleDict keep every edge (ModuleDict: the names are its keys and must differ). Members are
// in chain order (Sequential) or node order. Returns the group's id.
NodeId group_nodes(Graph& graph, const std::vector<NodeId>& ids, const std::string& type,
                   const std::string& name);
// Removes the group node and frees its members; a Sequential's chain (and a switch
// ModuleDict's active member) is wired to the group's former edges.
void ungroup(Graph& graph, NodeId group);

// Moves the nodes into a new custom block `block_name` and puts an instance in their place
// (named like the block in snake case). Each outside output port feeding the selection becomes
// one Input node of the block (named after that port's node), each selected output port read
// outside becomes one Output node; the cut edges are wired to the instance's ports. Members of
// selected groups come along. Probes on moved nodes are dropped. Returns the instance's id.
NodeId make_block(Project& project, Graph& graph, const std::vector<NodeId>& ids,
                  const std::string& block_name);
// Replaces a block instance by a copy of the block's nodes (fresh ids, unique names, the
// instance's arguments substituted for "$name" options), wired to the instance's edges. The
// block definition stays. Returns the new nodes' ids.
std::vector<NodeId> inline_block(Project& project, Graph& graph, NodeId instance);

// Adds copies of nodes (with the edges among them) under fresh ids and unique names, moved by
// (dx, dy). Group members and Ref targets that were copied point to the copies; edges to nodes
// that were not copied are left out. Returns the new ids, in the order of `nodes`.
std::vector<NodeId> paste_nodes(Graph& graph, const std::vector<Node>& nodes,
                                const std::vector<Edge>& edges, double dx = 0, double dy = 0);

// `base`, or base with a number, so that no node of the graph has that name: "fc1" -> "fc2"
// when fc1 is taken, "relu" -> "relu1".
std::string unique_name(const Graph& graph, const std::string& base);

}  // namespace nns::graph
