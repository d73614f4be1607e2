// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's picture of one traced sample (TrainingSession::trace, asked for by clicking a
// test point in the Output panel): each node with a module shows its output for that sample
// as a strip of bars (up to kBars values, scaled by the largest magnitude) and is tinted by
// the size of the loss's gradient w.r.t. that output (blue, log scale from 1e-6 to 1), whose
// RMS is the figure on the node; the tooltip lists the first values of both. Stepping through
// the pass node by node (F11) shows each module's tensors in a TraceStepView.
#include <QWidget>
#include <map>
#include <vector>

#include "engine/graph/spec.h"
#include "engine/train/session.h"
#include "ui/canvas/graph_scene.h"

namespace nns::ui {

class TrainingController;

constexpr size_t kTraceBars = 24;

// The colour of a gradient's RMS (pale below 1e-6, deep at 1 and above).
QColor gradientColour(double rms);

// "input [1, 2] 0.3, -0.7 → output [1, 64] 0.12, … ; gradient RMS 0.0011": one module's
// step of a traced forward pass, for the status bar.
QString describeTraceStep(const train::ModuleTrace& module);

// Train > Step Through Traced Sample's view: one module of the traced sample's pass, its input,
// its output and the loss's gradient w.r.t. that output, each drawn from the sample's values
// (the batch of one dropped): a tensor of two or more dimensions as heatmaps (one tile per
// slice of its last two dimensions: a feature map per channel, at most kTraceTiles tiles of at
// most kTraceCells cells each way), one of one
// dimension as bars; blue below zero, red above, scaled by the panel's largest magnitude.
class TraceStepView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int64_t kTraceCells = 64;
  static constexpr int64_t kTraceTiles = 16;
  struct Panel {
    QString label;               // "input", "output", "gradient"
    std::vector<int64_t> shape;  // the tensor's, batch included
    bool heatmap = false;        // false: bars
    int64_t rows = 0, cols = 0;  // one tile's cells (cut at kTraceCells)
    int64_t tiles = 0;           // heatmaps drawn (of allTiles; bars: 1)
    int64_t allTiles = 0;
    std::vector<double> cells;  // tiles * rows * cols values, tile by tile, row-major
    double largest = 0;         // the scale: the largest magnitude drawn
  };

  explicit TraceStepView(QWidget* parent = nullptr);
  // Shows one module's step ("fc1 (Linear)", step 3 of 7).
  void showStep(const QString& title, const train::ModuleTrace& module);
  void clear();
  const QString& title() const { return title_; }
  const std::vector<Panel>& panels() const { return panels_; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QString title_;
  std::vector<Panel> panels_;
};

std::map<graph::NodeId, GraphScene::NodeBadge> traceBadges(const train::SampleTrace& trace,
                                                           const TrainingController& controller,
                                                           const graph::Graph& graph);

}  // namespace nns::ui
