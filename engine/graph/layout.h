// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's layout of a project's graph: a layered (Sugiyama) drawing, top to bottom or left
// to right, in which a group's box holds exactly its members and nested groups, a Sequential's
// members keep their order along the flow, a switch ModuleDict's members stand side by side
// between its ports, and a node outside a group that interleaves with it (a residual Add) sits
// beside its box at the right height. It is made a level at a time: each open
// Sequential or switch ModuleDict is laid out on its own and is one box of that size in its
// parent's level, the wires that cross its frame entering through its ports; a ModuleList's
// members stand in the enclosing level, framed. Levels go to Graphviz's `dot` (bounded work
// from 120 items), or, from 400 items (a model's long chain of blocks), are laid out directly
// by ranks in linear time. Each level's result is cached under what it holds, so identical
// blocks share one layout and an edit lays out again only the levels it changed. The window
// and `nnstudio-cli layout` both use it.
//   nns::graph::Layout l = nns::graph::layout_graph(project);   // top to bottom
//   l.boxes.at(fc1).x;   // scene units, y grows downwards, top-left corner
//
// Sizes are the window's: node_box_size() is what the canvas draws each node as.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/graph/project.h"
#include "engine/graph/repeats.h"

namespace nns::graph {

struct LayoutPoint {
  double x = 0, y = 0;
  bool operator==(const LayoutPoint&) const = default;
};

struct LayoutBox {
  double x = 0, y = 0, width = 0, height = 0;  // top-left corner and size
  bool operator==(const LayoutBox&) const = default;
};

// A wire's path: a cubic Bezier spline (p0, then control, control, end for each piece) from
// the output port to the input port. A Sequential's implicit links (its "in" to its first
// member, each member to the next, the last to its "out") are routes too, with `chain` set;
// their ends are {group, "in"} / {member, input port} / {group, "out"}.
struct LayoutRoute {
  Edge edge;
  bool chain = false;
  std::vector<LayoutPoint> points;
};

struct Layout {
  std::string direction = "TB";       // "TB" or "LR"
  std::map<NodeId, LayoutBox> boxes;  // every node drawn: boxes, and frames of open groups
  std::vector<NodeId> order;          // the nodes of `boxes` in graph order
  std::map<NodeId, LayoutPoint> group_inputs, group_outputs;  // open groups' port anchors
  std::vector<LayoutRoute> routes;
  std::map<NodeId, int> repeats;  // a folded run's first member -> the run's size N (repeats.h)
  double width = 0, height = 0;   // the drawing's extent, from (0, 0)

  // The route of a wire or chain link, or nullptr.
  const LayoutRoute* route(const Edge& edge) const;

  using RouteKey = std::tuple<NodeId, std::string, NodeId, std::string>;
  std::map<RouteKey, size_t> route_index;  // routes by their edge's ends
};

// What the canvas draws a node as (the layout reserves exactly this): a layer, a function, an
// Input or Output, a collapsed group; a probed node is taller by its health strip. Open groups
// are frames whose size the layout decides.
struct NodeSize {
  double width = 0, height = 0;
};
constexpr double kNodeWidth = 160;
constexpr double kNodeHeight = 44;
constexpr double kCollapsedGroupWidth = 180;
constexpr double kCollapsedGroupHeight = 62;
constexpr double kHealthStripHeight = 22;
constexpr double kFrameHeader = 26;  // the title band of an open group's frame
constexpr double kRepeatStack = 6;   // the boxes stacked behind a folded run's box (repeats.h)
NodeSize node_box_size(const Project& project, const Node& node);

// The node that shows `id` on the canvas: itself, the outermost collapsed group holding it, or
// the first member of a folded run that it is (or is in) a hidden repeat of. `parents` is
// parent_index(graph), `folds` folded_repeats(project).
NodeId shown_node(const Graph& graph, const std::unordered_map<NodeId, NodeId>& parents,
                  const FoldedRepeats& folds, NodeId id);
// The same through the caller's own lookups (the layout's and the canvas's indexes):
// parent_of(id) is the group holding a node or std::nullopt, collapsed(group) its flag.
template <typename ParentOf, typename Collapsed>
NodeId shown_node(const FoldedRepeats& folds, NodeId id, ParentOf parent_of, Collapsed collapsed) {
  // Outwards from the node, so that the outermost collapsed group or fold decides.
  NodeId shown = id;
  for (NodeId at = id;;) {
    if (auto f = folds.hidden.find(at); f != folds.hidden.end()) shown = f->second;
    const std::optional<NodeId> parent = parent_of(at);
    if (!parent) return shown;
    at = *parent;
    if (collapsed(at)) shown = at;
  }
}

// A group's implicit links: a Sequential's chain ({group, "in"} to its first member's first
// input, each member's first output to the next one's first input, the last to {group,
// "out"}), a switch ModuleDict's branches ({group, "in"} to each member, each member to {group,
// "out"}); none for other groups.
std::vector<Edge> implicit_links(const Project& project, const Node& group);
// The same with the members found by `node` (an index: the graph's own lookup scans).
std::vector<Edge> implicit_links(const Project& project, const Node& group,
                                 const std::function<const Node&(NodeId)>& node);

// Lays the project out in `direction` ("TB" or "LR"; empty: the project's own, TB if unset). Groups
// are drawn as the project says (open, or collapsed into one box). A ValueError for another
// direction; an Error when Graphviz fails (its message).
Layout layout_graph(const Project& project, const std::string& direction = "");

// The layout as `nnstudio-cli layout` prints it: {"nodes": [{"id", "name", "x", "y", "width",
// "height"}, ...]}, one entry per node drawn, in graph order, coordinates rounded to 0.1, and
// "repeat": N on the first member of a folded run.
Json layout_to_json(const Project& project, const Layout& layout);

// Moves every drawn node of the project to its place in the layout (frames follow their
// members) and records the direction.
void apply_layout(Project& project, const Layout& layout);

}  // namespace nns::graph
