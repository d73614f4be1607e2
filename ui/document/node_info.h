// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the window's widgets ask of a node besides its ports (graph::project_node_ports):
// whether it is a group, a free name for a new one, its type's default repr.
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/spec.h"

namespace nns::ui {

// True for a Sequential, ModuleList or ModuleDict node.
bool isGroup(const graph::Node& node);

// A free attribute name for a new node of this type: "linear", then "linear1", ... ("x" for
// an Input), unique among the graph's node names.
std::string freeNodeName(const graph::Graph& graph, const std::string& type);

// The PyTorch-style repr of a node type with its default options ("Linear(in_features=1,
// out_features=1, bias=True)"), or its description for functional nodes.
std::string defaultRepr(const graph::NodeType& type);

}  // namespace nns::ui
