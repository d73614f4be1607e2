#pragma once
// Layered auto-layout: each visible node goes in the column of its topological depth (the
// longest path from an input), top to bottom in graph order within a column. Expanded
// Sequential groups chain their members, so a group reads left to right like its forward; an
// expanded switch ModuleDict stacks its members in the one column it takes.
#include <QPointF>
#include <map>

#include "engine/graph/project.h"

namespace nns::ui {

// New top-left positions for every node drawn on its own (members of collapsed groups and
// expanded group frames, which follow their members, are left out).
std::map<graph::NodeId, QPointF> layeredLayout(const graph::Project& project);

}  // namespace nns::ui
