// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// AttentionView: the attention maps of a module's MultiheadAttention layers (itself, or a
// Transformer layer's self_attn and multihead_attn), one heatmap per head, query down and key
// across, with the sequence's tokens on the axes, for a test sequence the user picks, redrawn
// as the model learns (the Probe tab shows it for a probed node with attention in it).
//
// The maps come from the session's predict() on that one sequence (eval mode, between two
// steps: train::Prediction::attention); while the step count moves the view asks at most
// kRateHz times a second and never while an answer is due, like the output panel.
#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "engine/train/session.h"

class QLabel;
class QSpinBox;
class QTimer;

namespace nns::ui {

class TrainingController;

class AttentionView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRateHz = 5;

  explicit AttentionView(TrainingController* controller, QWidget* parent = nullptr);

  // The module whose attention to show ("encoder.0"; its attention modules are it and those
  // below it); empty shows nothing.
  void setModule(const QString& module);
  const QString& module() const { return module_; }
  // The maps shown (the module's, for the chosen sequence) and the step they are from.
  const std::vector<train::AttentionMap>& maps() const { return maps_; }
  int64_t shownStep() const { return shownStep_; }
  // The test sequence shown (an index into the test set, or the training set without one).
  QSpinBox* sequenceBox() const { return sequence_; }
  // The tokens on the axes (empty for sequences of values).
  const QStringList& tokens() const { return tokens_; }

  // Asks for the chosen sequence's maps if the step moved (what the timer does).
  void tick();

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  void takeData();
  void showPrediction(const train::Prediction& prediction);
  void chooseSequence();

  TrainingController* controller_;
  QTimer* timer_;
  QLabel* heading_;
  QSpinBox* sequence_;
  QLabel* caption_;
  QString module_;
  Tensor input_;  // the chosen sequence, [1, ...]
  QStringList tokens_;
  uint64_t pending_ = 0;
  int64_t requestedStep_ = -1;
  int64_t shownStep_ = -1;
  std::vector<train::AttentionMap> maps_;
  QString why_;
};

}  // namespace nns::ui
