// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/document/node_info.h"

#include <algorithm>
#include <cctype>
#include <exception>

#include "engine/graph/edit.h"
#include "engine/graph/node_types.h"

namespace nns::ui {

bool isGroup(const graph::Node& node) {
  return graph::is_container_type(node.type);
}

std::string freeNodeName(const graph::Graph& graph, const std::string& type) {
  if (graph::node_kind(type) == graph::NodeKind::Input) return graph::unique_name(graph, "x");
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
