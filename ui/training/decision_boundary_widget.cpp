// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/decision_boundary_widget.h"

#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <tuple>

#include "engine/data/sequences.h"
#include "engine/tensor/factories.h"
#include "ui/document/qt_strings.h"
#include "ui/training/class_samples_view.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

constexpr double kMargin = 0.1;  // of the data's extent, on each side

// The range of column `col` of a float [N, D] tensor's elements, widened by
// kMargin of its size on each side: the part of the plane the picture shows.
std::pair<double, double> paddedExtent(const std::vector<float>& values, int64_t cols,
                                       int64_t col) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = static_cast<size_t>(col); i < values.size(); i += static_cast<size_t>(cols)) {
    lo = std::min(lo, static_cast<double>(values[i]));
    hi = std::max(hi, static_cast<double>(values[i]));
  }
  if (!(lo <= hi)) {
    lo = 0;
    hi = 1;
  } else if (hi - lo < 1e-9) {
    lo -= 0.5;
    hi += 0.5;
  }
  return {lo - kMargin * (hi - lo), hi + kMargin * (hi - lo)};
}

}  // namespace

DecisionBoundaryWidget::DecisionBoundaryWidget(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), timer_(new QTimer(this)) {
  setMinimumSize(180, 180);
  setAttribute(Qt::WA_OpaquePaintEvent);
  connect(controller_, &TrainingController::sessionReset, this, &DecisionBoundaryWidget::takeData);
  // None could be made (no sessionReset when there was none before either): why.
  connect(controller_, &TrainingController::sessionMade, this, [this] {
    if (!controller_->currentSession()) takeData();
  });
  // Why there was no session is about the graph before the edit (or the project before the
  // one opened): until the new session is made (tick()), the panel says it is on its way.
  connect(controller_, &TrainingController::sessionStale, this, [this] {
    if (controller_->currentSession() || why_.isEmpty()) return;
    why_ = tr("Making the model…");
    update();
  });
  connect(controller_, &TrainingController::predictionArrived, this,
          &DecisionBoundaryWidget::showPrediction);
  connect(controller_, &TrainingController::evaluationArrived, this,
          [this](const train::Evaluation& e) {
            positionAccuracy_ = e.position_accuracy;
            if (mode_ == Mode::Sequence) update();
            takeEvaluation(e);
          });
  connect(timer_, &QTimer::timeout, this, &DecisionBoundaryWidget::tick);
  timer_->start(1000 / kRateHz);
  takeData();
}

QRectF DecisionBoundaryWidget::sampleRect(int64_t index) const {
  if (index < 0) return {};
  if (mode_ == Mode::Heatmap) {
    if (static_cast<size_t>(index) >= testClass_.size()) return {};
    const QPointF c = toWidget(testX_[2 * index], testX_[2 * index + 1]);
    return {c.x() - 4, c.y() - 4, 8, 8};
  }
  if ((mode_ == Mode::Images || mode_ == Mode::Sequence) &&
      static_cast<size_t>(index) < sampleRects_.size()) {
    return sampleRects_[static_cast<size_t>(index)];
  }
  return {};
}

bool DecisionBoundaryWidget::traceTestSample(int64_t index) {
  Tensor input, target;
  QString what;
  if (mode_ == Mode::Heatmap && index >= 0 && static_cast<size_t>(index) < testClass_.size()) {
    input = from_vector(std::vector<float>{testX_[2 * index], testX_[2 * index + 1]}, Shape{1, 2});
    target = from_vector(std::vector<int64_t>{testClass_[index]}, Shape{1});
    what = tr("test sample %1 (class %2)").arg(index).arg(testClass_[index]);
  } else if ((mode_ == Mode::Images || mode_ == Mode::Sequence) && index >= 0 &&
             index < shownCount_ && shownInputs_.defined()) {
    // The sample as the model takes it (a batch of one), and its target (a
    // class, or a class per position).
    input = shownInputs_.narrow(0, index, 1).contiguous();
    target = shownTargets_.narrow(0, index, 1).contiguous();
    const int64_t sample =
        mode_ == Mode::Images && static_cast<size_t>(index) < shownIndices_.size()
            ? shownIndices_[static_cast<size_t>(index)]
            : index;
    what = mode_ == Mode::Images ? tr("test image %1").arg(sample)
                                 : tr("test sequence %1").arg(sample);
  } else {
    return false;
  }
  const uint64_t id = controller_->requestTrace(input, target);
  if (id == 0) return false;
  traced_ = index;
  traceRequest_ = id;
  setToolTip(tr("Traced %1: each node shows its output for it (bars) and the "
                "gradient of its "
                "loss (blue, the figure); Train → Step Through Traced Sample "
                "(F11) draws each "
                "node's tensors. Double-click to clear.")
                 .arg(what));
  update();
  emit traceRequested(id);
  return true;
}

void DecisionBoundaryWidget::clearTrace() {
  if (traced_ < 0) return;
  traced_ = -1;
  traceRequest_ = 0;
  setToolTip(QString());
  update();
  emit traceCleared();
}

void DecisionBoundaryWidget::mousePressEvent(QMouseEvent* event) {
  if (event->button() != Qt::LeftButton) return;
  if (mode_ == Mode::Images || mode_ == Mode::Sequence) {
    for (size_t i = 0; i < sampleRects_.size(); ++i) {
      if (sampleRects_[i].contains(event->position())) {
        traceTestSample(static_cast<int64_t>(i));
        return;
      }
    }
    return;
  }
  if (mode_ != Mode::Heatmap) return;
  // The nearest test point within a few pixels of the click.
  int64_t nearest = -1;
  double best = 12 * 12;
  for (size_t i = 0; i < testClass_.size(); ++i) {
    const QPointF d = toWidget(testX_[2 * i], testX_[2 * i + 1]) - event->position();
    const double dist = d.x() * d.x() + d.y() * d.y();
    if (dist < best) {
      best = dist;
      nearest = static_cast<int64_t>(i);
    }
  }
  if (nearest >= 0) traceTestSample(nearest);
}

void DecisionBoundaryWidget::mouseDoubleClickEvent(QMouseEvent*) {
  clearTrace();
}

QColor DecisionBoundaryWidget::classColor(int64_t c) {
  // Playground's orange and blue first, then the tab10 palette.
  static const QColor colors[] = {{245, 147, 34},  {8, 119, 189}, {44, 160, 44},   {214, 39, 40},
                                  {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
                                  {188, 189, 34},  {23, 190, 207}};
  return colors[static_cast<size_t>(c) % std::size(colors)];
}

void DecisionBoundaryWidget::takeData() {
  // A message from an earlier session (e.g. the empty project at startup) must
  // not outlive it.
  why_.clear();
  // Another session's data: the traced point may be another one now.
  clearTrace();
  mode_ = Mode::None;
  pending_ = 0;
  requestedStep_ = shownStep_ = -1;
  heatmap_ = QImage();
  points_ = QPixmap();
  curve_.clear();
  shownCount_ = length_ = 0;
  tokens_.clear();
  targets_.clear();
  predicted_.clear();
  windows_.clear();
  nextValues_.clear();
  forecasts_.clear();
  positionAccuracy_.clear();
  images_.clear();
  shownInputs_ = shownTargets_ = Tensor();
  sampleRects_.clear();
  // The session as it is: after an edit the panel asks for the new one itself
  // (tick()).
  train::TrainingSession* session = controller_->currentSession();
  if (!session) {
    why_ = controller_->isStale() ? tr("Making the model…")
                                  : tr("No model to train: %1").arg(controller_->lastError());
    update();
    return;
  }
  if (!controller_->dataMismatch().isEmpty()) {
    // Said plainly (the Problems list has it on the Input), not the engine's
    // shape error of a prediction that cannot run.
    why_ = tr("The model's input does not fit the data set. %1").arg(controller_->dataMismatch());
    update();
    return;
  }
  const data::Dataset& train = session->train_set();
  const data::Dataset& test = session->test_set();
  trainX_.clear();
  testX_.clear();
  trainClass_.clear();
  testClass_.clear();
  trainValue_.clear();
  testValue_.clear();
  confusion_.clear();
  shownIndices_.clear();
  imageSet_ = data::Dataset();
  evaluatedStep_ = -1;
  wrongCount_ = 0;
  // The points of the plane pictures (not an image set's pixels: only these need them).
  if (train.input_kind == data::InputKind::Points2D ||
      train.input_kind == data::InputKind::Curve1D) {
    trainX_ = train.inputs.to_vector<float>();
    if (test.size() > 0) testX_ = test.inputs.to_vector<float>();
  }
  const std::vector<float>& inputs = trainX_;
  if (train.input_kind == data::InputKind::Points2D &&
      train.task == data::TaskKind::Classification) {
    trainClass_ = train.targets.to_vector<int64_t>();
    if (test.size() > 0) testClass_ = test.targets.to_vector<int64_t>();
    mode_ = Mode::Heatmap;
    std::tie(x0_, x1_) = paddedExtent(inputs, 2, 0);
    std::tie(y0_, y1_) = paddedExtent(inputs, 2, 1);
    std::vector<float> grid(static_cast<size_t>(kGrid * kGrid * 2));
    // Row r of the image is y from the top (y1) down; cell centres.
    for (int r = 0; r < kGrid; ++r) {
      for (int c = 0; c < kGrid; ++c) {
        const size_t i = static_cast<size_t>(r * kGrid + c) * 2;
        grid[i] = static_cast<float>(x0_ + (c + 0.5) * (x1_ - x0_) / kGrid);
        grid[i + 1] = static_cast<float>(y1_ - (r + 0.5) * (y1_ - y0_) / kGrid);
      }
    }
    grid_ = from_vector(grid, {kGrid * kGrid, 2});
  } else if (train.input_kind == data::InputKind::Curve1D &&
             train.task == data::TaskKind::Regression) {
    mode_ = Mode::Curve;
    trainValue_ = train.targets.to_vector<float>();
    if (test.size() > 0) testValue_ = test.targets.to_vector<float>();
    std::tie(x0_, x1_) = paddedExtent(inputs, 1, 0);
    std::tie(y0_, y1_) = paddedExtent(trainValue_, 1, 0);
    std::vector<float> xs(kCurvePoints);
    for (int i = 0; i < kCurvePoints; ++i) {
      xs[static_cast<size_t>(i)] = static_cast<float>(x0_ + i * (x1_ - x0_) / (kCurvePoints - 1));
    }
    grid_ = from_vector(xs, {kCurvePoints, 1});
  } else if (train.input_kind == data::InputKind::Sequence) {
    takeSequences(test.size() > 0 ? test : train);
  } else if (train.input_kind == data::InputKind::Image &&
             train.task == data::TaskKind::Classification) {
    takeImages(test.size() > 0 ? test : train);
  } else {
    why_ = tr("No decision boundary for %1 data (%2 inputs)")
               .arg(QString::fromStdString(train.name),
                    QString::fromStdString(data::input_kind_name(train.input_kind)));
  }
  update();
}

void DecisionBoundaryWidget::takeSequences(const data::Dataset& shown) {
  shownCount_ = std::min<int64_t>(kShownSequences, shown.size());
  if (shownCount_ == 0 || shown.inputs.dim() < 2) {
    why_ = tr("No sequences to show");
    return;
  }
  const Tensor inputs = shown.inputs.narrow(0, 0, shownCount_).contiguous();
  const Tensor targets = shown.targets.narrow(0, 0, shownCount_).contiguous();
  length_ = inputs.size(1);
  grid_ = inputs;
  if (shown.task == data::TaskKind::Regression) {
    mode_ = Mode::Forecast;
    windows_ = inputs.to(kFloat32).to_vector<float>();
    nextValues_ = targets.to(kFloat32).to_vector<float>();
    return;
  }
  if (inputs.dtype() != kInt64) {
    why_ = tr("No picture for sequences of values with classes");
    return;
  }
  mode_ = Mode::Sequence;
  shownInputs_ = inputs;
  shownTargets_ = targets;
  tokens_ = inputs.to_vector<int64_t>();
  targets_ = targets.to_vector<int64_t>();
  perPosition_ = shown.per_position();
  vocabulary_.clear();
  classNames_.clear();
  for (const std::string& v : shown.vocabulary) vocabulary_ << qs(v);
  for (const std::string& c : shown.class_names) classNames_ << qs(c);
}

void DecisionBoundaryWidget::takeImages(const data::Dataset& shown) {
  imageSet_ = shown;
  classNames_.clear();
  for (const std::string& c : shown.class_names) classNames_ << qs(c);
  std::vector<int64_t> first(static_cast<size_t>(std::min<int64_t>(kShownImages, shown.size())));
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int64_t>(i);
  if (first.empty() || shown.sample_shape().size() < 2) {
    why_ = tr("No images to show");
    return;
  }
  showImages(first);
  mode_ = Mode::Images;
}

void DecisionBoundaryWidget::showImages(const std::vector<int64_t>& indices) {
  shownIndices_ = indices;
  shownCount_ = static_cast<int64_t>(indices.size());
  images_.clear();
  predicted_.clear();
  if (indices.empty()) {
    shownInputs_ = shownTargets_ = grid_ = Tensor();
    targets_.clear();
    return;
  }
  shownInputs_ = imageSet_.input_rows(indices).contiguous();
  shownTargets_ = imageSet_.subset(indices).targets.contiguous();
  grid_ = shownInputs_;
  targets_ = shownTargets_.to_vector<int64_t>();
  for (int64_t i = 0; i < shownCount_; ++i) images_.push_back(sampleImage(shownInputs_, i));
}

void DecisionBoundaryWidget::takeEvaluation(const train::Evaluation& e) {
  if (mode_ != Mode::Images || !e.predicted ||
      static_cast<int64_t>(e.predicted->size()) != imageSet_.size()) {
    return;
  }
  const std::vector<int64_t>& guess = *e.predicted;
  const std::vector<int64_t> truth = imageSet_.targets.to_vector<int64_t>();
  int64_t classes = std::max<int64_t>(imageSet_.num_classes, 1);
  for (size_t i = 0; i < guess.size(); ++i) {
    classes = std::max({classes, guess[i] + 1, truth[i] + 1});
  }
  classes_ = classes;
  confusion_.assign(static_cast<size_t>(classes * classes), 0);
  std::vector<int64_t> wrong;
  for (size_t i = 0; i < guess.size(); ++i) {
    ++confusion_[static_cast<size_t>(truth[i] * classes + guess[i])];
    if (guess[i] != truth[i]) wrong.push_back(static_cast<int64_t>(i));
  }
  wrongCount_ = static_cast<int64_t>(wrong.size());
  evaluatedStep_ = e.step;
  if (wrong.size() > static_cast<size_t>(kShownImages)) wrong.resize(kShownImages);
  // The trace is of a shown image; the shown ones change.
  clearTrace();
  showImages(wrong);
  predicted_.clear();
  for (int64_t i : wrong) predicted_.push_back(guess[static_cast<size_t>(i)]);
  update();
}

int64_t DecisionBoundaryWidget::confusion(int64_t truth, int64_t predicted) const {
  if (truth < 0 || predicted < 0 || truth >= classes_ || predicted >= classes_) return 0;
  return confusion_[static_cast<size_t>(truth * classes_ + predicted)];
}

void DecisionBoundaryWidget::paintConfusion(QPainter& p, const QRectF& area) {
  const QFontMetricsF fm(font());
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(
      QRectF(area.left(), area.top(), area.width(), fm.height()), Qt::AlignLeft,
      fm.elidedText(
          tr("Confusion matrix, step %1 (row: true class, column: predicted)").arg(evaluatedStep_),
          Qt::ElideRight, area.width()));
  // Class names along the left where they fit; indices otherwise.
  const bool named = classes_ <= 12;
  double labelWidth = 0;
  for (int64_t c = 0; c < classes_ && named; ++c) {
    const QString n =
        c < classNames_.size() ? classNames_[static_cast<int>(c)] : QString::number(c);
    labelWidth = std::max(labelWidth, fm.horizontalAdvance(n) + 6);
  }
  labelWidth = std::min(labelWidth, area.width() * 0.35);
  const QRectF grid(area.left() + labelWidth, area.top() + fm.height() + 4, 0, 0);
  const double side = std::min(area.width() - labelWidth, area.height() - fm.height() - 4);
  if (side < 10) return;
  const double cell = side / static_cast<double>(classes_);
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1.5));
  const QFontMetricsF sm(small);
  for (int64_t t = 0; t < classes_; ++t) {
    int64_t row = 0;
    for (int64_t g = 0; g < classes_; ++g) row += confusion(t, g);
    if (named) {
      const QString n =
          t < classNames_.size() ? classNames_[static_cast<int>(t)] : QString::number(t);
      p.setFont(font());
      p.setPen(palette().color(QPalette::WindowText));
      p.drawText(
          QRectF(area.left(), grid.top() + static_cast<double>(t) * cell, labelWidth - 4, cell),
          Qt::AlignRight | Qt::AlignVCenter, fm.elidedText(n, Qt::ElideRight, labelWidth - 4));
    }
    for (int64_t g = 0; g < classes_; ++g) {
      const int64_t count = confusion(t, g);
      // The share of the true class's samples: white (none) to full colour, green on the
      // diagonal (right), red off it (wrong).
      const double share = row > 0 ? static_cast<double>(count) / static_cast<double>(row) : 0.0;
      const QColor full = t == g ? QColor(30, 150, 60) : QColor(200, 40, 40);
      const QColor c(static_cast<int>(255 + (full.red() - 255) * share),
                     static_cast<int>(255 + (full.green() - 255) * share),
                     static_cast<int>(255 + (full.blue() - 255) * share));
      const QRectF box(grid.left() + static_cast<double>(g) * cell,
                       grid.top() + static_cast<double>(t) * cell, cell, cell);
      p.fillRect(box, c);
      if (count > 0 && cell >= sm.horizontalAdvance(QString::number(count)) + 4 &&
          cell >= sm.height()) {
        p.setFont(small);
        p.setPen(share > 0.55 ? Qt::white : Qt::black);
        p.drawText(box, Qt::AlignCenter, QString::number(count));
      }
    }
  }
  p.setFont(font());
  p.setPen(QColor(190, 190, 190));
  p.setBrush(Qt::NoBrush);
  p.drawRect(QRectF(grid.left(), grid.top(), side, side));
}

void DecisionBoundaryWidget::paintImages(QPainter& p) {
  QRectF all = QRectF(rect()).adjusted(8, 6, -8, -6);
  const QFontMetricsF fm(font());
  QString title =
      tr("Test images and the model's class (green right, red wrong); click one to "
         "trace it");
  if (!confusion_.empty()) {
    // The matrix on the left (or on top in a tall panel), the images it gets wrong beside it.
    const bool wide = all.width() >= all.height();
    const double share = wide ? std::min(all.width() * 0.5, all.height() + 80) : all.height() * 0.5;
    const QRectF matrix = wide ? QRectF(all.left(), all.top(), share - 8, all.height())
                               : QRectF(all.left(), all.top(), all.width(), share - 8);
    paintConfusion(p, matrix);
    all = wide ? all.adjusted(share, 0, 0, 0) : all.adjusted(0, share, 0, 0);
    title = wrongCount_ == 0 ? tr("No test image wrong")
                             : tr("Wrong: %1 of %2 test images (the model's class in red); click "
                                  "one to trace it")
                                   .arg(wrongCount_)
                                   .arg(imageSet_.size());
  }
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRectF(all.left(), all.top(), all.width(), fm.height()), Qt::AlignLeft,
             fm.elidedText(title, Qt::ElideRight, all.width()));
  const QRectF area(all.left(), all.top() + fm.height() + 4, all.width(),
                    all.height() - fm.height() - 4);
  // The number of columns that gives the largest squares.
  int64_t columns = 1;
  auto side = [&](int64_t c) {
    const int64_t rows = (shownCount_ + c - 1) / c;
    return std::min(area.width() / static_cast<double>(c),
                    area.height() / static_cast<double>(rows));
  };
  for (int64_t c = 2; c <= shownCount_; ++c) {
    if (side(c) > side(columns)) columns = c;
  }
  const double cell = side(columns);
  sampleRects_.clear();
  auto name = [&](int64_t c) {
    return c >= 0 && c < classNames_.size() ? classNames_[static_cast<int>(c)] : QString::number(c);
  };
  const bool answered = static_cast<int64_t>(predicted_.size()) == shownCount_;
  for (int64_t i = 0; i < shownCount_; ++i) {
    const QRectF box(area.left() + static_cast<double>(i % columns) * cell,
                     area.top() + static_cast<double>(i / columns) * cell, cell, cell);
    sampleRects_.push_back(box);
    const QRectF inner = box.adjusted(3, 3, -3, -3);
    p.drawImage(inner, images_[static_cast<size_t>(i)]);
    const int64_t target = targets_[static_cast<size_t>(i)];
    if (answered) {
      const int64_t got = predicted_[static_cast<size_t>(i)];
      const QColor c = got == target ? QColor(30, 150, 60) : QColor(200, 40, 40);
      p.setPen(QPen(c, 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(inner.adjusted(-1, -1, 1, 1));
      // The class it gave, where the image is large enough to keep most of it in view.
      if (inner.height() >= 3 * fm.height()) {
        const QRectF label(inner.left() + 1, inner.top() + 1,
                           std::min(fm.horizontalAdvance(name(got)) + 4, inner.width() - 2),
                           fm.height());
        p.fillRect(label, c);
        p.setPen(Qt::white);
        p.drawText(label, Qt::AlignCenter, fm.elidedText(name(got), Qt::ElideRight, label.width()));
      }
    }
    if (i == traced_) {
      p.setPen(QPen(palette().color(QPalette::Highlight), 3));
      p.setBrush(Qt::NoBrush);
      p.drawRect(box.adjusted(1, 1, -1, -1));
    }
  }
}

void DecisionBoundaryWidget::tick() {
  if (!isVisible()) return;
  // An edit made the session out of date: the panel needs the new one, and asks
  // once the edits pause (a burst of edits, a slider's drag, makes one session,
  // after it). It is made on a worker thread: sessionReset or sessionMade brings it.
  if (controller_->isStale() && !controller_->isRunning()) {
    if (controller_->editsSettled()) controller_->makeSessionInBackground();
    return;
  }
  if (mode_ == Mode::None || pending_ != 0) return;
  const int64_t step = controller_->status().step;
  if (step == requestedStep_) return;
  pending_ = controller_->requestPrediction(grid_);
  if (pending_ != 0) requestedStep_ = step;
}

void DecisionBoundaryWidget::showPrediction(const train::Prediction& prediction) {
  if (pending_ == 0 || prediction.id != pending_) return;
  pending_ = 0;
  if (!prediction.error.empty() || !prediction.outputs.defined()) {
    why_ = QString::fromStdString(prediction.error);
    heatmap_ = QImage();
    curve_.clear();
    update();
    return;
  }
  why_.clear();
  const Tensor& out = prediction.outputs;
  const std::vector<float> values = out.to_vector<float>();
  const int64_t rows = out.dim() > 0 ? out.size(0) : 0;
  const int64_t cols = rows > 0 ? static_cast<int64_t>(values.size()) / rows : 0;
  if (mode_ == Mode::Heatmap) {
    if (rows != kGrid * kGrid || cols < 1) return;
    QImage image(kGrid, kGrid, QImage::Format_RGB32);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = values.data() + i * cols;
      int64_t best = 0;
      double confidence = 1;
      if (cols == 1) {
        // One logit: a binary classifier (BCEWithLogitsLoss).
        const double p = 1 / (1 + std::exp(-static_cast<double>(row[0])));
        best = p >= 0.5 ? 1 : 0;
        confidence = std::max(p, 1 - p);
      } else {
        best = std::max_element(row, row + cols) - row;
        double sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(row[c] - row[best]));
        confidence = 1 / sum;
      }
      // From "no better than chance" (white) to "certain" (the class colour,
      // lightened a little so the points on top stay visible).
      const double chance = 1.0 / static_cast<double>(std::max<int64_t>(cols, 2));
      const double t = std::clamp((confidence - chance) / (1 - chance), 0.0, 1.0) * 0.7 + 0.08;
      const QColor c = classColor(best);
      auto mix = [t](int v) { return static_cast<int>(std::lround(255 + (v - 255) * t)); };
      image.setPixel(static_cast<int>(i % kGrid), static_cast<int>(i / kGrid),
                     qRgb(mix(c.red()), mix(c.green()), mix(c.blue())));
    }
    heatmap_ = std::move(image);
  } else if (mode_ == Mode::Curve) {
    if (rows != kCurvePoints || cols < 1) return;
    const std::vector<float> xs = grid_.to_vector<float>();
    curve_.clear();
    for (int64_t i = 0; i < rows; ++i) {
      curve_.emplace_back(xs[static_cast<size_t>(i)], values[static_cast<size_t>(i * cols)]);
    }
  } else if (mode_ == Mode::Sequence) {
    // The argmax of each row of class scores: [count, length, C] or [count, C].
    const int64_t classes = out.dim() > 0 ? out.size(-1) : 0;
    const auto answers = static_cast<int64_t>(perPosition_ ? shownCount_ * length_ : shownCount_);
    if (classes < 1 || static_cast<int64_t>(values.size()) != answers * classes) return;
    predicted_.assign(static_cast<size_t>(answers), 0);
    for (int64_t i = 0; i < answers; ++i) {
      const float* row = values.data() + i * classes;
      predicted_[static_cast<size_t>(i)] = std::max_element(row, row + classes) - row;
    }
  } else if (mode_ == Mode::Forecast) {
    if (static_cast<int64_t>(values.size()) != shownCount_) return;
    forecasts_ = values;
  } else if (mode_ == Mode::Images) {
    // The argmax of each image's class scores (one logit: a binary classifier).
    if (rows != shownCount_ || cols < 1) return;
    predicted_.assign(static_cast<size_t>(rows), 0);
    for (int64_t i = 0; i < rows; ++i) {
      const float* row = values.data() + i * cols;
      predicted_[static_cast<size_t>(i)] =
          cols == 1 ? (row[0] >= 0 ? 1 : 0) : std::max_element(row, row + cols) - row;
    }
  }
  shownStep_ = prediction.step;
  ++predictionsShown_;
  update();
}

void DecisionBoundaryWidget::paintSequences(QPainter& p) {
  const QRectF all = QRectF(rect()).adjusted(8, 6, -8, -6);
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1));
  p.setFont(small);
  const QFontMetricsF fm(small);
  const QColor text = palette().color(QPalette::WindowText);
  p.setPen(text);
  const QString legend = perPosition_ ? tr("Test sequences and the model's answers (green right, "
                                           "red wrong, the target under it)")
                                      : tr("Test sequences and the model's class for each");
  p.drawText(QRectF(all.left(), all.top(), all.width(), fm.height()), Qt::AlignLeft,
             fm.elidedText(legend, Qt::ElideRight, all.width()));
  const bool bars = perPosition_;
  const double barsHeight = bars ? std::max(60.0, all.height() * 0.28) : 0;
  const QRectF rows(all.left(), all.top() + fm.height() + 4, all.width(),
                    all.height() - fm.height() - 4 - barsHeight);
  const double labelWidth = fm.horizontalAdvance(tr("model")) + 8;
  const double answerWidth = perPosition_ ? 0 : fm.horizontalAdvance(tr("→ ")) + 110;
  // Cells wide enough to read a token (at least a line of text), as many
  // sequences as fit.
  const double rowsPerSequence = perPosition_ ? 2.4 : 1.3;
  const double cell =
      std::clamp(std::min((rows.width() - labelWidth - answerWidth) / static_cast<double>(length_),
                          rows.height() / (static_cast<double>(shownCount_) * rowsPerSequence)),
                 fm.height() + 2, 34.0);
  const int64_t shown = std::clamp<int64_t>(
      static_cast<int64_t>(rows.height() / (cell * rowsPerSequence)), 1, shownCount_);
  auto name = [](const QStringList& names, int64_t index) {
    return index >= 0 && index < names.size() ? names[static_cast<int>(index)]
                                              : QString::number(index);
  };
  const bool answered = !predicted_.empty();
  sampleRects_.clear();
  for (int64_t i = 0; i < shown; ++i) {
    const double y = rows.top() + static_cast<double>(i) * cell * rowsPerSequence;
    // The sequence's rows: a click there traces it (framed while traced).
    const QRectF whole(rows.left(), y, rows.width(), cell * rowsPerSequence - 2);
    sampleRects_.push_back(whole);
    if (i == traced_) {
      p.setPen(QPen(palette().color(QPalette::Highlight), 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(whole.adjusted(-2, -2, 0, 0));
    }
    p.setPen(text);
    p.drawText(QRectF(rows.left(), y, labelWidth, cell), Qt::AlignVCenter, tr("in"));
    for (int64_t t = 0; t < length_; ++t) {
      const QRectF box(rows.left() + labelWidth + static_cast<double>(t) * cell, y, cell - 1,
                       cell - 1);
      p.fillRect(box, QColor(236, 236, 236));
      p.setPen(QColor(40, 40, 40));
      p.drawText(box, Qt::AlignCenter,
                 name(vocabulary_, tokens_[static_cast<size_t>(i * length_ + t)]));
    }
    if (!perPosition_) {
      const int64_t target = targets_[static_cast<size_t>(i)];
      const QRectF answerBox(rows.left() + labelWidth + static_cast<double>(length_) * cell + 6, y,
                             answerWidth, cell);
      if (answered) {
        const int64_t got = predicted_[static_cast<size_t>(i)];
        p.setPen(got == target ? QColor(30, 130, 60) : QColor(190, 40, 40));
        p.drawText(
            answerBox, Qt::AlignVCenter,
            got == target
                ? tr("→ %1").arg(name(classNames_, got))
                : tr("→ %1 (target %2)").arg(name(classNames_, got), name(classNames_, target)));
      }
      continue;
    }
    const double y2 = y + cell;
    p.setPen(text);
    p.drawText(QRectF(rows.left(), y2, labelWidth, cell), Qt::AlignVCenter, tr("model"));
    for (int64_t t = 0; t < length_; ++t) {
      const size_t k = static_cast<size_t>(i * length_ + t);
      const QRectF box(rows.left() + labelWidth + static_cast<double>(t) * cell, y2, cell - 1,
                       cell - 1);
      const int64_t target = targets_[k];
      if (target == data::kIgnoredPosition || !answered) {
        p.fillRect(box, QColor(248, 248, 248));
        continue;
      }
      const int64_t got = predicted_[k];
      p.fillRect(box, got == target ? QColor(200, 234, 206) : QColor(246, 196, 196));
      p.setPen(got == target ? QColor(20, 100, 40) : QColor(160, 20, 20));
      p.drawText(box, Qt::AlignCenter, name(classNames_, got));
      if (got != target && cell >= 12) {
        QFont tiny = small;
        tiny.setPointSizeF(std::max(5.0, small.pointSizeF() - 2));
        p.setFont(tiny);
        p.drawText(box.translated(0, cell * 0.62), Qt::AlignHCenter | Qt::AlignTop,
                   name(classNames_, target));
        p.setFont(small);
      }
    }
  }
  if (!bars) return;
  // The test accuracy per position, as bars from 0 to 100%.
  const QRectF plot(all.left() + labelWidth, all.bottom() - barsHeight + fm.height() + 4,
                    static_cast<double>(length_) * cell, barsHeight - 2 * fm.height() - 6);
  p.setPen(text);
  p.drawText(QRectF(all.left(), plot.top() - fm.height() - 2, all.width(), fm.height()),
             Qt::AlignLeft,
             positionAccuracy_.empty() ? tr("Test accuracy per position: after the first epoch")
                                       : tr("Test accuracy per position"));
  p.setPen(QPen(palette().color(QPalette::Mid), 1));
  p.drawLine(plot.bottomLeft(), plot.bottomRight());
  for (size_t t = 0; t < positionAccuracy_.size() && static_cast<int64_t>(t) < length_; ++t) {
    const double a = positionAccuracy_[t];
    if (std::isnan(a)) continue;
    const double h = std::clamp(a, 0.0, 1.0) * plot.height();
    const QRectF bar(plot.left() + static_cast<double>(t) * cell + 1, plot.bottom() - h, cell - 3,
                     h);
    p.fillRect(bar, classColor(1));
    // The percentage under its bar where it fits (else the bar alone tells).
    const QString label = QString::number(std::lround(100 * a));
    if (fm.horizontalAdvance(label) + 2 <= cell) {
      p.setPen(text);
      p.drawText(QRectF(bar.left() - 1, plot.bottom() + 1, cell, fm.height()), Qt::AlignHCenter,
                 label);
    }
  }
}

void DecisionBoundaryWidget::paintForecast(QPainter& p) {
  // Small multiples: each window's values, the value that came next (hollow)
  // and the model's forecast of it (filled), on one scale.
  const QRectF all = QRectF(rect()).adjusted(8, 6, -8, -6);
  const QFontMetricsF fm(font());
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRectF(all.left(), all.top(), all.width(), fm.height()), Qt::AlignLeft,
             fm.elidedText(tr("Test windows: next value (ring), forecast (dot)"), Qt::ElideRight,
                           all.width()));
  const QRectF area(all.left(), all.top() + fm.height() + 4, all.width(),
                    all.height() - fm.height() - 4);
  float lo = INFINITY, hi = -INFINITY;
  for (float v : windows_) lo = std::min(lo, v), hi = std::max(hi, v);
  for (float v : nextValues_) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(hi > lo)) hi = lo + 1;
  const int64_t columns = 2;
  const int64_t rowsCount = (shownCount_ + columns - 1) / columns;
  const double w = area.width() / columns, h = area.height() / static_cast<double>(rowsCount);
  p.setRenderHint(QPainter::Antialiasing, true);
  for (int64_t i = 0; i < shownCount_; ++i) {
    const QRectF box(area.left() + static_cast<double>(i % columns) * w + 3,
                     area.top() + static_cast<double>(i / columns) * h + 3, w - 6, h - 6);
    p.fillRect(box, Qt::white);
    p.setPen(QPen(palette().color(QPalette::Mid), 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(box);
    auto at = [&](double t, double v) {
      return QPointF(box.left() + 4 + t / static_cast<double>(length_) * (box.width() - 8),
                     box.bottom() - 4 - (v - lo) / (hi - lo) * (box.height() - 8));
    };
    QPainterPath path(at(0, windows_[static_cast<size_t>(i * length_)]));
    for (int64_t t = 1; t < length_; ++t) {
      path.lineTo(at(static_cast<double>(t), windows_[static_cast<size_t>(i * length_ + t)]));
    }
    p.setPen(QPen(classColor(1), 1.5));
    p.setBrush(Qt::NoBrush);
    p.drawPath(path);
    const QPointF next = at(static_cast<double>(length_), nextValues_[static_cast<size_t>(i)]);
    p.setPen(QPen(classColor(1), 1.5));
    p.drawEllipse(next, 4, 4);
    if (static_cast<int64_t>(forecasts_.size()) == shownCount_) {
      p.setPen(Qt::NoPen);
      p.setBrush(classColor(0));
      p.drawEllipse(at(static_cast<double>(length_), forecasts_[static_cast<size_t>(i)]), 3, 3);
    }
  }
}

QRectF DecisionBoundaryWidget::plotRect() const {
  const double side = std::max(10, std::min(width(), height()) - 12);
  const QRectF all = rect();
  if (mode_ == Mode::Curve) return all.adjusted(8, 8, -8, -8);
  return QRectF(all.center().x() - side / 2, all.center().y() - side / 2, side, side);
}

QPointF DecisionBoundaryWidget::toWidget(double x, double y) const {
  const QRectF r = plotRect();
  return {r.left() + (x - x0_) / (x1_ - x0_) * r.width(),
          r.bottom() - (y - y0_) / (y1_ - y0_) * r.height()};
}

void DecisionBoundaryWidget::drawPoints(QPainter& p) const {
  const QRectF area = plotRect();
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setClipRect(area);
  if (mode_ == Mode::Heatmap) {
    const double r = std::clamp(area.width() / 110, 2.0, 4.0);
    p.setPen(QPen(QColor(255, 255, 255, 200), 0.8));
    for (size_t i = 0; i < trainClass_.size(); ++i) {
      p.setBrush(classColor(trainClass_[i]));
      p.drawEllipse(toWidget(trainX_[2 * i], trainX_[2 * i + 1]), r, r);
    }
    p.setBrush(Qt::white);
    for (size_t i = 0; i < testClass_.size(); ++i) {
      p.setPen(QPen(classColor(testClass_[i]).darker(115), 1.6));
      p.drawEllipse(toWidget(testX_[2 * i], testX_[2 * i + 1]), r, r);
    }
  } else if (mode_ == Mode::Curve) {
    p.setPen(Qt::NoPen);
    p.setBrush(classColor(1));
    for (size_t i = 0; i < trainValue_.size(); ++i) {
      p.drawEllipse(toWidget(trainX_[i], trainValue_[i]), 2.5, 2.5);
    }
    p.setBrush(Qt::white);
    p.setPen(QPen(classColor(1), 1.4));
    for (size_t i = 0; i < testValue_.size(); ++i) {
      p.drawEllipse(toWidget(testX_[i], testValue_[i]), 2.5, 2.5);
    }
  }
}

void DecisionBoundaryWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().window());
  if (mode_ == Mode::Sequence || mode_ == Mode::Forecast || mode_ == Mode::Images) {
    if (mode_ == Mode::Sequence) {
      paintSequences(p);
    } else if (mode_ == Mode::Images) {
      paintImages(p);
    } else {
      paintForecast(p);
    }
    if (!why_.isEmpty()) {
      p.setPen(Qt::darkRed);
      p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignBottom | Qt::AlignLeft | Qt::TextWordWrap,
                 why_);
    }
    return;
  }
  if (mode_ == Mode::None) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap, why_);
    return;
  }
  const QRectF area = plotRect();
  p.fillRect(area, Qt::white);
  if (!heatmap_.isNull()) {
    p.setRenderHint(QPainter::SmoothPixmapTransform, true);
    p.drawImage(area, heatmap_);
  }
  // The data points never change while the session lives: drawn once per size
  // into a layer (1000 antialiased circles per frame would cost more than the
  // rest of the picture).
  const qreal dpr = devicePixelRatioF();
  if (points_.isNull() || points_.size() != size() * dpr) {
    points_ = QPixmap(size() * dpr);
    points_.setDevicePixelRatio(dpr);
    points_.fill(Qt::transparent);
    QPainter layer(&points_);
    drawPoints(layer);
  }
  p.drawPixmap(0, 0, points_);
  p.setRenderHint(QPainter::Antialiasing, true);
  if (mode_ == Mode::Heatmap && traced_ >= 0 && static_cast<size_t>(traced_) < testClass_.size()) {
    // The traced sample, ringed.
    p.setPen(QPen(palette().color(QPalette::WindowText), 2));
    p.setBrush(Qt::NoBrush);
    p.drawEllipse(toWidget(testX_[2 * traced_], testX_[2 * traced_ + 1]), 8, 8);
  }
  if (mode_ == Mode::Curve) {
    p.setClipRect(area);
    if (!curve_.empty()) {
      QPainterPath path(toWidget(curve_[0].x(), curve_[0].y()));
      for (size_t i = 1; i < curve_.size(); ++i)
        path.lineTo(toWidget(curve_[i].x(), curve_[i].y()));
      p.setPen(QPen(classColor(0), 2.5));
      p.setBrush(Qt::NoBrush);
      p.drawPath(path);
    }
  }
  p.setClipping(false);
  p.setPen(QPen(palette().color(QPalette::Mid), 1));
  p.setBrush(Qt::NoBrush);
  p.drawRect(area);
  if (!why_.isEmpty()) {
    p.setPen(Qt::darkRed);
    p.drawText(area.adjusted(6, 6, -6, -6), Qt::AlignTop | Qt::AlignLeft | Qt::TextWordWrap, why_);
  }
}

}  // namespace nns::ui
