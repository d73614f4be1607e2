// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/probe_item.h"

#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneHoverEvent>
#include <QPainter>

#include "ui/canvas/graph_scene.h"
#include "ui/probes/node_health.h"

namespace nns::ui {

ProbeItem::ProbeItem(GraphScene& scene, graph::NodeId node) : scene_(scene), node_(node) {
  setFlags(ItemIsSelectable);
  setAcceptHoverEvents(true);
  // Above the node boxes (z 1) and the wires.
  setZValue(3);
}

void ProbeItem::attach(QPointF boxTopLeft, double boxWidth) {
  setPos(boxTopLeft + QPointF(boxWidth - kWidth - 10, -kHeight / 2));
}

QRectF ProbeItem::boundingRect() const {
  return QRectF(-2, -2, kWidth + 4, kHeight + 4);
}

void ProbeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  const CanvasTheme& t = scene_.theme();
  QColor fill = t.port;
  if (const NodeHealthModel* model = scene_.healthModel()) {
    if (auto report = model->health(node_)) fill = healthColor(t, report->health);
  }
  const QRectF pill(0, 0, kWidth, kHeight);
  painter->setPen(QPen(isSelected() ? t.selection : t.background, isSelected() ? 2.5 : 1.5));
  painter->setBrush(fill);
  painter->drawRoundedRect(pill, kHeight / 2, kHeight / 2);
  // A probe's tip: a small ring with a stem, then the word.
  painter->setPen(QPen(Qt::white, 1.6));
  painter->setBrush(Qt::NoBrush);
  painter->drawEllipse(QPointF(10, kHeight / 2 - 1), 3.6, 3.6);
  painter->drawLine(QPointF(12.6, kHeight / 2 + 1.6), QPointF(15.5, kHeight / 2 + 4.5));
  QFont font = painter->font();
  font.setPointSizeF(8);
  font.setBold(true);
  painter->setFont(font);
  painter->drawText(QRectF(18, 0, kWidth - 20, kHeight), Qt::AlignCenter, QObject::tr("probe"));
}

void ProbeItem::hoverEnterEvent(QGraphicsSceneHoverEvent* event) {
  QStringList lines;
  lines << QObject::tr("<b>Probe</b>: hooks on this node's module while it trains");
  if (const ProjectDocument* doc = scene_.document()) {
    if (const graph::ProbeSpec* spec = doc->probeOf(node_)) {
      QStringList what;
      if (spec->activations) what << QObject::tr("activations");
      if (spec->gradients) what << QObject::tr("gradients");
      if (spec->parameters) what << QObject::tr("parameter gradients");
      lines << QObject::tr("%1, every %2 steps").arg(what.join(", ")).arg(spec->every);
    }
  }
  if (const NodeHealthModel* model = scene_.healthModel()) {
    if (auto report = model->health(node_)) lines << report->summary.toHtmlEscaped();
  }
  lines << QObject::tr("Click: open its histograms. Right-click: remove it.");
  setToolTip(lines.join("<br>"));
  QGraphicsItem::hoverEnterEvent(event);
}

void ProbeItem::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
  QGraphicsItem::mouseReleaseEvent(event);
  // One click opens the histograms: the tag is the way into them, so it must not need a
  // double-click. A drag that ends elsewhere is not a click.
  if (event->button() == Qt::LeftButton && contains(event->pos()))
    emit scene_.probeActivated(node_);
}

void ProbeItem::contextMenuEvent(QGraphicsSceneContextMenuEvent* event) {
  if (!isSelected()) {
    scene_.clearSelection();
    setSelected(true);
  }
  emit scene_.contextMenuRequested(event->screenPos());
}

}  // namespace nns::ui
