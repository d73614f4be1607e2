// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/mini_map.h"

#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <algorithm>
#include <vector>

#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"

namespace nns::ui {

MiniMap::MiniMap(GraphView* view)
    : QWidget(view->viewport()), view_(view), redraw_(new QTimer(this)) {
  redraw_->setSingleShot(true);
  redraw_->setInterval(200);
  connect(redraw_, &QTimer::timeout, this, [this] {
    renderPicture();
    update();
  });
  setCursor(Qt::PointingHandCursor);
  setToolTip(tr("Overview: click or drag to move the view"));
  hide();
}

void MiniMap::refresh() {
  // Placed here rather than on the view's resize: the viewport also changes size when the
  // scroll bars come and go, and the overview must stay in its corner, clear of the graph.
  const QSize size(180, 112);
  const QWidget* viewport = parentWidget();
  setGeometry(viewport->width() - size.width() - 10, viewport->height() - size.height() - 10,
              size.width(), size.height());
  const QRectF nodes = nodesRect();
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  setVisible(!nodes.isNull() && !visible.contains(nodes));
  update();
}

void MiniMap::sceneChanged() {
  if (!redraw_->isActive()) redraw_->start();
  refresh();
}

QRectF MiniMap::nodesRect() {
  if (!nodesKnown_) {
    nodes_ = view_->graphScene()->nodesRect();
    nodesKnown_ = true;
  }
  return nodes_;
}

void MiniMap::renderPicture() {
  nodesKnown_ = false;
  pictureRect_ = nodesRect().adjusted(-40, -40, 40, 40);
  if (pictureRect_.isEmpty()) {
    picture_ = QPixmap();
    return;
  }
  // Drawn at the size it is shown at (twice, for high-density screens): at that scale a node is
  // its box, so the overview draws boxes and frames, not the scene's text and wires.
  const GraphScene* scene = view_->graphScene();
  const CanvasTheme& t = scene->theme();
  // At most 4,096 pixels along: a 10,000-node tower is a long column.
  const double s = std::min(2 * targetRect().width() / sourceRect().width(),
                            4096 / std::max(pictureRect_.width(), pictureRect_.height()));
  picture_ = QPixmap((pictureRect_.size() * s).toSize().expandedTo({1, 1}));
  picture_.fill(Qt::transparent);
  QPainter painter(&picture_);
  painter.scale(s, s);
  painter.translate(-pictureRect_.topLeft());
  std::vector<const NodeItem*> boxes;
  for (const graph::Node& n : scene->document()->project().graph.nodes) {
    const NodeItem* item = scene->nodeItem(n.id);
    if (!item || !item->isVisible()) continue;
    if (!item->isFrame()) {
      boxes.push_back(item);
      continue;
    }
    painter.setPen(QPen(t.border, 0));
    painter.setBrush(t.groupBody);
    painter.drawRect(QRectF(item->pos(), item->boxSize()));
  }
  painter.setPen(QPen(t.border, 0));
  painter.setBrush(t.nodeHeader);
  for (const NodeItem* item : boxes) painter.drawRect(QRectF(item->pos(), item->boxSize()));
}

QRectF MiniMap::sourceRect() {
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  const QRectF whole = (nodesRect() | visible).adjusted(-40, -40, 40, 40);
  // At most kContext times the visible part each way, in the overview's proportions: a longer
  // graph shows the window of it around the view (the rest a drag away), not a line.
  constexpr double kContext = 4;
  const QRectF area = QRectF(rect()).adjusted(4, 4, -4, -4);
  QSizeF size = visible.size() * kContext;
  const double aspect = area.width() / area.height();
  if (size.width() < size.height() * aspect) {
    size.setWidth(size.height() * aspect);
  } else {
    size.setHeight(size.width() / aspect);
  }
  if (whole.width() <= size.width() && whole.height() <= size.height()) return whole;
  QRectF window(QPointF(0, 0), size);
  window.moveCenter(visible.center());
  // Inside the whole along each side it is longer than the window, centred on it otherwise.
  auto place = [](double start, double length, double wholeStart, double wholeLength) {
    if (wholeLength <= length) return wholeStart + (wholeLength - length) / 2;
    return std::clamp(start, wholeStart, wholeStart + wholeLength - length);
  };
  window.moveLeft(place(window.left(), size.width(), whole.left(), whole.width()));
  window.moveTop(place(window.top(), size.height(), whole.top(), whole.height()));
  return window;
}

QRectF MiniMap::targetRect() {
  const QRectF source = sourceRect();
  const QRectF area = QRectF(rect()).adjusted(4, 4, -4, -4);
  const double s = std::min(area.width() / source.width(), area.height() / source.height());
  QRectF target(0, 0, source.width() * s, source.height() * s);
  target.moveCenter(area.center());
  return target;
}

void MiniMap::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  const CanvasTheme& t = view_->graphScene()->theme();
  painter.setRenderHint(QPainter::Antialiasing);
  // Translucent: the canvas under it stays readable.
  painter.setOpacity(0.85);
  painter.setPen(QPen(t.border, 1));
  painter.setBrush(t.background);
  painter.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4);
  const QRectF source = sourceRect();
  const QRectF target = targetRect();
  if (picture_.isNull()) renderPicture();
  const double s = target.width() / source.width();
  painter.setClipRect(target);  // a window of a long graph: its picture reaches past it
  if (!picture_.isNull()) {
    painter.drawPixmap(QRectF(target.left() + (pictureRect_.left() - source.left()) * s,
                              target.top() + (pictureRect_.top() - source.top()) * s,
                              pictureRect_.width() * s, pictureRect_.height() * s),
                       picture_, QRectF(picture_.rect()));
  }
  const QRectF visible = view_->mapToScene(view_->viewport()->rect()).boundingRect();
  const QRectF box(target.left() + (visible.left() - source.left()) * s,
                   target.top() + (visible.top() - source.top()) * s, visible.width() * s,
                   visible.height() * s);
  QColor fill = t.selection;
  fill.setAlpha(40);
  painter.setPen(QPen(t.selection, 1.5));
  painter.setBrush(fill);
  painter.drawRect(box);
}

void MiniMap::centerViewAt(QPointF widgetPos) {
  const QRectF source = sourceRect();
  const QRectF target = targetRect();
  const double s = source.width() / target.width();
  view_->centerOn(source.left() + (widgetPos.x() - target.left()) * s,
                  source.top() + (widgetPos.y() - target.top()) * s);
}

void MiniMap::mousePressEvent(QMouseEvent* event) {
  centerViewAt(event->position());
}

void MiniMap::mouseMoveEvent(QMouseEvent* event) {
  if (event->buttons() & Qt::LeftButton) centerViewAt(event->position());
}

}  // namespace nns::ui
