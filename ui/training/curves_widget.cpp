// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/curves_widget.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QVBoxLayout>
#include <cmath>

#include "ui/training/training_controller.h"
#include "ui/widgets/plot_style.h"

namespace nns::ui {
namespace {

QCPGraph* addGraph(QCustomPlot* plot, QCPAxis* value, const QString& name, QColor color,
                   double width) {
  QCPGraph* g = plot->addGraph(plot->xAxis, value);
  g->setName(name);
  g->setPen(QPen(color, width));
  return g;
}

// Keeps the points whose key (a step) `keep` accepts, in order; returns the last kept key
// (-1 when none).
template <class Keep>
int64_t keepPoints(QCPGraph* graph, Keep keep) {
  QVector<double> keys, values;
  keys.reserve(graph->dataCount());
  values.reserve(graph->dataCount());
  for (const QCPGraphData& d : *graph->data()) {
    if (!keep(d.key)) continue;
    keys.push_back(d.key);
    values.push_back(d.value);
  }
  graph->setData(keys, values, /*alreadySorted=*/true);
  return keys.isEmpty() ? -1 : static_cast<int64_t>(keys.back());
}

// Keeps the points whose key (a step) is a multiple of stride.
void keepMultiples(QCPGraph* graph, int64_t stride) {
  keepPoints(graph, [stride](double key) { return static_cast<int64_t>(key) % stride == 0; });
}

// Keeps the points at least gap steps after the previous kept one; returns the last kept step.
int64_t keepSpaced(QCPGraph* graph, double gap) {
  double last = -1e300;
  return keepPoints(graph, [&last, gap](double key) {
    if (key - last < gap) return false;
    last = key;
    return true;
  });
}

// Whether a point at step follows the last kept one (at last) by at least gap steps.
bool spacedAfter(int64_t step, int64_t last, double gap) {
  return step > last && static_cast<double>(step - last) >= gap;
}

}  // namespace

CurvesWidget::CurvesWidget(TrainingController* controller, QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)), logScale_(new QCheckBox(tr("Log scale"))) {
  plot_->setObjectName("curvesPlot");
  plot_->setMinimumHeight(160);
  plot_->setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->xAxis->setLabel(tr("step"));
  plot_->yAxis->setLabel(tr("loss"));
  plot_->yAxis2->setVisible(true);
  plot_->yAxis2->setLabel(tr("accuracy"));
  plot_->yAxis2->setRange(0, 1);
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->legend->setBrush(QColor(255, 255, 255, 200));
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  followPalette(plot_);

  rawLoss_ = addGraph(plot_, plot_->yAxis, tr("train loss"), QColor(31, 119, 180, 55), 1);
  smoothLoss_ = addGraph(plot_, plot_->yAxis, tr("train loss (smoothed)"), QColor(31, 119, 180), 2);
  testLoss_ = addGraph(plot_, plot_->yAxis, tr("test loss"), QColor(255, 127, 14), 2);
  // Solid: a dash pattern along a thousand-point zigzag cost most of a replot (7 ms of 9).
  trainAccuracy_ = addGraph(plot_, plot_->yAxis2, tr("train accuracy"), QColor(44, 160, 44), 1.5);
  testAccuracy_ = addGraph(plot_, plot_->yAxis2, tr("test accuracy"), QColor(214, 39, 40), 2);
  testSequences_ =
      addGraph(plot_, plot_->yAxis2, tr("test sequences right"), QColor(148, 103, 189), 2);
  testSequences_->removeFromLegend();  // until a task with a class per position reports it
  // The raw curve's own legend entry would say nothing the smoothed one does not.
  rawLoss_->removeFromLegend();
  // Thousands of faint segments: antialiasing them costs most of a replot and shows little.
  rawLoss_->setAntialiased(false);
  updateMarkers();
  connect(plot_, &QCustomPlot::afterReplot, this, [this] { ++replots_; });

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 0, 4, 0);
  bar->addStretch(1);
  bar->addWidget(logScale_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(plot_, 1);
  layout->addLayout(bar);
  connect(logScale_, &QCheckBox::toggled, this, &CurvesWidget::setLogScale);

  connect(controller, &TrainingController::stepMetricsArrived, this, &CurvesWidget::addSteps);
  connect(controller, &TrainingController::epochMetricsArrived, this, &CurvesWidget::addEpochs);
  connect(controller, &TrainingController::evaluationArrived, this, &CurvesWidget::addEvaluation);
  // A session that continues the one before it (an edit that kept the weights) draws on.
  connect(controller, &TrainingController::sessionReset, this, [this, controller] {
    if (!controller->sessionContinues()) clear();
  });
  cursor_ = new QCPItemStraightLine(plot_);
  cursor_->setPen(QPen(palette().color(QPalette::WindowText), 1, Qt::DashLine));
  cursor_->setVisible(false);
}

void CurvesWidget::setOverlays(const std::vector<RunCurves>& runs) {
  for (QCPGraph* g : overlayGraphs_) plot_->removeGraph(g);
  overlayGraphs_.clear();
  // At most this many points a curve: a stored run may have many thousand steps.
  constexpr size_t kMaxOverlayPoints = 2000;
  for (const RunCurves& r : runs) {
    QCPGraph* loss = addGraph(plot_, plot_->yAxis, tr("%1 loss").arg(r.label), r.colour, 1.5);
    QPen dashed(r.colour, 1.5, Qt::DashLine);
    QCPGraph* accuracy =
        addGraph(plot_, plot_->yAxis2, tr("%1 test accuracy").arg(r.label), r.colour, 1.5);
    accuracy->setPen(dashed);
    const size_t every = std::max<size_t>(1, r.steps.size() / kMaxOverlayPoints);
    QVector<double> keys, values;
    for (size_t i = 0; i < r.steps.size(); i += every) {
      keys.push_back(static_cast<double>(r.steps[i].step));
      values.push_back(r.steps[i].smoothed_loss);
    }
    loss->setData(keys, values, /*alreadySorted=*/true);
    keys.clear();
    values.clear();
    const size_t epochEvery = std::max<size_t>(1, r.epochs.size() / kMaxOverlayPoints);
    for (size_t i = 0; i < r.epochs.size(); i += epochEvery) {
      if (!std::isfinite(r.epochs[i].test_accuracy)) continue;
      keys.push_back(static_cast<double>(r.epochs[i].step));
      values.push_back(r.epochs[i].test_accuracy);
    }
    accuracy->setData(keys, values, /*alreadySorted=*/true);
    if (keys.isEmpty()) accuracy->removeFromLegend();
    overlayGraphs_.push_back(loss);
    overlayGraphs_.push_back(accuracy);
  }
  requestReplot();
}

void CurvesWidget::setCursorStep(int64_t step) {
  cursorStep_ = step;
  cursor_->setVisible(step >= 0);
  if (step >= 0) {
    cursor_->point1->setCoords(static_cast<double>(step), 0);
    cursor_->point2->setCoords(static_cast<double>(step), 1);
  }
  requestReplot();
}

int CurvesWidget::trainLossPoints() const {
  return rawLoss_->dataCount();
}

int CurvesWidget::testLossPoints() const {
  return testLoss_->dataCount();
}

int CurvesWidget::testAccuracyPoints() const {
  return testAccuracy_->dataCount();
}

int CurvesWidget::testSequencePoints() const {
  return testSequences_->dataCount();
}

void CurvesWidget::clear() {
  for (QCPGraph* g :
       {rawLoss_, smoothLoss_, testLoss_, trainAccuracy_, testAccuracy_, testSequences_}) {
    g->data()->clear();
  }
  testSequences_->removeFromLegend();
  stride_ = 1;
  epochGap_ = 0;
  lastTestStep_ = -1;
  lastTrainAccuracyStep_ = -1;
  requestReplot();
}

void CurvesWidget::setLogScale(bool on) {
  if (logScale_->isChecked() != on) logScale_->setChecked(on);
  plot_->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on) {
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
  } else {
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
  }
  requestReplot();
}

void CurvesWidget::addSteps(const std::vector<train::StepMetrics>& metrics) {
  QVector<double> keys, raw, smooth;
  keys.reserve(static_cast<int>(metrics.size()));
  raw.reserve(keys.capacity());
  smooth.reserve(keys.capacity());
  for (const train::StepMetrics& m : metrics) {
    if (m.step % stride_ != 0) continue;
    keys.push_back(static_cast<double>(m.step));
    raw.push_back(m.loss);
    smooth.push_back(m.smoothed_loss);
  }
  rawLoss_->addData(keys, raw, /*alreadySorted=*/true);
  smoothLoss_->addData(keys, smooth, /*alreadySorted=*/true);
  if (rawLoss_->dataCount() > kMaxStepPoints) thin();
  requestReplot();
}

void CurvesWidget::addEpochs(const std::vector<train::EpochMetrics>& epochs) {
  for (const train::EpochMetrics& e : epochs) {
    if (std::isfinite(e.train_accuracy) && spacedAfter(e.step, lastTrainAccuracyStep_, epochGap_)) {
      trainAccuracy_->addData(static_cast<double>(e.step), e.train_accuracy);
      lastTrainAccuracyStep_ = e.step;
    }
    // Every epoch's test figures (the controller's evaluations carry only the latest one per
    // poll, and a fast model ends many epochs between two polls).
    addTestPoint(e.step, e.test_loss, e.test_accuracy, e.test_sequence_accuracy);
  }
  if (std::max({trainAccuracy_->dataCount(), testLoss_->dataCount(), testAccuracy_->dataCount(),
                testSequences_->dataCount()}) > kMaxEpochPoints) {
    thinEpochCurves();
  }
  requestReplot();
}

void CurvesWidget::addEvaluation(const train::Evaluation& evaluation) {
  addTestPoint(evaluation.step, evaluation.loss, evaluation.accuracy, evaluation.sequence_accuracy);
  requestReplot();
}

void CurvesWidget::addTestPoint(int64_t step, double loss, double accuracy, double sequences) {
  // An epoch's end and its evaluation are the same point; keys stay increasing.
  if (!spacedAfter(step, lastTestStep_, epochGap_)) return;
  lastTestStep_ = step;
  const double key = static_cast<double>(step);
  if (std::isfinite(loss)) testLoss_->addData(key, loss);
  if (std::isfinite(accuracy)) testAccuracy_->addData(key, accuracy);
  if (std::isfinite(sequences)) {
    if (testSequences_->dataCount() == 0) testSequences_->addToLegend();
    testSequences_->addData(key, sequences);
  }
}

void CurvesWidget::thin() {
  stride_ *= 2;
  keepMultiples(rawLoss_, stride_);
  keepMultiples(smoothLoss_, stride_);
}

void CurvesWidget::thinEpochCurves() {
  // Twice the mean spacing of the densest curve halves it; later thinnings double the gap.
  int densest = 0;
  double span = 0;
  for (QCPGraph* g : {trainAccuracy_, testLoss_, testAccuracy_, testSequences_}) {
    bool found = false;
    const QCPRange keys = g->data()->keyRange(found);
    if (found && g->dataCount() > densest) {
      densest = g->dataCount();
      span = keys.size();
    }
  }
  epochGap_ = std::max(2 * epochGap_, 2 * span / std::max(1, densest));
  lastTrainAccuracyStep_ = keepSpaced(trainAccuracy_, epochGap_);
  lastTestStep_ = std::max({keepSpaced(testLoss_, epochGap_), keepSpaced(testAccuracy_, epochGap_),
                            keepSpaced(testSequences_, epochGap_)});
}

void CurvesWidget::updateMarkers() {
  for (QCPGraph* g : {testLoss_, testAccuracy_, testSequences_}) {
    const bool marked = g->dataCount() <= kMaxMarkedPoints;
    if (marked == (g->scatterStyle().shape() != QCPScatterStyle::ssNone)) continue;
    const QCPScatterStyle::ScatterShape shape = g == testLoss_       ? QCPScatterStyle::ssCircle
                                                : g == testAccuracy_ ? QCPScatterStyle::ssDisc
                                                                     : QCPScatterStyle::ssSquare;
    g->setScatterStyle(marked ? QCPScatterStyle(shape, g->pen().color(), 5) : QCPScatterStyle());
  }
}

void CurvesWidget::rescale() {
  bool found = false;
  QCPRange steps = rawLoss_->data()->keyRange(found);
  for (QCPGraph* g : overlayGraphs_) {
    bool ok = false;
    const QCPRange r = g->data()->keyRange(ok);
    if (!ok) continue;
    steps = found ? QCPRange(std::min(steps.lower, r.lower), std::max(steps.upper, r.upper)) : r;
    found = true;
  }
  bool foundTest = false;
  const QCPRange testSteps = testLoss_->data()->keyRange(foundTest);
  if (foundTest)
    steps = found ? QCPRange(std::min(steps.lower, testSteps.lower),
                             std::max(steps.upper, testSteps.upper))
                  : testSteps;
  plot_->xAxis->setRange(0, std::max(10.0, (found || foundTest) ? steps.upper : 0.0));
  const QCP::SignDomain domain =
      plot_->yAxis->scaleType() == QCPAxis::stLogarithmic ? QCP::sdPositive : QCP::sdBoth;
  QCPRange loss;
  bool any = false;
  std::vector<QCPGraph*> lossGraphs{rawLoss_, smoothLoss_, testLoss_};
  for (size_t i = 0; i < overlayGraphs_.size(); i += 2) lossGraphs.push_back(overlayGraphs_[i]);
  for (QCPGraph* g : lossGraphs) {
    bool ok = false;
    const QCPRange r = g->data()->valueRange(ok, domain);
    if (!ok) continue;
    loss = any ? QCPRange(std::min(loss.lower, r.lower), std::max(loss.upper, r.upper)) : r;
    any = true;
  }
  if (!any) {
    plot_->yAxis->setRange(domain == QCP::sdPositive ? 0.01 : 0, 1);
  } else if (domain == QCP::sdPositive) {
    plot_->yAxis->setRange(loss.lower / 1.5, loss.upper * 1.5);
  } else {
    plot_->yAxis->setRange(std::min(0.0, loss.lower), loss.upper * 1.05 + 1e-12);
  }
}

void CurvesWidget::requestReplot() {
  rescale();
  updateMarkers();
  // Queued: several batches of data in one pass of the event loop make one replot.
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace nns::ui
