// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/graph_scene.h"

#include <QGraphicsPathItem>
#include <QGraphicsSceneMouseEvent>
#include <QGraphicsView>
#include <QPainter>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <unordered_set>

#include "engine/graph/layout.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/probe_item.h"
#include "ui/document/qt_strings.h"
#include "ui/probes/node_health.h"

namespace nns::ui {

GraphScene::GraphScene(ProjectDocument* document, QObject* parent)
    : QGraphicsScene(parent), document_(document), theme_(CanvasTheme::fromPalette(QPalette())) {
  // The BSP index (Qt's default): a paint, a hover or a click looks only at the items where it
  // is; with no index each walked and sorted all of them (at 10,000 nodes, most of a paint).
  setItemIndexMethod(QGraphicsScene::BspTreeIndex);
  connect(document_, &ProjectDocument::graphEdited, this, &GraphScene::applyChange);
  connect(document_, &ProjectDocument::loadMarksChanged, this, &GraphScene::syncLoadMarks);
  connect(document_, &ProjectDocument::nodesMoved, this, &GraphScene::onNodesMoved);
  connect(document_, &ProjectDocument::selectionChanged, this, &GraphScene::selectionFromDocument);
  connect(this, &QGraphicsScene::selectionChanged, this, &GraphScene::selectionToDocument);
  connect(document_, &ProjectDocument::probesChanged, this, &GraphScene::syncProbes);
  staleTimer_ = new QTimer(this);
  staleTimer_->setInterval(0);
  connect(staleTimer_, &QTimer::timeout, this, [this] { refreshStale(kItemsAtOnce); });
  // 12 frames a second is smooth enough for a slow pulse and costs nothing.
  pulse_ = new QTimer(this);
  pulse_->setInterval(80);
  connect(pulse_, &QTimer::timeout, this, [this] {
    if (!health_) return;
    if (NodeItem* item = shownItem(health_->failedNode())) item->update();
  });
  sync();
}

GraphScene::~GraphScene() {
  // The items go before the scene's own teardown, which would otherwise delete them again.
  syncing_ = true;
  dragWire_.reset();
  probes_.clear();
  edges_.clear();
  nodes_.clear();
  retired_.clear();
}

void GraphScene::setTheme(const CanvasTheme& theme) {
  theme_ = theme;
  update();
}

NodeItem* GraphScene::nodeItem(graph::NodeId id) const {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : it->second.get();
}

const graph::Node* GraphScene::findNode(graph::NodeId id) const {
  const std::vector<graph::Node>& nodes = document_->project().graph.nodes;
  auto it = index_.find(id);
  if (it != index_.end() && it->second < nodes.size() && nodes[it->second].id == id) {
    return &nodes[it->second];
  }
  // Stale or missing: the graph changed since the index was made.
  index_.clear();
  index_.reserve(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) index_[nodes[i].id] = i;
  it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes[it->second];
}

const graph::Node& GraphScene::node(graph::NodeId id) const {
  if (const graph::Node* n = findNode(id)) return *n;
  return document_->project().graph.at(id);  // throws the graph's KeyError
}

NodeItem* GraphScene::shownItem(graph::NodeId id) const {
  return nodeItem(shownNode(id));
}

graph::NodeId GraphScene::shownNode(graph::NodeId id) const {
  // The outermost collapsed group holding the node, or the first of a folded run it is a hidden
  // repeat in, through the scene's index.
  return graph::shown_node(
      folds_, id,
      [this](graph::NodeId at) -> std::optional<graph::NodeId> {
        auto p = parents_.find(at);
        return p == parents_.end() ? std::nullopt : std::optional<graph::NodeId>(p->second);
      },
      [this](graph::NodeId group) {
        const graph::Node* n = findNode(group);
        return n && n->collapsed;
      });
}

int GraphScene::repeatCount(graph::NodeId id) const {
  auto it = folds_.count.find(id);
  return it == folds_.count.end() ? 0 : it->second;
}

void GraphScene::refreshStale(size_t most) {
  if (!staleBoxes_.empty()) {
    // Boxes first: their wires wait in staleWires_ until both ends stand where they go.
    const bool wasSyncing = syncing_;
    syncing_ = true;  // the frames and wires follow once, below, not for each box
    std::set<graph::NodeId> moved;
    while (moved.size() < most && !staleBoxes_.empty()) {
      const graph::NodeId id = staleBoxes_.extract(staleBoxes_.begin()).value();
      NodeItem* item = nodeItem(id);  // none: removed since
      const graph::Node* n = findNode(id);
      if (!item || !n || item->isFrame()) continue;
      item->setPosQuietly(QPointF(n->x, n->y));
      moved.insert(id);
    }
    followTouched(moved);
    syncing_ = wasSyncing;
    for (graph::NodeId id : moved) placeProbe(id);
    if (staleBoxes_.empty()) growSceneRect();
  } else {
    for (size_t done = 0; done < most && !staleWires_.empty(); ++done) {
      const auto key = staleWires_.extract(staleWires_.begin());
      // A wire removed since has no item left to draw.
      if (auto it = edges_.find(key.value()); it != edges_.end()) it->second->refresh();
    }
  }
  if (!hasStale()) staleTimer_->stop();
}

void GraphScene::finishStale() {
  while (hasStale()) refreshStale(staleBoxes_.size() + staleWires_.size());
}

QRectF GraphScene::sight() const {
  QRectF seen;
  for (QGraphicsView* view : views()) {
    const QRectF r = view->mapToScene(view->viewport()->rect()).boundingRect();
    seen |= r.adjusted(-r.width() / 2, -r.height() / 2, r.width() / 2, r.height() / 2);
  }
  return seen;
}

std::vector<EdgeItem*> GraphScene::edgeItems() {
  finishStale();
  std::vector<EdgeItem*> out;
  for (const auto& [port, e] : edges_) out.push_back(e.get());
  return out;
}

int GraphScene::groupDepth(graph::NodeId id) const {
  int depth = 0;
  for (auto it = parents_.find(id); it != parents_.end(); it = parents_.find(it->second)) ++depth;
  return depth;
}

QString GraphScene::moduleRepr(graph::NodeId id) const {
  auto model = document_->model();
  if (!model) return {};
  nn::ModulePtr m = model->node_module(id);
  return m ? qs(m->repr()) : QString();
}

std::vector<graph::NodeId> GraphScene::selectedNodes() const {
  std::vector<graph::NodeId> out;
  for (const auto& [id, item] : nodes_) {
    if (item->isSelected() && item->isVisible()) out.push_back(id);
  }
  return out;
}

std::vector<graph::PortRef> GraphScene::selectedWires() const {
  std::vector<graph::PortRef> out;
  for (const auto& [port, e] : edges_) {
    if (e->isSelected()) out.push_back(e->edge().to);
  }
  return out;
}

QRectF GraphScene::nodesRect() const {
  QRectF box;
  for (const auto& [id, item] : nodes_) {
    if (item->isVisible()) box |= item->sceneBoundingRect();
  }
  return box;
}

bool GraphScene::hasOverlaps() const {
  std::vector<QRectF> boxes;
  for (const auto& [id, item] : nodes_) {
    if (item->isVisible() && !item->isFrame()) boxes.emplace_back(item->pos(), item->boxSize());
  }
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      if (boxes[i].intersects(boxes[j])) return true;
    }
  }
  return false;
}

void GraphScene::retire(std::unique_ptr<QGraphicsItem> item) {
  // Taken out of its map first: removing it may emit selectionChanged, whose slots walk the
  // maps. It may still be handling the event that removed it: deleted on the next pass.
  removeItem(item.get());
  retired_.push_back(std::move(item));
}

void GraphScene::addNodeItem(graph::NodeId id) {
  auto item = std::make_unique<NodeItem>(*this, id);
  addItem(item.get());
  nodes_[id] = std::move(item);
  ++itemsMade_;
}

void GraphScene::addEdgeItem(const graph::Edge& edge) {
  auto item = std::make_unique<EdgeItem>(*this, edge);
  addItem(item.get());
  edges_[{edge.to.node, edge.to.port}] = std::move(item);
  ++itemsMade_;
}

void GraphScene::sync() {
  syncing_ = true;
  const graph::Graph& g = document_->project().graph;
  parents_ = graph::parent_index(g);
  folds_ = graph::folded_repeats(document_->project());
  index_.clear();
  for (auto it = nodes_.begin(); it != nodes_.end();) {
    if (findNode(it->first)) {
      ++it;
      continue;
    }
    std::unique_ptr<QGraphicsItem> item = std::move(it->second);
    it = nodes_.erase(it);
    retire(std::move(item));
  }
  // Only what is drawn has an item, brought up to date: the members of collapsed groups and
  // folded runs (most of a 10,000-node model) get theirs when a sync shows them.
  // (Items whose node is gone were retired above: every item left has its node here.)
  std::vector<NodeItem*> shown;
  for (const graph::Node& n : g.nodes) {
    const bool show = shownNode(n.id) == n.id;
    NodeItem* item = nodeItem(n.id);
    if (show && !item) {
      addNodeItem(n.id);
      item = nodeItem(n.id);
    }
    if (!item) continue;
    item->setVisible(show);
    if (show) shown.push_back(item);
  }
  refreshShown(shown);

  // Wires the graph still has keep their items (drawn again); the others go.
  staleBoxes_.clear();
  staleWires_.clear();
  auto oldEdges = std::move(edges_);
  edges_.clear();
  for (const graph::Edge& e : g.edges) {
    if (!findNode(e.from.node) || !findNode(e.to.node)) continue;
    auto old = oldEdges.find({e.to.node, e.to.port});
    if (old != oldEdges.end() && old->second->edge() == e) {
      old->second->refresh();
      edges_.insert(oldEdges.extract(old));
    } else if (shownNode(e.from.node) != shownNode(e.to.node)) {
      addEdgeItem(e);  // a wire inside a collapsed group or a folded run gets none until shown
    }
  }
  for (auto& [port, e] : oldEdges) retire(std::move(e));
  syncing_ = false;
  growSceneRect();
  syncProbes();
  selectionFromDocument();
  update();
}

void GraphScene::refreshShown(const std::vector<NodeItem*>& items) {
  std::vector<NodeItem*> frames;
  for (NodeItem* item : items) {
    const graph::Node& n = node(item->id());
    if (isGroup(n) && !n.collapsed) {
      frames.push_back(item);
    } else {
      item->refresh();
    }
  }
  std::sort(frames.begin(), frames.end(), [&](const NodeItem* a, const NodeItem* b) {
    return groupDepth(a->id()) > groupDepth(b->id());
  });
  for (NodeItem* frame : frames) frame->refresh();
}

void GraphScene::showRegrouped(const std::set<graph::NodeId>& groups,
                               std::set<graph::NodeId>& touched) {
  // The groups and everything inside them: only their items change.
  std::set<graph::NodeId> inside;
  std::vector<graph::NodeId> toVisit(groups.begin(), groups.end());
  while (!toVisit.empty()) {
    const graph::NodeId id = toVisit.back();
    toVisit.pop_back();
    const graph::Node* n = findNode(id);
    if (!n || !inside.insert(id).second) continue;
    toVisit.insert(toVisit.end(), n->members.begin(), n->members.end());
  }
  std::vector<NodeItem*> shown;
  for (graph::NodeId id : inside) {
    const bool show = shownNode(id) == id;
    NodeItem* item = nodeItem(id);
    if (show && !item) {
      addNodeItem(id);
      item = nodeItem(id);
    }
    if (!item) continue;
    item->setVisible(show);
    if (show) {
      shown.push_back(item);
      touched.insert(id);
    }
  }
  refreshShown(shown);
  for (const graph::Edge& e : document_->project().graph.edges) {
    if (!inside.count(e.from.node) && !inside.count(e.to.node)) continue;
    auto it = edges_.find({e.to.node, e.to.port});
    if (it != edges_.end()) {
      it->second->refresh();  // shown, or hidden when both ends are in one box
    } else if (shownNode(e.from.node) != shownNode(e.to.node)) {
      addEdgeItem(e);
    }
  }
}

void GraphScene::applyChange(const GraphChange& change) {
  if (change.everything) {
    sync();
    return;
  }
  // An edit in a folded group may end or start a run, and expanding a group shows the runs in
  // it: the members hidden or shown anew, and the runs' first members (their xN), are shown
  // again as a regrouped group's members are.
  std::set<graph::NodeId> regrouped = change.regrouped;
  graph::FoldedRepeats folds = graph::folded_repeats(document_->project());
  if (folds != folds_) {
    auto refolded = [&](const auto& from, const auto& to) {
      for (const auto& [id, value] : from) {
        const auto it = to.find(id);
        if (it == to.end() || it->second != value) regrouped.insert(id);
      }
    };
    refolded(folds_.hidden, folds.hidden);
    refolded(folds.hidden, folds_.hidden);
    refolded(folds_.count, folds.count);
    refolded(folds.count, folds_.count);
    folds_ = std::move(folds);
  }
  syncing_ = true;
  for (const graph::Edge& e : change.edgesRemoved) {
    auto it = edges_.find({e.to.node, e.to.port});
    if (it == edges_.end() || !(it->second->edge() == e)) continue;
    std::unique_ptr<QGraphicsItem> item = std::move(it->second);
    edges_.erase(it);
    retire(std::move(item));
  }
  for (graph::NodeId id : change.removed) {
    auto it = nodes_.find(id);
    if (it == nodes_.end()) continue;
    std::unique_ptr<QGraphicsItem> item = std::move(it->second);
    nodes_.erase(it);
    retire(std::move(item));
  }
  for (graph::NodeId id : change.added) {
    if (shownNode(id) != id) continue;  // made when a sync shows it
    addNodeItem(id);
    nodes_.at(id)->refresh();
  }
  for (graph::NodeId id : change.changed) {
    if (NodeItem* item = nodeItem(id)) item->refresh();
  }
  // Expanding a block of a 10,000-node tower moves every box below it: past kItemsAtOnce, the
  // boxes out of every view's sight, where they were and where they go, move in the events after
  // the edit (refreshStale), and their wires after them.
  const QRectF seen = change.moved.size() > kItemsAtOnce ? sight() : QRectF();
  for (graph::NodeId id : change.moved) {
    const graph::Node& n = node(id);
    NodeItem* item = nodeItem(id);
    if (!item || item->isFrame()) continue;
    const QPointF to(n.x, n.y);
    if (!seen.isEmpty() && !item->sceneBoundingRect().intersects(seen) &&
        !item->boundingRect().translated(to).intersects(seen)) {
      staleBoxes_.insert(id);
      continue;
    }
    staleBoxes_.erase(id);
    item->setPosQuietly(to);
  }
  for (const graph::Edge& e : change.edgesAdded) addEdgeItem(e);
  std::set<graph::NodeId> touched = change.changed;
  touched.insert(change.added.begin(), change.added.end());
  touched.insert(change.moved.begin(), change.moved.end());
  if (!regrouped.empty()) showRegrouped(regrouped, touched);
  followTouched(touched);
  syncing_ = false;
  if (!regrouped.empty()) growSceneRect();
  syncProbes();
  selectionFromDocument();
}

QPainterPath GraphScene::wirePath(const graph::Edge& edge, bool chain) const {
  NodeItem* from = shownItem(edge.from.node);
  NodeItem* to = shownItem(edge.to.node);
  if (!from || !to || from == to) return {};  // inside a collapsed group or a folded run
  // A chain link starts at its group's input port and ends at its group's output port, which
  // are the frame's ports on the side the data enters and leaves by (graph::implicit_links).
  const bool fromGroupInput = chain && edge.from.port == "in";
  const bool toGroupOutput = chain && edge.to.port == "out";
  const QPointF start = from->portScenePos(edge.from.port, !fromGroupInput);
  const QPointF end = to->portScenePos(edge.to.port, toGroupOutput);

  const graph::Layout& layout = document_->layout();
  auto inPlace = [&](const NodeItem* item) {
    auto it = layout.boxes.find(item->id());
    return it != layout.boxes.end() && std::abs(item->pos().x() - it->second.x) < 0.5 &&
           std::abs(item->pos().y() - it->second.y) < 0.5;
  };
  const graph::LayoutRoute* route = layout.route(edge);
  if (!route || route->points.size() < 4 || !inPlace(from) || !inPlace(to)) {
    return EdgeItem::curve(start, end, leftToRight());
  }
  // The route ends at the boxes' middles; its ends and their neighbouring control points move
  // onto the ports, which keeps the curve smooth. (Read in place: an open draws thousands.)
  const std::vector<graph::LayoutPoint>& q = route->points;
  const QPointF headShift = start - QPointF(q.front().x, q.front().y);
  const QPointF tailShift = end - QPointF(q.back().x, q.back().y);
  auto point = [&](size_t i) {
    QPointF p(q[i].x, q[i].y);
    if (i <= 1) p += headShift;
    if (i + 2 >= q.size()) p += tailShift;
    return p;
  };
  QPainterPath path(point(0));
  path.reserve(static_cast<int>(q.size()));
  for (size_t i = 1; i + 2 < q.size(); i += 3) path.cubicTo(point(i), point(i + 1), point(i + 2));
  return path;
}

std::vector<std::pair<graph::Edge, QPainterPath>> GraphScene::chainPaths(
    graph::NodeId group) const {
  std::vector<std::pair<graph::Edge, QPainterPath>> out;
  const graph::Project& p = document_->project();
  for (const graph::Edge& link : graph::implicit_links(
           p, node(group), [this](graph::NodeId id) -> const graph::Node& { return node(id); })) {
    out.emplace_back(link, wirePath(link, true));
  }
  return out;
}

void GraphScene::setNodeBadges(std::map<graph::NodeId, NodeBadge> badges) {
  badges_ = std::move(badges);
  for (auto& [id, item] : nodes_) item->update();
}

const GraphScene::NodeBadge* GraphScene::nodeBadge(graph::NodeId node) const {
  const auto it = badges_.find(node);
  return it == badges_.end() ? nullptr : &it->second;
}

ProbeItem* GraphScene::probeItem(graph::NodeId node) const {
  auto it = probes_.find(node);
  return it == probes_.end() ? nullptr : it->second.get();
}

std::vector<graph::NodeId> GraphScene::selectedProbes() const {
  std::vector<graph::NodeId> out;
  for (const auto& [id, item] : probes_) {
    if (item->isSelected()) out.push_back(id);
  }
  return out;
}

void GraphScene::syncProbes() {
  const graph::Project& p = document_->project();
  // A probed node is taller by its health strip (graph::node_box_size): the boxes whose probe
  // came or went take their new size (a look at every box made each edit of a 10,000-node
  // graph pay for it).
  std::set<graph::NodeId> probed;
  for (const graph::ProbeSpec& spec : p.probes) probed.insert(spec.node);
  if (!syncing_ && probed != probedBoxes_) {
    std::vector<graph::NodeId> flipped;
    std::set_symmetric_difference(probed.begin(), probed.end(), probedBoxes_.begin(),
                                  probedBoxes_.end(), std::back_inserter(flipped));
    for (graph::NodeId id : flipped) {
      NodeItem* item = nodeItem(id);
      if (!item || item->isFrame()) continue;
      const graph::NodeSize size = graph::node_box_size(p, node(id));
      if (item->boxSize() != QSizeF(size.width, size.height)) item->refresh();
    }
  }
  probedBoxes_ = std::move(probed);
  for (auto it = probes_.begin(); it != probes_.end();) {
    if (document_->probeOf(it->first) && nodeItem(it->first)) {
      ++it;
      continue;
    }
    std::unique_ptr<QGraphicsItem> item = std::move(it->second);
    it = probes_.erase(it);
    retire(std::move(item));
  }
  for (const graph::ProbeSpec& spec : p.probes) {
    if (!nodeItem(spec.node)) continue;
    if (!probes_.count(spec.node)) {
      auto item = std::make_unique<ProbeItem>(*this, spec.node);
      addItem(item.get());
      probes_.emplace(spec.node, std::move(item));
    }
    placeProbe(spec.node);
  }
  if (!retired_.empty()) {
    QTimer::singleShot(0, this, [this] { retired_.clear(); });
  }
}

void GraphScene::syncLoadMarks() {
  std::set<graph::NodeId> marked;
  for (const auto& [id, mark] : document_->loadMarks()) marked.insert(id);
  std::set<graph::NodeId> redraw = markedBoxes_;
  redraw.insert(marked.begin(), marked.end());
  for (graph::NodeId id : redraw) {
    if (NodeItem* item = nodeItem(id); item && item->isVisible()) item->refresh();
  }
  markedBoxes_ = std::move(marked);
}

void GraphScene::placeProbe(graph::NodeId node) {
  ProbeItem* probe = probeItem(node);
  if (!probe) return;
  NodeItem* item = nodeItem(node);
  // A probe on a member of a collapsed group hides with it (the group's own tag shows).
  probe->setVisible(item->isVisible());
  probe->attach(item->pos(), item->boxSize().width());
}

void GraphScene::setHealthModel(NodeHealthModel* model) {
  if (health_) disconnect(health_, nullptr, this, nullptr);
  health_ = model;
  if (health_) {
    connect(health_, &NodeHealthModel::updated, this, &GraphScene::healthUpdated);
    connect(health_, &NodeHealthModel::failureChanged, this, [this] {
      if (health_->failed() && health_->failedNode() != 0) {
        pulse_->start();
      } else {
        pulse_->stop();
      }
    });
  }
  std::vector<graph::NodeId> all;
  for (const auto& [id, item] : nodes_) all.push_back(id);
  healthUpdated(all);
}

void GraphScene::healthUpdated(const std::vector<graph::NodeId>& nodes) {
  for (graph::NodeId id : nodes) {
    if (NodeItem* item = nodeItem(id)) item->refreshHealth();
    if (NodeItem* shown = shownItem(id)) shown->update();
    if (ProbeItem* probe = probeItem(id)) probe->update();
  }
}

void GraphScene::growSceneRect() {
  // The view pans 20,000 units past the nodes every way: a model of thousands of blocks is
  // far longer than the rect the view starts with.
  const QRectF nodes = nodesRect();
  if (nodes.isNull()) return;
  const QRectF wanted = nodes.adjusted(-20000, -20000, 20000, 20000);
  if (!sceneRect().contains(wanted)) setSceneRect(sceneRect() | wanted);
}

void GraphScene::followTouched(const std::set<graph::NodeId>& touched) {
  // What holds or meets the touched nodes follows them: the frames around them, innermost
  // first, and their wires.
  std::set<graph::NodeId> framesToFit;
  for (graph::NodeId id : touched) {
    for (auto it = parents_.find(id); it != parents_.end(); it = parents_.find(it->second)) {
      framesToFit.insert(it->second);
    }
  }
  std::vector<graph::NodeId> frames(framesToFit.begin(), framesToFit.end());
  std::sort(frames.begin(), frames.end(),
            [&](graph::NodeId a, graph::NodeId b) { return groupDepth(a) > groupDepth(b); });
  for (graph::NodeId id : frames) {
    if (NodeItem* frame = nodeItem(id)) frame->fitMembers();
  }
  // Looked up twice for each of the scene's wires (thousands, after an expand): hashed.
  std::unordered_set<graph::NodeId> reached(touched.begin(), touched.end());
  reached.insert(framesToFit.begin(), framesToFit.end());
  std::vector<EdgeItem*> due;
  for (const auto& [port, e] : edges_) {
    const graph::Edge& edge = e->edge();
    if (reached.count(edge.from.node) || reached.count(edge.to.node)) due.push_back(e.get());
  }
  // Expanding a block of a 10,000-node tower moves thousands of boxes and their wires: drawing
  // every wire again at once would take the edit past a frame. Those in sight (where they were
  // or where their ends are now) are drawn now, the rest in the events after it; a wire with an
  // end whose box has not moved yet waits for it.
  const QRectF seen = due.size() > kItemsAtOnce ? sight() : QRectF();
  for (EdgeItem* e : due) {
    const graph::Edge& edge = e->edge();
    const bool endWaits = !staleBoxes_.empty() && (staleBoxes_.count(shownNode(edge.from.node)) ||
                                                   staleBoxes_.count(shownNode(edge.to.node)));
    if (endWaits || (!seen.isEmpty() && !e->sceneBoundingRect().intersects(seen) &&
                     !wireEndsRect(edge).intersects(seen))) {
      staleWires_.insert({edge.to.node, edge.to.port});
    } else {
      e->refresh();
      if (!staleWires_.empty()) staleWires_.erase({edge.to.node, edge.to.port});
    }
  }
  if (hasStale() && !staleTimer_->isActive()) staleTimer_->start();
}

QRectF GraphScene::wireEndsRect(const graph::Edge& edge) const {
  QRectF out;
  for (graph::NodeId end : {edge.from.node, edge.to.node}) {
    if (const NodeItem* item = shownItem(end)) out |= item->sceneBoundingRect();
  }
  return out;
}

void GraphScene::onNodesMoved(const std::vector<graph::NodeId>& ids) {
  // The items move first, then their frames and wires follow once: a layout applied to
  // 10,000 nodes would otherwise go over every wire for each node.
  const bool wasSyncing = syncing_;
  syncing_ = true;
  for (graph::NodeId id : ids) {
    NodeItem* item = nodeItem(id);
    const graph::Node* n = findNode(id);
    if (item && n && !item->isFrame()) {
      item->setPosQuietly(QPointF(n->x, n->y));
      staleBoxes_.erase(id);
    }
  }
  followTouched(std::set<graph::NodeId>(ids.begin(), ids.end()));
  syncing_ = wasSyncing;
  if (ids.size() > 1) growSceneRect();
  for (graph::NodeId id : ids) placeProbe(id);
}

void GraphScene::nodeGeometryChanged(graph::NodeId id) {
  if (syncing_) return;
  placeProbe(id);
  // The frame around it refits (and, moving, tells its own frame in turn); its wires follow.
  if (auto it = parents_.find(id); it != parents_.end()) {
    if (NodeItem* frame = nodeItem(it->second)) frame->fitMembers();
  }
  // Its wires, and those of the frames around it, whose ports follow their size.
  std::set<const NodeItem*> moved{nodeItem(id)};
  for (auto it = parents_.find(id); it != parents_.end(); it = parents_.find(it->second)) {
    moved.insert(nodeItem(it->second));
  }
  for (const auto& [port, e] : edges_) {
    if (moved.count(shownItem(e->edge().from.node)) || moved.count(shownItem(e->edge().to.node))) {
      e->refresh();
    }
  }
}

void GraphScene::selectionToDocument() {
  if (syncingSelection_ || syncing_) return;
  syncingSelection_ = true;
  document_->setSelection(selectedNodes());
  syncingSelection_ = false;
}

void GraphScene::selectionFromDocument() {
  if (syncingSelection_) return;
  syncingSelection_ = true;
  const auto& sel = document_->selection();
  for (const auto& [id, item] : nodes_) {
    item->setSelected(std::find(sel.begin(), sel.end(), id) != sel.end());
  }
  syncingSelection_ = false;
}

std::optional<std::pair<graph::PortRef, bool>> GraphScene::portUnder(QPointF scenePos) const {
  for (QGraphicsItem* item : items(scenePos)) {
    if (item->type() != NodeItem::Type || !item->isVisible()) continue;
    auto* node = static_cast<NodeItem*>(item);
    if (auto hit = node->portAt(scenePos)) {
      return std::make_pair(graph::PortRef{node->id(), hit->name}, hit->output);
    }
  }
  return std::nullopt;
}

void GraphScene::mousePressEvent(QGraphicsSceneMouseEvent* event) {
  if (event->button() == Qt::LeftButton) {
    if (auto port = portUnder(event->scenePos())) {
      WireDrag drag;
      drag.fixed = port->first;
      drag.fixedIsOutput = port->second;
      if (!port->second) {
        // Pulling on a connected input lifts its wire off, to move it or drop it.
        if (const graph::Edge* e = document_->project().graph.edge_into(port->first)) {
          drag.detached = e->to;
          drag.fixed = e->from;
          drag.fixedIsOutput = true;
        }
      }
      drag_ = drag;
      dragWire_ = std::make_unique<QGraphicsPathItem>();
      dragWire_->setZValue(5);
      addItem(dragWire_.get());
      updateWireDrag(event->scenePos());
      event->accept();
      return;
    }
  }
  QGraphicsScene::mousePressEvent(event);
}

void GraphScene::mouseMoveEvent(QGraphicsSceneMouseEvent* event) {
  if (drag_) {
    updateWireDrag(event->scenePos());
    event->accept();
    return;
  }
  QGraphicsScene::mouseMoveEvent(event);
}

void GraphScene::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
  if (drag_) {
    updateWireDrag(event->scenePos());
    finishWireDrag();
    event->accept();
    return;
  }
  QGraphicsScene::mouseReleaseEvent(event);
  if (event->button() == Qt::LeftButton) commitMoves();
}

void GraphScene::updateWireDrag(QPointF scenePos) {
  std::optional<graph::PortRef> target;
  if (auto port = portUnder(scenePos); port && port->second != drag_->fixedIsOutput) {
    target = port->first;
  }
  if (target != drag_->target) {
    drag_->target = target;
    drag_->check = {};
    if (target) {
      const graph::PortRef from = drag_->fixedIsOutput ? drag_->fixed : *target;
      const graph::PortRef to = drag_->fixedIsOutput ? *target : drag_->fixed;
      drag_->check = document_->checkConnection(from, to);
    }
    const auto& check = drag_->check;
    emit hint(!target                    ? tr("Drop on a port to connect")
              : !check.refusal.isEmpty() ? tr("Cannot connect: %1").arg(check.refusal)
              : !check.warning.isEmpty() ? tr("Connects, but: %1").arg(check.warning)
                                         : tr("Release to connect"));
  }
  NodeItem* fixedItem = shownItem(drag_->fixed.node);
  const QPointF anchor = fixedItem->portScenePos(drag_->fixed.port, drag_->fixedIsOutput);
  QPointF end = scenePos;
  if (target) end = shownItem(target->node)->portScenePos(target->port, !drag_->fixedIsOutput);
  dragWire_->setPath(drag_->fixedIsOutput ? EdgeItem::curve(anchor, end, leftToRight())
                                          : EdgeItem::curve(end, anchor, leftToRight()));
  const bool refused = target && !drag_->check.refusal.isEmpty();
  const QColor colour = !target                           ? theme_.wire
                        : refused                         ? theme_.error
                        : !drag_->check.warning.isEmpty() ? theme_.warning
                                                          : theme_.matched;
  dragWire_->setPen(QPen(colour, 2, refused ? Qt::DashLine : Qt::SolidLine));
}

void GraphScene::finishWireDrag() {
  const WireDrag drag = *drag_;
  drag_.reset();
  removeItem(dragWire_.get());
  dragWire_.reset();
  emit hint(QString());
  if (!drag.target) {
    if (drag.detached) document_->disconnectPort(*drag.detached);
    return;
  }
  const graph::PortRef from = drag.fixedIsOutput ? drag.fixed : *drag.target;
  const graph::PortRef to = drag.fixedIsOutput ? *drag.target : drag.fixed;
  if (!drag.check.refusal.isEmpty()) {
    emit document_->logMessage(
        tr("Cannot connect %1.%2 to %3.%4: %5")
            .arg(qs(document_->project().graph.at(from.node).name), qs(from.port),
                 qs(document_->project().graph.at(to.node).name), qs(to.port), drag.check.refusal));
    return;
  }
  if (drag.detached && *drag.detached == to) return;
  if (drag.detached) {
    document_->undoStack()->beginMacro(tr("Move wire"));
    document_->disconnectPort(*drag.detached);
    document_->connectPorts(from, to);
    document_->undoStack()->endMacro();
  } else {
    document_->connectPorts(from, to);
  }
}

void GraphScene::commitMoves() {
  std::map<graph::NodeId, QPointF> moved;
  for (const auto& [id, item] : nodes_) {
    if (item->isFrame() || !item->isVisible()) continue;
    const graph::Node& n = node(id);
    if (item->pos() != QPointF(n.x, n.y)) moved[id] = item->pos();
  }
  if (!moved.empty()) document_->moveNodes(moved);
}

void GraphScene::drawBackground(QPainter* painter, const QRectF& rect) {
  painter->fillRect(rect, theme_.background);
  const double scale = painter->worldTransform().m11();
  const double step = scale < 0.5 ? 100 : 20;
  // Zoomed out over a whole large model the lines would be closer than a few pixels: a grey
  // wash, and thousands of lines a frame.
  if (step * scale < 6) return;
  // Hairlines on pixels need no antialiasing, which was a third of painting the view; two
  // batches (minor and major lines) rather than a pen change per line.
  std::vector<QLineF> minor, major;
  const double left = std::floor(rect.left() / step) * step;
  const double top = std::floor(rect.top() / step) * step;
  for (double x = left; x < rect.right(); x += step) {
    (std::fmod(std::abs(x), 100) < 1e-6 ? major : minor)
        .emplace_back(x, rect.top(), x, rect.bottom());
  }
  for (double y = top; y < rect.bottom(); y += step) {
    (std::fmod(std::abs(y), 100) < 1e-6 ? major : minor)
        .emplace_back(rect.left(), y, rect.right(), y);
  }
  painter->save();
  painter->setRenderHint(QPainter::Antialiasing, false);
  painter->setPen(QPen(theme_.grid, 0));
  painter->drawLines(minor.data(), static_cast<int>(minor.size()));
  painter->setPen(QPen(theme_.grid.darker(theme_.dark() ? 80 : 110), 0));
  painter->drawLines(major.data(), static_cast<int>(major.size()));
  painter->restore();
}

}  // namespace nns::ui
