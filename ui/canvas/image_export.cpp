// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/image_export.h"

#include <QFileInfo>
#include <QGraphicsItem>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSignalBlocker>
#include <QSvgGenerator>

#include "ui/canvas/graph_scene.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

// One scene unit is one CSS pixel in the SVG, as on a screen at 100%.
constexpr int kSvgDpi = 96;

void render(GraphScene* scene, QPainter& painter, const QRectF& target, const QRectF& source) {
  painter.setRenderHints(QPainter::Antialiasing | QPainter::TextAntialiasing |
                         QPainter::SmoothPixmapTransform);
  // The items are drawn unselected: with the scene's signals blocked, the document's
  // selection (and every panel that follows it) never hears of the round trip.
  scene->finishStale();  // the whole scene at once: every wire where it is now
  const QList<QGraphicsItem*> selected = scene->selectedItems();
  const QSignalBlocker quiet(scene);
  for (QGraphicsItem* item : selected) item->setSelected(false);
  scene->render(&painter, target, source, Qt::IgnoreAspectRatio);
  for (QGraphicsItem* item : selected) item->setSelected(true);
}

}  // namespace

QRectF exportRect(const GraphScene* scene, bool selectionOnly) {
  QRectF box;
  for (const QGraphicsItem* item : selectionOnly ? scene->selectedItems() : scene->items()) {
    if (item->isVisible()) box |= item->sceneBoundingRect();
  }
  if (box.isEmpty()) return {};
  return box.adjusted(-kExportMargin, -kExportMargin, kExportMargin, kExportMargin);
}

QString exportSceneImage(GraphScene* scene, const QString& path, bool selectionOnly) {
  const QString format = QFileInfo(path).suffix().toLower();
  if (format != "svg" && format != "png") {
    return QObject::tr("%1: name the file .svg or .png").arg(path);
  }
  const QRectF source = exportRect(scene, selectionOnly);
  if (source.isEmpty()) {
    return selectionOnly ? QObject::tr("nothing is selected") : QObject::tr("the canvas is empty");
  }
  QSaveFile file(path);
  if (!file.open(QIODevice::WriteOnly)) {
    return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
  }
  if (format == "svg") {
    QSvgGenerator svg;
    svg.setOutputDevice(&file);
    svg.setResolution(kSvgDpi);
    svg.setSize(source.size().toSize());
    svg.setViewBox(QRectF(QPointF(0, 0), source.size()));
    svg.setTitle(qs(scene->document()->project().name));
    svg.setDescription(QObject::tr("Drawn by NN Studio"));
    QPainter painter(&svg);
    if (!painter.isActive()) return QObject::tr("cannot draw the SVG of %1").arg(path);
    render(scene, painter, svg.viewBoxF(), source);
  } else {
    QImage image((source.size() * kExportPngScale).toSize(), QImage::Format_ARGB32_Premultiplied);
    if (image.isNull()) {
      return QObject::tr("the canvas is too large for a PNG (%1 x %2 pixels): export an SVG")
          .arg(qRound(source.width() * kExportPngScale))
          .arg(qRound(source.height() * kExportPngScale));
    }
    image.fill(scene->theme().background);
    {
      QPainter painter(&image);
      render(scene, painter, QRectF(image.rect()), source);
    }
    if (!image.save(&file, "PNG")) return QObject::tr("cannot encode the PNG of %1").arg(path);
  }
  if (!file.commit()) return QObject::tr("cannot write %1: %2").arg(path, file.errorString());
  return {};
}

}  // namespace nns::ui
