// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The TrainingController's state beside its phase (training_controller.h): whether its session
// is the project's as it is now, where it stands among the recorded runs, and the weights it
// holds while no session can be made. Each changes only through its named operations, so that
// its rules live in one place.
#include <QtGlobal>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "engine/graph/builder.h"
#include "engine/graph/spec.h"
#include "engine/train/run_store.h"

namespace nns::ui {

// Whether the session is out of date (an edit since it was made), and the job making one on a
// worker thread. Job is what makes it there (the controller's); it is owned here, and dropping
// it joins its worker. Edits are counted: a job is for the project as it was at one of them,
// and only the job of the latest one may become the session.
template <class Job>
class SessionFreshness {
 public:
  bool stale() const { return stale_; }
  // When the last edit came (0 before any).
  qint64 lastEditMs() const { return lastEditMs_; }

  // An edit at `atMs` made the session out of date: a job going on is for an earlier one now.
  void edited(qint64 atMs) {
    outOfDate();
    lastEditMs_ = atMs;
  }
  // No session (another project): out of date, and a job going on is for what was before
  // (dropped when it comes, or with this).
  void reset() { outOfDate(); }
  // A session is being made now for the project as it is.
  void madeNow() { stale_ = false; }

  // A make on a worker thread is asked for: true when its job is to begin now (none goes on).
  // One going on for an earlier edit is left to end; the make is asked again when it comes.
  bool askMake() {
    if (!job_) return true;
    if (jobEdit_ != edits_) remakeWanted_ = true;
    return false;
  }
  // The job askMake() allowed, begun for the project as it is now.
  void began(std::unique_ptr<Job> job) {
    job_ = std::move(job);
    jobEdit_ = edits_;
  }
  Job* job() const { return job_.get(); }
  // Whether the job going on is for the project as it is now.
  bool jobIsCurrent() const { return job_ && jobEdit_ == edits_; }
  // That job, handed over to become the session; null when there is none (one for an earlier
  // edit stays, to end on its own).
  std::unique_ptr<Job> takeCurrentJob() {
    return jobIsCurrent() ? std::move(job_) : std::unique_ptr<Job>();
  }
  // The job for an earlier edit ended: dropped. True when a make was asked for meanwhile,
  // which is then to be asked again (askMake()), once.
  bool dropEndedJob() {
    job_.reset();
    return std::exchange(remakeWanted_, false);
  }
  // Drops any job, joining its worker (the controller is going away).
  void stopJob() { job_.reset(); }

 private:
  void outOfDate() {
    stale_ = true;
    ++edits_;
  }

  bool stale_ = true;
  uint64_t edits_ = 0;
  qint64 lastEditMs_ = 0;
  std::unique_ptr<Job> job_;
  uint64_t jobEdit_ = 0;  // edits_ when job_ began
  bool remakeWanted_ = false;
};

// A step of a recorded run, in the project's store (source null) or a watched one.
struct RunStep {
  int64_t run = 0;
  int64_t step = 0;
  std::shared_ptr<train::RunStore> source;

  std::pair<int64_t, int64_t> runAndStep() const { return {run, step}; }
};

// Where the session stands among the recorded runs: the snapshot it was put at (the data of
// the phase ShowingSnapshot) and the step the next run branches from (a snapshot shown, or
// the run whose session an edit replaced keeping its weights).
struct RunLineage {
  std::optional<RunStep> shown;
  std::optional<RunStep> branchFrom;

  // Nothing shown, and the next run branches from nothing.
  void reset() {
    shown.reset();
    branchFrom.reset();
  }
  // `run` of the project's store was deleted: neither is in it any more.
  void forgetRun(int64_t run) {
    auto inRun = [&](const std::optional<RunStep>& s) { return s && !s->source && s->run == run; };
    if (inRun(branchFrom)) branchFrom.reset();
    if (inRun(shown)) shown.reset();
  }
  // `store` is no longer watched: what was shown from it stays in the session, but the next
  // run branches from nothing (a run of its own).
  void forgetStore(const train::RunStore* store) {
    auto from = [&](const std::optional<RunStep>& s) { return s && s->source.get() == store; };
    if (from(shown) || from(branchFrom)) branchFrom.reset();
  }
};

// Weights loaded while no session could be made, with the graph they were loaded for: held
// until the next session takes them (carried node by node), the only weights the controller
// keeps outside a session.
struct PendingWeights {
  std::shared_ptr<graph::GraphModule> model;
  graph::Graph graph;
};

}  // namespace nns::ui
