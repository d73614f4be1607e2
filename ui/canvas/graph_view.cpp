// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/graph_view.h"

#include "engine/graph/layout.h"

#include <QDragEnterEvent>
#include <QMimeData>
#include <QScrollBar>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "ui/canvas/graph_scene.h"
#include "ui/canvas/mini_map.h"
#include "ui/canvas/node_item.h"
#include "ui/document/block_library.h"

namespace nns::ui {

GraphView::GraphView(GraphScene* scene, QWidget* parent)
    : QGraphicsView(scene, parent), scene_(scene) {
  setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing);
  setDragMode(QGraphicsView::RubberBandDrag);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setAcceptDrops(true);
  setFrameShape(QFrame::NoFrame);
  // The canvas pans by dragging and the minimap; scrollbars would only take room.
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // A large scene rect lets the canvas pan past the nodes in every direction.
  scene_->setSceneRect(-20000, -20000, 40000, 40000);
  miniMap_ = new MiniMap(this);
  connect(scene_, &QGraphicsScene::changed, miniMap_, &MiniMap::sceneChanged);
  miniMap_->refresh();
}

double GraphView::zoom() const {
  return transform().m11();
}

void GraphView::zoomBy(double factor) {
  // Out as far as the whole graph (a model of thousands of blocks is a long column), and at
  // least to 15 %.
  const QRectF nodes = scene_->nodesRect().adjusted(-40, -40, 40, 40);
  double whole = 0.15;
  if (!nodes.isEmpty()) {
    whole = std::min(whole, std::min(viewport()->width() / nodes.width(),
                                     viewport()->height() / nodes.height()));
  }
  const double target = std::clamp(zoom() * factor, std::max(whole, 1e-4), 3.0);
  const double f = target / zoom();
  followFrame_ = false;
  scale(f, f);
  miniMap_->refresh();
}

void GraphView::frameAll() {
  QRectF box = scene_->nodesRect();
  if (box.isNull()) box = QRectF(-200, -150, 400, 300);
  box.adjust(-40, -40, 40, 40);
  fitInView(box, Qt::KeepAspectRatio);
  const double target = std::clamp(zoom(), kMinFrameZoom, 1.0);
  scale(target / zoom(), target / zoom());
  // What does not fit at the readable zoom stays a scroll (or a minimap click) away; the view
  // then starts where the model does (its inputs, top left) rather than in its middle.
  const QSizeF visible = QSizeF(viewport()->size()) / target;
  QPointF centre = box.center();
  if (box.width() > visible.width()) centre.setX(box.left() + visible.width() / 2);
  if (box.height() > visible.height()) centre.setY(box.top() + visible.height() / 2);
  centerOn(centre);
  followFrame_ = true;
  miniMap_->refresh();
}

QPointF GraphView::dropPosition(QPoint viewPos) const {
  return mapToScene(viewPos) - QPointF(graph::kNodeWidth / 2, NodeItem::kHeader / 2);
}

void GraphView::wheelEvent(QWheelEvent* event) {
  const double steps = event->angleDelta().y() / 120.0;
  if (steps != 0) zoomBy(std::pow(1.15, steps));
  event->accept();
}

void GraphView::mousePressEvent(QMouseEvent* event) {
  if (event->button() == Qt::MiddleButton || (event->button() == Qt::LeftButton && spaceHeld_)) {
    panning_ = true;
    panStart_ = event->pos();
    viewport()->setCursor(Qt::ClosedHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::mousePressEvent(event);
}

void GraphView::mouseMoveEvent(QMouseEvent* event) {
  if (panning_) {
    const QPoint delta = event->pos() - panStart_;
    panStart_ = event->pos();
    horizontalScrollBar()->setValue(horizontalScrollBar()->value() - delta.x());
    verticalScrollBar()->setValue(verticalScrollBar()->value() - delta.y());
    event->accept();
    return;
  }
  QGraphicsView::mouseMoveEvent(event);
}

void GraphView::mouseReleaseEvent(QMouseEvent* event) {
  if (panning_) {
    panning_ = false;
    viewport()->setCursor(spaceHeld_ ? Qt::OpenHandCursor : Qt::ArrowCursor);
    event->accept();
    return;
  }
  QGraphicsView::mouseReleaseEvent(event);
}

void GraphView::keyPressEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
    spaceHeld_ = true;
    viewport()->setCursor(Qt::OpenHandCursor);
    event->accept();
    return;
  }
  QGraphicsView::keyPressEvent(event);
}

void GraphView::keyReleaseEvent(QKeyEvent* event) {
  if (event->key() == Qt::Key_Space && !event->isAutoRepeat()) {
    spaceHeld_ = false;
    viewport()->setCursor(Qt::ArrowCursor);
    event->accept();
    return;
  }
  QGraphicsView::keyReleaseEvent(event);
}

void GraphView::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasFormat(kNodeTypeMime) ||
      event->mimeData()->hasFormat(kLibraryBlockMime)) {
    event->acceptProposedAction();
  } else {
    QGraphicsView::dragEnterEvent(event);
  }
}

void GraphView::dragMoveEvent(QDragMoveEvent* event) {
  if (event->mimeData()->hasFormat(kNodeTypeMime) ||
      event->mimeData()->hasFormat(kLibraryBlockMime)) {
    event->acceptProposedAction();
  } else {
    QGraphicsView::dragMoveEvent(event);
  }
}

void GraphView::dropEvent(QDropEvent* event) {
  const QMimeData* mime = event->mimeData();
  const QPointF at = dropPosition(event->position().toPoint());
  graph::NodeId id = 0;
  if (mime->hasFormat(kNodeTypeMime)) {
    id = scene_->document()->addNode(QString::fromUtf8(mime->data(kNodeTypeMime)), at);
  } else if (mime->hasFormat(kLibraryBlockMime)) {
    id = BlockLibrary::user().addInstance(
        scene_->document(), QString::fromUtf8(mime->data(kLibraryBlockMime)).toStdString(), at);
  } else {
    QGraphicsView::dropEvent(event);
    return;
  }
  if (id != 0) scene_->document()->setSelection({id});
  event->acceptProposedAction();
  setFocus();
}

void GraphView::resizeEvent(QResizeEvent* event) {
  // Read before the base class: keeping the view's anchor may scroll, which ends following.
  const bool follow = followFrame_;
  QGraphicsView::resizeEvent(event);
  if (follow) {
    frameAll();
  } else {
    miniMap_->refresh();
  }
}

void GraphView::scrollContentsBy(int dx, int dy) {
  followFrame_ = false;
  QGraphicsView::scrollContentsBy(dx, dy);
  miniMap_->refresh();
}

void GraphView::paintEvent(QPaintEvent* event) {
  // QGraphicsView has no signal for its transform, and setTransform, which scale, fitInView and
  // resetTransform all end in, is not virtual; but every change of it repaints the whole
  // viewport. The paint is the one place every change passes, and the zoom is reported there,
  // when it is drawn, whoever changed it.
  if (zoom() != reportedZoom_) {
    reportedZoom_ = zoom();
    emit zoomChanged(reportedZoom_);
  }
  QGraphicsView::paintEvent(event);
}

}  // namespace nns::ui
