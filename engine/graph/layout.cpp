// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/layout.h"

#include <graphviz/gvc.h>

#include <cmath>
#include <functional>
#include <mutex>
#include <set>
#include <string>

#include "engine/graph/builder.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

// Graphviz keeps global state (its error buffer, the plugin registry): one layout at a time.
std::mutex& graphviz_mutex() {
  static std::mutex m;
  return m;
}

GVC_t* graphviz_context() {
  // Made once: loading the plugin configuration costs more than laying out a small graph.
  static GVC_t* context = [] {
    agseterr(AGMAX);  // errors are read back with aglasterr(), not printed
    return gvContext();
  }();
  return context;
}

// dot's sizes are in inches; the canvas's units are points (72 to the inch), as dot's output.
std::string inches(double points) {
  return std::to_string(points / 72.0);
}

bool is_open_group(const Node& node) {
  return is_container_type(node.type) && !node.collapsed && !node.members.empty();
}

// The dot graph of a project: one dot node per box drawn, one cluster per open group with a
// small anchor node for each of its ports, one dot edge per wire and per implicit link.
class DotGraph {
 public:
  DotGraph(const Project& project, const std::string& direction)
      : project_(project),
        graph_(project.graph),
        parents_(parent_index(project.graph)),
        direction_(direction) {
    g_ = agopen(const_cast<char*>("model"), Agdirected, nullptr);
    set(g_, AGRAPH, "newrank", "true");  // ranks across clusters: residual Adds beside blocks
    set(g_, AGRAPH, "rankdir", direction_);
    set(g_, AGRAPH, "nodesep", "0.3");
    set(g_, AGRAPH, "ranksep", "0.42");
    set(g_, AGRAPH, "label", "");
    set(g_, AGRAPH, "labeljust", "l");
    set(g_, AGNODE, "shape", "box");
    set(g_, AGNODE, "fixedsize", "true");
    set(g_, AGNODE, "label", "");
    set(g_, AGNODE, "width", "1");
    set(g_, AGNODE, "height", "1");
    set(g_, AGEDGE, "arrowhead", "none");
    set(g_, AGEDGE, "weight", "1");
    set(g_, AGEDGE, "tailport", "");
    set(g_, AGEDGE, "headport", "");

    for (const Node& n : graph_.nodes) add_node(n);
    for (size_t i = 0; i < graph_.edges.size(); ++i) add_wire(graph_.edges[i]);
    for (const Node& n : graph_.nodes) {
      if (is_open_group(n)) add_links(n);
    }
  }
  ~DotGraph() {
    if (laid_out_) gvFreeLayout(graphviz_context(), g_);
    agclose(g_);
  }
  DotGraph(const DotGraph&) = delete;
  DotGraph& operator=(const DotGraph&) = delete;

  Layout run() {
    if (gvLayout(graphviz_context(), g_, "dot") != 0) {
      const char* why = aglasterr();
      throw Error(std::string("graph layout failed: Graphviz's dot engine: ") +
                  (why ? why : "no message (is the graphviz dot plugin installed?)"));
    }
    laid_out_ = true;
    const boxf bb = GD_bb(g_);
    auto at = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };

    Layout out;
    out.direction = direction_;
    out.width = bb.UR.x - bb.LL.x;
    out.height = bb.UR.y - bb.LL.y;
    for (const Node& n : graph_.nodes) {
      if (auto it = boxes_.find(n.id); it != boxes_.end()) {
        const NodeSize size = node_box_size(project_, n);
        const LayoutPoint c = at(ND_coord(it->second));
        // Whole units, so that boxes and their lines fall on pixels at 100%.
        out.boxes[n.id] = {std::round(c.x - size.width / 2), std::round(c.y - size.height / 2),
                           size.width, size.height};
        out.order.push_back(n.id);
      } else if (auto cl = clusters_.find(n.id); cl != clusters_.end()) {
        const boxf b = GD_bb(cl->second);
        const LayoutPoint top_left = at({b.LL.x, b.UR.y});
        const LayoutBox box{top_left.x, top_left.y, b.UR.x - b.LL.x, b.UR.y - b.LL.y};
        out.boxes[n.id] = box;
        out.order.push_back(n.id);
        // The ports sit on the frame's edge where the wires cross it.
        const bool tb = direction_ == "TB";
        if (auto p = inputs_.find(n.id); p != inputs_.end()) {
          const LayoutPoint a = at(ND_coord(p->second));
          out.group_inputs[n.id] = tb ? LayoutPoint{a.x, box.y} : LayoutPoint{box.x, a.y};
        }
        if (auto p = outputs_.find(n.id); p != outputs_.end()) {
          const LayoutPoint a = at(ND_coord(p->second));
          out.group_outputs[n.id] =
              tb ? LayoutPoint{a.x, box.y + box.height} : LayoutPoint{box.x + box.width, a.y};
        }
      }
    }
    for (const auto& [e, route] : routes_) {
      LayoutRoute r = route;
      if (const splines* spl = ED_spl(e); spl && spl->size > 0) {
        const bezier& bz = spl->list[0];
        for (int i = 0; i < bz.size; ++i) r.points.push_back(at(bz.list[i]));
      }
      if (r.points.empty()) continue;
      out.route_index[{r.edge.from.node, r.edge.from.port, r.edge.to.node, r.edge.to.port}] =
          out.routes.size();
      out.routes.push_back(std::move(r));
    }
    return out;
  }

 private:
  static void set(Agraph_t* g, int kind, const char* name, const std::string& value) {
    agattr(g, kind, const_cast<char*>(name), const_cast<char*>(value.c_str()));
  }

  // The cluster holding an open group's members, inside its own group's cluster.
  Agraph_t* cluster_of(const Node& group) {
    if (auto it = clusters_.find(group.id); it != clusters_.end()) return it->second;
    const std::string name = "cluster_" + std::to_string(group.id);
    Agraph_t* c = agsubg(parent_graph(group.id), const_cast<char*>(name.c_str()), 1);
    // A label's room at the top of the frame is where the canvas draws the group's title.
    agsafeset(c, const_cast<char*>("label"), const_cast<char*>(" "), const_cast<char*>(""));
    agsafeset(c, const_cast<char*>("margin"), const_cast<char*>("10"), const_cast<char*>(""));
    // A blank label this size keeps at least kFrameHeader (26) free above the members.
    agsafeset(c, const_cast<char*>("fontsize"), const_cast<char*>("17"), const_cast<char*>(""));
    clusters_[group.id] = c;
    return c;
  }

  Agraph_t* parent_graph(NodeId id) {
    auto it = parents_.find(id);
    return it == parents_.end() ? g_ : cluster_of(graph_.at(it->second));
  }

  Agnode_t* make(Agraph_t* where, const std::string& name, double width, double height) {
    Agnode_t* v = agnode(where, const_cast<char*>(name.c_str()), 1);
    agxset(v, agattr(g_, AGNODE, const_cast<char*>("width"), nullptr),
           const_cast<char*>(inches(width).c_str()));
    agxset(v, agattr(g_, AGNODE, const_cast<char*>("height"), nullptr),
           const_cast<char*>(inches(height).c_str()));
    return v;
  }

  void add_node(const Node& n) {
    if (shown_node(graph_, parents_, n.id) != n.id) return;
    if (is_open_group(n)) {
      Agraph_t* c = cluster_of(n);
      const NodePorts ports = project_node_ports(project_, n);
      const std::string id = std::to_string(n.id);
      // Port anchors: small nodes that dot puts first and last in the cluster, so that wires
      // enter at the frame's top and leave at its bottom.
      if (!ports.inputs.empty()) inputs_[n.id] = make(c, "in" + id, 8, 2);
      if (!ports.outputs.empty()) outputs_[n.id] = make(c, "out" + id, 8, 2);
      return;
    }
    const NodeSize size = node_box_size(project_, n);
    boxes_[n.id] = make(parent_graph(n.id), "n" + std::to_string(n.id), size.width, size.height);
  }

  // The dot node a wire ends at: the node's box, its collapsed group's box, or an open group's
  // port anchor.
  Agnode_t* end_of(NodeId id, bool output) {
    const NodeId shown = shown_node(graph_, parents_, id);
    if (auto it = boxes_.find(shown); it != boxes_.end()) return it->second;
    auto& anchors = output ? outputs_ : inputs_;
    if (auto it = anchors.find(shown); it != anchors.end()) return it->second;
    return nullptr;
  }

  // A node's box (named "n<id>"), not a group's port anchor.
  static bool is_box(Agnode_t* v) { return agnameof(v)[0] == 'n'; }

  void connect(Agnode_t* tail, Agnode_t* head, LayoutRoute route, const char* weight) {
    if (!tail || !head || tail == head) return;
    const std::string name = "e" + std::to_string(routes_.size());
    Agedge_t* e = agedge(g_, tail, head, const_cast<char*>(name.c_str()), 1);
    const bool tb = direction_ == "TB";
    // Wires leave a box from the side its outputs are on and enter where its inputs are.
    if (is_box(tail))
      agxset(e, agattr(g_, AGEDGE, const_cast<char*>("tailport"), nullptr),
             const_cast<char*>(tb ? "s" : "e"));
    if (is_box(head))
      agxset(e, agattr(g_, AGEDGE, const_cast<char*>("headport"), nullptr),
             const_cast<char*>(tb ? "n" : "w"));
    agxset(e, agattr(g_, AGEDGE, const_cast<char*>("weight"), nullptr), const_cast<char*>(weight));
    routes_.emplace_back(e, std::move(route));
  }

  void add_wire(const Edge& edge) {
    connect(end_of(edge.from.node, true), end_of(edge.to.node, false), {edge, false, {}}, "1");
  }

  // A Sequential's chain and a switch ModuleDict's branches, heavy so that a chain stays
  // straight.
  void add_links(const Node& group) {
    const char* weight = group.type == "Sequential" ? "8" : "4";
    for (const Edge& link : implicit_links(project_, group)) {
      Agnode_t* tail =
          link.from.node == group.id ? anchor(inputs_, group.id) : end_of(link.from.node, true);
      Agnode_t* head =
          link.to.node == group.id ? anchor(outputs_, group.id) : end_of(link.to.node, false);
      connect(tail, head, {link, true, {}}, weight);
    }
  }

  static Agnode_t* anchor(const std::map<NodeId, Agnode_t*>& anchors, NodeId group) {
    auto it = anchors.find(group);
    return it == anchors.end() ? nullptr : it->second;
  }

  const Project& project_;
  const Graph& graph_;
  std::unordered_map<NodeId, NodeId> parents_;
  std::string direction_;
  Agraph_t* g_ = nullptr;
  bool laid_out_ = false;
  std::map<NodeId, Agnode_t*> boxes_;
  std::map<NodeId, Agraph_t*> clusters_;
  std::map<NodeId, Agnode_t*> inputs_, outputs_;
  std::vector<std::pair<Agedge_t*, LayoutRoute>> routes_;
};

Json rounded(double v) {
  const double r = std::round(v * 10) / 10;
  if (r == std::floor(r)) return static_cast<int64_t>(r);
  return r;
}

}  // namespace

std::vector<Edge> implicit_links(const Project& project, const Node& group) {
  auto port = [&](NodeId member, bool output) {
    const NodePorts p = project_node_ports(project, project.graph.at(member));
    const auto& names = output ? p.outputs : p.inputs;
    return names.empty() ? std::string(output ? "out" : "in") : names.front();
  };
  std::vector<Edge> links;
  if (group.type == "Sequential" && !group.members.empty()) {
    PortRef from{group.id, "in"};
    for (NodeId m : group.members) {
      links.push_back({from, {m, port(m, false)}});
      from = {m, port(m, true)};
    }
    links.push_back({from, {group.id, "out"}});
  } else if (is_switch_dict(group)) {
    for (NodeId m : group.members) {
      links.push_back({{group.id, "in"}, {m, port(m, false)}});
      links.push_back({{m, port(m, true)}, {group.id, "out"}});
    }
  }
  return links;
}

const LayoutRoute* Layout::route(const Edge& edge) const {
  auto it = route_index.find({edge.from.node, edge.from.port, edge.to.node, edge.to.port});
  return it == route_index.end() ? nullptr : &routes[it->second];
}

NodeSize node_box_size(const Project& project, const Node& node) {
  if (is_container_type(node.type) && node.collapsed) {
    return {kCollapsedGroupWidth, kCollapsedGroupHeight};
  }
  double height = kNodeHeight;
  for (const ProbeSpec& p : project.probes) {
    if (p.node == node.id) height += kHealthStripHeight;
  }
  return {kNodeWidth, height};
}

NodeId shown_node(const Graph& graph, const std::unordered_map<NodeId, NodeId>& parents,
                  NodeId id) {
  NodeId shown = id;
  for (auto it = parents.find(id); it != parents.end(); it = parents.find(it->second)) {
    if (graph.at(it->second).collapsed) shown = it->second;
  }
  return shown;
}

Layout layout_graph(const Project& project, const std::string& direction) {
  const std::string dir = !direction.empty()                 ? direction
                          : project.layout_direction.empty() ? std::string("TB")
                                                             : project.layout_direction;
  if (dir != "TB" && dir != "LR") {
    throw ValueError("layout direction '" + dir +
                     "': expected TB (top to bottom) or LR (left to right)");
  }
  std::lock_guard<std::mutex> lock(graphviz_mutex());
  DotGraph dot(project, dir);
  return dot.run();
}

Json layout_to_json(const Project& project, const Layout& layout) {
  Json nodes = Json::array();
  for (NodeId id : layout.order) {
    const LayoutBox& b = layout.boxes.at(id);
    nodes.push_back(Json{{"id", id},
                         {"name", project.graph.at(id).name},
                         {"x", rounded(b.x)},
                         {"y", rounded(b.y)},
                         {"width", rounded(b.width)},
                         {"height", rounded(b.height)}});
  }
  return Json{{"nodes", std::move(nodes)}};
}

void apply_layout(Project& project, const Layout& layout) {
  for (Node& n : project.graph.nodes) {
    if (auto it = layout.boxes.find(n.id); it != layout.boxes.end()) {
      n.x = it->second.x;
      n.y = it->second.y;
    }
  }
  project.layout_direction = layout.direction;
}

}  // namespace nns::graph
