// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/widgets/plot_style.h"

#include <qcustomplot.h>
#include <QEvent>

namespace nns::ui {
namespace {

void applyPalette(QCustomPlot* plot) {
  const QPalette& palette = plot->palette();
  const QColor text = palette.color(QPalette::Text);
  QColor axis = text;
  axis.setAlpha(150);
  QColor grid = text;
  grid.setAlpha(55);
  plot->setBackground(palette.color(QPalette::Base));
  for (QCPAxisRect* rect : plot->axisRects()) {
    for (QCPAxis* a : rect->axes()) {
      a->setBasePen(QPen(axis, 0));
      a->setTickPen(QPen(axis, 0));
      a->setSubTickPen(QPen(axis, 0));
      a->setTickLabelColor(text);
      a->setLabelColor(text);
      a->grid()->setPen(QPen(grid, 0, Qt::DotLine));
      a->grid()->setZeroLinePen(QPen(grid, 0));
    }
  }
  // A legend that sits over the curves keeps its backing, in the base colour; one in a row
  // of its own has none. (A plot whose layout was replaced has no legend.)
  if (QCPLegend* legend = plot->legend) {
    legend->setTextColor(text);
    if (legend->brush().style() != Qt::NoBrush) {
      QColor backing = palette.color(QPalette::Base);
      backing.setAlpha(200);
      legend->setBrush(backing);
    }
    if (legend->borderPen().style() != Qt::NoPen) legend->setBorderPen(QPen(axis, 0));
  }
  plot->replot(QCustomPlot::rpQueuedReplot);
}

// Restyles its plot when the plot's palette changes.
class PaletteFollower : public QObject {
 public:
  explicit PaletteFollower(QCustomPlot* plot) : QObject(plot) { plot->installEventFilter(this); }

  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::PaletteChange) applyPalette(static_cast<QCustomPlot*>(watched));
    return false;
  }
};

}  // namespace

void followPalette(QCustomPlot* plot) {
  applyPalette(plot);
  new PaletteFollower(plot);
}

}  // namespace nns::ui
