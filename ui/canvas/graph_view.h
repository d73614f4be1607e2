// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's view: zoom with the wheel (around the cursor), pan with the middle button or
// Space + drag, rubber-band selection with the left button on empty canvas, frame all, and
// the drop target for node types (and the user library's blocks) dragged from the palette. A
// minimap sits in its corner.
#include <QGraphicsView>

namespace nns::ui {

class GraphScene;
class MiniMap;

class GraphView : public QGraphicsView {
  Q_OBJECT

 public:
  // What the palette puts on a drag: the node type's name.
  static constexpr const char* kNodeTypeMime = "application/x-nnstudio-node-type";
  // What the palette puts on a drag of a block of the user's library: the block's name.
  static constexpr const char* kLibraryBlockMime = "application/x-nnstudio-library-block";

  explicit GraphView(GraphScene* scene, QWidget* parent = nullptr);

  GraphScene* graphScene() const { return scene_; }
  MiniMap* miniMap() const { return miniMap_; }
  // Fits every node in the view, never zooming in past 100 % nor out below kMinFrameZoom,
  // where node labels stop being readable: a graph too big for that shows its start (top left)
  // and the rest is a scroll or a minimap click away.
  static constexpr double kMinFrameZoom = 0.75;
  void frameAll();
  void zoomBy(double factor);
  double zoom() const;
  // Where a node dropped at a view position gets its top-left corner.
  QPointF dropPosition(QPoint viewPos) const;

 signals:
  // The view's scale changed, by whatever call (zoomBy, frameAll, or QGraphicsView's own
  // setTransform, scale, fitInView, resetTransform), reported as the view draws it.
  void zoomChanged(double zoom);

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseMoveEvent(QMouseEvent* event) override;
  void mouseReleaseEvent(QMouseEvent* event) override;
  void keyPressEvent(QKeyEvent* event) override;
  void keyReleaseEvent(QKeyEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dragMoveEvent(QDragMoveEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void scrollContentsBy(int dx, int dy) override;
  void paintEvent(QPaintEvent* event) override;

 private:
  GraphScene* scene_;
  MiniMap* miniMap_;
  // True from a frameAll until the user zooms or pans: a window or dock resize then frames
  // again, so a project opened before the window took its size is still shown whole.
  bool followFrame_ = false;
  // The scale zoomChanged last reported: the transform a view starts with.
  double reportedZoom_ = 1.0;
  bool panning_ = false;
  bool spaceHeld_ = false;
  QPoint panStart_;
};

}  // namespace nns::ui
