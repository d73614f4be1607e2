// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// RunsPanel: the project's recorded runs (the controller's run store) as a tree, branches under
// the run they came from, each in its own colour; checking a run draws its curves in the
// Curves panel beside the live ones. Rename and Delete act on the selected run.
//
// Below the tree, a time slider over the selected run's steps: dragging it to step S puts the
// session at that run's snapshot nearest at or before S (TrainingController::showSnapshot),
// so the inspector, the output panel and the probes show the model as it was there, and the
// Curves panel marks the step. "Branch from here" trains on from that state as a new run,
// with whatever was changed since (the learning rate, the architecture).
//
// Watch Folder...: the runs another process records (a PyTorch job's runs/ folder, written by
// nnstudio_runs.Recorder) appear under their folder with a PyTorch badge, and grow as the job
// writes; their curves, slider and Compare work as for the project's runs, and Branch from here
// trains on from their snapshot as a run of the project's own.
//
// Compare: the slider's snapshot against another (any run's, picked from a list); every node
// on the canvas is tinted by how far its weights moved between the two (||b - a|| / ||a||, on a
// log scale from 0.1% to 100%), with the figure on the node and the numbers in its tooltip.
#include <QColor>
#include <QElapsedTimer>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;
class QTreeWidget;
class QTreeWidgetItem;

namespace nns::train {
struct RunInfo;
class RunStore;
}  // namespace nns::train

namespace nns::ui {

class CurvesWidget;
class GraphScene;
class TrainingController;

class RunsPanel : public QWidget {
  Q_OBJECT

 public:
  RunsPanel(TrainingController* controller, CurvesWidget* curves, GraphScene* scene,
            QWidget* parent = nullptr);

  // A run's colour: its curves and its swatch in the tree.
  static QColor runColour(int64_t run);

  QTreeWidget* tree() const { return tree_; }
  QSlider* slider() const { return slider_; }
  QPushButton* branchButton() const { return branch_; }
  QComboBox* compareBox() const { return compareWith_; }
  // The colour of a relative change of weights (0.1% pale to 100% deep).
  static QColor changeColour(double relative);
  // A run of a store, the store named by its folder (train::RunStore::folder()), empty for the
  // project's own: a name, not a position, so that unwatching one store leaves the others'
  // keys as they are.
  using RunKey = std::pair<QString, int64_t>;
  // The run the slider and the buttons act on (0: none), and its store.
  int64_t selectedRun() const;
  QString selectedStore() const;
  void selectRun(int64_t run, const QString& store = {});
  // The tree's item of a run (null where it is not shown).
  QTreeWidgetItem* itemOf(int64_t run, const QString& store = {}) const;
  // Whether a run's curves are drawn in the Curves panel.
  void setRunChecked(int64_t run, bool on, const QString& store = {});
  // The project's runs drawn; checkedKeys() has the watched stores' too.
  std::set<int64_t> checkedRuns() const;
  const std::set<RunKey>& checkedKeys() const { return checked_; }
  QPushButton* watchButton() const { return watch_; }

 public slots:
  // Reads the store again (the controller's runsChanged).
  void refresh();
  // Moves the slider (and so the session) to `step` of the selected run at once.
  void scrubTo(int64_t step);
  void branchFromHere();
  void renameSelected();
  void deleteSelected();
  // Tints the canvas's nodes by the change of their weights from the slider's snapshot of
  // the selected run to `run`'s snapshot at or before `step`; false (with a message) when
  // either is missing.
  bool compareWith(int64_t run, int64_t step, const QString& store = {});
  // Watch Folder... with the folder chosen; false (with a message) without a store there.
  bool watchFolder(const QString& folder);
  void unwatchSelected();
  void clearComparison();

 private:
  // The constructor's parts, in the order it runs them.
  void setUpTree();
  // The run buttons', slider's and step label's names, tooltips and states.
  void setUpControls();
  // Summary, tree, run buttons, time slider, Branch from here and the Compare row, top to
  // bottom.
  void layOutControls();
  void setUpCompareControls();
  // The buttons, the slider (a drag's steps coalesced by scrubTimer_) and the compare list.
  void connectControls();
  // Checking a run draws its curves; selecting one sets the slider over its steps and, for a
  // watched run, shows what its probes recorded.
  void connectTree();
  void connectController();
  // Polls the stores' revisions (refreshTimer_) and refreshes when one changed.
  void startPollingStores();
  // The stores the tree shows (the project's first) and their revisions (0 where unreadable).
  std::vector<std::pair<const void*, uint64_t>> storeRevisions() const;
  void updateSlider();
  void fillCompareList(const std::vector<RunKey>& runs);
  // The store of that name the panel shows (null where there is none).
  train::RunStore* storeNamed(const QString& store) const;
  // The watched store of that name (null where none is watched).
  std::shared_ptr<train::RunStore> watchedNamed(const QString& store) const;
  QTreeWidgetItem* makeRunItem(const train::RunInfo& r, const QString& store);
  static QColor keyColour(const RunKey& key);
  QString runLabel(const RunKey& key) const;
  void updateOverlays();
  void showWatchedProbes();
  void onSnapshotShown(int64_t run, int64_t step);

  TrainingController* controller_;
  CurvesWidget* curves_;
  GraphScene* scene_;
  QLabel* summary_;
  QTreeWidget* tree_;
  QPushButton* rename_;
  QPushButton* delete_;
  QPushButton* watch_;
  QPushButton* unwatch_;
  QSlider* slider_;
  QLabel* stepLabel_;
  QPushButton* branch_;
  QComboBox* compareWith_;
  QPushButton* compare_;
  QPushButton* clearCompare_;
  QTimer* scrubTimer_;  // coalesces a drag's steps into a few loads
  // How often the panel asks the store whether it changed (a cheap query).
  static constexpr int kStorePollMs = 250;
  QTimer* refreshTimer_;  // the store's changes: a recorded run's steps, its end
  // The stores and their revisions the tree shows (the project's first).
  std::vector<std::pair<const void*, uint64_t>> shownRevisions_;
  QElapsedTimer sinceRefresh_;
  std::set<RunKey> checked_;
  std::set<RunKey> listedWatched_;   // the watched stores' runs the last refresh listed
  std::map<RunKey, int64_t> drawn_;  // the runs drawn in the Curves panel, by steps recorded
  bool refreshing_ = false;
  bool settingSlider_ = false;
  bool compareChosen_ = false;  // the user picked a snapshot to compare with
};

}  // namespace nns::ui
