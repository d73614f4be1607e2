// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One node on the canvas: a box with its input ports on the top and its output ports on the
// bottom (left and right when the project flows left to right), its name and type, and the
// shapes the analysis infers for its outputs. A collapsed group is a box that says what it
// holds; an expanded group is a frame around its members, the layout's cluster, with the
// group's ports where the wires cross it. The item holds only the node's id and reads
// everything else from the scene's document.
#include <QGraphicsItem>
#include <QPainterPath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/spec.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"

namespace nns::ui {

class GraphScene;

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  // Box sizes are the layout's (graph::node_box_size); a box is a title bar and a body row.
  static constexpr double kHeader = 22;
  static constexpr double kRow = 22;
  // Room a frame keeps around a member dragged out of the layout's place.
  static constexpr double kFrameMargin = 10;
  // Below this zoom a box is too small to read: nodes draw as plain boxes, frames without
  // their titles, wires and implicit links as straight segments (level of detail).
  static constexpr double kDetailZoom = 0.4;

  NodeItem(GraphScene& scene, graph::NodeId id);

  graph::NodeId id() const { return id_; }
  int type() const override { return Type; }
  // An expanded group: a frame that wraps its members.
  bool isFrame() const { return frame_; }

  // Re-reads the node from the document (ports, marks, position; its shapes and problems when
  // next drawn or asked for).
  void refresh();
  // Frames only: wraps the members' current boxes.
  void fitMembers();
  // Moves the item without it counting as a user's drag.
  void setPosQuietly(QPointF pos);
  // The box (a frame: the frame), without the ports that reach past it.
  QSizeF boxSize() const { return size_; }
  // Whether the health strip is drawn (its probe has samples).
  bool showsHealth() const { return healthStrip_; }
  // The sampled steps its health strip's sparklines plot: those with a dead-unit or saturation
  // rate or a gradient norm (0 while no strip is drawn).
  size_t sparklinePoints() const;
  // The output shapes as the box writes them: "[N, 64]", or "out [N, 8]  h_n [1, N, 8]".
  QString outputText() const;
  // What a collapsed group's box says of it ("4 module(s) · 816 params"), else empty; made when
  // first drawn after a refresh: counting 1,650 blocks' parameters on each open of a 10,000-node
  // tower, of which a screenful is drawn, was a tenth of the open.
  const QString& summary() const;
  // Whether the box is drawn red: the last analysis found a problem at it or one of its ports.
  bool drawsProblem() const;
  // Re-reads the node's health from the scene's health model: the strip appears with the
  // first samples and goes when they are cleared.
  void refreshHealth();

  struct PortHit {
    std::string name;
    bool output = false;
  };
  std::optional<PortHit> portAt(QPointF scenePos) const;
  // Where a wire attaches; an unknown port (a member hidden in this collapsed group) attaches
  // to the middle of the side.
  QPointF portScenePos(const std::string& port, bool output) const;

  QRectF boundingRect() const override;
  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  QVariant itemChange(GraphicsItemChange change, const QVariant& value) override;
  void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override;
  void mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) override;
  void contextMenuEvent(QGraphicsSceneContextMenuEvent* event) override;

 private:
  QPointF portLocalPos(size_t index, bool output) const;
  // The hit shape is made when first asked for after a change (hit tests, not drawing, need
  // it): refreshing thousands of boxes on a sync made a path for each.
  void updateShape() { shapeStale_ = true; }
  QString tooltipAt(QPointF localPos) const;
  // The last analysis's shapes and problems, read when the box is first drawn or asked for after
  // a refresh: an opened project's analysis finishes while the items are made.
  void readAnalysis() const;
  void paintFrame(QPainter* painter);
  // The xN of a folded run on a title band ending at `right`; returns its width.
  double paintRepeatPill(QPainter* painter, double right, double bandHeight);
  void paintPlain(QPainter* painter);
  void paintPorts(QPainter* painter, const QFont& font);
  void paintHealth(QPainter* painter);
  void paintFailure(QPainter* painter);
  QString groupSummary(const graph::Node& node) const;

  GraphScene& scene_;
  graph::NodeId id_;
  bool frame_ = false;
  int repeats_ = 0;             // N when this stands for a folded run of N equal blocks
  bool group_ = false;          // a group, open or collapsed (its title bar's colour)
  bool quiet_ = false;          // set while the scene positions the item
  bool movingMembers_ = false;  // set while a dragged frame carries its members
  QSizeF size_;
  mutable QPainterPath shape_;
  mutable bool shapeStale_ = true;
  bool leftToRight_ = false;  // ports on the left and right sides instead of top and bottom
  QString title_, typeName_;
  graph::NodePorts ports_;
  mutable bool summaryRead_ = false;
  mutable QString detail_;             // summary()
  mutable bool analysisRead_ = false;  // readAnalysis()
  mutable std::map<std::string, QString> outShapes_;
  mutable QStringList problems_;
  mutable std::map<std::string, QStringList> portProblems_;
  std::optional<NodeLoadMark> mark_;
  bool healthStrip_ = false;
  std::vector<std::pair<graph::Edge, QPainterPath>> chain_;  // a frame's implicit links
};

}  // namespace nns::ui
