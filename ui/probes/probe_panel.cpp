// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/probe_panel.h"

#include <qcustomplot.h>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>

#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/probes/attention_view.h"
#include "ui/probes/histogram_view.h"
#include "ui/probes/node_health.h"
#include "ui/training/training_controller.h"
#include "ui/widgets/canvas_theme.h"
#include "ui/widgets/plot_style.h"

namespace nns::ui {
namespace {

using SeriesKey = NodeHealthModel::SeriesKey;

QString seriesLabel(const SeriesKey& key) {
  switch (key.first) {
    case train::ProbeKind::Activation:
      return QObject::tr("activation: %1").arg(qs(key.second));
    case train::ProbeKind::GradOutput:
      return QObject::tr("gradient w.r.t. %1").arg(qs(key.second));
    case train::ProbeKind::GradInput:
      return QObject::tr("gradient w.r.t. %1").arg(qs(key.second));
    case train::ProbeKind::ParamGrad:
      return QObject::tr("gradient of %1").arg(qs(key.second));
    case train::ProbeKind::Attention:
      return QObject::tr("attention weights: %1")
          .arg(key.second.empty() ? QObject::tr("this module") : qs(key.second));
  }
  return {};
}

QString number(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', 3);
}

QString percent(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v * 100, 'f', 1) + "%";
}

QCustomPlot* makePlot(QWidget* parent) {
  auto* plot = new QCustomPlot(parent);
  plot->setMinimumHeight(110);
  QFont small = plot->font();
  small.setPointSizeF(8);
  for (QCPAxis* a : plot->axisRect()->axes()) {
    a->setTickLabelFont(small);
    a->setLabelFont(small);
  }
  // The legend in a row of its own above the plot, one line wide, so it never hides a curve.
  plot->legend->setVisible(true);
  plot->legend->setFont(small);
  plot->legend->setBorderPen(Qt::NoPen);
  plot->legend->setBrush(Qt::NoBrush);
  plot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot->legend->setWrap(4);
  plot->legend->setMargins(QMargins(0, 0, 0, 0));
  plot->axisRect()->insetLayout()->take(plot->legend);
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, plot->legend);
  plot->plotLayout()->setRowStretchFactor(0, 0.001);
  plot->plotLayout()->setRowSpacing(0);
  plot->xAxis->setLabel(QObject::tr("step"));
  followPalette(plot);
  return plot;
}

const QColor kParamColours[] = {QColor(0x21, 0x71, 0xb5), QColor(0xd9, 0x5f, 0x0e),
                                QColor(0x31, 0xa3, 0x54), QColor(0x75, 0x6b, 0xb1),
                                QColor(0xc5, 0x1b, 0x8a), QColor(0x66, 0x66, 0x66)};

}  // namespace

ProbePanel::ProbePanel(ProjectDocument* document, TrainingController* controller,
                       NodeHealthModel* health, QWidget* parent)
    : QWidget(parent), document_(document), controller_(controller), health_(health) {
  // The panel scrolls when the inspector is too short for it (a Transformer layer's attention
  // maps take room of their own) instead of making the window taller.
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  auto* content = new QWidget;
  scroll->setWidget(content);
  outer->addWidget(scroll);
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(4);

  auto* head = new QHBoxLayout;
  title_ = new QLabel;
  title_->setWordWrap(true);
  probeButton_ = new QPushButton;
  head->addWidget(title_, 1);
  head->addWidget(probeButton_);
  layout->addLayout(head);

  auto* controls = new QHBoxLayout;
  series_ = new QComboBox;
  series_->setToolTip(
      tr("What to show: the module's outputs, the gradients w.r.t. its outputs "
         "and inputs, or a parameter's gradient"));
  logScale_ = new QCheckBox(tr("Log"));
  logScale_->setToolTip(tr("Colour and bars by log10(1 + count)"));
  auto* resetZoom = new QPushButton(tr("Full range"));
  resetZoom->setToolTip(
      tr("Back to every step and the whole value range (or double-click the "
         "heatmap)"));
  controls->addWidget(series_, 1);
  controls->addWidget(logScale_);
  controls->addWidget(resetZoom);
  layout->addLayout(controls);

  attention_ = new AttentionView(controller_, this);
  attention_->setObjectName("attentionView");
  attention_->setVisible(false);
  layout->addWidget(attention_, 4);

  histogram_ = new HistogramView(this);
  histogram_->setObjectName("histogramPlot");
  histogram_->setMinimumHeight(170);
  histogram_->setToolTip(
      tr("Wheel: zoom the values. Drag a rectangle: pick steps and values "
         "(re-binned from the kept values). Double-click: full range."));
  layout->addWidget(histogram_, 3);

  stats_ = new QLabel;
  stats_->setWordWrap(true);
  stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(stats_);

  moments_ = makePlot(this);
  moments_->setObjectName("momentsPlot");
  moments_->yAxis->setLabel(tr("mean ± std"));
  moments_->yAxis2->setVisible(true);
  moments_->yAxis2->setRange(0, 1.02);
  moments_->yAxis2->setLabel(tr("fraction"));
  layout->addWidget(moments_, 2);

  paramPlot_ = makePlot(this);
  paramPlot_->setObjectName("parameterPlot");
  paramPlot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
  paramPlot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  paramPlot_->yAxis->setNumberFormat("eb");
  paramPlot_->yAxis->setNumberPrecision(0);
  paramPlot_->yAxis->setLabel(tr("norm, ratio"));
  paramPlot_->legend->setWrap(2);
  layout->addWidget(paramPlot_, 2);

  paramTable_ = new QTableWidget(0, 3);
  paramTable_->setHorizontalHeaderLabels({tr("Parameter"), tr("Grad norm"), tr("Update / weight")});
  paramTable_->horizontalHeaderItem(2)->setToolTip(
      tr("||w_after - w_before|| / ||w_after|| over the optimizer's step (about 1e-3 is "
         "healthy)"));
  paramTable_->verticalHeader()->hide();
  paramTable_->horizontalHeader()->setStretchLastSection(true);
  paramTable_->setMaximumHeight(96);
  layout->addWidget(paramTable_, 0);

  repeatTable_ = new QTableWidget(0, 0);
  repeatTable_->setObjectName("repeatTable");
  repeatTable_->setToolTip(
      tr("The repeats of this folded run side by side: the chosen series at each one's latest "
         "sampled step"));
  repeatTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  repeatTable_->setVisible(false);
  layout->insertWidget(layout->indexOf(histogram_), repeatTable_, 0);

  connect(document_, &ProjectDocument::selectionChanged, this, &ProbePanel::followSelection);
  // A new session may bring attention modules to show.
  connect(controller_, &TrainingController::sessionReset, this, &ProbePanel::updateHeader);
  connect(document_, &ProjectDocument::probesChanged, this, [this] {
    dirty_ = true;
    updateHeader();
  });
  connect(document_, &ProjectDocument::changed, this, [this] {
    if (node_ != 0 && !document_->project().graph.find(node_)) followSelection();
    updateHeader();
  });
  connect(probeButton_, &QPushButton::clicked, this, [this] {
    if (node_ == 0) return;
    if (document_->probeOf(node_)) {
      document_->removeProbe(node_);
    } else {
      document_->addProbe(node_);
    }
  });
  connect(series_, &QComboBox::currentIndexChanged, this, [this] {
    histogram_->resetZoom();
    dirty_ = true;
  });
  connect(logScale_, &QCheckBox::toggled, histogram_, &HistogramView::setLogScale);
  connect(resetZoom, &QPushButton::clicked, histogram_, &HistogramView::resetZoom);
  connect(histogram_, &HistogramView::zoomChanged, this, [this] { dirty_ = true; });

  frame_ = new QTimer(this);
  frame_->setInterval(kFrameMs);
  connect(frame_, &QTimer::timeout, this, [this] {
    if (isVisible()) refresh();
  });
  frame_->start();
  followSelection();
}

void ProbePanel::followSelection() {
  const auto& sel = document_->selection();
  const graph::NodeId node = sel.size() == 1 ? sel.front() : 0;
  if (node == node_) return;
  node_ = node;
  series_->blockSignals(true);
  series_->clear();
  series_->blockSignals(false);
  histogram_->resetZoom();
  dirty_ = true;
  updateHeader();
}

void ProbePanel::updateHeader() {
  const graph::Node* n = node_ ? document_->project().graph.find(node_) : nullptr;
  if (!n) {
    title_->setText(tr("Select one node to see its probe."));
    probeButton_->setVisible(false);
    attention_->setModule(QString());
    attention_->setVisible(false);
    return;
  }
  probeButton_->setVisible(true);
  probeButton_->setEnabled(document_->canProbe(node_));
  // A probed node with attention in it shows its maps.
  const QString attentionModule =
      document_->probeOf(node_) ? controller_->attentionModuleOf(node_) : QString();
  attention_->setModule(attentionModule);
  attention_->setVisible(!attentionModule.isNull());
  if (const graph::ProbeSpec* spec = document_->probeOf(node_)) {
    QString title = tr("<b>%1</b> (%2): probed every %3 steps")
                        .arg(qs(n->name).toHtmlEscaped(), qs(n->type).toHtmlEscaped())
                        .arg(spec->every);
    // When the overhead budget stretches the sampling, say so and by how much: the mean
    // interval of the latest samples of any one series (they all share the sampled steps).
    const NodeHealthModel::SeriesMap* series = health_->series(node_);
    if (series && !series->empty() && spec->max_overhead > 0) {
      const std::vector<train::ProbeSample>& samples = series->begin()->second;
      int64_t steps = 0, count = 0;
      for (auto it = samples.rbegin(); it != samples.rend() && count < 8; ++it) {
        if (it->interval <= 0) continue;
        steps += it->interval;
        ++count;
      }
      if (count > 0 && steps > count * spec->every) {
        title += tr(", lately every ~%1 to keep within the %2% overhead budget")
                     .arg(qRound(static_cast<double>(steps) / static_cast<double>(count)))
                     .arg(spec->max_overhead * 100, 0, 'g', 3);
      }
    }
    title_->setText(title);
    probeButton_->setText(tr("Remove probe"));
  } else {
    title_->setText(document_->canProbe(node_)
                        ? tr("<b>%1</b> has no probe: add one to see its activations and "
                             "gradients while it trains.")
                              .arg(qs(n->name).toHtmlEscaped())
                        : tr("<b>%1</b> makes no module: nothing to place hooks on.")
                              .arg(qs(n->name).toHtmlEscaped()));
    probeButton_->setText(tr("Add probe"));
  }
}

void ProbePanel::refresh() {
  if (!dirty_ && drawnRevision_ == health_->revision()) return;
  redraw();
  dirty_ = false;
  drawnRevision_ = health_->revision();
}

void ProbePanel::redraw() {
  const NodeHealthModel::SeriesMap* series =
      node_ != 0 && document_->probeOf(node_) ? health_->series(node_) : nullptr;
  sampleCount_ = 0;
  lastStep_ = 0;
  if (!series || series->empty()) {
    series_->clear();
    histogram_->showMessage(node_ != 0 && document_->probeOf(node_)
                                ? tr("no samples yet: start training")
                                : tr("no probe on this node"));
    stats_->clear();
    moments_->clearGraphs();
    moments_->replot(QCustomPlot::rpQueuedReplot);
    paramPlot_->clearGraphs();
    paramPlot_->replot(QCustomPlot::rpQueuedReplot);
    paramTable_->setRowCount(0);
    repeatTable_->setVisible(false);
    return;
  }

  // The chooser lists the node's series; the choice stays while the list grows.
  std::vector<SeriesKey> keys;
  for (const auto& [key, samples] : *series) keys.push_back(key);
  const QString current = series_->currentText();
  if (series_->count() != static_cast<int>(keys.size())) {
    series_->blockSignals(true);
    series_->clear();
    int pick = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      series_->addItem(seriesLabel(keys[i]));
      if (seriesLabel(keys[i]) == current) pick = static_cast<int>(i);
    }
    series_->setCurrentIndex(pick);
    series_->blockSignals(false);
  }
  const int index = std::clamp(series_->currentIndex(), 0, static_cast<int>(keys.size()) - 1);
  const SeriesKey key = keys[static_cast<size_t>(index)];
  const std::vector<train::ProbeSample>& samples = series->at(key);
  sampleCount_ = samples.size();
  lastStep_ = samples.empty() ? 0 : samples.back().step;
  updateHeader();

  const train::ProbeId probe = controller_->probeOf(node_);
  TrainingController* controller = controller_;
  histogram_->showSeries(
      samples,
      [controller, probe, key](int64_t first, int64_t last, double lo, double hi, int bins) {
        const train::TrainingSession* session = controller->currentSession();
        if (!session || probe == 0) return train::Rebinned{};
        return session->probes().rebin(probe, key.first, key.second, first, last, lo, hi, bins);
      },
      seriesLabel(key));

  const auto activations = series->find({train::ProbeKind::Activation, "output"});
  drawMoments(samples, activations == series->end() ? nullptr : &activations->second);
  drawParameters(*series);
  drawRepeats(key);

  const train::ProbeSample& last = samples.back();
  const train::TensorStats& s = last.stats;
  QStringList parts;
  parts << tr("step %1").arg(last.step) << tr("mean %1").arg(number(s.mean))
        << tr("std %1").arg(number(s.std)) << tr("min %1").arg(number(s.min))
        << tr("max %1").arg(number(s.max)) << tr("norm %1").arg(number(s.norm));
  if (key.first == train::ProbeKind::Activation) {
    parts << tr("dead units %1").arg(percent(s.zero_fraction));
    if (!std::isnan(s.saturated_fraction)) {
      parts << tr("saturated %1").arg(percent(s.saturated_fraction));
    }
  }
  if (s.nonfinite > 0)
    parts << tr("<span style='color:#d93f3f'>%1 non-finite</span>").arg(s.nonfinite);
  if (auto report = health_->health(node_)) {
    parts << tr("<b>%1</b>").arg(healthName(report->health));
  }
  stats_->setText(parts.join(" · "));
  stats_->setToolTip(health_->health(node_)
                         ? health_->health(node_)->summary + "\n" + healthThresholds()
                         : QString());
}

void ProbePanel::drawRepeats(const SeriesKey& key) {
  const std::vector<graph::NodeId> run = document_->repeatRun(node_);
  repeatTable_->setVisible(run.size() > 1);
  if (run.size() < 2) return;
  const QStringList rows = {tr("step"), tr("mean"), tr("std"), tr("norm"), tr("dead units")};
  repeatTable_->setRowCount(static_cast<int>(rows.size()));
  repeatTable_->setColumnCount(static_cast<int>(run.size()));
  repeatTable_->setVerticalHeaderLabels(rows);
  for (size_t c = 0; c < run.size(); ++c) {
    const graph::Node* member = document_->project().graph.find(run[c]);
    repeatTable_->setHorizontalHeaderItem(
        static_cast<int>(c), new QTableWidgetItem(member ? qs(member->name) : QString()));
    const NodeHealthModel::SeriesMap* series = health_->series(run[c]);
    const auto it = series ? series->find(key) : NodeHealthModel::SeriesMap::const_iterator();
    const bool has = series && it != series->end() && !it->second.empty();
    QStringList cells(rows.size(), QString::fromUtf8("\u2013"));
    if (has) {
      const train::ProbeSample& last = it->second.back();
      cells = {QString::number(last.step), number(last.stats.mean), number(last.stats.std),
               number(last.stats.norm),
               key.first == train::ProbeKind::Activation ? percent(last.stats.zero_fraction)
                                                         : QString::fromUtf8("\u2013")};
    }
    for (int r = 0; r < rows.size(); ++r) {
      auto* item = new QTableWidgetItem(cells[r]);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      repeatTable_->setItem(r, static_cast<int>(c), item);
    }
  }
  repeatTable_->resizeColumnsToContents();
  // Every row in view; a horizontal scroll bar for many repeats.
  int height = repeatTable_->horizontalHeader()->height() + 2 * repeatTable_->frameWidth() +
               repeatTable_->horizontalScrollBar()->sizeHint().height();
  for (int r = 0; r < repeatTable_->rowCount(); ++r) height += repeatTable_->rowHeight(r);
  repeatTable_->setFixedHeight(height);
}

void ProbePanel::drawMoments(const std::vector<train::ProbeSample>& samples,
                             const std::vector<train::ProbeSample>* activations) {
  moments_->clearGraphs();
  QVector<double> steps, mean, upper, lower;
  for (const train::ProbeSample& s : samples) {
    steps << static_cast<double>(s.step);
    mean << s.stats.mean;
    upper << s.stats.mean + s.stats.std;
    lower << s.stats.mean - s.stats.std;
  }
  QCPGraph* low = moments_->addGraph();
  low->setData(steps, lower, true);
  low->setPen(QPen(QColor(0x21, 0x71, 0xb5, 90)));
  low->removeFromLegend();
  QCPGraph* high = moments_->addGraph();
  high->setData(steps, upper, true);
  high->setPen(QPen(QColor(0x21, 0x71, 0xb5, 90)));
  high->setBrush(QColor(0x21, 0x71, 0xb5, 40));
  high->setChannelFillGraph(low);
  high->setName(tr("± std"));
  QCPGraph* m = moments_->addGraph();
  m->setData(steps, mean, true);
  // Darker than the band on a light background, lighter on a dark one.
  m->setPen(QPen(
      CanvasTheme::isDark(palette()) ? QColor(0xa8, 0xd0, 0xf5) : QColor(0x08, 0x30, 0x6b), 1.6));
  m->setName(tr("mean"));
  if (activations) {
    QVector<double> as, dead, saturated;
    bool bounded = false;
    for (const train::ProbeSample& s : *activations) {
      as << static_cast<double>(s.step);
      dead << s.stats.zero_fraction;
      saturated << s.stats.saturated_fraction;
      bounded = bounded || !std::isnan(s.stats.saturated_fraction);
    }
    QCPGraph* d = moments_->addGraph(moments_->xAxis, moments_->yAxis2);
    d->setData(as, dead, true);
    d->setPen(QPen(QColor(0xe0, 0x94, 0x2a), 1.4));
    d->setName(tr("dead units"));
    if (bounded) {
      QCPGraph* sat = moments_->addGraph(moments_->xAxis, moments_->yAxis2);
      sat->setData(as, saturated, true);
      sat->setPen(QPen(QColor(0x9b, 0x59, 0xb6), 1.4));
      sat->setName(tr("saturated"));
    }
  }
  moments_->rescaleAxes();
  moments_->yAxis2->setRange(0, 1.02);
  if (histogram_->isZoomed() && histogram_->rows() > 0) {
    moments_->xAxis->setRange(static_cast<double>(histogram_->firstStep()),
                              static_cast<double>(histogram_->lastStep()));
  }
  moments_->replot(QCustomPlot::rpQueuedReplot);
}

void ProbePanel::drawParameters(const NodeHealthModel::SeriesMap& series) {
  paramPlot_->clearGraphs();
  paramTable_->setRowCount(0);
  size_t colour = 0;
  for (const auto& [key, samples] : series) {
    if (key.first != train::ProbeKind::ParamGrad || samples.empty()) continue;
    const QColor c = kParamColours[colour++ % std::size(kParamColours)];
    QVector<double> steps, norms, ratios;
    for (const train::ProbeSample& s : samples) {
      steps << static_cast<double>(s.step);
      // A log axis cannot show 0 or NaN: those points are left out (a gap).
      norms << (s.stats.norm > 0 ? s.stats.norm : qQNaN());
      ratios << (s.update_ratio > 0 ? s.update_ratio : qQNaN());
    }
    QCPGraph* g = paramPlot_->addGraph();
    g->setData(steps, norms, true);
    // One pixel wide: Qt draws those with its fast line rasterizer, while a wider pen is
    // stroked into a polygon, which for a noisy 700-point curve took 4.5 ms a replot.
    g->setPen(QPen(c, 1));
    g->setName(tr("‖∇%1‖").arg(qs(key.second)));
    QCPGraph* r = paramPlot_->addGraph();
    r->setData(steps, ratios, true);
    // Lighter rather than dashed: Qt strokes a dashed pen dash by dash, which on a long noisy
    // curve took longer than a frame.
    QColor light = c;
    light.setAlpha(120);
    r->setPen(QPen(light, 1));
    r->setName(tr("Δ%1/%1").arg(qs(key.second)));

    const train::ProbeSample& last = samples.back();
    const int row = paramTable_->rowCount();
    paramTable_->insertRow(row);
    paramTable_->setItem(row, 0, new QTableWidgetItem(qs(key.second)));
    paramTable_->setItem(row, 1, new QTableWidgetItem(number(last.stats.norm)));
    paramTable_->setItem(row, 2, new QTableWidgetItem(number(last.update_ratio)));
    for (int col = 0; col < 3; ++col) {
      paramTable_->item(row, col)->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
    }
  }
  paramPlot_->setVisible(colour > 0);
  paramTable_->setVisible(colour > 0);
  if (colour == 0) return;
  paramPlot_->rescaleAxes();
  if (histogram_->isZoomed() && histogram_->rows() > 0) {
    paramPlot_->xAxis->setRange(static_cast<double>(histogram_->firstStep()),
                                static_cast<double>(histogram_->lastStep()));
  }
  paramPlot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace nns::ui
