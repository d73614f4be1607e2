// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A probe on the canvas: a small tag pinned to the top edge of its node's box (it follows the
// node), coloured by the node's health while training. It is selectable: Delete removes the
// probe (and with it, the hooks), double-click opens the probe panel. The item holds only the
// node's id; the scene places it.
#include <QGraphicsItem>

#include "engine/graph/spec.h"

namespace nns::ui {

class GraphScene;

class ProbeItem : public QGraphicsItem {
 public:
  enum { Type = UserType + 3 };
  static constexpr double kWidth = 58;
  static constexpr double kHeight = 18;

  ProbeItem(GraphScene& scene, graph::NodeId node);

  graph::NodeId node() const { return node_; }
  int type() const override { return Type; }
  // Pins the tag to the node's box (its top-left corner and width in scene coordinates).
  void attach(QPointF boxTopLeft, double boxWidth);

  QRectF boundingRect() const override;
  void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override;

 protected:
  void hoverEnterEvent(QGraphicsSceneHoverEvent* event) override;
  void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;
  void contextMenuEvent(QGraphicsSceneContextMenuEvent* event) override;

 private:
  GraphScene& scene_;
  graph::NodeId node_;
};

}  // namespace nns::ui
