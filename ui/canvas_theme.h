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
  bool dark() const { return background.lightness() < 128; }
};

}  // namespace nns::ui
