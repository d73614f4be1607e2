#include "ui/edge_item.h"

#include <QPainter>
#include <QPainterPathStroker>
#include <algorithm>
#include <cmath>
#include <vector>

#include "ui/graph_scene.h"
#include "ui/node_item.h"

namespace nns::ui {

EdgeItem::EdgeItem(GraphScene& scene, graph::Edge edge) : scene_(scene), edge_(std::move(edge)) {
  setFlag(ItemIsSelectable);
  setZValue(0);
  setAcceptHoverEvents(true);
  refresh();
}

namespace {

// How far a routed wire runs straight out of its port before it turns, and its corners' radius.
constexpr double kStub = 24;
constexpr double kCorner = 12;

// A polyline through points with its corners rounded (each radius at most half of the shorter
// segment beside it, so that neighbouring corners never overlap).
QPainterPath roundedPolyline(const std::vector<QPointF>& points) {
  QPainterPath path(points.front());
  for (size_t i = 1; i + 1 < points.size(); ++i) {
    const QPointF in = points[i] - points[i - 1];
    const QPointF out = points[i + 1] - points[i];
    const double lengthIn = std::hypot(in.x(), in.y());
    const double lengthOut = std::hypot(out.x(), out.y());
    const double r = std::min({kCorner, lengthIn / 2, lengthOut / 2});
    if (r <= 0) continue;
    path.lineTo(points[i] - in * (r / lengthIn));
    path.quadTo(points[i], points[i] + out * (r / lengthOut));
  }
  path.lineTo(points.back());
  return path;
}

}  // namespace

QPainterPath EdgeItem::curve(QPointF from, QPointF to, std::optional<double> laneY) {
  if (to.x() >= from.x() + 2 * kStub) {
    const double dx = std::max(40.0, (to.x() - from.x()) / 2);
    QPainterPath path(from);
    path.cubicTo(from + QPointF(dx, 0), to - QPointF(dx, 0), to);
    return path;
  }
  const double lane = laneY ? *laneY
                      : std::abs(to.y() - from.y()) > 4 * kStub
                          ? (from.y() + to.y()) / 2
                          : std::max(from.y(), to.y()) + 3 * kStub;
  const double right = from.x() + kStub;
  const double left = to.x() - kStub;
  return roundedPolyline(
      {from, {right, from.y()}, {right, lane}, {left, lane}, {left, to.y()}, to});
}

void EdgeItem::refresh() {
  NodeItem* from = scene_.shownItem(edge_.from.node);
  NodeItem* to = scene_.shownItem(edge_.to.node);
  if (!from || !to) return;
  // A wire inside one collapsed group is not drawn.
  setVisible(from != to);
  // A backward wire's lane: in the gap between the two boxes when one is above the other,
  // else under both.
  const QRectF a = from->sceneBoundingRect();
  const QRectF b = to->sceneBoundingRect();
  const double lane = b.top() > a.bottom()   ? (a.bottom() + b.top()) / 2
                      : a.top() > b.bottom() ? (b.bottom() + a.top()) / 2
                                             : std::max(a.bottom(), b.bottom()) + kStub;
  setPath(curve(from->portScenePos(edge_.from.port, true), to->portScenePos(edge_.to.port, false),
                lane));
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
