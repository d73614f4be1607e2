// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// RunRecorder: records a TrainingSession's run into a RunStore as it trains. The session's
// worker hands it each step's and epoch's metrics and the snapshots it asks for (a
// SessionObserver), and its reader the probe samples; a writer thread of its own puts them into
// the store, so the training steps never wait for the disk.
//
//   auto store = std::make_shared<train::RunStore>(train::RunStore::folder_for(path));
//   const int64_t run = store->begin_run(train::new_run_info(project, std::nullopt, 0));
//   auto recorder = std::make_shared<train::RunRecorder>(store, run, train::SnapshotSchedule{});
//   session->set_observer(recorder);
//   ... train ...
//   session->snapshot();        // the last step's state
//   session->wait_idle();
//   recorder->finish(result);   // everything written, the run's final figures
//
// A write that fails (a full disk) stops the recording, not the training: error() says why.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/train/run_store.h"
#include "engine/train/session.h"

namespace nns::train {

// When a run is snapshotted: every `every` steps, or by default log-spaced so that early steps,
// where the model changes most, are dense: 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50,
// 60, 80, 100, 120, 150, ... (ten a decade). The last step of a run is snapshotted as well
// (TrainingSession::snapshot()).
struct SnapshotSchedule {
  int64_t every = 0;  // 0: log-spaced
  bool due(int64_t step) const;
};

// A run's figures from a session's status: its step, the last epoch's train loss and accuracy,
// the last evaluation's test loss and accuracy.
RunResult result_of(const SessionStatus& status);

// A new run's entry for a project: its settings, architecture and project JSON, and, for a
// branch, its parent, the step it starts from and what changed.
RunInfo new_run_info(const graph::Project& project, const std::optional<RunInfo>& parent,
                     int64_t parent_step);
// A new run's entry for a run that starts from another store's snapshot (a PyTorch job's
// runs/ folder): no parent in this store; it starts at the snapshot's step and says where it
// came from ("from PyTorch run 2 of /jobs/runs at step 300").
RunInfo new_run_info_from(const graph::Project& project, const RunInfo& source_run,
                          const std::string& source_folder, int64_t step);

// Where a branch of a recorded run starts: the snapshot's state, made to fit the project as it
// is now. With the parent's architecture the whole state carries over; with another, the
// weights carry over node by node (graph::carry_state, by node id, as an edit keeps them) into
// `model` (the new session's, idle), with a fresh optimizer. Another optimizer or scheduler
// starts fresh; other data starts at the next epoch. `lr`: the project's learning rate when
// it differs from the parent's (apply it with set_lr after restore()). A parent another program
// recorded (source "pytorch") hands over its state as it is: weights by the export's names
// and its optimizer's state, nothing compared; the project's learning rate applies.
struct BranchStart {
  TrainingState state;
  std::optional<double> lr;
  std::string note;  // what did not carry over, or where a PyTorch run came from, for the user
};
BranchStart branch_start(const RunStore& store, const RunInfo& parent, const SnapshotInfo& snapshot,
                         const graph::Project& project, nn::Module& model);

class RunRecorder : public SessionObserver {
 public:
  RunRecorder(std::shared_ptr<RunStore> store, int64_t run, SnapshotSchedule schedule);
  ~RunRecorder() override;  // writes what is left, then stops the writer
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  int64_t run() const { return run_; }
  const std::shared_ptr<RunStore>& store() const { return store_; }

  void on_step(const StepMetrics& metrics) override;
  void on_epoch(const EpochMetrics& metrics) override;
  bool wants_snapshot(int64_t step) override { return schedule_.due(step); }
  void on_snapshot(TrainingState state) override;

  // Probe samples the session's reader took (take_probe_samples): the recorder does not take
  // them itself, since a session's samples go to one reader. Returns at once.
  void add_probe_samples(const std::vector<ProbeSample>& samples);
  // Waits until everything handed over so far is in the store.
  void flush();
  // The run's figures as they are now (the run marked ended), written after what was handed
  // over before; returns at once.
  void set_result(const RunResult& result);
  // set_result(), then flush().
  void finish(const RunResult& result);
  // The first write that failed ("" none); nothing more is recorded after it.
  std::string error() const;

 private:
  void writer_loop();

  std::shared_ptr<RunStore> store_;
  const int64_t run_;
  const SnapshotSchedule schedule_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::vector<StepMetrics> steps_;
  std::vector<EpochMetrics> epochs_;
  std::vector<ProbeSample> probes_;
  std::deque<TrainingState> snapshots_;
  std::optional<RunResult> result_;
  uint64_t handed_ = 0;  // items handed over
  uint64_t written_count_ = 0;
  int flushing_ = 0;  // flush() calls waiting: the writer writes at once
  bool quit_ = false;
  std::string error_;
  std::thread writer_;
};

}  // namespace nns::train
