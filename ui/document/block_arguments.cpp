// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/document/block_arguments.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "engine/graph/node_types.h"
#include "engine/tensor/error.h"

namespace nns::ui {
namespace {

std::string argumentList(const graph::Json& arguments) {
  std::string out;
  for (const auto& [key, value] : arguments.items()) out += (out.empty() ? "" : ", ") + key;
  return out.empty() ? std::string("none") : out;
}

void checkName(const graph::BlockDef& b, const std::string& name) {
  const bool valid = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                     std::all_of(name.begin(), name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                     });
  if (!valid)
    throw ValueError("block '" + b.name + "': '" + name +
                     "' is not a valid argument name: use letters, digits and _, not starting "
                     "with a digit");
  if (b.arguments.contains(name))
    throw ValueError("block '" + b.name + "' already has an argument '" + name +
                     "': pick another name");
}

const graph::Json& argumentOf(const graph::BlockDef& b, const std::string& name) {
  if (!b.arguments.is_object() || !b.arguments.contains(name))
    throw KeyError("block '" + b.name + "' has no argument '" + name +
                   "'; its arguments are: " + argumentList(b.arguments));
  return b.arguments.at(name);
}

// The object with one key renamed, in its place.
graph::Json renamedKey(const graph::Json& object, const std::string& from, const std::string& to) {
  graph::Json out = graph::Json::object();
  for (const auto& [key, value] : object.items()) out[key == from ? to : key] = value;
  return out;
}

// Calls fn on every instance of the block: nodes of its type at the top level and inside
// (other) blocks.
void forEachInstance(graph::Project& p, const std::string& block,
                     const std::function<void(graph::Node&)>& fn) {
  for (graph::Node& n : p.graph.nodes) {
    if (n.type == block) fn(n);
  }
  for (graph::BlockDef& b : p.blocks) {
    for (graph::Node& n : b.graph.nodes) {
      if (n.type == block) fn(n);
    }
  }
}

bool refersTo(const graph::Json& value, const std::string& reference) {
  if (value.is_array() || value.is_object()) {
    for (const auto& v : value) {
      if (refersTo(v, reference)) return true;
    }
    return false;
  }
  return value.is_string() && value.get<std::string>() == reference;
}

void replaceReference(graph::Json& value, const std::string& from, const std::string& to) {
  if (value.is_array() || value.is_object()) {
    for (auto& v : value) replaceReference(v, from, to);
  } else if (value.is_string() && value.get<std::string>() == from) {
    value = to;
  }
}

// The value with its "$name" references replaced by the arguments' defaults; a ValueError
// naming the node and option for a reference to no argument.
graph::Json withDefaults(graph::Json value, const graph::BlockDef& b, const graph::Node& node,
                         const std::string& option) {
  if (value.is_array() || value.is_object()) {
    for (auto& v : value) v = withDefaults(v, b, node, option);
    return value;
  }
  if (!value.is_string()) return value;
  const std::string s = value.get<std::string>();
  if (s.size() < 2 || s[0] != '$') return value;
  if (!b.arguments.contains(s.substr(1)))
    throw ValueError("block '" + b.name + "', node '" + node.name + "', option '" + option +
                     "': '" + s + "' is no argument of the block (its arguments: " +
                     argumentList(b.arguments) + "); add it to the block's arguments first");
  return b.arguments.at(s.substr(1));
}

}  // namespace

graph::BlockDef& blockNamed(graph::Project& project, const std::string& block) {
  for (graph::BlockDef& b : project.blocks) {
    if (b.name == block) return b;
  }
  throw KeyError("the project has no custom block '" + block + "'");
}

void addBlockArgument(graph::Project& project, const std::string& block, const std::string& name,
                      const graph::Json& defaultValue) {
  graph::BlockDef& b = blockNamed(project, block);
  if (!b.arguments.is_object()) b.arguments = graph::Json::object();
  checkName(b, name);
  if (defaultValue.is_null())
    throw ValueError("block '" + block + "': give the argument '" + name +
                     "' a default value (what instances that do not set it use)");
  b.arguments[name] = defaultValue;
}

void renameBlockArgument(graph::Project& project, const std::string& block, const std::string& from,
                         const std::string& to) {
  graph::BlockDef& b = blockNamed(project, block);
  argumentOf(b, from);
  if (from == to) return;
  checkName(b, to);
  b.arguments = renamedKey(b.arguments, from, to);
  for (graph::Node& n : b.graph.nodes) replaceReference(n.options, "$" + from, "$" + to);
  forEachInstance(project, block, [&](graph::Node& n) {
    if (n.options.is_object() && n.options.contains(from))
      n.options = renamedKey(n.options, from, to);
  });
}

void setBlockArgumentDefault(graph::Project& project, const std::string& block,
                             const std::string& name, const graph::Json& value) {
  graph::BlockDef& b = blockNamed(project, block);
  argumentOf(b, name);
  if (value.is_null())
    throw ValueError("block '" + block + "': the argument '" + name + "' needs a default value");
  b.arguments[name] = value;
}

void removeBlockArgument(graph::Project& project, const std::string& block,
                         const std::string& name) {
  graph::BlockDef& b = blockNamed(project, block);
  argumentOf(b, name);
  for (const graph::Node& n : b.graph.nodes) {
    if (!n.options.is_object()) continue;
    for (const auto& [option, value] : n.options.items()) {
      if (refersTo(value, "$" + name))
        throw ValueError("block '" + block + "': node '" + n.name + "' uses the argument '" + name +
                         "' (option '" + option + "'): give that option a value of its own first");
    }
  }
  b.arguments.erase(name);
  forEachInstance(project, block, [&](graph::Node& n) {
    if (n.options.is_object()) n.options.erase(name);
  });
}

void setBlockNodeOption(graph::Project& project, const std::string& block, graph::NodeId node,
                        const std::string& option, const graph::Json& value) {
  graph::BlockDef& b = blockNamed(project, block);
  graph::Node& n = b.graph.at(node);
  graph::Json options = n.options.is_object() ? n.options : graph::Json::object();
  options[option] = value;
  if (const graph::NodeType* type = graph::find_node_type(n.type)) {
    graph::Json resolved = graph::Json::object();
    for (const auto& [key, v] : options.items()) resolved[key] = withDefaults(v, b, n, key);
    try {
      type->checked_options(resolved);
    } catch (const Error& e) {
      throw ValueError("block '" + block + "', node '" + n.name + "' (with the arguments' " +
                       "defaults): " + e.what());
    }
  }
  n.options = std::move(options);
}

}  // namespace nns::ui
