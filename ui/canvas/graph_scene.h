// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's scene over a ProjectDocument (QtNodes' arrangement): it owns one NodeItem per
// node and one EdgeItem per edge in unique_ptr maps keyed by id, rebuilds them from the
// document's signals, and turns mouse gestures into document edits: drags into move
// commands, a drag from port to port into a connection (checked while dragging).
#include <QGraphicsScene>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/graph/repeats.h"
#include "ui/document/project_document.h"
#include "ui/widgets/canvas_theme.h"

class QGraphicsPathItem;
class QGraphicsSimpleTextItem;
class QTimer;

namespace nns::ui {

class NodeItem;
class EdgeItem;
class NodeHealthModel;
class ProbeItem;

class GraphScene : public QGraphicsScene {
  Q_OBJECT

 public:
  explicit GraphScene(ProjectDocument* document, QObject* parent = nullptr);
  ~GraphScene() override;

  ProjectDocument* document() const { return document_; }
  const CanvasTheme& theme() const { return theme_; }
  void setTheme(const CanvasTheme& theme);

  // The node's item, or nullptr: items are made for the nodes the canvas shows, when it first
  // shows them (the members of collapsed groups, most of a large model, have none until then).
  NodeItem* nodeItem(graph::NodeId id) const;
  // The document's node by id, or nullptr: through an index (the graph's own lookup scans
  // every node, which at 10,000 nodes is the most of an edit's time).
  const graph::Node* findNode(graph::NodeId id) const;
  const graph::Node& node(graph::NodeId id) const;
  // The item that shows the node: itself, or the outermost collapsed group holding it.
  NodeItem* shownItem(graph::NodeId id) const;
  // The id of the node that shows it (as shownItem, without the item).
  graph::NodeId shownNode(graph::NodeId id) const;
  // N for the first member of a folded run of N repeats (drawn for all of them), else 0.
  int repeatCount(graph::NodeId id) const;
  // Every wire item, each drawn for the graph as it is (finishStale first).
  std::vector<EdgeItem*> edgeItems();
  // Moves and draws again now the boxes and wires out of sight that an edit moved (see
  // applyChange and followTouched): before the whole scene is rendered at once (an image export).
  void finishStale();
  bool hasStale() const { return !staleBoxes_.empty() || !staleWires_.empty(); }
  // A box an edit moved out of sight and that stands where it was until the events after it.
  bool isStale(graph::NodeId id) const { return staleBoxes_.count(id) > 0; }
  // The most boxes an edit moves, or wires it draws again, at once: past it, those out of every
  // view's sight wait for the events after it, this many per event (about 3 ms).
  static constexpr size_t kItemsAtOnce = 1000;
  // How many groups the node is nested in.
  int groupDepth(graph::NodeId id) const;
  // The node's module repr from the document's model, or empty.
  QString moduleRepr(graph::NodeId id) const;

  // How many node and wire items this scene has made: an edit makes only its own.
  int itemsMade() const { return itemsMade_; }

  std::vector<graph::NodeId> selectedNodes() const;
  std::vector<graph::PortRef> selectedWires() const;
  // True when two node boxes overlap (a file laid out for smaller boxes).
  bool hasOverlaps() const;
  // The bounding box of every visible node.
  QRectF nodesRect() const;

  // The path a wire (or, with chain, a Sequential's or switch's implicit link, whose ends may
  // be the group's own ports) is drawn along: the layout's route, its ends moved onto the
  // ports, while both ends are where the layout put them; else a plain curve.
  QPainterPath wirePath(const graph::Edge& edge, bool chain) const;
  // An open group's implicit links with their paths.
  std::vector<std::pair<graph::Edge, QPainterPath>> chainPaths(graph::NodeId group) const;
  bool leftToRight() const { return document_->project().layout_direction == "LR"; }

  // Called by a NodeItem whose position changed: its wires, enclosing frames and probe follow.
  void nodeGeometryChanged(graph::NodeId id);

  // Probes: one ProbeItem per ProbeSpec of the document whose node is shown.
  ProbeItem* probeItem(graph::NodeId node) const;
  // The nodes whose probe tags are selected.
  std::vector<graph::NodeId> selectedProbes() const;
  // What the node items draw as health (colour, sparkline) and NaN failure; nullptr: none.
  void setHealthModel(NodeHealthModel* model);
  NodeHealthModel* healthModel() const { return health_; }

  // A figure shown on a node's body, tinted in its colour, with lines for its tooltip (the
  // Runs panel's change of weights between two snapshots). Replaces the ones before; an
  // empty map clears them.
  struct NodeBadge {
    QColor colour;
    QString text;
    QString tooltip;          // HTML
    std::vector<float> bars;  // a strip of values in [-1, 1] along the body (none: empty)
  };
  void setNodeBadges(std::map<graph::NodeId, NodeBadge> badges);
  const NodeBadge* nodeBadge(graph::NodeId node) const;
  bool hasNodeBadges() const { return !badges_.empty(); }

 signals:
  void contextMenuRequested(QPoint screenPos);
  // A probe tag was double-clicked: show the node's probe.
  void probeActivated(graph::NodeId node);
  // A short text for the status bar while a wire is dragged.
  void hint(const QString& text);

 public slots:
  // Rebuilds every item from the document.
  void sync();
  // Updates only the items a change touched (all of them when it says everything).
  void applyChange(const nns::ui::GraphChange& change);

 protected:
  void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseMoveEvent(QGraphicsSceneMouseEvent* event) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;
  void drawBackground(QPainter* painter, const QRectF& rect) override;

 private:
  // A wire being dragged out of a port.
  struct WireDrag {
    graph::PortRef fixed;  // the end that stays
    bool fixedIsOutput = true;
    std::optional<graph::PortRef> detached;  // the input it was pulled off, if any
    std::optional<graph::PortRef> target;    // the port under the cursor
    ProjectDocument::ConnectionCheck check;  // of connecting to target
  };

  std::optional<std::pair<graph::PortRef, bool>> portUnder(QPointF scenePos) const;
  void updateWireDrag(QPointF scenePos);
  void finishWireDrag();
  void commitMoves();
  void onNodesMoved(const std::vector<graph::NodeId>& ids);
  // The frames around the nodes refit (innermost first) and the wires that meet them or their
  // frames follow; called with syncing_ set, so that items moved here do not start it again.
  // Past kItemsAtOnce wires, those out of sight are left to staleWires_, and so are those with
  // an end in staleBoxes_.
  void followTouched(const std::set<graph::NodeId>& touched);
  // Where a wire's ends are drawn now.
  QRectF wireEndsRect(const graph::Edge& edge) const;
  // What the views show, and half as much again each way: what an edit keeps up to date at once.
  QRectF sight() const;
  // Widens the scene's rect to take every node with room around it.
  void growSceneRect();
  // Groups collapsed or expanded, or members a fold hides or shows anew: they and what they
  // hold shown (items made as needed) or hidden, their wires redrawn; adds what moved with them
  // to `touched`.
  void showRegrouped(const std::set<graph::NodeId>& groups, std::set<graph::NodeId>& touched);
  // Refreshes shown items: boxes first, then frames from the innermost out (a frame wraps
  // what it holds).
  void refreshShown(const std::vector<NodeItem*>& items);
  void addNodeItem(graph::NodeId id);
  void addEdgeItem(const graph::Edge& edge);
  void retire(std::unique_ptr<QGraphicsItem> item);
  void selectionFromDocument();
  void selectionToDocument();
  void syncProbes();
  // The boxes whose state-dict mark came, went or changed are drawn again.
  void syncLoadMarks();
  void placeProbe(graph::NodeId node);
  void healthUpdated(const std::vector<graph::NodeId>& nodes);

  ProjectDocument* document_;
  CanvasTheme theme_;
  std::map<graph::NodeId, std::unique_ptr<NodeItem>> nodes_;
  // Wires by the input port they feed (an input takes one wire).
  std::map<std::pair<graph::NodeId, std::string>, std::unique_ptr<EdgeItem>> edges_;
  std::set<graph::NodeId> probedBoxes_;  // the nodes with a probe at the last syncProbes()
  std::set<graph::NodeId> markedBoxes_;  // the nodes with a load mark at the last syncLoadMarks()
  // Each member's group, as of the last sync (membership changes always sync).
  std::unordered_map<graph::NodeId, graph::NodeId> parents_;
  graph::FoldedRepeats folds_;  // the folded groups' hidden repeats (engine/graph/repeats.h)
  // Each node's place in the document's graph.nodes; checked on use, remade when stale.
  mutable std::unordered_map<graph::NodeId, size_t> index_;
  int itemsMade_ = 0;
  std::map<graph::NodeId, std::unique_ptr<ProbeItem>> probes_;
  NodeHealthModel* health_ = nullptr;
  std::map<graph::NodeId, NodeBadge> badges_;
  QTimer* pulse_;  // redraws a failed node's pulsing outline
  // Boxes an edit moved out of sight that stand where they were, and wires (by the input they
  // feed) not drawn for it yet; staleTimer_ moves the boxes, then draws the wires,
  // kItemsAtOnce per event.
  std::set<graph::NodeId> staleBoxes_;
  std::set<std::pair<graph::NodeId, std::string>> staleWires_;
  QTimer* staleTimer_;
  void refreshStale(size_t most);
  // Items removed while one of them may still be handling the event that removed it.
  std::vector<std::unique_ptr<QGraphicsItem>> retired_;
  std::optional<WireDrag> drag_;
  std::unique_ptr<QGraphicsPathItem> dragWire_;
  bool syncingSelection_ = false;
  bool syncing_ = false;
};

}  // namespace nns::ui
