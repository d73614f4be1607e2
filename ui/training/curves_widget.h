// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// CurvesWidget: the training curves (QCustomPlot). Loss on the left axis: the train loss of
// every step (raw, faint) and its moving average, and the test loss of every evaluation;
// accuracy on the right axis (0 to 1): the train accuracy of every epoch and the test
// accuracy of every evaluation, and for a class per position the share of test sequences right
// at every position (in the legend only then). A log-scale toggle for the loss axis.
//
// The data comes from a TrainingController's signals, which its timer emits a few dozen
// times a second; each batch of data asks for one queued replot, so the plot redraws at most
// once per event-loop pass whatever the training speed. Long runs stay light: when a step
// curve passes kMaxStepPoints, every other point is dropped and from then on only every
// second step is kept (and so on), so memory and drawing time stay bounded. The per-epoch
// curves are bounded the same way (a fast model on a small dataset ends hundreds of epochs a
// second): past kMaxEpochPoints they keep only points at least a growing number of steps
// apart. Markers are drawn while a curve has few points; on a dense curve they would only
// overlap, and drawing thousands of them made a replot take longer than a frame.
//
// Other runs (the Runs panel's checked ones) are drawn beside the live curves, each in its
// own colour: its smoothed train loss (solid) and its test accuracy (dashed), from the run
// store. A vertical line marks the step the session was put at (the time slider).
#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

#include "engine/train/session.h"

class QCheckBox;
class QCustomPlot;
class QCPGraph;
class QCPItemStraightLine;

namespace nns::ui {

class TrainingController;

// A recorded run's curves, for drawing beside the live ones.
struct RunCurves {
  int64_t run = 0;
  QColor colour;
  QString label;  // "run 3"
  std::vector<train::StepMetrics> steps;
  std::vector<train::EpochMetrics> epochs;
};

class CurvesWidget : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kMaxStepPoints = 20000;
  static constexpr int kMaxEpochPoints = 2000;
  static constexpr int kMaxMarkedPoints = 60;

  explicit CurvesWidget(TrainingController* controller, QWidget* parent = nullptr);

  QCustomPlot* plot() const { return plot_; }
  QCheckBox* logScaleBox() const { return logScale_; }
  // Points on each curve (for tests and the benchmark).
  int trainLossPoints() const;
  int testLossPoints() const;
  int testAccuracyPoints() const;
  int testSequencePoints() const;
  // Replots done so far (the benchmark measures their rate).
  int replots() const { return replots_; }

  void clear();
  void setLogScale(bool on);
  // Replaces the other runs drawn (none: an empty list).
  void setOverlays(const std::vector<RunCurves>& runs);
  int overlayCount() const { return static_cast<int>(overlayGraphs_.size() / 2); }
  // The vertical line at `step` (negative: none).
  void setCursorStep(int64_t step);
  int64_t cursorStep() const { return cursorStep_; }

 private:
  void addSteps(const std::vector<train::StepMetrics>& metrics);
  void addEpochs(const std::vector<train::EpochMetrics>& epochs);
  void addEvaluation(const train::Evaluation& evaluation);
  void addTestPoint(int64_t step, double loss, double accuracy, double sequences);
  void thin();
  void thinEpochCurves();
  void updateMarkers();
  void requestReplot();
  void rescale();

  QCustomPlot* plot_;
  QCheckBox* logScale_;
  QCPGraph* rawLoss_;
  QCPGraph* smoothLoss_;
  QCPGraph* testLoss_;
  QCPGraph* trainAccuracy_;
  QCPGraph* testAccuracy_;
  QCPGraph* testSequences_;
  int64_t stride_ = 1;         // keep steps that are multiples of this
  double epochGap_ = 0;        // per-epoch points kept at least this many steps apart
  int64_t lastTestStep_ = -1;  // the last test point's step
  int64_t lastTrainAccuracyStep_ = -1;
  int replots_ = 0;
  std::vector<QCPGraph*> overlayGraphs_;  // two per run: loss, test accuracy
  QCPItemStraightLine* cursor_ = nullptr;
  int64_t cursorStep_ = -1;
};

}  // namespace nns::ui
