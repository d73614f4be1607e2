// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/edge_item.h"

#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "ui/canvas/graph_scene.h"
#include "ui/canvas/node_item.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {

EdgeItem::EdgeItem(GraphScene& scene, graph::Edge edge) : scene_(scene), edge_(std::move(edge)) {
  setFlag(ItemIsSelectable);
  setZValue(0);
  setAcceptHoverEvents(true);
  refresh();
}

QPainterPath EdgeItem::curve(QPointF from, QPointF to, bool leftToRight) {
  const QPointF gap = to - from;
  QPainterPath path(from);
  if (leftToRight) {
    const double d = std::max(30.0, std::abs(gap.x()) / 2);
    path.cubicTo(from + QPointF(d, 0), to - QPointF(d, 0), to);
  } else {
    const double d = std::max(30.0, std::abs(gap.y()) / 2);
    path.cubicTo(from + QPointF(0, d), to - QPointF(0, d), to);
  }
  return path;
}

void EdgeItem::refresh() {
  NodeItem* from = scene_.shownItem(edge_.from.node);
  NodeItem* to = scene_.shownItem(edge_.to.node);
  if (!from || !to) return;
  // A wire inside one collapsed group is not drawn (nor worked out until it is).
  setVisible(from != to);
  if (from == to) return;
  setPath(scene_.wirePath(edge_, false));
  problemsRead_ = false;
  update();
}

void EdgeItem::readProblems() {
  if (problemsRead_) return;
  problemsRead_ = true;
  // As the last analysis found them (an edit's own comes after it, and redraws what changed).
  QStringList problems;
  for (const graph::Problem* p : scene_.document()->lastProblemsAt(edge_.to.node)) {
    if (p->port == edge_.to.port) problems << qs(p->message);
  }
  // The tooltip only when it changes: setting one costs more than the rest of a refresh.
  if (bad_ || !problems.isEmpty()) setToolTip(problems.join("\n"));
  bad_ = !problems.isEmpty();
}

QRectF EdgeItem::boundingRect() const {
  return path().controlPointRect().adjusted(-6, -6, 6, 6);
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path());
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  readProblems();
  const CanvasTheme& t = scene_.theme();
  QColor color = bad_ ? t.error : t.wire;
  if (isSelected()) color = t.selection;
  if (QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform()) <
      NodeItem::kDetailZoom) {
    // Zoomed far out: a straight segment between the ports, one pixel wide.
    const QPainterPath& p = path();
    if (p.elementCount() == 0) return;
    painter->setRenderHint(QPainter::Antialiasing, false);
    painter->setPen(QPen(color, 0));
    painter->drawLine(QPointF(p.elementAt(0).x, p.elementAt(0).y), p.currentPosition());
    return;
  }
  painter->setRenderHint(QPainter::Antialiasing);
  painter->setPen(QPen(color, isSelected() ? 3 : 2));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path());
}

}  // namespace nns::ui
