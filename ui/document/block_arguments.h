// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The edits of a custom block's arguments and of the options of the nodes inside it, as pure
// functions on a project (the window runs them through ProjectDocument::edit, so each is one
// undo step). Each checks everything first and throws a ValueError naming the block, the
// argument or node, and what to do; nothing changes then.
//
//   addBlockArgument(p, "MyLinear", "in_features", 4);
//   setBlockNodeOption(p, "MyLinear", weight, "shape", {"$in_features", "$out_features"});
//   renameBlockArgument(p, "MyLinear", "in_features", "fan_in");  // "$fan_in" inside, and
//                                                                // every instance's option
#include <string>

#include "engine/graph/project.h"

namespace nns::ui {

graph::BlockDef& blockNamed(graph::Project& project, const std::string& block);

void addBlockArgument(graph::Project& project, const std::string& block, const std::string& name,
                      const graph::Json& defaultValue);
// Renames the argument in place (its order stays), the "$old" references inside the block and
// the option of every instance that sets it, at the top level and inside other blocks.
void renameBlockArgument(graph::Project& project, const std::string& block, const std::string& from,
                         const std::string& to);
void setBlockArgumentDefault(graph::Project& project, const std::string& block,
                             const std::string& name, const graph::Json& value);
// Refused while a node inside the block refers to it; instances' values for it are dropped.
void removeBlockArgument(graph::Project& project, const std::string& block,
                         const std::string& name);
// Sets one option of a node inside the block. The value may hold "$argument" references; with
// the arguments' defaults put in, the node type must accept it.
void setBlockNodeOption(graph::Project& project, const std::string& block, graph::NodeId node,
                        const std::string& option, const graph::Json& value);

}  // namespace nns::ui
