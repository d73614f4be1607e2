// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The plots (QCustomPlot) in the window's palette. QCustomPlot draws white with black axes
// whatever the desktop's scheme; followPalette() gives a plot the palette's base colour, text
// colour for axes, labels and legend, and faint grid lines, now and whenever the palette
// changes (a desktop switching between light and dark), so that no plot is a white box in a
// dark window. The plots' own series colours are chosen to read on both.
class QCustomPlot;

namespace nns::ui {

void followPalette(QCustomPlot* plot);

}  // namespace nns::ui
