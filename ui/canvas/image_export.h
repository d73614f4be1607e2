// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// File > Export Image: the canvas as a picture, drawn as on screen (the scene's layout, theme,
// background and grid) but without the selection's highlight, which marks what is picked on
// screen and is no part of the model.
//
//   const QString error = exportSceneImage(scene, "model.svg", false);  // empty when written
#include <QRectF>
#include <QString>

namespace nns::ui {

class GraphScene;

// The room left around the items, in scene units.
constexpr double kExportMargin = 24;
// PNGs are drawn at twice the scene's scale, so that they stay sharp on high-density screens
// and in print.
constexpr double kExportPngScale = 2;

// The scene area an export draws: the bounds of every visible item, or with selectionOnly of
// the selected ones, with kExportMargin around them; empty when there is nothing to draw.
QRectF exportRect(const GraphScene* scene, bool selectionOnly);

// Writes that area as SVG (text stays text) or PNG, by the path's extension. The file is
// replaced whole or not at all: QSaveFile writes a temporary file beside it and renames it
// when complete. Returns an empty string when written, else what went wrong.
QString exportSceneImage(GraphScene* scene, const QString& path, bool selectionOnly);

}  // namespace nns::ui
