// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/layout.h"

#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "engine/graph/builder.h"
#include "engine/graph/id_index.h"
#include "engine/tensor/error.h"

namespace nns::graph {
namespace {

// How the layout works. The module tree is laid out a level at a time: the top
// level, and each open Sequential or switch ModuleDict (a group with ports), whose members are
// laid out on their own and then stand in their parent's level as one box of that size. A wire
// that crosses such a frame is cut where it crosses: inside, it runs between the member and the
// frame's port anchor; outside, between the frame's box and the other end; the pieces join at
// the port. A ModuleList or a plain ModuleDict has no ports and its members are wired from
// outside (a transformer's residual Adds interleave with its blocks): its members stand in the
// enclosing level, framed by a cluster. Each level is laid out from a description that names its
// items by index (sizes, clusters, links), and the result is cached under that description, so
// that identical blocks share one layout and an edit lays out again only the levels whose
// content changed: the edited group and the ancestors whose boxes it resized.
// A level of at most kDotItems items goes to Graphviz's dot; a larger one (a model's long
// chain of blocks) is laid out directly, rank by rank, in time linear in its size.
constexpr size_t kDotItems = 400;
// From a level of this many items on, dot's work is bounded (network simplex iterations,
// crossing minimisation passes): a good enough drawing in bounded time.
constexpr size_t kBoundedDotItems = 120;
constexpr double kMargin = 10;         // a frame's margin around its members (the canvas's too)
constexpr double kNodeSep = 0.3 * 72;  // dot's nodesep, ranksep, in points
constexpr double kRankSep = 0.42 * 72;

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
  // Members first: most nodes are layers, and the type is three string compares.
  return !node.members.empty() && !node.collapsed && is_container_type(node.type);
}

// A group laid out as a level of its own and drawn as a box with ports in its parent's.
bool is_boxed_group(const Node& node) {
  return is_open_group(node) && (node.type == "Sequential" || is_switch_dict(node));
}

// What one level holds, items and links named by index: the cache's key is made from it.
struct LevelItem {
  double width = 0, height = 0;
  int cluster = -1;     // the innermost cluster holding it, or -1
  bool anchor = false;  // a port anchor of the level's own group (8 x 2), not a box
};

struct LevelLink {
  int tail = 0, head = 0;
  int weight = 1;
};

struct LevelInput {
  bool tb = true;
  bool framed = false;  // a group's inside: coordinates from its frame's corner
  std::vector<LevelItem> items;
  std::vector<int> cluster_parents;  // each cluster's enclosing cluster, or -1
  std::vector<LevelLink> links;

  std::string key() const {
    std::string k;
    k.reserve(32 + items.size() * 16 + links.size() * 12 + cluster_parents.size() * 4);
    k += tb ? 'T' : 'L';
    k += framed ? 'F' : 'R';
    // The numbers' bytes, not their text: the key of a 3,000-item level is made on every
    // layout, and only compared.
    auto num = [&](double v) {
      const int64_t n = std::lround(v * 100);
      k.append(reinterpret_cast<const char*>(&n), sizeof n);
    };
    k += "|i";
    for (const LevelItem& it : items) {
      num(it.width);
      num(it.height);
      num(it.cluster);
      k += it.anchor ? 'a' : 'b';
    }
    k += "|c";
    for (int p : cluster_parents) num(p);
    k += "|l";
    for (const LevelLink& l : links) {
      num(l.tail);
      num(l.head);
      num(l.weight);
    }
    return k;
  }
};

// A level laid out, in its own coordinates: from its frame's top-left corner for a group's
// inside, from the drawing's corner for the top level.
struct LevelResult {
  std::vector<LayoutPoint> items;  // top-left corners
  std::vector<LayoutBox> clusters;
  std::vector<std::vector<LayoutPoint>> links;  // Bezier points (may be empty: no route)
  double width = 0, height = 0;
};

using LevelCache = std::unordered_map<std::string, std::shared_ptr<const LevelResult>>;

// Graphviz keeps global state (its error buffer, the plugin registry), so the process lays out
// one graph at a time: under this lock, which also guards the levels laid out so far (a level
// laid out again, as the canvas does after each edit, is read back).
struct Layouts {
  std::mutex mutex;
  LevelCache levels;
};

Layouts& layouts() {
  static Layouts one;
  return one;
}

// Bounds the cache: laying out a project again costs at most a cache refill.
constexpr size_t kCacheEntries = 4096;

void set(Agraph_t* g, int kind, const char* name, const std::string& value) {
  agattr(g, kind, const_cast<char*>(name), const_cast<char*>(value.c_str()));
}

// Moves a level's coordinates so that a group's frame (its boxes and clusters with margins on
// each side and the title band on top; the port anchors may sit on its edges) starts at
// (0, 0). Whole units, so that boxes and their lines fall on pixels at 100%.
void frame_level(const LevelInput& in, LevelResult& r) {
  double x0 = std::numeric_limits<double>::max(), y0 = x0;
  double x1 = std::numeric_limits<double>::lowest(), y1 = x1;
  auto grow = [&](double x, double y, double w, double h) {
    x0 = std::min(x0, x);
    y0 = std::min(y0, y);
    x1 = std::max(x1, x + w);
    y1 = std::max(y1, y + h);
  };
  for (size_t i = 0; i < in.items.size(); ++i) {
    if (!in.items[i].anchor)
      grow(r.items[i].x, r.items[i].y, in.items[i].width, in.items[i].height);
  }
  for (const LayoutBox& c : r.clusters) grow(c.x, c.y, c.width, c.height);
  if (x0 > x1) x0 = y0 = x1 = y1 = 0;
  const double ox = std::round(x0 - kMargin), oy = std::round(y0 - kMargin - kFrameHeader);
  for (LayoutPoint& p : r.items) p = {p.x - ox, p.y - oy};
  for (LayoutBox& c : r.clusters) c = {c.x - ox, c.y - oy, c.width, c.height};
  for (auto& pts : r.links) {
    for (LayoutPoint& p : pts) p = {p.x - ox, p.y - oy};
  }
  r.width = std::round(x1 + kMargin - ox);
  r.height = std::round(y1 + kMargin - oy);
}

// A level laid out by Graphviz's dot: one dot node per item, one cluster per ModuleList, one dot
// edge per link; no clusters for the groups with ports (they are boxes here).
LevelResult dot_level(const LevelInput& in) {
  Agraph_t* g = agopen(const_cast<char*>("level"), Agdirected, nullptr);
  struct Closer {
    Agraph_t* g;
    bool laid_out = false;
    ~Closer() {
      if (laid_out) gvFreeLayout(graphviz_context(), g);
      agclose(g);
    }
  } closer{g};
  set(g, AGRAPH, "newrank", "true");  // ranks across clusters: residual Adds beside blocks
  set(g, AGRAPH, "rankdir", in.tb ? "TB" : "LR");
  set(g, AGRAPH, "nodesep", "0.3");
  set(g, AGRAPH, "ranksep", "0.42");
  set(g, AGRAPH, "label", "");
  set(g, AGRAPH, "labeljust", "l");
  if (in.items.size() > kBoundedDotItems) {
    // Bounded work: network simplex stops after this many iterations times the node count,
    // crossing minimisation runs fewer passes and gives up sooner on no improvement.
    set(g, AGRAPH, "nslimit", "2");
    set(g, AGRAPH, "nslimit1", "2");
    set(g, AGRAPH, "mclimit", "0.5");
    set(g, AGRAPH, "searchsize", "20");
  }
  set(g, AGNODE, "shape", "box");
  set(g, AGNODE, "fixedsize", "true");
  set(g, AGNODE, "label", "");
  set(g, AGNODE, "width", "1");
  set(g, AGNODE, "height", "1");
  set(g, AGEDGE, "arrowhead", "none");
  set(g, AGEDGE, "weight", "1");
  set(g, AGEDGE, "tailport", "");
  set(g, AGEDGE, "headport", "");
  Agsym_t* width_attr = agattr(g, AGNODE, const_cast<char*>("width"), nullptr);
  Agsym_t* height_attr = agattr(g, AGNODE, const_cast<char*>("height"), nullptr);
  Agsym_t* tailport = agattr(g, AGEDGE, const_cast<char*>("tailport"), nullptr);
  Agsym_t* headport = agattr(g, AGEDGE, const_cast<char*>("headport"), nullptr);
  Agsym_t* weight = agattr(g, AGEDGE, const_cast<char*>("weight"), nullptr);

  std::vector<Agraph_t*> clusters(in.cluster_parents.size(), nullptr);
  std::function<Agraph_t*(int)> cluster = [&](int c) -> Agraph_t* {
    if (c < 0) return g;
    if (clusters[c]) return clusters[c];
    const std::string name = "cluster_" + std::to_string(c);
    Agraph_t* s = agsubg(cluster(in.cluster_parents[c]), const_cast<char*>(name.c_str()), 1);
    // A label's room at the top of the frame is where the canvas draws the group's title.
    agsafeset(s, const_cast<char*>("label"), const_cast<char*>(" "), const_cast<char*>(""));
    agsafeset(s, const_cast<char*>("margin"), const_cast<char*>("10"), const_cast<char*>(""));
    // A blank label this size keeps at least kFrameHeader (26) free above the members.
    agsafeset(s, const_cast<char*>("fontsize"), const_cast<char*>("17"), const_cast<char*>(""));
    clusters[c] = s;
    return s;
  };
  std::vector<Agnode_t*> nodes;
  nodes.reserve(in.items.size());
  for (size_t i = 0; i < in.items.size(); ++i) {
    const LevelItem& it = in.items[i];
    const std::string name = (it.anchor ? "a" : "v") + std::to_string(i);
    Agnode_t* v = agnode(cluster(it.cluster), const_cast<char*>(name.c_str()), 1);
    agxset(v, width_attr, const_cast<char*>(inches(it.width).c_str()));
    agxset(v, height_attr, const_cast<char*>(inches(it.height).c_str()));
    nodes.push_back(v);
  }
  std::vector<Agedge_t*> edges(in.links.size(), nullptr);
  for (size_t j = 0; j < in.links.size(); ++j) {
    const LevelLink& l = in.links[j];
    if (l.tail == l.head) continue;
    const std::string name = "e" + std::to_string(j);
    Agedge_t* e = agedge(g, nodes[l.tail], nodes[l.head], const_cast<char*>(name.c_str()), 1);
    // Wires leave a box from the side its outputs are on and enter where its inputs are.
    if (!in.items[l.tail].anchor) agxset(e, tailport, const_cast<char*>(in.tb ? "s" : "e"));
    if (!in.items[l.head].anchor) agxset(e, headport, const_cast<char*>(in.tb ? "n" : "w"));
    agxset(e, weight, const_cast<char*>(std::to_string(l.weight).c_str()));
    edges[j] = e;
  }
  if (gvLayout(graphviz_context(), g, "dot") != 0) {
    const char* why = aglasterr();
    throw Error(std::string("graph layout failed: Graphviz's dot engine: ") +
                (why ? why : "no message (is the graphviz dot plugin installed?)"));
  }
  closer.laid_out = true;
  const boxf bb = GD_bb(g);
  auto at = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, bb.UR.y - p.y}; };
  LevelResult r;
  r.width = bb.UR.x - bb.LL.x;
  r.height = bb.UR.y - bb.LL.y;
  for (size_t i = 0; i < in.items.size(); ++i) {
    const LayoutPoint c = at(ND_coord(nodes[i]));
    r.items.push_back(
        {std::round(c.x - in.items[i].width / 2), std::round(c.y - in.items[i].height / 2)});
  }
  for (Agraph_t* c : clusters) {
    if (!c) {
      r.clusters.push_back({});
      continue;
    }
    const boxf b = GD_bb(c);
    const LayoutPoint top_left = at({b.LL.x, b.UR.y});
    r.clusters.push_back({top_left.x, top_left.y, b.UR.x - b.LL.x, b.UR.y - b.LL.y});
  }
  r.links.resize(in.links.size());
  for (size_t j = 0; j < edges.size(); ++j) {
    if (!edges[j]) continue;
    if (const splines* spl = ED_spl(edges[j]); spl && spl->size > 0) {
      const bezier& bz = spl->list[0];
      for (int i = 0; i < bz.size; ++i) r.links[j].push_back(at(bz.list[i]));
    }
  }
  if (in.framed) frame_level(in, r);
  return r;
}

// The ranks of a large level's items: the longest path from the sources, in Kahn's order; in a
// cycle, the earliest item left goes next (its links from the rest of the cycle run backwards).
std::vector<int> longest_path_ranks(const LevelInput& in) {
  const int n = static_cast<int>(in.items.size());
  std::vector<std::vector<int>> outs(n);
  std::vector<int> indegree(n, 0), rank(n, 0);
  for (const LevelLink& l : in.links) {
    if (l.tail == l.head) continue;
    outs[l.tail].push_back(l.head);
    ++indegree[l.head];
  }
  std::vector<char> done(n, 0);
  std::vector<int> queue;
  queue.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (indegree[i] == 0) queue.push_back(i);
  }
  size_t head = 0;
  int next_unseen = 0;
  for (int processed = 0; processed < n; ++processed) {
    if (head == queue.size()) {
      while (done[next_unseen]) ++next_unseen;
      queue.push_back(next_unseen);
    }
    const int v = queue[head++];
    if (done[v]) {
      --processed;
      continue;
    }
    done[v] = 1;
    for (int w : outs[v]) {
      if (done[w]) continue;
      rank[w] = std::max(rank[w], rank[v] + 1);
      if (--indegree[w] == 0) queue.push_back(w);
    }
  }
  return rank;
}

// Where a ranked level's clusters stand: each one's outermost enclosing cluster (the band it is
// drawn in), how deeply it is nested, and the ranks its items span (last_rank -1: no items).
struct ClusterSpans {
  std::vector<int> top, depth, first_rank, last_rank;

  ClusterSpans(const LevelInput& in, const std::vector<int>& rank) {
    const int nc = static_cast<int>(in.cluster_parents.size());
    top.assign(nc, 0);
    depth.assign(nc, 0);
    for (int c = 0; c < nc; ++c) {
      int t = c;
      while (in.cluster_parents[t] >= 0) {
        t = in.cluster_parents[t];
        ++depth[c];
      }
      top[c] = t;
    }
    first_rank.assign(nc, std::numeric_limits<int>::max());
    last_rank.assign(nc, -1);
    for (size_t i = 0; i < in.items.size(); ++i) {
      for (int c = in.items[i].cluster; c >= 0; c = in.cluster_parents[c]) {
        first_rank[c] = std::min(first_rank[c], rank[i]);
        last_rank[c] = std::max(last_rank[c], rank[i]);
      }
    }
  }

  bool covers(int c, int r) const { return first_rank[c] <= r && r <= last_rank[c]; }
};

// The frames of a level's clusters around its items placed at `items`: their items' extent with
// margins, an enclosing cluster's around its inner ones; a cluster with no items has no box.
std::vector<LayoutBox> cluster_frames(const LevelInput& in, const std::vector<int>& depth,
                                      const std::vector<LayoutPoint>& items) {
  const int nc = static_cast<int>(in.cluster_parents.size());
  std::vector<LayoutBox> frames(nc);
  std::vector<double> x0(nc, std::numeric_limits<double>::max()), y0(x0);
  std::vector<double> x1(nc, std::numeric_limits<double>::lowest()), y1(x1);
  auto grow = [&](int c, double ax, double ay, double bx, double by) {
    x0[c] = std::min(x0[c], ax);
    y0[c] = std::min(y0[c], ay);
    x1[c] = std::max(x1[c], bx);
    y1[c] = std::max(y1[c], by);
  };
  for (size_t i = 0; i < in.items.size(); ++i) {
    if (in.items[i].cluster < 0) continue;
    grow(in.items[i].cluster, items[i].x, items[i].y, items[i].x + in.items[i].width,
         items[i].y + in.items[i].height);
  }
  // Innermost first, so that each frame has grown to its final size before its parent grows
  // around it.
  std::vector<int> order(nc);
  for (int c = 0; c < nc; ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
  for (int c : order) {
    if (x0[c] > x1[c]) continue;
    const LayoutBox box{x0[c] - kMargin, y0[c] - kMargin - kFrameHeader,
                        x1[c] - x0[c] + 2 * kMargin, y1[c] - y0[c] + 2 * kMargin + kFrameHeader};
    frames[c] = box;
    if (in.cluster_parents[c] >= 0)
      grow(in.cluster_parents[c], box.x, box.y, box.x + box.width, box.y + box.height);
  }
  return frames;
}

// Moves the top level's drawing (boxes, frames and wires) so that it starts at (0, 0), and sets
// its extent. A group's inside is framed by frame_level instead.
void move_to_origin(const LevelInput& in, LevelResult& out) {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool any = false;
  auto grow = [&](double ax, double ay, double bx, double by) {
    x0 = any ? std::min(x0, ax) : ax;
    y0 = any ? std::min(y0, ay) : ay;
    x1 = any ? std::max(x1, bx) : bx;
    y1 = any ? std::max(y1, by) : by;
    any = true;
  };
  for (size_t i = 0; i < in.items.size(); ++i)
    grow(out.items[i].x, out.items[i].y, out.items[i].x + in.items[i].width,
         out.items[i].y + in.items[i].height);
  for (const LayoutBox& c : out.clusters) {
    if (c.width > 0) grow(c.x, c.y, c.x + c.width, c.y + c.height);
  }
  for (const auto& pts : out.links) {
    for (const LayoutPoint& p : pts) grow(p.x, p.y, p.x, p.y);
  }
  const double ox = std::floor(x0), oy = std::floor(y0);
  for (LayoutPoint& p : out.items) p = {p.x - ox, p.y - oy};
  for (LayoutBox& c : out.clusters) {
    if (c.width > 0) c = {c.x - ox, c.y - oy, c.width, c.height};
  }
  for (auto& pts : out.links) {
    for (LayoutPoint& p : pts) p = {p.x - ox, p.y - oy};
  }
  out.width = x1 - ox;
  out.height = y1 - oy;
}

// A large level's items placed by ranks, along the flow (r) and across it (c), and its wires
// routed between them. The constructor runs the placement phases in order, each filling the
// members listed under it for the phases after it.
class DirectPlacement {
 public:
  explicit DirectPlacement(const LevelInput& in)
      : in_(in),
        n_(static_cast<int>(in.items.size())),
        nc_(static_cast<int>(in.cluster_parents.size())),
        r_pad0_(in.tb ? kFrameHeader + kMargin : kMargin),
        c_pad0_(in.tb ? kMargin : kFrameHeader + kMargin),
        rank_(longest_path_ranks(in)),
        ranks_(n_ == 0 ? 0 : *std::max_element(rank_.begin(), rank_.end()) + 1),
        clusters_(in, rank_) {
    place_ranks();
    size_bands();
    place_across();
    centre_in_ranks();
    measure_rank_extents();
  }

  const ClusterSpans& clusters() const { return clusters_; }

  // Each item's top-left corner.
  std::vector<LayoutPoint> item_corners() const {
    std::vector<LayoutPoint> corners;
    for (int i = 0; i < n_; ++i) corners.push_back(point(c_pos_[i], r_top_[i]));
    return corners;
  }

  // Each link's Bezier points (none for a link from an item to itself). A wire down the flow
  // runs straight through the ranks it passes where they are free and beside their boxes where
  // not, with an S-curve between ranks; one against the flow (a cycle's link) is one curve.
  std::vector<std::vector<LayoutPoint>> wire_routes() const {
    std::vector<std::vector<LayoutPoint>> routes(in_.links.size());
    for (size_t j = 0; j < in_.links.size(); ++j) {
      if (in_.links[j].tail != in_.links[j].head) routes[j] = route_wire(in_.links[j]);
    }
    return routes;
  }

 private:
  using Station = std::pair<double, double>;  // a point on a wire's way, (c, r)

  double rsize(int i) const { return in_.tb ? in_.items[i].height : in_.items[i].width; }
  double csize(int i) const { return in_.tb ? in_.items[i].width : in_.items[i].height; }
  LayoutPoint point(double c, double r) const {
    return in_.tb ? LayoutPoint{c, r} : LayoutPoint{r, c};
  }
  // The band an item is drawn in (its outermost cluster), or -1.
  int band_of(int i) const {
    return in_.items[i].cluster < 0 ? -1 : clusters_.top[in_.items[i].cluster];
  }
  // How wide a row of items side by side is across the flow.
  double row_width(const std::vector<int>& items) const {
    double w = 0;
    for (int i : items) w += csize(i);
    return w + kNodeSep * std::max<double>(0, static_cast<double>(items.size()) - 1);
  }
  // The far edge across the flow of the bands that rank r passes through, or lowest() if none.
  double bands_right(int r) const {
    double right = std::numeric_limits<double>::lowest();
    for (int c : bands_) {
      if (clusters_.covers(c, r)) right = std::max(right, band_left_[c] + band_width_[c]);
    }
    return right;
  }

  // Along the flow: each rank as thick as its thickest item, room for frames' paddings where
  // clusters start and end (a frame's title band is on its top).
  void place_ranks() {
    by_rank_.resize(ranks_);
    for (int i = 0; i < n_; ++i) by_rank_[rank_[i]].push_back(i);
    r_pos_.assign(ranks_, 0);
    thick_.assign(ranks_, 0);
    std::vector<double> pad_before(ranks_, 0), pad_after(ranks_, 0);
    for (int c = 0; c < nc_; ++c) {
      const int first = clusters_.first_rank[c], last = clusters_.last_rank[c];
      if (last < 0) continue;
      pad_before[first] = std::max(pad_before[first], r_pad0_ + clusters_.depth[c] * r_pad0_);
      pad_after[last] = std::max(pad_after[last], kMargin * (clusters_.depth[c] + 1));
    }
    for (int r = 0; r < ranks_; ++r) {
      for (int i : by_rank_[r]) thick_[r] = std::max(thick_[r], rsize(i));
      r_pos_[r] = r == 0 ? pad_before[0]
                         : std::round(r_pos_[r - 1] + thick_[r - 1] + kRankSep + pad_after[r - 1] +
                                      pad_before[r]);
    }
  }

  // Across the flow: the bands of the top clusters side by side, each as wide as its widest
  // rank of members and its frame's sides.
  void size_bands() {
    band_left_.assign(nc_, 0);
    band_width_.assign(nc_, 0);
    std::vector<std::vector<int>> band_row(nc_);
    for (int r = 0; r < ranks_; ++r) {
      for (int i : by_rank_[r]) {
        if (band_of(i) >= 0) band_row[band_of(i)].push_back(i);
      }
      for (int c = 0; c < nc_; ++c) {
        if (band_row[c].empty()) continue;
        band_width_[c] = std::max(band_width_[c], row_width(band_row[c]));
        band_row[c].clear();
      }
    }
    double left = 0;
    for (int c = 0; c < nc_; ++c) {
      if (clusters_.top[c] != c || clusters_.last_rank[c] < 0) continue;
      band_width_[c] += c_pad0_ + kMargin;  // the frame's sides
      band_left_[c] = left;
      left += band_width_[c] + 2 * kNodeSep;
      bands_.push_back(c);
    }
  }

  // Across the flow, rank by rank: each band's members centred in it, then the other items.
  void place_across() {
    c_pos_.assign(n_, 0);
    std::vector<std::vector<int>> band_row(nc_);
    for (int r = 0; r < ranks_; ++r) {
      std::vector<int> free;
      for (int i : by_rank_[r]) {
        if (band_of(i) >= 0) {
          band_row[band_of(i)].push_back(i);
        } else {
          free.push_back(i);
        }
      }
      for (int c : bands_) {
        if (band_row[c].empty()) continue;
        const double inner = band_width_[c] - c_pad0_ - kMargin;
        place_row(band_row[c],
                  std::round(band_left_[c] + c_pad0_ + (inner - row_width(band_row[c])) / 2));
        band_row[c].clear();
      }
      place_row(free, free_row_left(r, free));
    }
  }

  // Where rank r's items outside the bands start across the flow: beside the bands the rank
  // passes through, else in line with the first band's column, else centred on 0.
  double free_row_left(int r, const std::vector<int>& free) const {
    const double covered_right = bands_right(r);
    double x;
    if (covered_right > std::numeric_limits<double>::lowest()) {
      x = covered_right + kNodeSep;
    } else if (!bands_.empty()) {
      const int first = bands_[0];
      x = band_left_[first] + c_pad0_ +
          (band_width_[first] - c_pad0_ - kMargin - row_width(free)) / 2;
    } else {
      x = -row_width(free) / 2;
    }
    return std::round(x);
  }

  // Items side by side across the flow, the first at x.
  void place_row(const std::vector<int>& items, double x) {
    for (int i : items) {
      c_pos_[i] = x;
      x += csize(i) + kNodeSep;
    }
  }

  // Along the flow: each item centred in its rank.
  void centre_in_ranks() {
    r_top_.resize(n_);
    for (int i = 0; i < n_; ++i)
      r_top_[i] = std::round(r_pos_[rank_[i]] + (thick_[rank_[i]] - rsize(i)) / 2);
  }

  // Each rank's items across the flow and its far edge, bands included: what a wire that
  // passes the rank must go around.
  void measure_rank_extents() {
    spans_.resize(ranks_);
    for (int i = 0; i < n_; ++i) spans_[rank_[i]].emplace_back(c_pos_[i], c_pos_[i] + csize(i));
    rank_right_.assign(ranks_, std::numeric_limits<double>::lowest());
    for (int r = 0; r < ranks_; ++r) {
      for (const auto& s : spans_[r]) rank_right_[r] = std::max(rank_right_[r], s.second);
      rank_right_[r] = std::max(rank_right_[r], bands_right(r));
    }
  }

  std::vector<LayoutPoint> route_wire(const LevelLink& l) const {
    const Station from{c_pos_[l.tail] + csize(l.tail) / 2, r_top_[l.tail] + rsize(l.tail)};
    const Station to{c_pos_[l.head] + csize(l.head) / 2, r_top_[l.head]};
    if (rank_[l.tail] >= rank_[l.head]) {
      return {point(from.first, from.second), point(from.first, from.second + 40),
              point(to.first, to.second - 40), point(to.first, to.second)};
    }
    return curve_through(stations(l, from, to));
  }

  // Where a wire down the flow enters and leaves each rank it passes: on in its lane while the
  // rank is free there, else beside the rank's far edge.
  std::vector<Station> stations(const LevelLink& l, Station from, Station to) const {
    std::vector<Station> way{from};
    double lane = from.first;
    for (int r = rank_[l.tail] + 1; r < rank_[l.head]; ++r) {
      if (blocked(r, lane)) lane = rank_right_[r] + kNodeSep / 2;
      way.emplace_back(lane, r_pos_[r]);
      way.emplace_back(lane, r_pos_[r] + thick_[r]);
    }
    way.push_back(to);
    return way;
  }

  // Whether a wire in `lane` would cross rank r's boxes, or a ModuleList's frame that it only
  // passes (it goes through one only to reach its members).
  bool blocked(int r, double lane) const {
    for (const auto& s : spans_[r]) {
      if (lane > s.first - 6 && lane < s.second + 6) return true;
    }
    for (int c : bands_) {
      if (clusters_.covers(c, r) && lane > band_left_[c] - 6 &&
          lane < band_left_[c] + band_width_[c] + 6)
        return true;
    }
    return false;
  }

  // The Bezier points through a wire's stations: a straight piece between two in one lane, an
  // S-curve between lanes.
  std::vector<LayoutPoint> curve_through(const std::vector<Station>& way) const {
    std::vector<LayoutPoint> pts{point(way[0].first, way[0].second)};
    for (size_t s = 1; s < way.size(); ++s) {
      const auto [ac, ar] = way[s - 1];
      const auto [bc, br] = way[s];
      const double mid = (ar + br) / 2;
      if (ac == bc) {
        pts.push_back(point(ac, ar + (br - ar) / 3));
        pts.push_back(point(bc, ar + 2 * (br - ar) / 3));
      } else {
        pts.push_back(point(ac, mid));
        pts.push_back(point(bc, mid));
      }
      pts.push_back(point(bc, br));
    }
    return pts;
  }

  const LevelInput& in_;
  const int n_, nc_;              // items, clusters
  const double r_pad0_, c_pad0_;  // a cluster frame's padding before its members, along/across
  const std::vector<int> rank_;   // each item's
  const int ranks_;
  const ClusterSpans clusters_;
  // place_ranks(): each rank's items, where it starts along the flow and how thick it is.
  std::vector<std::vector<int>> by_rank_;
  std::vector<double> r_pos_, thick_;
  // size_bands(): the bands (top clusters with items) in order, each one's left edge and width.
  std::vector<int> bands_;
  std::vector<double> band_left_, band_width_;
  // place_across(): each item's left edge across the flow.
  std::vector<double> c_pos_;
  // centre_in_ranks(): each item's top edge along the flow.
  std::vector<double> r_top_;
  // measure_rank_extents(): each rank's items' (from, to) across the flow, and its far edge.
  std::vector<std::vector<std::pair<double, double>>> spans_;
  std::vector<double> rank_right_;
};

// A large level laid out directly: ranks by the longest path from the sources (a chain of
// blocks is one item per rank), each rank's items side by side, a ModuleList's members in a
// band of their own with the nodes that interleave with them (residual Adds) beside the band,
// and wires as S-curves between ranks that pass a rank beside its boxes. Linear in the level's
// size but for the few items a rank holds.
LevelResult direct_level(const LevelInput& in) {
  const DirectPlacement placed(in);
  LevelResult out;
  out.items = placed.item_corners();
  out.clusters = cluster_frames(in, placed.clusters().depth, out.items);
  out.links = placed.wire_routes();
  // The drawing from (0, 0): a group's frame, or the top level's extent.
  if (in.framed) {
    frame_level(in, out);
  } else {
    move_to_origin(in, out);
  }
  return out;
}

std::shared_ptr<const LevelResult> layout_level(const LevelInput& in, LevelCache& cache) {
  std::string key = in.key();
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  auto result = std::make_shared<const LevelResult>(
      in.items.size() <= kDotItems ? dot_level(in) : direct_level(in));
  if (cache.size() >= kCacheEntries) cache.clear();
  cache.emplace(std::move(key), result);
  return result;
}

constexpr NodeId kTop = std::numeric_limits<NodeId>::min();  // the top level's owner

// The project cut into levels, each laid out (or found in the cache), then put together.
class Builder {
 public:
  // `laid_out`: the levels laid out so far (see Layouts), held for the builder's life.
  Builder(const Project& project, const std::string& direction, LevelCache& laid_out)
      : project_(project),
        laid_out_(laid_out),
        folds_(folded_repeats(project)),
        tb_(direction == "TB") {
    direction_ = direction;
    const Graph& g = project.graph;
    places_.build(g.nodes);
    info_.reserve(g.nodes.size());
    for (const Node& n : g.nodes) info_.push_back({&n, kTop, n.id, is_open_group(n), false});
    for (const Node& n : g.nodes) {
      Info& i = info(n.id);
      i.boxed = i.open && is_boxed_group(n);
      for (NodeId m : n.members) info(m).parent = n.id;
    }
    for (Info& i : info_) i.shown = find_shown(i.node->id);
    wires_.reserve(g.edges.size() + g.nodes.size());
    pieces_.reserve(g.edges.size() + g.nodes.size());
    level(kTop);
    for (const Node& n : g.nodes) add_node(n);
    for (const Edge& e : g.edges) add_wire(e, false, 1);
    for (const Node& n : g.nodes) {
      if (!info(n.id).open) continue;
      const int weight = n.type == "Sequential" ? 8 : 4;  // heavy: a chain stays straight
      for (const Edge& link : links_of(n)) add_wire(link, true, weight);
    }
  }

  Layout run() {
    // Inner levels first: a group's laid-out size is its box in its parent's level.
    std::vector<Level*> order;
    for (auto& [owner, l] : levels_) order.push_back(&l);
    std::sort(order.begin(), order.end(), [](const Level* a, const Level* b) {
      return a->depth != b->depth ? a->depth > b->depth : a->owner < b->owner;
    });
    for (Level* l : order) {
      for (size_t i = 0; i < l->items.size(); ++i) {
        if (l->input.items[i].anchor) continue;
        if (auto it = levels_.find(l->items[i]); it != levels_.end()) {
          l->input.items[i].width = it->second.result->width;
          l->input.items[i].height = it->second.result->height;
        }
      }
      l->result = layout_level(l->input, laid_out_);
    }

    Layout out;
    out.direction = direction_;
    const Level& top = levels_.at(kTop);
    out.width = top.result->width;
    out.height = top.result->height;
    // Outer levels first: each places its groups' insides.
    std::reverse(order.begin(), order.end());
    for (Level* l : order) {
      const LevelResult& r = *l->result;
      for (size_t i = 0; i < l->items.size(); ++i) {
        if (l->input.items[i].anchor) continue;
        const LayoutPoint at{l->origin.x + r.items[i].x, l->origin.y + r.items[i].y};
        out.boxes[l->items[i]] = {at.x, at.y, l->input.items[i].width, l->input.items[i].height};
        if (auto it = levels_.find(l->items[i]); it != levels_.end()) it->second.origin = at;
      }
      for (size_t c = 0; c < l->clusters.size(); ++c) {
        const LayoutBox& b = r.clusters[c];
        out.boxes[l->clusters[c]] = {l->origin.x + b.x, l->origin.y + b.y, b.width, b.height};
      }
      if (l->owner != kTop) {
        // The ports sit on the frame's edge where the wires cross it.
        const LayoutPoint a = anchor_centre(*l, l->in_anchor);
        const LayoutPoint b = anchor_centre(*l, l->out_anchor);
        out.group_inputs[l->owner] =
            tb_ ? LayoutPoint{a.x, l->origin.y} : LayoutPoint{l->origin.x, a.y};
        out.group_outputs[l->owner] = tb_ ? LayoutPoint{b.x, l->origin.y + r.height}
                                          : LayoutPoint{l->origin.x + r.width, b.y};
      }
    }
    // In graph order: marked by place as the boxes were made, not looked up for every node.
    std::vector<bool> boxed(project_.graph.nodes.size(), false);
    for (const auto& [id, box] : out.boxes) boxed[places_.at(id)] = true;
    for (size_t i = 0; i < boxed.size(); ++i) {
      if (boxed[i]) out.order.push_back(project_.graph.nodes[i].id);
    }
    for (const auto& [first, count] : folds_.count) {
      if (out.boxes.count(first)) out.repeats[first] = count;
    }
    out.routes.reserve(wires_.size());
    for (const Wire& w : wires_) {
      LayoutRoute route = w.route;
      bool whole = true;
      for (size_t k = 0; k < w.pieces && whole; ++k) {
        const Piece& at_k = pieces_[w.first + k];
        const Level& l = levels_.at(at_k.level);
        const std::vector<LayoutPoint>& pts = l.result->links[at_k.link];
        if (pts.size() < 4) {
          whole = false;
          break;
        }
        std::vector<LayoutPoint> piece;
        piece.reserve(pts.size());
        for (const LayoutPoint& p : pts) piece.push_back({l.origin.x + p.x, l.origin.y + p.y});
        if (route.points.empty()) {
          route.points = std::move(piece);
          continue;
        }
        // The pieces meet at the frame's port, each bent onto it at its end.
        const Join& j = at_k.after;
        const LayoutPoint at =
            j.output ? out.group_outputs.at(j.group) : out.group_inputs.at(j.group);
        std::vector<LayoutPoint>& p = route.points;
        const LayoutPoint d{at.x - p.back().x, at.y - p.back().y};
        p[p.size() - 2] = {p[p.size() - 2].x + d.x, p[p.size() - 2].y + d.y};
        p.back() = at;
        const LayoutPoint e{at.x - piece[0].x, at.y - piece[0].y};
        piece[1] = {piece[1].x + e.x, piece[1].y + e.y};
        p.insert(p.end(), piece.begin() + 1, piece.end());
      }
      if (!whole || route.points.empty()) continue;
      out.route_index[{route.edge.from.node, route.edge.from.port, route.edge.to.node,
                       route.edge.to.port}] = out.routes.size();
      out.routes.push_back(std::move(route));
    }
    return out;
  }

 private:
  struct Level {
    NodeId owner = kTop;  // the group whose inside this is, or kTop
    int depth = 0;
    LevelInput input;
    std::vector<NodeId> items;     // the node each item draws (a port anchor: the owner)
    std::vector<NodeId> clusters;  // the ModuleList each cluster frames
    std::unordered_map<NodeId, int> cluster_index;
    int in_anchor = -1, out_anchor = -1;
    std::shared_ptr<const LevelResult> result;
    LayoutPoint origin;  // where its coordinates start in the drawing
  };
  struct End {
    NodeId level;
    int item;
  };
  struct Join {
    NodeId group = kTop;
    bool output = false;
  };
  struct Piece {
    NodeId level;
    int link;
    Join after;  // the port it starts at, where the piece before it ends (none for the first)
  };
  struct Wire {
    LayoutRoute route;
    size_t first = 0, pieces = 0;  // its pieces in pieces_, from its tail to its head
  };
  // What the builder asks of each node, found once.
  struct Info {
    const Node* node = nullptr;
    NodeId parent = kTop;
    NodeId shown = 0;  // the node that draws it (layout.h's shown_node)
    bool open = false, boxed = false;
    std::pair<NodeId, int> item{kTop, -1};  // a shown node's level and item there
  };

  Info& info(NodeId id) { return info_[places_.at(id)]; }
  const Info& info(NodeId id) const { return info_[places_.at(id)]; }
  const Node& node(NodeId id) const { return *info(id).node; }
  NodeId parent(NodeId id) const { return info(id).parent; }
  NodeId shown(NodeId id) const { return info(id).shown; }

  NodeId find_shown(NodeId id) const {
    return shown_node(
        folds_, id,
        [this](NodeId at) -> std::optional<NodeId> {
          const NodeId p = parent(at);
          return p == kTop ? std::nullopt : std::optional<NodeId>(p);
        },
        [this](NodeId group) { return node(group).collapsed; });
  }

  Level& level(NodeId owner) {
    if (auto it = levels_.find(owner); it != levels_.end()) return it->second;
    Level l;
    l.owner = owner;
    l.input.tb = tb_;
    l.input.framed = owner != kTop;
    if (owner != kTop) {
      l.depth = level(level_of(owner)).depth + 1;
      l.in_anchor = 0;
      l.out_anchor = 1;
      for (int a = 0; a < 2; ++a) {
        l.input.items.push_back({8, 2, -1, true});
        l.items.push_back(owner);
      }
    }
    return levels_.emplace(owner, std::move(l)).first->second;
  }

  // The level a shown node stands in: its nearest enclosing group with ports, or the top.
  NodeId level_of(NodeId id) const {
    for (NodeId p = parent(id); p != kTop; p = parent(p)) {
      if (info(p).boxed) return p;
    }
    return kTop;
  }

  // The cluster of a ModuleList in its level (made with those around it), or -1.
  int cluster_of(Level& l, NodeId id) {
    const NodeId p = parent(id);
    if (p == kTop || p == l.owner || info(p).boxed) return -1;
    if (auto it = l.cluster_index.find(p); it != l.cluster_index.end()) return it->second;
    const int outer = cluster_of(l, p);
    const int c = static_cast<int>(l.clusters.size());
    l.clusters.push_back(p);
    l.input.cluster_parents.push_back(outer);
    l.cluster_index[p] = c;
    return c;
  }

  void add_node(const Node& n) {
    Info& self = info(n.id);
    if (self.shown != n.id) return;
    if (self.open && !self.boxed) return;  // a cluster, made by its members
    Level& l = level(level_of(n.id));
    NodeSize size = node_box_size(project_, n);
    if (folds_.count.contains(n.id)) {  // room for the repeats stacked behind its box
      size.width += kRepeatStack;
      size.height += kRepeatStack;
    }
    const int c = cluster_of(l, n.id);
    self.item = {l.owner, static_cast<int>(l.items.size())};
    l.input.items.push_back({size.width, size.height, c, false});
    l.items.push_back(n.id);
    if (self.boxed) level(n.id);
  }

  bool inside(NodeId id, NodeId group) const {
    for (NodeId p = parent(id); p != kTop; p = parent(p)) {
      if (p == group) return true;
    }
    return false;
  }

  // Where a link's end is drawn: a box, or an open group's port anchor when the other end is
  // inside the group (its chain), else the group's box.
  std::optional<End> end_of(NodeId id, bool tail, NodeId other) const {
    const NodeId s = shown(id);
    const Info& n = info(s);
    if (n.open) {
      if (!n.boxed) return std::nullopt;  // a ModuleList has no ports
      if (inside(other, s)) {
        const Level& l = levels_.at(s);
        return End{s, tail ? l.in_anchor : l.out_anchor};
      }
    }
    if (n.item.second < 0) return std::nullopt;
    return End{n.item.first, n.item.second};
  }

  int add_link(NodeId owner, int tail, int head, int weight) {
    Level& l = levels_.at(owner);
    l.input.links.push_back({tail, head, weight});
    return static_cast<int>(l.input.links.size()) - 1;
  }

  // A wire cut at the frames it crosses: up from its tail to the level both ends share,
  // across it, down to its head.
  void add_wire(const Edge& edge, bool chain, int weight) {
    const std::optional<End> tail = end_of(edge.from.node, true, edge.to.node);
    const std::optional<End> head = end_of(edge.to.node, false, edge.from.node);
    if (!tail || !head) return;
    End t = *tail, h = *head;
    const size_t first = pieces_.size();
    Join at;                  // where the next piece up starts: the port the last one ends at
    std::vector<Piece> down;  // from the head's level outwards
    auto depth = [&](NodeId owner) { return levels_.at(owner).depth; };
    while (t.level != h.level) {
      if (depth(t.level) >= depth(h.level)) {
        const Level& l = levels_.at(t.level);
        pieces_.push_back({t.level, add_link(t.level, t.item, l.out_anchor, weight), at});
        at = {t.level, true};
        const auto& [owner, item] = info(t.level).item;
        t = {owner, item};
      } else {
        const Level& l = levels_.at(h.level);
        down.push_back({h.level, add_link(h.level, l.in_anchor, h.item, weight), {h.level, false}});
        const auto& [owner, item] = info(h.level).item;
        h = {owner, item};
      }
    }
    if (t.item == h.item) {  // a wire from a group's inside to its own box: not drawn
      pieces_.resize(first);
      return;
    }
    pieces_.push_back({t.level, add_link(t.level, t.item, h.item, weight), at});
    pieces_.insert(pieces_.end(), down.rbegin(), down.rend());
    wires_.push_back({{edge, chain, {}}, first, pieces_.size() - first});
  }

  std::vector<Edge> links_of(const Node& group) const {
    return implicit_links(project_, group, [this](NodeId id) -> const Node& { return node(id); });
  }

  LayoutPoint anchor_centre(const Level& l, int anchor) const {
    const LayoutPoint p = l.result->items[anchor];
    return {l.origin.x + p.x + l.input.items[anchor].width / 2,
            l.origin.y + p.y + l.input.items[anchor].height / 2};
  }

  const Project& project_;
  LevelCache& laid_out_;
  FoldedRepeats folds_;
  bool tb_;
  std::string direction_;
  IdIndex places_;
  std::vector<Info> info_;  // by place in the graph's nodes
  std::unordered_map<NodeId, Level> levels_;
  std::vector<Wire> wires_;
  std::vector<Piece> pieces_;
};

Json rounded(double v) {
  const double r = std::round(v * 10) / 10;
  if (r == std::floor(r)) return static_cast<int64_t>(r);
  return r;
}

}  // namespace

std::vector<Edge> implicit_links(const Project& project, const Node& group) {
  return implicit_links(project, group,
                        [&](NodeId id) -> const Node& { return project.graph.at(id); });
}

std::vector<Edge> implicit_links(const Project& project, const Node& group,
                                 const std::function<const Node&(NodeId)>& node) {
  auto port = [&](NodeId member, bool output) {
    const NodePorts p = project_node_ports(project, node(member));
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
  if (node.collapsed && is_container_type(node.type)) {
    return {kCollapsedGroupWidth, kCollapsedGroupHeight};
  }
  double height = kNodeHeight;
  for (const ProbeSpec& p : project.probes) {
    if (p.node == node.id) height += kHealthStripHeight;
  }
  return {kNodeWidth, height};
}

NodeId shown_node(const Graph& graph, const std::unordered_map<NodeId, NodeId>& parents,
                  const FoldedRepeats& folds, NodeId id) {
  return shown_node(
      folds, id,
      [&](NodeId at) -> std::optional<NodeId> {
        auto p = parents.find(at);
        return p == parents.end() ? std::nullopt : std::optional<NodeId>(p->second);
      },
      [&](NodeId group) { return graph.at(group).collapsed; });
}

Layout layout_graph(const Project& project, const std::string& direction) {
  const std::string dir = !direction.empty()                 ? direction
                          : project.layout_direction.empty() ? std::string("TB")
                                                             : project.layout_direction;
  if (dir != "TB" && dir != "LR") {
    throw ValueError("layout direction '" + dir +
                     "': expected TB (top to bottom) or LR (left to right)");
  }
  Layouts& all = layouts();
  std::lock_guard<std::mutex> lock(all.mutex);
  return Builder(project, dir, all.levels).run();
}

Json layout_to_json(const Project& project, const Layout& layout) {
  Json nodes = Json::array();
  for (NodeId id : layout.order) {
    const LayoutBox& b = layout.boxes.at(id);
    Json node{
        {"id", id},          {"name", project.graph.at(id).name}, {"x", rounded(b.x)},
        {"y", rounded(b.y)}, {"width", rounded(b.width)},         {"height", rounded(b.height)}};
    if (auto r = layout.repeats.find(id); r != layout.repeats.end()) node["repeat"] = r->second;
    nodes.push_back(std::move(node));
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
