// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// HistogramView: one probe series (say, a layer's activations) as histograms over time. On the
// left a step-by-bin heatmap (x: step, y: value, colour: count), on the right the latest
// step's histogram on the same value axis.
//
// Unzoomed, every received sample shows: each sample's own 32-bin histogram is spread over a
// common value range. Zooming (the mouse wheel over the heatmap zooms the value axis; a
// dragged rectangle picks a step range and a value range; a double-click goes back) re-bins
// the raw values the engine's probes keep (Probes::rebin: the early steps and the recent ones)
// over the new range, so a narrow range shows real detail rather than stretched bins.
//
// The view only redraws when told (showSeries, setLogScale, a zoom): the probe panel calls it
// from its frame timer, never per step.
#include <qcustomplot.h>
#include <functional>
#include <optional>
#include <vector>

#include "engine/train/probes.h"

namespace nns::ui {

class HistogramView : public QCustomPlot {
  Q_OBJECT

 public:
  static constexpr int kBins = 64;
  static constexpr int kMaxColumns = 240;
  // Kept values of steps [first, last] re-binned into `bins` bins over [lo, hi].
  using Rebin =
      std::function<train::Rebinned(int64_t first, int64_t last, double lo, double hi, int bins)>;

  explicit HistogramView(QWidget* parent = nullptr);

  // The series' samples (oldest first) and how to re-bin its kept values; redraws. The zoom
  // stays (and is re-binned again) while the series is the same.
  void showSeries(const std::vector<train::ProbeSample>& samples, Rebin rebin,
                  const QString& valueLabel);
  // Nothing to show: an empty plot with the reason.
  void showMessage(const QString& message);
  void setLogScale(bool on);
  bool logScale() const { return log_; }

  // Steps [firstStep, lastStep] and values [lo, hi], re-binned from the kept values.
  void zoomTo(int64_t firstStep, int64_t lastStep, double lo, double hi);
  void resetZoom();
  bool isZoomed() const { return zoom_.has_value(); }

  // What the last redraw drew (for tests and the panel's labels).
  int columns() const { return columns_; }
  size_t rows() const { return rows_.size(); }
  double latestTotal() const;
  int64_t firstStep() const { return rows_.empty() ? 0 : rows_.front().step; }
  int64_t lastStep() const { return rows_.empty() ? 0 : rows_.back().step; }
  double valueLow() const { return lo_; }
  double valueHigh() const { return hi_; }

 signals:
  void zoomChanged();

 protected:
  void changeEvent(QEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  struct Zoom {
    int64_t first, last;
    double lo, hi;
  };
  struct Row {
    int64_t step;
    std::vector<double> counts;  // kBins, over [lo_, hi_]
  };
  void rebuild();
  void draw();
  // The heatmap's colours, from the palette (light or dark).
  void applyColours();

  QCPAxisRect* heatRect_;
  QCPAxisRect* sideRect_;
  QCPColorMap* map_;
  QCPBars* bars_;
  QCPItemText* note_;
  std::vector<train::ProbeSample> samples_;
  Rebin rebin_;
  std::optional<Zoom> zoom_;
  std::vector<Row> rows_;
  double lo_ = 0, hi_ = 1;
  int columns_ = 0;
  bool log_ = false;
};

}  // namespace nns::ui
