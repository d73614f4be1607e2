// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The graph spec: the plain data a canvas edits and a project file stores. It says what the
// model is (nodes, the edges between their ports, groups, custom blocks); the builder
// (builder.h) turns it into a Module tree. Nothing here holds a tensor or a module, so a spec
// is cheap to copy, compare and snapshot (the window's undo commands keep JSON snapshots).
//
// Nodes and their modules' names follow PyTorch, so that state-dict keys equal those of a
// PyTorch model with the same structure:
//   - a module node at the top level is the model's attribute `name` ("fc1" -> fc1.weight);
//   - a group is a node too, whose `members` are other nodes of the same graph, in order:
//       Sequential  members are called in a chain: the group's "in" feeds member 0, each
//                   member feeds the next, the last one is the group's "out". Members have no
//                   edges of their own; they are named "0", "1", ... (features.0.weight);
//       ModuleList  members are wired one by one like any node; named "0", "1", ...;
//       ModuleDict  members are named by their own name (the key). With the option
//                   {"switch": true} the group has ports "in"/"out" and routes through the
//                   member whose key is the option "active" (like the seeds' DynamicNet);
//                   otherwise its members are wired one by one;
//   - a custom block is a named sub-graph (BlockDef) with its own Input and Output nodes;
//     a node whose type is the block's name is an instance: a module of that class name
//     (MyLinear) whose parameters are the block's Parameter nodes and module nodes;
//   - a Parameter node (or Buffer node) registers a tensor on the module it belongs to (the
//     model, or the block), so the seeds' MyLinear is two Parameter nodes, MatMul and Add;
//   - functional nodes (Add, Mul, Concat, MatMul, ...) have no module, as in PyTorch where
//     `x + y` in forward is no attribute;
//   - a Ref node calls another node's module again (its option "target" is that node's id),
//     sharing its parameters, as a Python forward may call one attribute twice.
//
//   nns::graph::Graph g;
//   NodeId in = g.add_node("Input", "x", {{"shape", {2}}});
//   NodeId fc = g.add_node("Linear", "fc1", {{"in_features", 2}, {"out_features", 3}});
//   g.connect({in, "out"}, {fc, "in"});
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace nns::graph {

using Json = nlohmann::ordered_json;
// Unique within one graph (the top level, or one block's inside); never reused after a node is
// removed, so undo snapshots and probes can name nodes by id.
using NodeId = int64_t;

// One port of one node: "in", "out", or for several inputs "in0", "in1", ...
struct PortRef {
  NodeId node = 0;
  std::string port;
  bool operator==(const PortRef&) const = default;
};

// From an output port to an input port. An input port takes exactly one edge; an output port
// feeds any number.
struct Edge {
  PortRef from;
  PortRef to;
  bool operator==(const Edge&) const = default;
};

struct Node {
  NodeId id = 0;
  std::string type;  // a NodeType name (node_types.h), a container, or a BlockDef name
  std::string name;  // the attribute name (ignored for Sequential/ModuleList members)
  Json options = Json::object();
  double x = 0, y = 0;          // canvas position
  std::vector<NodeId> members;  // for groups: the member nodes, in order
  bool collapsed = false;       // for groups: drawn as one node
  bool folded = false;          // for a Sequential or ModuleList: runs of equal members as one
  Json extra = Json::object();  // fields of a newer format, kept as they were read
  // Every field equal; the numbers first (an edit's patch compares every node of a 10,000-node
  // graph, and a layout moves most of them).
  bool operator==(const Node& other) const;
};

// A node graph: the model's top level, or the inside of a custom block.
class Graph {
 public:
  // Adds a node with a fresh id (next_id) and returns it.
  NodeId add_node(const std::string& type, const std::string& name, Json options = Json::object(),
                  double x = 0, double y = 0);
  // Adds a node with its own id (from a file or an undo snapshot); a ValueError if taken.
  void insert_node(Node node);
  // Removes the node, its edges, and its entry in any group's members.
  void remove_node(NodeId id);
  // Adds an edge after checking that both ports exist, the input port is free and no cycle
  // forms; a ValueError naming the nodes and ports otherwise, and nothing changes.
  void connect(const PortRef& from, const PortRef& to);
  void disconnect(const PortRef& to);

  Node* find(NodeId id);
  const Node* find(NodeId id) const;
  Node& at(NodeId id);  // a KeyError naming the id when missing
  const Node& at(NodeId id) const;
  const Node* find_by_name(const std::string& name) const;
  // The group this node is a member of, if any. A scan of every group: code that asks for
  // every node builds parent_index() once instead.
  const Node* parent_of(NodeId id) const;
  // The edge feeding an input port, if any.
  const Edge* edge_into(const PortRef& to) const;

  std::vector<Node> nodes;  // in registration order: the modules' order in the tree
  std::vector<Edge> edges;
  NodeId next_id = 1;  // above every id ever used in this graph

  bool operator==(const Graph&) const = default;
};

// Each member's group (member id -> group id), for code that walks up from many nodes.
std::unordered_map<NodeId, NodeId> parent_index(const Graph& graph);

// A reusable sub-graph: a custom module class. Its Input nodes are the instance's input ports
// (by node name), its Output nodes the output ports. Arguments let one block serve several
// sizes: an option value "$in_features" inside the block takes the instance's option
// "in_features" (or the argument's default).
struct BlockDef {
  std::string name;  // the class name: a node of this type is an instance
  std::string description;
  Json arguments = Json::object();  // argument name -> default value
  Graph graph;
  bool operator==(const BlockDef&) const = default;
};

}  // namespace nns::graph
