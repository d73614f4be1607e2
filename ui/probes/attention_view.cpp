// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/attention_view.h"

#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QPainter>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "ui/document/qt_strings.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

// From white (weight 0) to a deep blue (weight 1).
QColor weightColor(float w) {
  const double t = std::clamp(static_cast<double>(w), 0.0, 1.0);
  auto mix = [t](int to) { return static_cast<int>(std::lround(255 + (to - 255) * t)); };
  return {mix(8), mix(48), mix(107)};
}

// The set a view picks its sequence from: the test set, or the training set without one.
const data::Dataset* sequenceSet(train::TrainingSession* session) {
  if (!session) return nullptr;
  return session->test_set().size() > 0 ? &session->test_set() : &session->train_set();
}

}  // namespace

AttentionView::AttentionView(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), timer_(new QTimer(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* head = new QHBoxLayout;
  heading_ = new QLabel(tr("Attention, test sequence"));
  sequence_ = new QSpinBox;
  sequence_->setObjectName("attentionSequence");
  sequence_->setToolTip(tr("Which test sequence the maps are drawn for"));
  sequence_->setKeyboardTracking(false);
  caption_ = new QLabel;
  caption_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // The tokens never widen the panel: a long sequence is cut (the axes show every token).
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  head->addWidget(heading_);
  head->addWidget(sequence_);
  head->addWidget(caption_, 1);
  layout->addLayout(head);
  layout->addStretch(1);
  // Room for a 2 x 2 grid of 8 x 8 maps with their tokens in a narrow inspector.
  setMinimumHeight(320);
  setToolTip(
      tr("Each heatmap is one head: row q shows how much query position q attends to each key "
         "position (rows sum to 1), in eval mode on the chosen sequence"));
  connect(sequence_, &QSpinBox::valueChanged, this, &AttentionView::chooseSequence);
  connect(controller_, &TrainingController::sessionReset, this, &AttentionView::takeData);
  connect(controller_, &TrainingController::predictionArrived, this,
          &AttentionView::showPrediction);
  connect(timer_, &QTimer::timeout, this, &AttentionView::tick);
  timer_->start(1000 / kRateHz);
  takeData();
}

void AttentionView::setModule(const QString& module) {
  if (module == module_ && module.isNull() == module_.isNull()) return;
  module_ = module;
  heading_->setToolTip(tr("The attention maps of %1's MultiheadAttention on this test sequence")
                           .arg(module.isEmpty() ? tr("the model") : module));
  maps_.clear();
  requestedStep_ = -1;
  update();
}

void AttentionView::takeData() {
  maps_.clear();
  pending_ = 0;
  requestedStep_ = shownStep_ = -1;
  const data::Dataset* set = sequenceSet(controller_->currentSession());
  {
    const QSignalBlocker block(sequence_);
    sequence_->setRange(0, set ? static_cast<int>(std::max<int64_t>(set->size() - 1, 0)) : 0);
  }
  chooseSequence();
}

void AttentionView::chooseSequence() {
  const data::Dataset* set = sequenceSet(controller_->currentSession());
  tokens_.clear();
  input_ = Tensor();
  maps_.clear();
  requestedStep_ = -1;
  // A request still out is for the sequence shown before: its answer is dropped (its id no
  // longer matches), and this sequence's is asked for at once. Kept, it would draw the old
  // sequence's maps as this one's, at the step this one waits for.
  pending_ = 0;
  if (!set || set->size() == 0) {
    why_ = tr("No data to draw attention for");
    caption_->clear();
    update();
    return;
  }
  const int64_t index = std::min<int64_t>(sequence_->value(), set->size() - 1);
  input_ = set->inputs.narrow(0, index, 1).contiguous();
  if (!set->vocabulary.empty() && input_.dtype() == kInt64 && input_.dim() == 2) {
    for (int64_t token : input_.to_vector<int64_t>()) {
      tokens_ << (token >= 0 && token < static_cast<int64_t>(set->vocabulary.size())
                      ? qs(set->vocabulary[static_cast<size_t>(token)])
                      : QString::number(token));
    }
  }
  caption_->setText(tokens_.isEmpty() ? QString() : tokens_.join(QLatin1Char(' ')));
  why_.clear();
  update();
  tick();
}

void AttentionView::tick() {
  if (module_.isNull() || pending_ != 0 || !isVisible() || !input_.defined()) return;
  // After an edit, the new session once the edits pause, made on a worker thread (as the
  // Output panel asks for it); the next tick after it came asks for the maps.
  if (controller_->isStale() && !controller_->isRunning()) {
    if (controller_->editsSettled()) controller_->makeSessionInBackground();
    return;
  }
  if (!controller_->currentSession()) return;
  const int64_t step = controller_->status().step;
  if (step == requestedStep_) return;
  pending_ = controller_->requestPrediction(input_);
  if (pending_ != 0) requestedStep_ = step;
}

void AttentionView::showPrediction(const train::Prediction& prediction) {
  if (pending_ == 0 || prediction.id != pending_) return;
  pending_ = 0;
  maps_.clear();
  if (!prediction.error.empty()) {
    why_ = qs(prediction.error);
  } else {
    const std::string prefix = module_.toStdString();
    for (const train::AttentionMap& m : prediction.attention) {
      if (prefix.empty() || m.module == prefix || m.module.rfind(prefix + ".", 0) == 0) {
        maps_.push_back(m);
      }
    }
    why_ = maps_.empty() ? tr("No MultiheadAttention in %1").arg(module_) : QString();
  }
  shownStep_ = prediction.step;
  update();
}

void AttentionView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const int top = sequence_->geometry().bottom() + 6;
  const QRect area = rect().adjusted(2, top, -2, -2);
  if (module_.isNull()) return;
  if (maps_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(area, Qt::AlignCenter | Qt::TextWordWrap,
               why_.isEmpty() ? tr("Waiting for the model's attention…") : why_);
    return;
  }
  QFont small = font();
  small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1.5));
  p.setFont(small);
  const QFontMetrics fm(small);
  int panels = 0;
  for (const train::AttentionMap& m : maps_) panels += static_cast<int>(m.heads);
  const int64_t length = maps_.front().keys;
  // Labels: a token per query row on the left, per key column on top, when they fit.
  QStringList labels = tokens_;
  if (labels.size() != static_cast<int>(length)) {
    labels.clear();
    for (int64_t i = 0; i < length; ++i) labels << QString::number(i);
  }
  int labelWidth = 0;
  for (const QString& t : labels) labelWidth = std::max(labelWidth, fm.horizontalAdvance(t));
  labelWidth += 4;
  const int title = fm.height() + 2;
  // The grid of panels (columns x rows) that gives the largest cells.
  const auto queries = static_cast<double>(maps_.front().queries);
  auto cellFor = [&](int columns) {
    const int rows = (panels + columns - 1) / columns;
    const double w = area.width() / static_cast<double>(columns) - labelWidth - 8.0;
    const double h = area.height() / static_cast<double>(rows) - title - fm.height() - 6.0;
    return std::min(w / static_cast<double>(length), h / queries);
  };
  int columns = 1;
  for (int c = 2; c <= panels; ++c) {
    if (cellFor(c) > cellFor(columns)) columns = c;
  }
  const int rows = (panels + columns - 1) / columns;
  const int panelW = area.width() / columns;
  const int panelH = area.height() / std::max(rows, 1);
  const double cell = std::max(2.0, cellFor(columns));
  const bool showLabels = cell >= fm.height() * 0.8;
  int index = 0;
  for (const train::AttentionMap& m : maps_) {
    for (int64_t h = 0; h < m.heads; ++h, ++index) {
      const int x0 = area.left() + (index % columns) * panelW;
      const int y0 = area.top() + (index / columns) * panelH;
      p.setPen(palette().color(QPalette::WindowText));
      // "head 1", or with several attention modules "self_attn · head 1" (the name below the
      // probed module).
      QString name = qs(m.module);
      if (name.startsWith(module_ + ".")) name = name.mid(module_.size() + 1);
      const QString head = maps_.size() > 1 && !name.isEmpty()
                               ? tr("%1 · head %2").arg(name).arg(h + 1)
                               : tr("head %1").arg(h + 1);
      p.drawText(QRect(x0, y0, panelW, title), Qt::AlignLeft | Qt::AlignVCenter,
                 fm.elidedText(head, Qt::ElideLeft, panelW - 4));
      const double gx = x0 + (showLabels ? labelWidth : 4);
      const double gy = y0 + title + (showLabels ? fm.height() : 2);
      for (int64_t q = 0; q < m.queries; ++q) {
        for (int64_t k = 0; k < m.keys; ++k) {
          const float w = m.weights[static_cast<size_t>((h * m.queries + q) * m.keys + k)];
          p.fillRect(QRectF(gx + k * cell, gy + q * cell, cell, cell), weightColor(w));
        }
      }
      p.setPen(QPen(palette().color(QPalette::Mid), 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(QRectF(gx, gy, cell * m.keys, cell * m.queries));
      if (showLabels && m.keys == length && m.queries == length) {
        p.setPen(palette().color(QPalette::WindowText));
        for (int64_t i = 0; i < length; ++i) {
          p.drawText(QRectF(gx + i * cell, gy - fm.height(), cell, fm.height()), Qt::AlignCenter,
                     labels[static_cast<int>(i)]);
          p.drawText(QRectF(x0, gy + i * cell, labelWidth - 3, cell),
                     Qt::AlignRight | Qt::AlignVCenter, labels[static_cast<int>(i)]);
        }
      }
    }
  }
}

}  // namespace nns::ui
