// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's colours, derived from the application palette so that the canvas follows the
// system's light or dark scheme like the rest of the window.
#include <QColor>
#include <QPalette>

namespace nns::ui {

struct CanvasTheme {
  QColor background, grid, nodeBody, nodeHeader, groupBody, groupHeader, text, dimText, border,
      selection, wire, port, error, matched, warning;

  static CanvasTheme fromPalette(const QPalette& palette);
  // Whether a palette is a dark scheme (by its window colour): the canvas and the plots agree.
  static bool isDark(const QPalette& palette) {
    return palette.color(QPalette::Window).lightness() < 128;
  }
  bool dark() const { return background.lightness() < 128; }
};

// A node's tint for "how much" (a change of weights, a share of the step's time, how far two
// models diverge): pale yellow at 0, deep red at 1 (t is clamped to [0, 1]).
QColor heatColour(double t);

}  // namespace nns::ui
