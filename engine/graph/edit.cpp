// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/edit.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "engine/graph/node_types.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

std::string describe(const Node& node) {
  return "'" + node.name + "' (" + node.type + ")";
}

// The single input and output port of a node; block instances and Refs, whose ports only the
// project knows, use "in" and "out" (make_block names a block's single ports so).
std::pair<std::string, std::string> single_ports(const Node& node, const std::string& purpose) {
  const std::optional<NodePorts> p = node_ports(node);
  if (!p) return {"in", "out"};
  if (p->inputs.size() != 1 || p->outputs.size() != 1)
    throw ValueError(purpose + ": node " + describe(node) +
                     " does not take one input and give one output");
  return {p->inputs[0], p->outputs[0]};
}

void check_ids(const Graph& graph, const std::vector<NodeId>& ids, const std::string& purpose) {
  if (ids.empty()) throw ValueError(purpose + ": no nodes selected");
  std::set<NodeId> seen;
  for (NodeId id : ids) {
    graph.at(id);
    if (!seen.insert(id).second)
      throw ValueError(purpose + ": node " + std::to_string(id) + " is selected twice");
  }
}

// The position of the first of ids in the node list.
size_t first_position(const Graph& graph, const std::set<NodeId>& ids) {
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    if (ids.contains(graph.nodes[i].id)) return i;
  }
  return graph.nodes.size();
}

// Adds a node at position `at` of the node list with a fresh id.
NodeId insert_at(Graph& graph, Node node, size_t at) {
  node.id = graph.next_id;
  graph.insert_node(node);
  std::rotate(graph.nodes.begin() + static_cast<std::ptrdiff_t>(at), graph.nodes.end() - 1,
              graph.nodes.end());
  return node.id;
}

std::pair<double, double> centre(const Graph& graph, const std::set<NodeId>& ids) {
  double x = 0, y = 0;
  for (NodeId id : ids) {
    x += graph.at(id).x;
    y += graph.at(id).y;
  }
  return {x / static_cast<double>(ids.size()), y / static_cast<double>(ids.size())};
}

std::string snake_case(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      const bool boundary =
          i > 0 && (std::islower(static_cast<unsigned char>(name[i - 1])) ||
                    (i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1])) &&
                     std::isupper(static_cast<unsigned char>(name[i - 1]))));
      if (boundary) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

// Replaces "$name" strings by the arguments.
void substitute(Json& value, const Json& args) {
  if (value.is_array() || value.is_object()) {
    for (auto& v : value) substitute(v, args);
    return;
  }
  if (!value.is_string()) return;
  const std::string s = value.get<std::string>();
  if (s.size() > 1 && s[0] == '$' && args.contains(s.substr(1))) value = args.at(s.substr(1));
}

}  // namespace

std::string unique_name(const Graph& graph, const std::string& base) {
  auto taken = [&graph](const std::string& n) { return graph.find_by_name(n) != nullptr; };
  if (!taken(base)) return base;
  size_t digits = base.size();
  while (digits > 0 && std::isdigit(static_cast<unsigned char>(base[digits - 1]))) --digits;
  const std::string stem = base.substr(0, digits);
  int64_t n = digits < base.size() ? std::stoll(base.substr(digits)) + 1 : 1;
  while (taken(stem + std::to_string(n))) ++n;
  return stem + std::to_string(n);
}

NodeId group_nodes(Graph& graph, const std::vector<NodeId>& ids, const std::string& type,
                   const std::string& name) {
  const std::string purpose = "group as " + type + " '" + name + "'";
  if (!is_container_type(type))
    throw ValueError(purpose + ": a group is a Sequential, ModuleList or ModuleDict, not '" + type +
                     "'");
  check_ids(graph, ids, purpose);
  const std::set<NodeId> selected(ids.begin(), ids.end());
  for (NodeId id : ids) {
    if (const Node* p = graph.parent_of(id))
      throw ValueError(purpose + ": node " + describe(graph.at(id)) + " is already in group '" +
                       p->name + "'; ungroup it first");
  }
  std::vector<NodeId> members;
  const std::vector<Edge> edges = graph.edges;
  if (type == "Sequential") {
    // Each member: one input and one output; the edges among them a single path.
    std::map<NodeId, NodeId> next, prev;
    for (const Edge& e : graph.edges) {
      const bool from_in = selected.contains(e.from.node), to_in = selected.contains(e.to.node);
      if (from_in && to_in) {
        if (next.contains(e.from.node) || prev.contains(e.to.node))
          throw ValueError(
              purpose + ": the nodes do not form a chain (node " +
              describe(graph.at(next.contains(e.from.node) ? e.from.node : e.to.node)) +
              " has two edges inside the selection)");
        next[e.from.node] = e.to.node;
        prev[e.to.node] = e.from.node;
      }
    }
    for (NodeId id : ids) single_ports(graph.at(id), purpose);
    std::vector<NodeId> heads;
    for (NodeId id : ids) {
      if (!prev.contains(id)) heads.push_back(id);
    }
    if (heads.size() != 1)
      throw ValueError(purpose + ": the nodes do not form a chain (" +
                       std::to_string(heads.size()) +
                       " of them are not fed by another selected node; a chain has one head)");
    for (NodeId n = heads[0];; n = next.at(n)) {
      members.push_back(n);
      if (!next.contains(n)) break;
    }
    if (members.size() != ids.size())
      throw ValueError(purpose +
                       ": the nodes do not form a chain (they are not all connected "
                       "one after another)");
    for (const Edge& e : graph.edges) {
      const bool from_in = selected.contains(e.from.node), to_in = selected.contains(e.to.node);
      if (to_in && !from_in && e.to.node != members.front())
        throw ValueError(purpose + ": node " + describe(graph.at(e.to.node)) +
                         " inside the chain is fed from outside it, by '" +
                         graph.at(e.from.node).name + "'");
      if (from_in && !to_in && e.from.node != members.back())
        throw ValueError(purpose + ": node " + describe(graph.at(e.from.node)) +
                         " inside the chain also feeds '" + graph.at(e.to.node).name +
                         "' outside it");
    }
  } else {
    for (const Node& n : graph.nodes) {
      if (selected.contains(n.id)) members.push_back(n.id);
    }
    if (type == "ModuleDict") {
      std::set<std::string> keys;
      for (NodeId id : members) {
        if (!keys.insert(graph.at(id).name).second)
          throw ValueError(purpose + ": two nodes are named '" + graph.at(id).name +
                           "', and a ModuleDict's keys are its members' names; rename one");
      }
    }
  }

  Node group;
  group.type = type;
  group.name = name;
  group.members = members;
  std::tie(group.x, group.y) = centre(graph, selected);
  const NodeId gid = insert_at(graph, group, first_position(graph, selected));
  if (type == "Sequential") {
    std::vector<Edge> rewired;
    for (const Edge& e : edges) {
      const bool from_in = selected.contains(e.from.node), to_in = selected.contains(e.to.node);
      if (from_in && to_in) continue;
      Edge r = e;
      if (to_in) r.to = {gid, "in"};
      if (from_in) r.from = {gid, "out"};
      rewired.push_back(r);
    }
    graph.edges = std::move(rewired);
  }
  return gid;
}

void ungroup(Graph& graph, NodeId group_id) {
  const Node group = graph.at(group_id);
  if (!is_container_type(group.type))
    throw ValueError("ungroup: node " + describe(group) + " is not a group");
  std::vector<NodeId> chain;
  if (group.type == "Sequential") {
    chain = group.members;
  } else if (is_switch_dict(group)) {
    // A switch routes through its active member: that member takes the group's edges.
    const Json& o = group.options;
    const Json active = o.contains("active") ? o["active"] : Json();
    for (NodeId id : group.members) {
      if (active == graph.at(id).name) chain = {id};
    }
  }
  std::vector<Edge> edges;
  for (size_t i = 0; i + 1 < chain.size(); ++i) {
    edges.push_back({{chain[i], single_ports(graph.at(chain[i]), "ungroup").second},
                     {chain[i + 1], single_ports(graph.at(chain[i + 1]), "ungroup").first}});
  }
  for (const Edge& e : graph.edges) {
    Edge r = e;
    if (e.to.node == group_id || e.from.node == group_id) {
      if (chain.empty()) continue;
      if (e.to.node == group_id)
        r.to = {chain.front(), single_ports(graph.at(chain.front()), "ungroup").first};
      if (e.from.node == group_id)
        r.from = {chain.back(), single_ports(graph.at(chain.back()), "ungroup").second};
    }
    edges.push_back(r);
  }
  // Members take the group's place in the node list (their module order stays).
  const auto at = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                               [group_id](const Node& n) { return n.id == group_id; }) -
                  graph.nodes.begin();
  std::vector<Node> members;
  for (NodeId id : group.members) {
    members.push_back(graph.at(id));
    std::erase_if(graph.nodes, [id](const Node& n) { return n.id == id; });
  }
  std::erase_if(graph.nodes, [group_id](const Node& n) { return n.id == group_id; });
  // A group inside a group: its members take its place among the outer group's members too
  // (the outer group listed a node that was gone).
  for (Node& outer : graph.nodes) {
    auto it = std::find(outer.members.begin(), outer.members.end(), group_id);
    if (it == outer.members.end()) continue;
    it = outer.members.erase(it);
    outer.members.insert(it, group.members.begin(), group.members.end());
  }
  const size_t pos = std::min(static_cast<size_t>(at), graph.nodes.size());
  graph.nodes.insert(graph.nodes.begin() + static_cast<std::ptrdiff_t>(pos), members.begin(),
                     members.end());
  graph.edges = std::move(edges);
}

NodeId make_block(Project& project, Graph& graph, const std::vector<NodeId>& ids,
                  const std::string& block_name) {
  const std::string purpose = "make block '" + block_name + "'";
  check_ids(graph, ids, purpose);
  if (block_name.empty() || !std::isupper(static_cast<unsigned char>(block_name[0])) ||
      !std::all_of(block_name.begin(), block_name.end(),
                   [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }))
    throw ValueError(purpose +
                     ": a block's name is a class name: a capital letter, then letters, "
                     "digits or '_'");
  if (project.find_block(block_name) || node_kind(block_name) || block_name == project.name)
    throw ValueError(purpose + ": the name is taken (by a block, a node type or the model)");
  // The selection with every member of selected groups.
  std::set<NodeId> selected;
  std::vector<NodeId> pending = ids;
  while (!pending.empty()) {
    const NodeId id = pending.back();
    pending.pop_back();
    if (!selected.insert(id).second) continue;
    for (NodeId m : graph.at(id).members) pending.push_back(m);
  }
  for (NodeId id : selected) {
    const Node* p = graph.parent_of(id);
    if (p && !selected.contains(p->id))
      throw ValueError(purpose + ": node " + describe(graph.at(id)) + " is a member of group '" +
                       p->name + "', which is not selected");
  }
  for (const Node& n : graph.nodes) {
    if (node_kind(n.type) != NodeKind::Ref || !n.options.contains("target")) continue;
    const Json& t = n.options["target"];
    const bool target_in = t.is_number_integer() && selected.contains(t.get<NodeId>());
    if (target_in != selected.contains(n.id))
      throw ValueError(purpose + ": Ref " + describe(n) + " and its target would be split");
  }

  BlockDef block;
  block.name = block_name;
  for (const Node& n : graph.nodes) {
    if (selected.contains(n.id)) block.graph.insert_node(n);
  }
  // Cut edges: one Input per outside source port, one Output per inside source port.
  std::vector<PortRef> sources_in, sources_out;
  for (const Edge& e : graph.edges) {
    const bool from_in = selected.contains(e.from.node), to_in = selected.contains(e.to.node);
    if (from_in && to_in) block.graph.edges.push_back(e);
    if (!from_in && to_in &&
        std::find(sources_in.begin(), sources_in.end(), e.from) == sources_in.end())
      sources_in.push_back(e.from);
    if (from_in && !to_in &&
        std::find(sources_out.begin(), sources_out.end(), e.from) == sources_out.end())
      sources_out.push_back(e.from);
  }
  auto port_name = [](const char* stem, size_t i, size_t n) {
    return n == 1 ? std::string(stem) : stem + std::to_string(i);
  };
  std::map<PortRef, std::string, bool (*)(const PortRef&, const PortRef&)> in_port(
      [](const PortRef& a, const PortRef& b) {
        return std::tie(a.node, a.port) < std::tie(b.node, b.port);
      });
  auto out_port = in_port;
  for (size_t i = 0; i < sources_in.size(); ++i) {
    const std::string name = port_name("in", i, sources_in.size());
    const NodeId input = block.graph.add_node("Input", name);
    in_port[sources_in[i]] = name;
    for (const Edge& e : graph.edges) {
      if (e.from == sources_in[i] && selected.contains(e.to.node))
        block.graph.edges.push_back({{input, "out"}, e.to});
    }
  }
  for (size_t i = 0; i < sources_out.size(); ++i) {
    const std::string name = port_name("out", i, sources_out.size());
    const NodeId output = block.graph.add_node("Output", name);
    out_port[sources_out[i]] = name;
    block.graph.edges.push_back({sources_out[i], {output, "in"}});
  }

  Node instance;
  instance.type = block_name;
  instance.name = unique_name(graph, snake_case(block_name));
  std::tie(instance.x, instance.y) = centre(graph, selected);
  const NodeId iid = insert_at(graph, instance, first_position(graph, selected));
  std::vector<Edge> edges;
  std::set<std::pair<NodeId, std::string>> fed;
  for (const Edge& e : graph.edges) {
    const bool from_in = selected.contains(e.from.node), to_in = selected.contains(e.to.node);
    if (from_in && to_in) continue;
    if (to_in) {
      const std::string port = in_port.at(e.from);
      if (fed.insert({iid, port}).second) edges.push_back({e.from, {iid, port}});
    } else if (from_in) {
      edges.push_back({{iid, out_port.at(e.from)}, e.to});
    } else {
      edges.push_back(e);
    }
  }
  graph.edges = std::move(edges);
  std::erase_if(graph.nodes, [&selected](const Node& n) { return selected.contains(n.id); });
  if (&graph == &project.graph)
    std::erase_if(project.probes,
                  [&selected](const ProbeSpec& p) { return selected.contains(p.node); });
  project.blocks.push_back(std::move(block));
  return iid;
}

std::vector<NodeId> inline_block(Project& project, Graph& graph, NodeId instance_id) {
  const Node instance = graph.at(instance_id);
  const BlockDef* block = project.find_block(instance.type);
  if (!block)
    throw ValueError("inline block: node " + describe(instance) +
                     " is not a custom block instance");
  Json args = block->arguments.is_object() ? block->arguments : Json::object();
  if (instance.options.is_object()) {
    for (const auto& [k, v] : instance.options.items()) args[k] = v;
  }
  std::vector<Node> nodes;
  std::vector<Edge> inner;
  std::map<std::string, NodeId> inputs, outputs;  // port -> Input / Output node id
  for (const Node& n : block->graph.nodes) {
    const std::optional<NodeKind> kind = node_kind(n.type);
    if (kind == NodeKind::Input) {
      inputs[n.name] = n.id;
    } else if (kind == NodeKind::Output) {
      outputs[n.name] = n.id;
    } else {
      Node copy = n;
      substitute(copy.options, args);
      copy.x += instance.x;
      copy.y += instance.y;
      nodes.push_back(std::move(copy));
    }
  }
  for (const Edge& e : block->graph.edges) {
    const bool io = node_kind(block->graph.at(e.from.node).type) == NodeKind::Input ||
                    node_kind(block->graph.at(e.to.node).type) == NodeKind::Output;
    if (!io) inner.push_back(e);
  }
  const std::vector<NodeId> ids = paste_nodes(graph, nodes, inner);
  std::map<NodeId, NodeId> fresh;
  for (size_t i = 0; i < nodes.size(); ++i) fresh[nodes[i].id] = ids[i];
  // The instance's edges, through the block's Input and Output nodes.
  std::vector<Edge> edges;
  for (const Edge& e : graph.edges) {
    if (e.from.node != instance_id && e.to.node != instance_id) edges.push_back(e);
  }
  for (const Edge& outer : graph.edges) {
    if (outer.to.node == instance_id && inputs.contains(outer.to.port)) {
      for (const Edge& e : block->graph.edges) {
        if (e.from.node == inputs.at(outer.to.port) && fresh.contains(e.to.node))
          edges.push_back({outer.from, {fresh.at(e.to.node), e.to.port}});
      }
    }
    if (outer.from.node == instance_id && outputs.contains(outer.from.port)) {
      const Edge* src = block->graph.edge_into({outputs.at(outer.from.port), "in"});
      if (src && fresh.contains(src->from.node))
        edges.push_back({{fresh.at(src->from.node), src->from.port}, outer.to});
    }
  }
  graph.edges = std::move(edges);
  // The copies take the instance's place in the node list.
  const auto at = std::find_if(graph.nodes.begin(), graph.nodes.end(),
                               [instance_id](const Node& n) { return n.id == instance_id; }) -
                  graph.nodes.begin();
  std::vector<Node> copies(graph.nodes.end() - static_cast<std::ptrdiff_t>(ids.size()),
                           graph.nodes.end());
  graph.nodes.resize(graph.nodes.size() - ids.size());
  graph.nodes.insert(graph.nodes.begin() + at, copies.begin(), copies.end());
  if (const Node* parent = graph.parent_of(instance_id)) {
    // An instance inside a group is replaced there by nothing: its copies are free nodes.
    std::erase(graph.at(parent->id).members, instance_id);
  }
  std::erase_if(graph.nodes, [instance_id](const Node& n) { return n.id == instance_id; });
  if (&graph == &project.graph)
    std::erase_if(project.probes,
                  [instance_id](const ProbeSpec& p) { return p.node == instance_id; });
  return ids;
}

std::vector<NodeId> paste_nodes(Graph& graph, const std::vector<Node>& nodes,
                                const std::vector<Edge>& edges, double dx, double dy) {
  std::map<NodeId, NodeId> fresh;
  NodeId next = graph.next_id;
  for (const Node& n : nodes) {
    if (!fresh.emplace(n.id, next++).second)
      throw ValueError("paste: node id " + std::to_string(n.id) + " appears twice");
  }
  Graph result = graph;
  std::vector<NodeId> ids;
  for (const Node& n : nodes) {
    Node copy = n;
    copy.id = fresh.at(n.id);
    copy.name = unique_name(result, n.name);
    copy.x += dx;
    copy.y += dy;
    std::vector<NodeId> members;
    for (NodeId m : n.members) {
      if (fresh.contains(m)) members.push_back(fresh.at(m));
    }
    copy.members = std::move(members);
    if (node_kind(copy.type) == NodeKind::Ref && copy.options.contains("target") &&
        copy.options["target"].is_number_integer() &&
        fresh.contains(copy.options["target"].get<NodeId>()))
      copy.options["target"] = fresh.at(copy.options["target"].get<NodeId>());
    result.insert_node(std::move(copy));
    ids.push_back(fresh.at(n.id));
  }
  for (const Edge& e : edges) {
    if (!fresh.contains(e.from.node) || !fresh.contains(e.to.node)) continue;
    const Edge r{{fresh.at(e.from.node), e.from.port}, {fresh.at(e.to.node), e.to.port}};
    if (!result.edge_into(r.to)) result.edges.push_back(r);
  }
  graph = std::move(result);
  return ids;
}

}  // namespace nns::graph
