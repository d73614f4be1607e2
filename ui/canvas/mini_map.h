// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A small overview of the graph in the canvas's corner, with the visible part outlined;
// clicking or dragging in it moves the view. It shows itself only when the graph does not fit
// in the view. A graph much taller (or wider) than the overview, which whole would be a thin
// line there, is shown as a window around the view that follows it.
#include <QPixmap>
#include <QWidget>

class QTimer;

namespace nns::ui {

class GraphView;

class MiniMap : public QWidget {
  Q_OBJECT

 public:
  explicit MiniMap(GraphView* view);
  // Re-checks whether the graph fits in the view, and redraws.
  void refresh();
  // The scene changed: its picture is drawn again shortly (at most a few times a second, as
  // drawing a large graph costs more than a frame).
  void sceneChanged();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;

 private:
  // The scene area shown, and its mapping into this widget.
  QRectF sourceRect();
  // The nodes' extent, as of the last picture: the scene's own look at every item (10,000 at
  // most) is made at most as often as the picture, not on every change and scroll.
  QRectF nodesRect();
  QRectF targetRect();
  void centerViewAt(QPointF widgetPos);
  void renderPicture();

  GraphView* view_;
  QTimer* redraw_;
  QPixmap picture_;
  QRectF pictureRect_;  // the scene area the picture shows
  QRectF nodes_;
  bool nodesKnown_ = false;
};

}  // namespace nns::ui
