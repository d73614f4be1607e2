#pragma once
// The ports a node shows on the canvas, for every kind of node the spec holds: what
// graph::node_ports() knows, and for the nodes whose ports only the project knows, a custom
// block instance (its Input and Output nodes' names) and a Ref (its target's ports).
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/project.h"

namespace nns::ui {

graph::NodePorts nodePorts(const graph::Project& project, const graph::Node& node);

// True for a Sequential, ModuleList or ModuleDict node.
bool isGroup(const graph::Node& node);

// A free attribute name for a new node of this type: "linear", then "linear1", ... ("x" for
// an Input), unique among the graph's node names.
std::string freeNodeName(const graph::Graph& graph, const std::string& type);

// The PyTorch-style repr of a node type with its default options ("Linear(in_features=1,
// out_features=1, bias=True)"), or its description for functional nodes.
std::string defaultRepr(const graph::NodeType& type);

}  // namespace nns::ui
