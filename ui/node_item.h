#pragma once
// One node on the canvas: a box with its input ports on the left and its output ports on the
// right, each output labelled with the shape the analysis infers for it. An expanded group is
// drawn as a frame around its members, with the group's own ports on its title bar. The item
// holds only the node's id and reads everything else from the scene's document.
#include <QGraphicsItem>
#include <QPainterPath>
#include <map>
#include <optional>
#include <string>

#include "engine/graph/spec.h"
#include "ui/node_ports.h"
#include "ui/project_document.h"

namespace nns::ui {

class GraphScene;

class NodeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 1 };
  static constexpr double kWidth = 190;
  static constexpr double kHeader = 28;
  static constexpr double kRow = 22;
  static constexpr double kFrameMargin = 18;
  // The health strip under the ports of a probed node while it trains.
  static constexpr double kHealthStrip = 22;

  NodeItem(GraphScene& scene, graph::NodeId id);

  graph::NodeId id() const { return id_; }
  int type() const override { return Type; }
  // An expanded group: a frame that wraps its members.
  bool isFrame() const { return frame_; }

  // Re-reads the node from the document (ports, shapes, problems, marks, position).
  void refresh();
  // Frames only: wraps the members' current boxes.
  void fitMembers();
  // Moves the item without it counting as a user's drag.
  void setPosQuietly(QPointF pos);
  // The box (a frame: the frame), without the ports that reach past it.
  QSizeF boxSize() const { return size_; }
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
  void updateShape();
  QString tooltipAt(QPointF localPos) const;
  void paintFrame(QPainter* painter);
  void paintHealth(QPainter* painter);
  void paintFailure(QPainter* painter);
  double baseHeight() const;

  GraphScene& scene_;
  graph::NodeId id_;
  bool frame_ = false;
  bool quiet_ = false;          // set while the scene positions the item
  bool movingMembers_ = false;  // set while a dragged frame carries its members
  QSizeF size_;
  QPainterPath shape_;
  QString title_, typeName_;
  graph::NodePorts ports_;
  std::map<std::string, QString> outShapes_;
  QStringList problems_;
  std::map<std::string, QStringList> portProblems_;
  std::optional<NodeLoadMark> mark_;
  bool healthStrip_ = false;
};

}  // namespace nns::ui
