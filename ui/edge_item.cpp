#include "ui/edge_item.h"

#include <QPainter>
#include <QPainterPathStroker>
#include <cmath>

#include "ui/graph_scene.h"
#include "ui/node_item.h"

namespace nns::ui {

EdgeItem::EdgeItem(GraphScene& scene, graph::Edge edge) : scene_(scene), edge_(std::move(edge)) {
  setFlag(ItemIsSelectable);
  setZValue(0);
  setAcceptHoverEvents(true);
  refresh();
}

QPainterPath EdgeItem::curve(QPointF from, QPointF to) {
  const double dx = std::max(40.0, std::abs(to.x() - from.x()) / 2);
  QPainterPath path(from);
  path.cubicTo(from + QPointF(dx, 0), to - QPointF(dx, 0), to);
  return path;
}

void EdgeItem::refresh() {
  NodeItem* from = scene_.shownItem(edge_.from.node);
  NodeItem* to = scene_.shownItem(edge_.to.node);
  if (!from || !to) return;
  // A wire inside one collapsed group is not drawn.
  setVisible(from != to);
  setPath(curve(from->portScenePos(edge_.from.port, true), to->portScenePos(edge_.to.port, false)));
  const QStringList problems = scene_.document()->problemsOf(edge_.to.node, edge_.to.port);
  bad_ = !problems.isEmpty();
  setToolTip(problems.join("\n"));
  update();
}

QPainterPath EdgeItem::shape() const {
  QPainterPathStroker stroker;
  stroker.setWidth(10);
  return stroker.createStroke(path());
}

void EdgeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  const CanvasTheme& t = scene_.theme();
  painter->setRenderHint(QPainter::Antialiasing);
  QColor color = bad_ ? t.error : t.wire;
  if (isSelected()) color = t.selection;
  painter->setPen(QPen(color, isSelected() ? 3 : 2));
  painter->setBrush(Qt::NoBrush);
  painter->drawPath(path());
}

}  // namespace nns::ui
