// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// DecisionBoundaryWidget: what the model predicts over its input space, redrawn
// as it learns (TensorFlow Playground's output panel). For a 2-D classification
// set, a heatmap of the predicted class over a kGrid x kGrid grid covering the
// data (plus a margin), coloured by class with the confidence as saturation,
// under the train points (filled) and the test points (outlined). For a 1-D
// regression set, the fitted curve over the data. Other sets (images, tables)
// have no such picture: the widget says so. For a set of token sequences, a few
// test sequences with the model's answer against the target, a token per cell
// (green right, red wrong), and the test accuracy per position as bars; for
// sequences of values (forecast), a few test windows with the next value and
// the model's forecast of it.
//
// The predictions come from the session's predict() (eval mode, between two
// steps, so a run is never disturbed): while the step count moves, the widget
// asks for one at most kRateHz times a second and never while one is
// unanswered, so a slow model never queues up work.
#include <QImage>
#include <QPixmap>
#include <QWidget>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/train/session.h"

class QPainter;
class QTimer;

namespace nns::ui {

class TrainingController;

class DecisionBoundaryWidget : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kGrid = 64;          // heatmap cells per side
  static constexpr int kCurvePoints = 256;  // samples of a fitted curve
  static constexpr int kRateHz = 10;
  static constexpr int kShownSequences = 6;
  static constexpr int kShownImages = 24;
  // Images: the first kShownImages test images in a grid, each framed green
  // where the model's class is right and red where it is wrong, the class it
  // gave in the corner; after an evaluation, the confusion matrix over the whole
  // test set beside the first kShownImages test images it gets wrong.
  enum class Mode { None, Heatmap, Curve, Sequence, Forecast, Images };

  explicit DecisionBoundaryWidget(TrainingController* controller, QWidget* parent = nullptr);

  Mode mode() const { return mode_; }
  // Predictions drawn so far (since the widget was made).
  int predictionsShown() const { return predictionsShown_; }
  // The step the picture shows (-1: none yet).
  int64_t shownStep() const { return shownStep_; }
  const QImage& heatmap() const { return heatmap_; }
  // Why nothing is drawn (empty when the picture shows the current session).
  const QString& message() const { return why_; }

  // Sequence mode: the model's answer for each shown sequence (a class per
  // position, or one class per sequence), and the test accuracy per position of
  // the last evaluation.
  const std::vector<int64_t>& predictedTokens() const { return predicted_; }
  const std::vector<double>& positionAccuracy() const { return positionAccuracy_; }

  // The colour of class c (shared by the heatmap and the points).
  static QColor classColor(int64_t c);

  // Images mode: the model's class for each shown image (empty before the first
  // answer).
  const std::vector<int64_t>& predictedClasses() const { return predicted_; }
  // Where a shown test sample is drawn (its point, image or sequence row), for
  // a click; null outside Heatmap, Images and Sequence or before the first
  // paint.
  QRectF sampleRect(int64_t index) const;

  // Images, after an evaluation: its step, the classes, the count of test
  // samples of class `truth` given `predicted`, the wrong ones, and the test
  // set's index of each shown image.
  int64_t evaluatedStep() const { return evaluatedStep_; }
  int64_t confusionClasses() const { return confusion_.empty() ? 0 : classes_; }
  int64_t confusion(int64_t truth, int64_t predicted) const;
  int64_t wrongCount() const { return wrongCount_; }
  const std::vector<int64_t>& shownIndices() const { return shownIndices_; }

  // Trace one sample: a click on a test point (Heatmap), a test image (Images)
  // or a test sequence's row (Sequence) sends that sample through the model
  // with hooks on every module (TrainingController::requestTrace); the canvas
  // shows what each node did with it. The traced sample is ringed or framed; a
  // double-click clears the trace.
  bool traceTestSample(int64_t index);
  void clearTrace();
  int64_t tracedSample() const { return traced_; }
  uint64_t traceRequest() const { return traceRequest_; }

 signals:
  // A trace was asked for (its id: the one traceArrived will carry) or cleared.
  void traceRequested(uint64_t id);
  void traceCleared();

 protected:
  void paintEvent(QPaintEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  void takeData();
  void tick();
  void showPrediction(const train::Prediction& prediction);
  QRectF plotRect() const;
  QPointF toWidget(double x, double y) const;
  void drawPoints(QPainter& painter) const;
  void takeSequences(const data::Dataset& shown);
  void paintSequences(QPainter& painter);
  void paintForecast(QPainter& painter);
  void takeImages(const data::Dataset& shown);
  void showImages(const std::vector<int64_t>& indices);
  void takeEvaluation(const train::Evaluation& evaluation);
  void paintImages(QPainter& painter);
  void paintConfusion(QPainter& painter, const QRectF& area);

  TrainingController* controller_;
  QTimer* timer_;
  Mode mode_ = Mode::None;
  QString why_;  // Mode::None: why there is no picture
  // The points, read once per data set: inputs row-major, targets as class
  // indices (Heatmap) or values (Curve).
  std::vector<float> trainX_, testX_, trainValue_, testValue_;
  std::vector<int64_t> trainClass_, testClass_;
  // The data's box with the margin: x in [x0, x1], y in [y0, y1] (Curve: y of
  // the targets).
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
  Tensor grid_;  // the inputs predicted on
  uint64_t pending_ = 0;
  int64_t requestedStep_ = -1;
  int64_t shownStep_ = -1;
  int predictionsShown_ = 0;
  QImage heatmap_;
  QPixmap points_;              // the data points, drawn once per size and data set (see
                                // paintEvent)
  std::vector<QPointF> curve_;  // (x, predicted y)
  // Sequence and Forecast: the shown sequences (row-major [count, length]) and
  // their targets
  // ([count, length] per position, [count] per sequence), the model's answers,
  // the tokens' and classes' names; Forecast: the windows' values, next values
  // and forecasts.
  int64_t shownCount_ = 0;
  int64_t length_ = 0;
  std::vector<int64_t> tokens_;
  std::vector<int64_t> targets_;
  std::vector<int64_t> predicted_;
  bool perPosition_ = false;
  QStringList vocabulary_, classNames_;
  std::vector<float> windows_, nextValues_, forecasts_;
  std::vector<double> positionAccuracy_;
  // Images: the shown images (grey, scaled over the set) and their classes; a
  // click's targets (Images: each image's box; Sequence: each row's), from the
  // last paint.
  std::vector<QImage> images_;
  data::Dataset imageSet_;             // the test images (tensor handles, not a copy)
  std::vector<int64_t> shownIndices_;  // imageSet_'s index of each shown image
  std::vector<int64_t> confusion_;     // [classes_ x classes_]: true class by predicted
  int64_t classes_ = 0;
  int64_t wrongCount_ = 0;
  int64_t evaluatedStep_ = -1;
  Tensor shownInputs_,
      shownTargets_;  // the shown samples as the model takes them
  std::vector<QRectF> sampleRects_;
  int64_t traced_ = -1;  // the test sample traced (-1: none)
  uint64_t traceRequest_ = 0;
};

}  // namespace nns::ui
