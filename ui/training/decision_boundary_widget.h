#pragma once
// DecisionBoundaryWidget: what the model predicts over its input space, redrawn as it learns
// (TensorFlow Playground's output panel). For a 2-D classification set, a heatmap of the
// predicted class over a kGrid x kGrid grid covering the data (plus a margin), coloured by
// class with the confidence as saturation, under the train points (filled) and the test
// points (outlined). For a 1-D regression set, the fitted curve over the data. Other sets
// (images, tables) have no such picture: the widget says so.
//
// The predictions come from the session's predict() (eval mode, between two steps, so a run
// is never disturbed): while the step count moves, the widget asks for one at most kRateHz
// times a second and never while one is unanswered, so a slow model never queues up work.
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
  enum class Mode { None, Heatmap, Curve };

  explicit DecisionBoundaryWidget(TrainingController* controller, QWidget* parent = nullptr);

  Mode mode() const { return mode_; }
  // Predictions drawn so far (since the widget was made).
  int predictionsShown() const { return predictionsShown_; }
  // The step the picture shows (-1: none yet).
  int64_t shownStep() const { return shownStep_; }
  const QImage& heatmap() const { return heatmap_; }
  // Why nothing is drawn (empty when the picture shows the current session).
  const QString& message() const { return why_; }

  // The colour of class c (shared by the heatmap and the points).
  static QColor classColor(int64_t c);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void takeData();
  void tick();
  void showPrediction(const train::Prediction& prediction);
  QRectF plotRect() const;
  QPointF toWidget(double x, double y) const;
  void drawPoints(QPainter& painter) const;

  TrainingController* controller_;
  QTimer* timer_;
  Mode mode_ = Mode::None;
  QString why_;  // Mode::None: why there is no picture
  // The points, read once per data set: inputs row-major, targets as class indices (Heatmap)
  // or values (Curve).
  std::vector<float> trainX_, testX_, trainValue_, testValue_;
  std::vector<int64_t> trainClass_, testClass_;
  // The data's box with the margin: x in [x0, x1], y in [y0, y1] (Curve: y of the targets).
  double x0_ = 0, x1_ = 1, y0_ = 0, y1_ = 1;
  Tensor grid_;  // the inputs predicted on
  uint64_t pending_ = 0;
  int64_t requestedStep_ = -1;
  int64_t shownStep_ = -1;
  int predictionsShown_ = 0;
  QImage heatmap_;
  QPixmap points_;  // the data points, drawn once per size and data set (see paintEvent)
  std::vector<QPointF> curve_;  // (x, predicted y)
};

}  // namespace nns::ui
