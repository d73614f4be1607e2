// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/histogram_view.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/widgets/canvas_theme.h"
#include "ui/widgets/plot_style.h"

namespace nns::ui {
namespace {

// Spreads a histogram over [src.lo, src.hi] onto `out`'s bins over [lo, hi] by overlap.
void spread(const train::Histogram& src, double lo, double hi, std::vector<double>& out) {
  const int bins = static_cast<int>(out.size());
  const double width = (hi - lo) / bins;
  const int n = static_cast<int>(src.counts.size());
  if (n == 0) return;
  const double srcWidth = (src.hi - src.lo) / n;
  for (int i = 0; i < n; ++i) {
    const double c = static_cast<double>(src.counts[static_cast<size_t>(i)]);
    if (c == 0) continue;
    const double a = src.lo + i * srcWidth;
    const double b = a + srcWidth;
    if (srcWidth <= 0) {
      const int k = std::clamp(static_cast<int>((a - lo) / width), 0, bins - 1);
      out[static_cast<size_t>(k)] += c;
      continue;
    }
    const int first = std::clamp(static_cast<int>(std::floor((a - lo) / width)), 0, bins - 1);
    const int last = std::clamp(static_cast<int>(std::floor((b - lo) / width)), 0, bins - 1);
    for (int k = first; k <= last; ++k) {
      const double overlap = std::min(b, lo + (k + 1) * width) - std::max(a, lo + k * width);
      if (overlap > 0) out[static_cast<size_t>(k)] += c * overlap / srcWidth;
    }
  }
}

}  // namespace

HistogramView::HistogramView(QWidget* parent) : QCustomPlot(parent) {
  setNoAntialiasingOnDrag(true);
  plotLayout()->clear();
  heatRect_ = new QCPAxisRect(this);
  sideRect_ = new QCPAxisRect(this);
  plotLayout()->addElement(0, 0, heatRect_);
  plotLayout()->addElement(0, 1, sideRect_);
  plotLayout()->setColumnStretchFactors({3, 1});
  auto* margins = new QCPMarginGroup(this);
  heatRect_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
  sideRect_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
  QFont small = font();
  small.setPointSizeF(8);
  for (QCPAxisRect* r : {heatRect_, sideRect_}) {
    for (QCPAxis* a : r->axes()) {
      a->setTickLabelFont(small);
      a->setLabelFont(small);
    }
  }
  heatRect_->axis(QCPAxis::atBottom)->setLabel(tr("step"));
  sideRect_->axis(QCPAxis::atBottom)->setLabel(tr("count"));
  sideRect_->axis(QCPAxis::atLeft)->setTickLabels(false);
  // The side plot is narrow: two count ticks are all that fit.
  sideRect_->axis(QCPAxis::atBottom)->ticker()->setTickCount(2);

  map_ = new QCPColorMap(heatRect_->axis(QCPAxis::atBottom), heatRect_->axis(QCPAxis::atLeft));
  map_->setInterpolate(false);
  map_->setTightBoundary(true);

  // Horizontal bars: the key axis is the side rect's left (value) axis.
  bars_ = new QCPBars(sideRect_->axis(QCPAxis::atLeft), sideRect_->axis(QCPAxis::atBottom));
  bars_->setPen(Qt::NoPen);
  bars_->setBrush(QColor(0x21, 0x71, 0xb5));
  applyColours();
  followPalette(this);

  note_ = new QCPItemText(this);
  note_->setClipToAxisRect(false);
  note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  note_->position->setAxisRect(heatRect_);
  note_->position->setCoords(0.5, 0.5);
  note_->setColor(QColor(0x70, 0x70, 0x70));

  // A dragged rectangle zooms (re-binned): see the header.
  setSelectionRectMode(QCP::srmCustom);
  connect(selectionRect(), &QCPSelectionRect::accepted, this,
          [this](const QRect& rect, QMouseEvent*) {
            if (rows_.empty() || !heatRect_->rect().intersects(rect)) return;
            QCPAxis* x = heatRect_->axis(QCPAxis::atBottom);
            QCPAxis* y = heatRect_->axis(QCPAxis::atLeft);
            const double s0 = x->pixelToCoord(rect.left()), s1 = x->pixelToCoord(rect.right());
            const double v0 = y->pixelToCoord(rect.bottom()), v1 = y->pixelToCoord(rect.top());
            if (std::abs(rect.width()) < 4 || std::abs(rect.height()) < 4) return;
            zoomTo(static_cast<int64_t>(std::floor(std::min(s0, s1))),
                   static_cast<int64_t>(std::ceil(std::max(s0, s1))), std::min(v0, v1),
                   std::max(v0, v1));
          });
  showMessage(tr("no samples yet"));
}

void HistogramView::showSeries(const std::vector<train::ProbeSample>& samples, Rebin rebin,
                               const QString& valueLabel) {
  samples_ = samples;
  rebin_ = std::move(rebin);
  heatRect_->axis(QCPAxis::atLeft)->setLabel(valueLabel);
  rebuild();
}

void HistogramView::showMessage(const QString& message) {
  samples_.clear();
  rows_.clear();
  zoom_.reset();
  columns_ = 0;
  note_->setText(message);
  draw();
}

void HistogramView::setLogScale(bool on) {
  if (log_ == on) return;
  log_ = on;
  draw();
}

void HistogramView::zoomTo(int64_t firstStep, int64_t lastStep, double lo, double hi) {
  if (!(hi > lo) || lastStep < firstStep) return;
  zoom_ = Zoom{firstStep, lastStep, lo, hi};
  rebuild();
  emit zoomChanged();
}

void HistogramView::resetZoom() {
  if (!zoom_) return;
  zoom_.reset();
  rebuild();
  emit zoomChanged();
}

double HistogramView::latestTotal() const {
  if (rows_.empty()) return 0;
  double total = 0;
  for (double c : rows_.back().counts) total += c;
  return total;
}

void HistogramView::rebuild() {
  rows_.clear();
  note_->setText(QString());
  if (zoom_ && rebin_) {
    lo_ = zoom_->lo;
    hi_ = zoom_->hi;
    const train::Rebinned r = rebin_(zoom_->first, zoom_->last, lo_, hi_, kBins);
    for (size_t i = 0; i < r.steps.size(); ++i) rows_.push_back({r.steps[i], r.counts[i]});
    if (rows_.empty())
      note_->setText(tr("no kept values in steps %1–%2").arg(zoom_->first).arg(zoom_->last));
  } else {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const train::ProbeSample& s : samples_) {
      if (s.stats.histogram.counts.empty()) continue;
      lo = std::min(lo, s.stats.histogram.lo);
      hi = std::max(hi, s.stats.histogram.hi);
    }
    if (!(lo <= hi)) {
      note_->setText(samples_.empty() ? tr("no samples yet") : tr("no finite values"));
      draw();
      return;
    }
    if (hi == lo) {
      // One value: a range around it, so that it sits in a bin of its own.
      const double pad = std::max(std::abs(lo) * 0.1, 1e-6);
      lo -= pad;
      hi += pad;
    }
    lo_ = lo;
    hi_ = hi;
    for (const train::ProbeSample& s : samples_) {
      Row row{s.step, std::vector<double>(kBins, 0.0)};
      spread(s.stats.histogram, lo_, hi_, row.counts);
      rows_.push_back(std::move(row));
    }
  }
  draw();
}

void HistogramView::draw() {
  QCPAxis* x = heatRect_->axis(QCPAxis::atBottom);
  QCPAxis* y = heatRect_->axis(QCPAxis::atLeft);
  QCPAxis* sideValue = sideRect_->axis(QCPAxis::atLeft);
  QCPAxis* sideCount = sideRect_->axis(QCPAxis::atBottom);
  auto z = [this](double c) { return log_ ? std::log10(1 + c) : c; };
  if (rows_.empty()) {
    map_->data()->clear();
    bars_->data()->clear();
    columns_ = 0;
    replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  // A uniform grid of columns over the step range; each column shows the latest row at or
  // before its step (rows can be irregular: thinned, or only the kept steps when zoomed).
  const int64_t s0 = rows_.front().step, s1 = rows_.back().step;
  int64_t gap = std::numeric_limits<int64_t>::max();
  for (size_t i = 1; i < rows_.size(); ++i) gap = std::min(gap, rows_[i].step - rows_[i - 1].step);
  if (gap <= 0 || gap == std::numeric_limits<int64_t>::max()) gap = 1;
  columns_ = static_cast<int>(std::clamp<int64_t>((s1 - s0) / gap + 1, 1, kMaxColumns));
  const double binWidth = (hi_ - lo_) / kBins;
  const double colWidth = columns_ > 1 ? static_cast<double>(s1 - s0) / (columns_ - 1) : 1.0;
  map_->data()->setSize(columns_, kBins);
  map_->data()->setRange(
      QCPRange(static_cast<double>(s0), static_cast<double>(s0) + colWidth * (columns_ - 1)),
      QCPRange(lo_ + binWidth / 2, hi_ - binWidth / 2));
  size_t row = 0;
  for (int c = 0; c < columns_; ++c) {
    const double step = static_cast<double>(s0) + colWidth * c;
    while (row + 1 < rows_.size() && static_cast<double>(rows_[row + 1].step) <= step + 1e-9) ++row;
    const std::vector<double>& counts = rows_[row].counts;
    for (int b = 0; b < kBins; ++b) map_->data()->setCell(c, b, z(counts[static_cast<size_t>(b)]));
  }
  map_->rescaleDataRange(true);
  x->setRange(static_cast<double>(s0) - colWidth / 2,
              static_cast<double>(s0) + colWidth * (columns_ - 0.5));
  y->setRange(lo_, hi_);

  QVector<double> keys(kBins), values(kBins);
  double top = 0;
  for (int b = 0; b < kBins; ++b) {
    keys[b] = lo_ + (b + 0.5) * binWidth;
    values[b] = z(rows_.back().counts[static_cast<size_t>(b)]);
    top = std::max(top, values[b]);
  }
  bars_->setWidth(binWidth);
  bars_->setData(keys, values, true);
  sideValue->setRange(lo_, hi_);
  sideCount->setRange(0, top > 0 ? top * 1.05 : 1);
  sideCount->setLabel(log_ ? tr("log10(1 + count), step %1").arg(rows_.back().step)
                           : tr("count, step %1").arg(rows_.back().step));
  replot(QCustomPlot::rpQueuedReplot);
}

void HistogramView::applyColours() {
  // From the background (nothing) to a strong blue (many): the empty parts of the value range
  // stay quiet. On a dark background the blues run from dark to light.
  const QColor base = palette().color(QPalette::Base);
  const bool dark = CanvasTheme::isDark(palette());
  QCPColorGradient blues;
  blues.clearColorStops();
  blues.setColorStopAt(0, base);
  blues.setColorStopAt(0.02, dark ? QColor(0x1d, 0x3a, 0x5c) : QColor(0xc6, 0xdb, 0xef));
  blues.setColorStopAt(0.25, dark ? QColor(0x2b, 0x6c, 0xb0) : QColor(0x6b, 0xae, 0xd6));
  blues.setColorStopAt(0.6, dark ? QColor(0x5a, 0xa8, 0xe6) : QColor(0x21, 0x71, 0xb5));
  blues.setColorStopAt(1, dark ? QColor(0xd2, 0xe8, 0xff) : QColor(0x08, 0x30, 0x6b));
  map_->setGradient(blues);
}

void HistogramView::changeEvent(QEvent* event) {
  QCustomPlot::changeEvent(event);
  if (event->type() == QEvent::PaletteChange) {
    applyColours();
    replot(rpQueuedReplot);
  }
}

void HistogramView::wheelEvent(QWheelEvent* event) {
  if (rows_.empty() || !heatRect_->rect().contains(event->position().toPoint())) {
    event->ignore();
    return;
  }
  // Zooms the value axis around the cursor; the step range stays.
  const double factor = std::pow(0.85, event->angleDelta().y() / 120.0);
  const double at = heatRect_->axis(QCPAxis::atLeft)->pixelToCoord(event->position().y());
  const double lo = at - (at - lo_) * factor, hi = at + (hi_ - at) * factor;
  const int64_t first = zoom_ ? zoom_->first : rows_.front().step;
  const int64_t last = zoom_ ? zoom_->last : rows_.back().step;
  zoomTo(first, last, lo, hi);
  event->accept();
}

void HistogramView::mouseDoubleClickEvent(QMouseEvent* event) {
  resetZoom();
  QCustomPlot::mouseDoubleClickEvent(event);
}

}  // namespace nns::ui
