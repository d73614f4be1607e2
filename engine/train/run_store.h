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
// The probes' summaries of each sampled step (ProbeSample without its attention maps) are kept
// too, so that scrubbing to a step shows the probe panels and the nodes' health as they were.
//
// The schema (SQLite, PRAGMA user_version = 3; an earlier version gets what it lacks when it
// is opened: 2 added probe_samples, 3 the runs' source columns; a later version is refused).
// Other programs write it too: resources/python/nnstudio_runs.py, PyTorch's recorder. Its
// statements, the records' layouts and the schedule are in one file both read,
// resources/python/nnstudio_runs_schema.json (run_store_schema.h); what follows describes it.
// A store is read as untrusted (a watched folder can come from anyone): tests/fuzz has its
// reader among the fuzz targets.
//
//   runs(id, name, started, parent, parent_step, settings, architecture, project, changes,
//        steps, finished, train_loss, train_accuracy, test_loss, test_accuracy,
//        source ('nnstudio', 'pytorch'), processes, host, device)
//   step_metrics(run, first_step, last_step, steps BLOB)   a batch of steps, 48 bytes each:
//        int64 step, int64 epoch, float64 loss, smoothed_loss, accuracy, lr
//   epoch_metrics(run, epoch, step, train_loss, train_accuracy, test_loss, test_accuracy,
//        test_sequence_accuracy, seconds, steps_per_second)
//   snapshots(run, step, epoch, weights, state, bytes)     the files, relative to the folder
//   probe_samples(run, first_step, last_step, samples BLOB) a batch of probe samples, in the
//        order they were taken, each a 128-byte header then its strings and histogram:
//        int64 step, interval, numel, nonfinite;
//        float64 mean, std, min, max, norm, zero_fraction, saturated_fraction, update_ratio,
//                histogram_lo, histogram_hi;
//        int32 kind (0 activation, 1 grad_output, 2 grad_input, 3 param_grad),
//              module_bytes, tensor_bytes, bins;
//        module (UTF-8, module_bytes), tensor (UTF-8, tensor_bytes), bins x int64 counts
//        (Python: struct "<4q10d4i"). NaN where a figure does not apply.
//   meta(key, value)                                       'budget_bytes'
//
// The BLOBs are in the machine's byte order: little-endian on every machine NN Studio builds
// for.
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
  std::string source = "nnstudio";  // who trained it: "nnstudio", "pytorch" (nnstudio_runs.py)
  int64_t processes = 1;            // how many processes trained it (DDP's world size)
  std::string host;                 // where ("" for NN Studio's own runs)
  std::string device;               // "cuda:0", "cpu" ("" for NN Studio's own runs)
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
  // Probe samples of sampled steps (attention samples are not kept: their maps are big).
  void add_probe_samples(int64_t run, const std::vector<ProbeSample>& samples);
  // Marks the run ended with its figures (a run that records steps again is going again).
  void finish_run(int64_t run, const RunResult& result);
  void rename_run(int64_t run, const std::string& name);
  // The run, its metrics and snapshot files; its branches become branches of its parent.
  void delete_run(int64_t run);

  std::vector<RunInfo> runs() const;
  std::optional<RunInfo> run(int64_t id) const;
  std::vector<StepMetrics> steps(int64_t run) const;
  std::vector<EpochMetrics> epochs(int64_t run) const;
  // RunStoreError when a row names a file outside the store's folder (see path_in_store).
  std::vector<SnapshotInfo> snapshots(int64_t run) const;
  // The snapshot nearest at or before `step` (none when the run has none that early).
  std::optional<SnapshotInfo> snapshot_at(int64_t run, int64_t step) const;
  // The run's own probe samples up to `step`, by step (those of a step in the order taken);
  // `probe` is 0 in them (probe ids belong to a session).
  std::vector<ProbeSample> probe_samples(int64_t run,
                                         int64_t step = std::numeric_limits<int64_t>::max()) const;
  // What the probes saw up to `step` of the run as a branch continues it: its ancestors'
  // samples up to the steps it branched from, then its own.
  std::vector<ProbeSample> probe_history(int64_t run,
                                         int64_t step = std::numeric_limits<int64_t>::max()) const;
  // Changes whenever anything in the store changes, written by this object or another
  // process (a window polls it to show the store as it is).
  uint64_t revision() const;
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
