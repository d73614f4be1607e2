// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// RunStore: every training run of a project, kept beside it in `<project>.runs/`:
//
//   spirals.runs/runs.db                       SQLite: runs, their metrics, their snapshots
//   spirals.runs/run-3/step-000300.safetensors the weights at step 300 of run 3
//   spirals.runs/run-3/step-000300.pt          the rest of that training state (checkpoint.h)
//
// A run has an id (1, 2, ... per project, never reused), a start time, a parent run and the
// step it branched from (0: none), the settings it trained with (the project's training and
// dataset settings as JSON), a hash of its architecture, what changed from its parent, and
// its final figures; its metrics per step and per epoch; and snapshots of its training state
// written on a schedule (RunRecorder) within a disk budget: when the snapshots' files pass it,
// the oldest runs' intermediate snapshots are thinned (the one closest to its neighbours
// first); a run's first and last snapshots are kept.
//
//   train::RunStore store(train::RunStore::folder_for("spirals.nns"));
//   for (const train::RunInfo& r : store.runs()) ...
//   std::optional<train::SnapshotInfo> s = store.snapshot_at(3, 300);   // at or before 300
//   train::TrainingState state = store.load(*s);
//
// Safety: every write is one SQLite transaction (WAL journal), and a snapshot's files are
// written atomically before its row, so a killed process loses at most the snapshot being
// written (its files, without a row, are never read). A database that is not one or is
// damaged throws RunStoreError at opening, naming the file; the project itself is untouched.
// Several processes may use one store (SQLite's locking; a writer waits up to 5 s).
// One object may be used from several threads (calls are serialized).
#include <cstdint>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/tensor/error.h"
#include "engine/train/checkpoint.h"
#include "engine/train/session.h"

struct sqlite3;

namespace nns::graph {
struct Project;
}

namespace nns::train {

class RunStoreError : public Error {
 public:
  using Error::Error;
};

struct RunInfo {
  int64_t id = 0;
  std::string name;          // "" until the user names it
  std::string started;       // UTC, "2026-11-25 17:46:22"
  int64_t parent = 0;        // 0: none
  int64_t parent_step = 0;   // the parent's snapshot step it started from
  std::string settings;      // run_settings(): JSON
  std::string architecture;  // architecture_hash()
  std::string project;       // the whole project file's JSON as it was at the start
  std::string changes;       // what changed from the parent ("lr 0.1 -> 0.01"); "" for none
  int64_t first_step = 0;    // the step it started from (the parent_step, or 0)
  int64_t steps = 0;         // the last step recorded
  bool finished = false;     // false: still going, or the process was killed
  double train_loss = std::numeric_limits<double>::quiet_NaN();
  double train_accuracy = std::numeric_limits<double>::quiet_NaN();
  double test_loss = std::numeric_limits<double>::quiet_NaN();
  double test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

struct SnapshotInfo {
  int64_t run = 0;
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t bytes = 0;         // both files
  std::string weights_path;  // absolute
  std::string state_path;
};

// The final figures of a run (NaN where unknown).
struct RunResult {
  int64_t steps = 0;
  double train_loss = std::numeric_limits<double>::quiet_NaN();
  double train_accuracy = std::numeric_limits<double>::quiet_NaN();
  double test_loss = std::numeric_limits<double>::quiet_NaN();
  double test_accuracy = std::numeric_limits<double>::quiet_NaN();
};

// The settings a run is compared by: the project's training and dataset settings (JSON).
std::string run_settings(const graph::Project& project);
// A hash of what makes the model (the graph, blocks, name), as 16 hex digits.
std::string architecture_hash(const graph::Project& project);
// What changed between two runs' settings and architectures, e.g.
// "optimizer_options.lr 0.1 -> 0.01, architecture"; "" when nothing did.
std::string describe_changes(const RunInfo& from, const RunInfo& to);

class RunStore {
 public:
  static constexpr int64_t kDefaultBudgetBytes = 200LL * 1024 * 1024;

  // "<dir>/<stem>.runs" for "<dir>/<stem>.nns"; with the environment variable
  // NNSTUDIO_RUNS_DIR set, "$NNSTUDIO_RUNS_DIR/<stem>.runs" instead (projects on read-only
  // media; the test suite keeps the source tree clean with it).
  static std::string folder_for(const std::string& project_path);
  // Opens the store in `folder`, making it if it is not there (RunStoreError when it cannot,
  // or the database is damaged).
  explicit RunStore(const std::string& folder);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& folder() const { return folder_; }
  // The snapshots' disk budget (bytes); the default unless set_budget changed it (kept in the
  // database).
  int64_t budget() const;
  void set_budget(int64_t bytes);
  // The bytes of every snapshot's files.
  int64_t snapshot_bytes() const;

  // A new run (info.id, first_step and the figures are ignored); its id.
  int64_t begin_run(const RunInfo& info);
  void add_steps(int64_t run, const std::vector<StepMetrics>& steps);
  void add_epochs(int64_t run, const std::vector<EpochMetrics>& epochs);
  // Writes the state's files, records them, then thins to the budget.
  void add_snapshot(int64_t run, const TrainingState& state);
  void finish_run(int64_t run, const RunResult& result);
  void rename_run(int64_t run, const std::string& name);
  // The run, its metrics and snapshot files; its branches become branches of its parent.
  void delete_run(int64_t run);

  std::vector<RunInfo> runs() const;
  std::optional<RunInfo> run(int64_t id) const;
  std::vector<StepMetrics> steps(int64_t run) const;
  std::vector<EpochMetrics> epochs(int64_t run) const;
  std::vector<SnapshotInfo> snapshots(int64_t run) const;
  // The snapshot nearest at or before `step` (none when the run has none that early).
  std::optional<SnapshotInfo> snapshot_at(int64_t run, int64_t step) const;
  TrainingState load(const SnapshotInfo& snapshot) const;
  nn::StateDict load_weights(const SnapshotInfo& snapshot) const;

 private:
  void exec(const std::string& sql) const;
  void thin_to_budget();
  RunInfo read_run(void* statement) const;
  std::string path_in_store(const std::string& relative) const;

  std::string folder_;
  sqlite3* db_ = nullptr;
  mutable std::recursive_mutex mutex_;
};

}  // namespace nns::train
