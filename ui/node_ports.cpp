#include "ui/node_ports.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "engine/graph/edit.h"
#include "engine/graph/node_types.h"

namespace nns::ui {

bool isGroup(const graph::Node& node) {
  return graph::is_container_type(node.type);
}

graph::NodePorts nodePorts(const graph::Project& project, const graph::Node& node) {
  try {
    if (auto ports = graph::node_ports(node)) return *ports;
  } catch (const std::exception&) {
    // Options the analysis reports as invalid still get the type's declared ports, so the
    // node stays wired while the user fixes them.
    graph::NodePorts ports;
    const graph::NodeType& type = graph::node_type(node.type);
    for (const graph::PortSpec& p : type.inputs) ports.inputs.push_back(p.name);
    for (const graph::PortSpec& p : type.outputs) ports.outputs.push_back(p.name);
    return ports;
  }
  graph::NodePorts ports;
  if (const graph::BlockDef* block = project.find_block(node.type)) {
    for (const graph::Node& inner : block->graph.nodes) {
      if (inner.type == "Input") ports.inputs.push_back(inner.name);
      if (inner.type == "Output") ports.outputs.push_back(inner.name);
    }
  } else if (node.type == "Ref" && node.options.contains("target") &&
             node.options["target"].is_number_integer()) {
    const graph::Node* target = project.graph.find(node.options["target"].get<graph::NodeId>());
    if (target && target->type != "Ref") return nodePorts(project, *target);
  }
  return ports;
}

std::string freeNodeName(const graph::Graph& graph, const std::string& type) {
  if (type == "Input") return graph::unique_name(graph, "x");
  std::string base;
  for (char c : type) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return graph::unique_name(graph, base.empty() ? "node" : base);
}

std::string defaultRepr(const graph::NodeType& type) {
  if (type.make_module) {
    try {
      return type.make_module(type.checked_options(type.default_options()))->repr();
    } catch (const std::exception& e) {
      return type.name + ": " + e.what();
    }
  }
  return type.description.empty() ? type.name : type.name + ": " + type.description;
}

}  // namespace nns::ui
