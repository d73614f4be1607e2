// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/widgets/canvas_theme.h"

#include <algorithm>
#include <cmath>

namespace nns::ui {

CanvasTheme CanvasTheme::fromPalette(const QPalette& palette) {
  CanvasTheme t;
  const bool dark = isDark(palette);
  t.background = dark ? QColor(0x26, 0x28, 0x2c) : QColor(0xf4, 0xf5, 0xf7);
  t.grid = dark ? QColor(0x32, 0x35, 0x3a) : QColor(0xe2, 0xe4, 0xe8);
  t.nodeBody = dark ? QColor(0x3a, 0x3e, 0x45) : QColor(0xff, 0xff, 0xff);
  t.nodeHeader = dark ? QColor(0x4a, 0x55, 0x68) : QColor(0xdd, 0xe6, 0xf3);
  t.groupBody = dark ? QColor(0x5a, 0x6e, 0x8c, 40) : QColor(0x5a, 0x7d, 0xb4, 28);
  t.groupHeader = dark ? QColor(0x55, 0x68, 0x88) : QColor(0xc4, 0xd4, 0xea);
  t.text = palette.color(QPalette::Text);
  if (dark == (t.text.lightness() < 128)) t.text = dark ? Qt::white : Qt::black;
  t.dimText = dark ? QColor(0xa8, 0xb0, 0xbc) : QColor(0x60, 0x68, 0x74);
  t.border = dark ? QColor(0x6a, 0x72, 0x80) : QColor(0xa0, 0xa8, 0xb4);
  t.selection = palette.color(QPalette::Highlight);
  t.wire = dark ? QColor(0x9a, 0xa4, 0xb4) : QColor(0x6a, 0x74, 0x84);
  t.port = dark ? QColor(0x8c, 0xc0, 0xf0) : QColor(0x3a, 0x7c, 0xc8);
  t.error = QColor(0xd9, 0x3f, 0x3f);
  t.matched = QColor(0x3c, 0xa8, 0x5a);
  t.warning = QColor(0xe0, 0x94, 0x2a);
  return t;
}

QColor heatColour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const QColor pale(255, 243, 196), deep(214, 60, 32);
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return QColor(mix(pale.red(), deep.red()), mix(pale.green(), deep.green()),
                mix(pale.blue(), deep.blue()));
}

}  // namespace nns::ui
