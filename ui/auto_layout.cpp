#include "ui/auto_layout.h"

#include <algorithm>
#include <functional>
#include <set>
#include <vector>

#include "ui/node_ports.h"

namespace nns::ui {
namespace {

constexpr double kColumnWidth = 250;
constexpr double kRowHeight = 120;
// A model deeper than this many columns wraps into bands, read like lines of text, so a long
// chain fits a laptop-sized canvas at a readable zoom instead of running off its right edge.
constexpr int kMaxColumns = 5;
constexpr int kBandColumns = 4;
constexpr double kBandGap = 70;

}  // namespace

std::map<graph::NodeId, QPointF> layeredLayout(const graph::Project& project) {
  const graph::Graph& g = project.graph;
  // The node that stands for id on the canvas: itself, or its outermost collapsed group.
  auto shown = [&](graph::NodeId id) {
    graph::NodeId result = id;
    for (const graph::Node* p = g.parent_of(id); p; p = g.parent_of(p->id)) {
      if (p->collapsed) result = p->id;
    }
    return result;
  };
  // A node is placed when it is drawn as a box: not hidden in a collapsed group, and not an
  // expanded group (whose frame wraps its members).
  auto placed = [&](const graph::Node& n) {
    return shown(n.id) == n.id && !(isGroup(n) && !n.collapsed);
  };
  // An open switch ModuleDict routes through one member of its choice: its members are
  // stacked in one column, which the group occupies as a whole.
  auto stacked = [&](const graph::Node& n) {
    return isGroup(n) && !n.collapsed && n.type != "Sequential" &&
           !nodePorts(project, n).inputs.empty();
  };
  auto inStack = [&](graph::NodeId id) {
    const graph::Node* p = g.parent_of(id);
    return p && stacked(*p);
  };
  // Where a wire into / out of a group's port really starts or ends when the group is open.
  std::function<graph::NodeId(graph::NodeId, bool)> endpoint = [&](graph::NodeId id, bool input) {
    const graph::Node& n = g.at(id);
    if (n.type == "Sequential" && !n.collapsed && !n.members.empty()) {
      return endpoint(input ? n.members.front() : n.members.back(), input);
    }
    return shown(id);
  };

  std::map<graph::NodeId, std::set<graph::NodeId>> preds;
  auto link = [&](graph::NodeId from, graph::NodeId to) {
    if (from != to) preds[to].insert(from);
  };
  for (const graph::Edge& e : g.edges) {
    link(endpoint(e.from.node, false), endpoint(e.to.node, true));
  }
  for (const graph::Node& n : g.nodes) {
    if (n.type != "Sequential" || n.collapsed) continue;
    for (size_t i = 1; i < n.members.size(); ++i) {
      link(endpoint(n.members[i - 1], false), endpoint(n.members[i], true));
    }
  }

  // Longest path by memoized depth-first search; the graph is acyclic (connect refuses
  // cycles), and the visiting set guards against a malformed file anyway.
  std::map<graph::NodeId, int> depth;
  std::set<graph::NodeId> visiting;
  std::function<int(graph::NodeId)> depthOf = [&](graph::NodeId id) {
    if (auto it = depth.find(id); it != depth.end()) return it->second;
    if (!visiting.insert(id).second) return 0;
    int d = 0;
    for (graph::NodeId p : preds[id]) d = std::max(d, depthOf(p) + 1);
    visiting.erase(id);
    depth[id] = d;
    return d;
  };

  // Column and row of every placed node first; where they go on the canvas depends on how
  // many columns there are in all.
  std::vector<std::pair<graph::NodeId, QPoint>> cells;
  std::map<int, int> rows;
  for (const graph::Node& n : g.nodes) {
    if (stacked(n)) {
      const int column = depthOf(n.id);
      for (graph::NodeId m : n.members) cells.emplace_back(m, QPoint(column, rows[column]++));
      continue;
    }
    if (!placed(n) || inStack(n.id)) continue;
    const int column = depthOf(n.id);
    cells.emplace_back(n.id, QPoint(column, rows[column]++));
  }
  const int columns = rows.empty() ? 0 : rows.rbegin()->first + 1;
  const int perBand = columns > kMaxColumns ? kBandColumns : std::max(columns, 1);
  int tallest = 0;
  for (const auto& [column, count] : rows) tallest = std::max(tallest, count);
  const double bandHeight = tallest * kRowHeight + kBandGap;

  std::map<graph::NodeId, QPointF> positions;
  for (const auto& [id, cell] : cells) {
    positions[id] = QPointF((cell.x() % perBand) * kColumnWidth,
                            (cell.x() / perBand) * bandHeight + cell.y() * kRowHeight);
  }
  return positions;
}

}  // namespace nns::ui
