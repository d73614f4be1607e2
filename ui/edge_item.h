#pragma once
// One wire on the canvas: a curve from an output port to an input port. It holds the
// edge's two port references; a wire whose target port has a problem is drawn red, with the
// reason as its tooltip.
#include <QGraphicsPathItem>
#include <optional>

#include "engine/graph/spec.h"

namespace nns::ui {

class GraphScene;

class EdgeItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(GraphScene& scene, graph::Edge edge);

  int type() const override { return Type; }
  const graph::Edge& edge() const { return edge_; }
  // Re-reads the ends' positions and the target port's problems.
  void refresh();
  // The path between two scene points, as every wire (and the one being dragged) is drawn: a
  // curve when the input port lies to the right of the output. A wire that runs backwards (as
  // from the end of one row of a wrapped chain to the start of the next) would be an S cutting
  // across both rows; it is routed instead out to the right, along a horizontal lane at laneY
  // (by default halfway between the ports, or below them when they are level), and into the
  // port from the left, with rounded corners.
  static QPainterPath curve(QPointF from, QPointF to, std::optional<double> laneY = {});

  QPainterPath shape() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  GraphScene& scene_;
  graph::Edge edge_;
  bool bad_ = false;
};

}  // namespace nns::ui
