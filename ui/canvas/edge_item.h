// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One wire on the canvas: from an output port to an input port, along the layout's route
// (GraphScene::wirePath). It holds the edge's two port references; a wire whose target port
// has a problem is drawn red, with the reason as its tooltip.
#include <QGraphicsPathItem>

#include "engine/graph/spec.h"

namespace nns::ui {

class GraphScene;

class EdgeItem : public QGraphicsPathItem {
 public:
  enum { Type = UserType + 2 };
  EdgeItem(GraphScene& scene, graph::Edge edge);

  int type() const override { return Type; }
  const graph::Edge& edge() const { return edge_; }
  // Re-reads the ends' positions, and the target port's problems when next drawn.
  void refresh();
  // Whether it is drawn red: the last analysis found a problem at its target port.
  bool drawsProblem() {
    readProblems();
    return bad_;
  }
  // A wire between two ports with no route from the layout (one being dragged, or one whose
  // nodes were moved by hand): a curve that leaves the output and enters the input along the
  // flow, downwards (or rightwards when leftToRight).
  static QPainterPath curve(QPointF from, QPointF to, bool leftToRight);

  QPainterPath shape() const override;
  // The path's extent with room for the hover stroke: QGraphicsPathItem's own strokes the path,
  // which at 10,000 wires is most of the time a scene takes to build.
  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 private:
  GraphScene& scene_;
  graph::Edge edge_;
  // The target port's problems are read when the wire is next drawn (it is hovered, for its
  // tooltip, only once drawn): an opened project's analysis finishes while the items are made.
  void readProblems();
  bool problemsRead_ = false;
  bool bad_ = false;
};

}  // namespace nns::ui
