// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The probe panel (an inspector tab): what the probe on the selected node has seen while it
// trains. A series chooser (the module's activations, the gradients w.r.t. its outputs and
// inputs, its parameters' gradients), the series' histograms over time (HistogramView: a
// step-by-bin heatmap that re-bins from the kept values when zoomed, and the latest
// histogram), its mean and mean ± std over steps with the dead-unit and saturation rates,
// and each parameter's gradient norm and update-to-weight ratio over steps and at the latest
// sampled step; for a node with MultiheadAttention in it (a Transformer layer), the attention
// maps per head of a chosen test sequence (AttentionView); for a box that stands for a folded
// run of N equal blocks, the series' latest statistics of each repeat side by side. A node
// without a probe offers to add one.
//
// Everything is read from the window's NodeHealthModel (fed by the TrainingController's
// probe samples) and redrawn by a frame timer on the GUI thread at 25 fps at most, only when
// new samples arrived and the panel is visible, whatever the training speed.
#include <QWidget>
#include <cstdint>

#include "engine/graph/spec.h"
#include "engine/train/probes.h"
#include "ui/probes/node_health.h"

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QPushButton;
class QTableWidget;
class QTimer;

namespace nns::ui {

class AttentionView;
class HistogramView;
class ProjectDocument;
class TrainingController;

class ProbePanel : public QWidget {
  Q_OBJECT

 public:
  // The frame timer's period: 40 ms, 25 fps.
  static constexpr int kFrameMs = 40;

  ProbePanel(ProjectDocument* document, TrainingController* controller, NodeHealthModel* health,
             QWidget* parent = nullptr);

  // The node shown: the single selected node (0 for none or several).
  graph::NodeId node() const { return node_; }
  HistogramView* histogram() const { return histogram_; }
  QCustomPlot* momentsPlot() const { return moments_; }
  QCustomPlot* parameterPlot() const { return paramPlot_; }
  QTableWidget* parameterTable() const { return paramTable_; }
  // A box that stands for a folded run of N repeats: the chosen series' latest statistics of
  // each repeat, one column each (hidden for other nodes).
  QTableWidget* repeatTable() const { return repeatTable_; }
  QComboBox* seriesBox() const { return series_; }
  QCheckBox* logScaleBox() const { return logScale_; }
  QPushButton* probeButton() const { return probeButton_; }
  // The attention maps of a probed node with MultiheadAttention in it (hidden otherwise).
  AttentionView* attentionView() const { return attention_; }
  // Samples of the shown series, and its latest sampled step (0 for none).
  size_t sampleCount() const { return sampleCount_; }
  int64_t lastStep() const { return lastStep_; }

  // Redraws now if anything changed since the last frame (what the frame timer does).
  void refresh();

 private:
  void followSelection();
  void redraw();
  void updateHeader();
  void drawMoments(const std::vector<train::ProbeSample>& samples,
                   const std::vector<train::ProbeSample>* activations);
  void drawParameters(const NodeHealthModel::SeriesMap& series);
  void drawRepeats(const NodeHealthModel::SeriesKey& key);

  ProjectDocument* document_;
  TrainingController* controller_;
  NodeHealthModel* health_;
  graph::NodeId node_ = 0;
  QLabel* title_;
  QPushButton* probeButton_;
  QComboBox* series_;
  QCheckBox* logScale_;
  QLabel* stats_;
  HistogramView* histogram_;
  QCustomPlot* moments_;
  QCustomPlot* paramPlot_;
  QTableWidget* paramTable_;
  QTableWidget* repeatTable_;
  AttentionView* attention_;
  QTimer* frame_;
  uint64_t drawnRevision_ = 0;
  bool dirty_ = true;
  size_t sampleCount_ = 0;
  int64_t lastStep_ = 0;
};

}  // namespace nns::ui
