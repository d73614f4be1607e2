// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/spec.h"

#include <algorithm>
#include <map>

#include "engine/graph/node_types.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

// "fc1 (id 3)": how errors name a node.
std::string describe(const Node& node) {
  return "'" + node.name + "' (" + node.type + ", id " + std::to_string(node.id) + ")";
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// Checks that `port` is one of the node's ports of that direction; block instances and unknown
// types are checked later by analyze(), which knows the project's blocks.
void check_port(const Node& node, const std::string& port, bool input) {
  const std::optional<NodePorts> ports = node_ports(node);
  if (!ports) return;
  const std::vector<std::string>& names = input ? ports->inputs : ports->outputs;
  if (std::find(names.begin(), names.end(), port) != names.end()) return;
  throw ValueError("node " + describe(node) + " has no " + (input ? "input" : "output") +
                   " port '" + port + "'" +
                   (names.empty() ? std::string(" (it has none)")
                                  : "; its " + std::string(input ? "inputs" : "outputs") +
                                        " are: " + join(names)));
}

}  // namespace

NodeId Graph::add_node(const std::string& type, const std::string& name, Json options, double x,
                       double y) {
  Node node;
  node.id = next_id;
  node.type = type;
  node.name = name;
  node.options = std::move(options);
  node.x = x;
  node.y = y;
  insert_node(std::move(node));
  return nodes.back().id;
}

void Graph::insert_node(Node node) {
  if (node.id <= 0)
    throw ValueError("Graph.insert_node: node ids are positive, got " + std::to_string(node.id) +
                     " for '" + node.name + "'");
  if (const Node* other = find(node.id))
    throw ValueError("Graph.insert_node: id " + std::to_string(node.id) + " of '" + node.name +
                     "' is already taken by " + describe(*other));
  next_id = std::max(next_id, node.id + 1);
  nodes.push_back(std::move(node));
}

void Graph::remove_node(NodeId id) {
  at(id);
  std::erase_if(edges, [id](const Edge& e) { return e.from.node == id || e.to.node == id; });
  for (Node& n : nodes) std::erase(n.members, id);
  std::erase_if(nodes, [id](const Node& n) { return n.id == id; });
}

void Graph::connect(const PortRef& from, const PortRef& to) {
  const Node& src = at(from.node);
  const Node& dst = at(to.node);
  check_port(src, from.port, false);
  check_port(dst, to.port, true);
  for (const Node* n : {&src, &dst}) {
    const Node* group = parent_of(n->id);
    if (group && group->type == "Sequential")
      throw ValueError("node " + describe(*n) + " is a member of Sequential '" + group->name +
                       "', which chains its members itself; connect the group's ports instead");
  }
  if (const Edge* taken = edge_into(to))
    throw ValueError("input port '" + to.port + "' of node " + describe(dst) +
                     " is already fed by '" + at(taken->from.node).name + "." + taken->from.port +
                     "'; disconnect it first");
  // A cycle forms when `from` is reachable from `to`: search forward from to.node, keeping
  // each node's predecessor to name the path.
  std::map<NodeId, NodeId> came_from{{to.node, to.node}};
  std::vector<NodeId> stack{to.node};
  while (!stack.empty() && !came_from.contains(from.node)) {
    const NodeId n = stack.back();
    stack.pop_back();
    for (const Edge& e : edges) {
      if (e.from.node != n || came_from.contains(e.to.node)) continue;
      came_from[e.to.node] = n;
      stack.push_back(e.to.node);
    }
  }
  if (came_from.contains(from.node)) {
    std::vector<std::string> path{src.name};
    for (NodeId n = from.node; n != to.node;) {
      n = came_from.at(n);
      path.push_back(at(n).name);
    }
    std::reverse(path.begin() + 1, path.end());
    std::string text;
    for (const std::string& p : path) text += p + " -> ";
    throw ValueError("connecting '" + src.name + "." + from.port + "' to '" + dst.name + "." +
                     to.port + "' would form a cycle: " + text + src.name);
  }
  edges.push_back({from, to});
}

void Graph::disconnect(const PortRef& to) {
  std::erase_if(edges, [&to](const Edge& e) { return e.to == to; });
}

bool Node::operator==(const Node& other) const {
  return id == other.id && x == other.x && y == other.y && collapsed == other.collapsed &&
         folded == other.folded && members == other.members && name == other.name &&
         type == other.type && options == other.options && extra == other.extra;
}

Node* Graph::find(NodeId id) {
  // Nodes are nearly always in id order (add_node takes the next id, removal keeps the order,
  // an undo puts back the order it had): a binary search finds the node in a large graph, where
  // a scan per lookup made code that looks up every node quadratic (10,000 nodes). Ids are
  // unique, so a node found with the id is the one; only when the order is not by id (a node
  // inserted with an old id) does the scan decide.
  size_t low = 0, high = nodes.size();
  while (low < high) {
    const size_t mid = low + (high - low) / 2;
    if (nodes[mid].id == id) return &nodes[mid];
    if (nodes[mid].id < id) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  auto it = std::find_if(nodes.begin(), nodes.end(), [id](const Node& n) { return n.id == id; });
  return it == nodes.end() ? nullptr : &*it;
}

const Node* Graph::find(NodeId id) const {
  return const_cast<Graph*>(this)->find(id);
}

Node& Graph::at(NodeId id) {
  if (Node* n = find(id)) return *n;
  throw KeyError("the graph has no node with id " + std::to_string(id));
}

const Node& Graph::at(NodeId id) const {
  return const_cast<Graph*>(this)->at(id);
}

const Node* Graph::find_by_name(const std::string& name) const {
  auto it =
      std::find_if(nodes.begin(), nodes.end(), [&name](const Node& n) { return n.name == name; });
  return it == nodes.end() ? nullptr : &*it;
}

const Node* Graph::parent_of(NodeId id) const {
  for (const Node& n : nodes) {
    if (std::find(n.members.begin(), n.members.end(), id) != n.members.end()) return &n;
  }
  return nullptr;
}

std::unordered_map<NodeId, NodeId> parent_index(const Graph& graph) {
  std::unordered_map<NodeId, NodeId> parents;
  for (const Node& n : graph.nodes) {
    for (NodeId m : n.members) parents.emplace(m, n.id);
  }
  return parents;
}

const Edge* Graph::edge_into(const PortRef& to) const {
  auto it = std::find_if(edges.begin(), edges.end(), [&to](const Edge& e) { return e.to == to; });
  return it == edges.end() ? nullptr : &*it;
}

}  // namespace nns::graph
