// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// View > Profile: where the training step's time goes, module by module (engine/train/
// profiler.h). A sortable table (a module's forward, backward and self time per step, its share
// of the step, calls and the memory of its outputs; then the rows outside any module: the loss,
// the data, the optimizer, the rest), a line reconciling them with the measured step, and a heat
// tint on each node of the canvas with its share of the step (a collapsed group shows its
// members' sum: its module's time holds theirs). Profiling is on only while the panel is shown:
// a hidden panel costs the run nothing.
#include <QPointer>
#include <QWidget>
#include <optional>

#include "engine/graph/spec.h"
#include "engine/train/profiler.h"

class QLabel;
class QTableWidget;
class QTimer;

namespace nns::ui {

class GraphScene;
class TrainingController;

class ProfilePanel : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRefreshMs = 500;
  ProfilePanel(TrainingController* controller, GraphScene* scene, QWidget* parent = nullptr);

  // Shown: profiling on, the table and the canvas's tint follow the run. Hidden: off, the tint
  // is cleared.
  void setActive(bool on);
  bool isActive() const { return active_; }
  QTableWidget* table() const { return table_; }
  QLabel* summary() const { return summary_; }
  // Reads the session's profile and redraws (the timer calls it while active).
  void refresh();

  // The table's columns.
  enum Column { Module, Type, Forward, Backward, Self, Share, Calls, Memory, Columns };

 signals:
  // A row was clicked: show its node.
  void nodeActivated(graph::NodeId id);

 private:
  void showProfile(const train::StepProfile& profile);
  void tintNodes(const train::StepProfile& profile);

  // Guarded: the window closing hides the panel (setActive(false)) after it destroyed them.
  QPointer<TrainingController> controller_;
  QPointer<GraphScene> scene_;
  QLabel* summary_;
  QTableWidget* table_;
  QTimer* timer_;
  bool active_ = false;
  bool tinted_ = false;      // the canvas shows this panel's tint
  int64_t shownSteps_ = -1;  // the sampled steps the table shows
};

}  // namespace nns::ui
