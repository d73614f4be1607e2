// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TrainingController: the window's one link to the engine's TrainingSession. Widgets (the
// training dock, the curves, the decision boundary, probes and health on the canvas) never
// touch the session's worker: they call the controller's slots and listen to its signals.
//
//   TrainingController controller(document);
//   connect(&controller, &TrainingController::stepMetricsArrived, curves, &Curves::addSteps);
//   controller.start();   // returns at once; the session trains on its own thread
//
// The session is made from the document's project (train::make_session) and made again when
// the graph, the blocks, the model's name or the dataset or training settings changed since
// the last one, but only when something needs it: session() (a run, a step, the Output panel,
// the inspector's weights, a prediction) makes it; an edit only marks the session out of date
// (sessionStale), so a burst of edits costs no remake at all until one of those asks. The
// views that ask once the edits pause have it made on a worker thread instead
// (makeSessionInBackground, sessionMade): a 10,000-node model's session is a tenth of a second
// the window's thread does not wait for. Never
// while it runs (the frozen set and the probes change the session's model in place): edits
// during a run apply when it pauses (the learning rate and the batch size apply at once,
// through set_lr / set_batch_size, without a new session), and another project (new, opened)
// ends the run and drops its session at once. A graph with problems leaves no session:
// start() and stepOnce() then report why (runFailed with the node and message(), for the
// log).
//
// A QTimer on the GUI thread (about 25 Hz) polls the session: status(), take_step_metrics(),
// new entries of epoch_history(), take_probe_samples() and take_prediction(), and emits what
// it found. Every signal is emitted on the GUI thread from that timer, so a slot may redraw
// at once: plots refresh at the timer's rate whatever the training speed, never per step.
//
// Probes: the session's probes always equal document->project().probes. When the document
// changes, a ProbeSpec on a node without a probe gets one (add_probe on the node's module
// name) and a probe whose spec is gone is removed (remove_probe, which removes its hooks).
// A new session gets every probe of the project. probeNode() maps the ProbeId of a sample
// back to its node.
//
// What a run learned survives an edit: a new session made because the graph, the data or the
// settings changed starts from the old model's weights and buffers for every node that stays
// (graph::carry_state: matched by node id, entry by entry where the shapes agree), with a
// fresh optimizer and the step count at 0; the log says which nodes kept theirs. Reset, a run
// that failed (NaN) and another project (new, opened) start from fresh weights.
//
// Runs: every run is recorded in the project's run store (`<project>.runs/`, run_store.h) once
// the project has a file: its metrics and snapshots of its training state (log-spaced, and
// where it pauses). A run begins at the first step after a session is made or reset; a new
// session made after an edit that kept weights is a branch of the run before it, its steps
// numbered on from where that one stopped, so its curves continue the old ones.
// showSnapshot(run, step) puts the session at a snapshot (the one nearest at or before the
// step; with weights carried by node id when the architecture changed since) and the next
// start() or stepOnce() branches a new run from there with whatever was changed since.
//
// One owner of the weights: the session. The document holds the architecture and the
// settings (its model() is the architecture's: module names, shapes, the repr; its values
// are never trained). What reads weights asks the controller: the inspector reads the
// session's model at rest (withRestingModel), Save State Dict and the exporters take a copy
// (stateDict(), which pauses a run for the moment it takes), the run store gets snapshots from
// the worker. A state dict the user loads (ProjectDocument::loadStateDict validates it and
// marks each node) goes into the session; only while no session can be made (the data does
// not fit the model) does the controller hold it, for the next session made.
//
// Its state: one TrainingPhase, changed only by enter(event) through transition(), the table
// of what each event does in each phase (an event a phase does not take is refused there; what
// the session itself reports is an event too: sessionEvent()):
//
//   Idle             fresh weights from the seed at step 0 (or no session)
//   Running          the worker trains (start())
//   Paused           at rest at a step, or holding weights worth keeping (loaded, carried)
//   ShowingSnapshot  at a recorded run's snapshot (shownSnapshot()); the next run branches
//   Failed           the run failed (NaN/Inf, an error in a step): Reset or a snapshot only
//
// The Runs panel scrubs through a run by calling showSnapshot(run, step) (one phase change per
// call; the session's worker restores the snapshot between two steps) and reads which run and
// step are shown from shownSnapshot() or the snapshotShown signal; phaseChanged tells every
// view when the controller leaves that phase (a run starts, a reset, an edit's new session).
// Beside the phase, the session's freshness, its place among the runs and the weights held
// for the next session are one object each (controller_state.h).
#include <QMetaType>
#include <QObject>
#include <QString>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "engine/graph/builder.h"
#include "engine/graph/project.h"
#include "engine/train/profiler.h"
#include "engine/train/run_recorder.h"
#include "engine/train/run_store.h"
#include "engine/train/session.h"
#include "ui/training/controller_state.h"

class QTimer;

namespace nns::ui {

class ProjectDocument;

// The controller's state (see the top of this file).
enum class TrainingPhase { Idle, Running, Paused, ShowingSnapshot, Failed };
// What moves it: the user's commands and what the session reports.
enum class TrainingEvent {
  Start,  // start()
  Step,   // stepOnce()
  Reset,  // reset()
  // The worker of a run rests: pause() landed (between two steps), or the configured epochs
  // or steps are done. Not pause() itself: until the worker rests, the run goes on.
  Rested,
  RunFailed,     // the session reports Failed
  ShowSnapshot,  // showSnapshot()
  LoadWeights,   // a state dict or a checkpoint was loaded
  FreshSession,  // a new session with fresh weights (nothing kept, or another project)
  KeptSession,   // a new session that kept what the old one learned
};
const char* phaseName(TrainingPhase phase);

class TrainingController : public QObject {
  Q_OBJECT

 public:
  // Polling period of the timer (40 ms: 25 Hz).
  static constexpr int kPollMs = 40;
  // Epochs the session keeps (train::TrainingSession::set_epoch_history_limit): far more than
  // end between two polls.
  static constexpr size_t kKeptEpochs = 4096;

  explicit TrainingController(ProjectDocument* document, QObject* parent = nullptr);
  ~TrainingController() override;

  ProjectDocument* document() const { return document_; }
  // The current session, made now if the project changed since the last one and it is not
  // running; nullptr when the project cannot make one (lastError() says why). Read-only use
  // from widgets: status(), train_set(), test_set(), probes() (rebin, kept_steps,
  // hook_count), module_names().
  train::TrainingSession* session();
  // Starts making the session on a worker thread when it is out of date and no run goes on;
  // sessionMade follows (on this thread) once it is the current one. For the views that ask
  // once the edits pause (the Output panel, the inspector's weights, the attention maps): a
  // 10,000-node model's session takes a tenth of a second to make, which the window's thread
  // does not wait for. One at a time: one made for an earlier edit is dropped when it comes,
  // and the one asked for since is begun then. session() waits for the one of this edit.
  void makeSessionInBackground();
  // Why the last attempt to make a session failed ("" when it did not).
  QString lastError() const { return lastError_; }
  // The model's Input does not take the data set's samples (an image model with spirals
  // chosen): the Input's node and what to do, for the Problems list and the Output panel
  // (node 0 and "" when they fit, or before a session is made). Checked on every new session:
  // the data's sample shape and dtype against the Input's shape and dtype options. start()
  // and stepOnce() refuse to train such a model (runFailed with this message).
  graph::NodeId dataMismatchNode() const { return mismatchNode_; }
  QString dataMismatch() const { return mismatch_; }
  // The status the timer read last (state Idle when there is no session). While the phase is
  // Running its state says Running, also for the moment between a pause landing and the poll
  // that sees the worker rest.
  const train::SessionStatus& status() const { return status_; }
  // Whether a run goes on (phase Running): from start() until its worker rests, so that
  // status() (polled) and isRunning() agree: once it is false, status() has the step the run
  // rested at.
  bool isRunning() const;
  TrainingPhase phase() const { return phase_; }
  // The phase `event` leads to from `from`; nullopt where `from` does not take it (start() of
  // a failed run, stepOnce() while running or failed, a rest when nothing ran, a second
  // failure, a new session while running). The one table of the controller's transitions.
  static std::optional<TrainingPhase> transition(TrainingPhase from, TrainingEvent event);
  // What the session's own state (`state`, its status) is as an event in `phase`: RunFailed
  // when it reports a failure; Rested when a run's worker applied every command and rests
  // (`workerIdle`); none otherwise (start() not applied yet, or a pause that landed with a
  // prediction still queued: the run goes on as far as the window is concerned).
  static std::optional<TrainingEvent> sessionEvent(TrainingPhase phase, train::RunState state,
                                                   bool workerIdle);
  // Whether the session is out of date (an edit since it was made): session() makes it anew.
  bool isStale() const { return freshness_.stale(); }
  // Milliseconds since the last edit that made the session out of date: a view that remakes
  // it for itself (the Output panel) waits for a burst of edits to end.
  qint64 msSinceEdit() const;
  // Whether the edits have paused long enough for such a view to ask (session()): 150 ms, or
  // twice what the last remake took (a large model's remake is a frame of its own, made once
  // after a burst of edits, not between them).
  static constexpr qint64 kSettleMs = 150;
  qint64 settleMs() const { return std::max<qint64>(kSettleMs, 2 * lastRemakeMs_); }
  bool editsSettled() const { return msSinceEdit() >= settleMs(); }
  // The session as it is, without making it (nullptr when there is none; possibly out of
  // date: isStale()). For views that read the data of whatever session there is.
  train::TrainingSession* currentSession() const { return session_.get(); }
  bool evalMode() const { return evalMode_; }
  // Whether the current session continues the one before it (made after an edit that kept
  // the weights, its steps numbered on): curves keep what they drew at its sessionReset.
  bool sessionContinues() const { return continues_; }

  // The node a probe of the current session belongs to (0 when unknown).
  graph::NodeId probeNode(train::ProbeId probe) const;
  // The probe of the current session on a node (0 when none).
  train::ProbeId probeOf(graph::NodeId node) const;
  // The top-level node of a dotted module path ("fc1", "features.0.conv": the node whose
  // module name is its first component); 0 when none.
  graph::NodeId nodeOfModule(const std::string& modulePath) const;
  // The module name of a node in the current session's model ("encoder.0"); null when the node
  // makes no module or there is no session.
  QString moduleNameOf(graph::NodeId node) const;
  // The same, but only for a node whose module is or holds a MultiheadAttention (whose maps a
  // prediction carries); null otherwise. Reads the current session without remaking it, so a
  // burst of edits still makes one session (sessionReset says when another is made).
  QString attentionModuleOf(graph::NodeId node) const;

  // View > Profile: while on, every session (this one and those made after an edit) measures
  // where its steps' time goes (train::Profiler, sampled within the probes' budget); off, the
  // profiler and its hooks are gone. profile() is the current session's figures so far
  // (nullopt while off or without a session).
  void setProfiling(bool on);
  bool profiling() const { return profiling_; }
  std::optional<train::StepProfile> profile() const;

  // The project's run store (null without one: an unsaved project, or one that could not be
  // opened: runStoreError() says why).
  train::RunStore* runStore() const { return store_.get(); }
  QString runStoreError() const { return storeError_; }
  // The run being recorded (0 before the first step of a session, or without a store).
  int64_t currentRun() const { return recorder_ ? recorder_->run() : 0; }
  // The run and step whose snapshot the session was put at by showSnapshot, while the phase
  // is ShowingSnapshot (nullopt once a run goes on from it, or after another session or a
  // reset).
  std::optional<std::pair<int64_t, int64_t>> shownSnapshot() const {
    if (phase_ != TrainingPhase::ShowingSnapshot || !lineage_.shown) return std::nullopt;
    return lineage_.shown->runAndStep();
  }
  // The store of the snapshot shown: a watched one, or null for the project's own.
  train::RunStore* shownSource() const {
    return lineage_.shown ? lineage_.shown->source.get() : nullptr;
  }

  // Run stores the window watches besides the project's (a PyTorch job's runs/ folder, which
  // nnstudio_runs.Recorder writes while the job trains): read here, written by that job.
  const std::vector<std::shared_ptr<train::RunStore>>& watchedStores() const { return watched_; }
  // False (with message()) for a folder without a store; true for one watched already.
  bool watchFolder(const QString& folder);
  void unwatchFolder(const train::RunStore* store);
  // The canvas's probes show what a watched run's job recorded so far (the Runs panel asks
  // again whenever the store changed, so they grow as the job trains); nothing while a run of
  // the project trains or a snapshot is shown.
  void showWatchedProbes(train::RunStore* store, int64_t run);

  // ---- Weights (the session owns them) ----
  // Runs fn on the session's model with its worker idle (made now if out of date), unless a
  // run is going on: false then, or when there is no session (nothing is paused for it: the
  // inspector reads at rest and keeps what it read while a run goes on). fn must only read.
  bool withRestingModel(const std::function<void(graph::GraphModule& model)>& fn);
  // A copy of the weights (state_dict) as trained so far: the session's (pausing a run for
  // the moment it takes), or with no session the state dict loaded for the next one, or the
  // architecture's initial values. nullopt with message() when the graph builds no model.
  std::optional<nn::StateDict> stateDict();

  // Asks the session for the model's outputs on `inputs` (eval mode, between two steps); the
  // answer comes with predictionArrived, carrying the returned id (each reader keeps to its
  // own ids). 0 when there is no session.
  uint64_t requestPrediction(const Tensor& inputs);
  // One sample through the model with hooks on every module (TrainingSession::trace): the
  // answer comes with traceArrived. 0 when there is no session.
  uint64_t requestTrace(const Tensor& input, const Tensor& target);

 public slots:
  // Runs until paused (or the configured epochs are done).
  void start();
  void pause();
  // One batch, then paused.
  void stepOnce();
  // Fresh weights from the seed, step 0 (also after edits, whose weights it drops); curves and
  // histograms clear (sessionReset).
  void reset();
  // Changes the project's learning rate (one undo step) and the running session's at once.
  // Refuses a value that is not finite or not > 0: message() says why, returns false.
  bool setLearningRate(double lr);
  // The same for the batch size (>= 1), applied from the next epoch.
  bool setBatchSize(int64_t batchSize);
  // Evaluation passes: on, the controller runs the test set through the model in eval mode
  // (session evaluate()) at once and about twice a second while training, so the test curves
  // and the boundary follow the run between epochs; off, test metrics come at epoch ends only.
  void setEvalMode(bool on);
  // A PyTorch-style checkpoint (.pt): model_state_dict, optimizer_state_dict, step, epoch.
  // Pauses a running session for the moment it takes and resumes it. False (with message())
  // on an error.
  bool saveCheckpoint(const QString& path);
  // Loads one into the session (strict), continuing the step count from the file's.
  bool loadCheckpoint(const QString& path);
  // Puts the session at run `run`'s snapshot nearest at or before `step` (pausing a run); the
  // next start() or stepOnce() branches from there. False (with message()) when there is no
  // such snapshot or it does not load.
  // With `source`, a run of a watched store: the branch then starts a run of the project's
  // own that says where it came from (train::new_run_info_from).
  bool showSnapshot(int64_t run, int64_t step, std::shared_ptr<train::RunStore> source = nullptr);
  void renameRun(int64_t run, const QString& name);
  // Not the run being recorded.
  bool deleteRun(int64_t run);

 signals:
  void statusChanged(const nns::train::SessionStatus& status);
  void stepMetricsArrived(const std::vector<nns::train::StepMetrics>& metrics);
  // Only the epochs not sent before.
  void epochMetricsArrived(const std::vector<nns::train::EpochMetrics>& epochs);
  void evaluationArrived(const nns::train::Evaluation& evaluation);
  void probeSamplesArrived(const std::vector<nns::train::ProbeSample>& samples);
  void predictionArrived(const nns::train::Prediction& prediction);
  void traceArrived(const nns::train::SampleTrace& trace);
  // Curves, histograms and health clear: a new session, a reset or a loaded checkpoint.
  void sessionReset();
  // A run failed (NaN/Inf, a shape error) or could not start (a graph with problems): the
  // node it names (0 if none) and why.
  void runFailed(nns::graph::NodeId node, const QString& message);
  // A line for the log.
  void message(const QString& text);
  // Runs were added, ended, renamed or deleted, or the store was opened (the Runs panel).
  void runsChanged();
  // The session was put at a snapshot (showSnapshot): the run and the snapshot's step.
  void snapshotShown(int64_t run, int64_t step);
  // The probes' history of a watched store's run up to `step` is to be shown on the canvas in
  // place of the session's (showWatchedProbes).
  void watchedProbesShown(nns::train::RunStore* store, int64_t run, int64_t step);
  void phaseChanged(nns::ui::TrainingPhase phase);
  // dataMismatch() changed (a new session found its data fitting or not).
  void dataMismatchChanged(nns::graph::NodeId node, const QString& message);
  // The session's weights changed at rest (a step or a run ended, a reset, a load, a snapshot
  // shown, a new session): the inspector reads them again.
  void weightsChanged();
  // An edit made the session out of date; it is made again when something asks (session()).
  // A view that shows the session's data while visible (the Output panel) asks then.
  void sessionStale();
  // A session for the project as it is now was made, or could not be (lastError() says why).
  void sessionMade();

 private slots:
  // The worker of makeSessionInBackground woke this thread: the session it made becomes the
  // current one when the project has not changed since it began. A slot so that the worker
  // can call it by name, with nothing queued that it allocated.
  void takeMadeSession();

 private:
  struct Built;   // what the current session was made from
  struct Making;  // a session being made on a worker thread (makeSessionInBackground)
  // The one place the phase changes: false (nothing changes) where transition() refuses.
  bool enter(TrainingEvent event);
  void onDocumentChanged();
  void rebuild();
  // Pauses a run and waits (up to kIdleWait) until its worker rests.
  void stopRunning();
  // The data's sample against the project's Input (dataMismatch()).
  void checkDataFits();
  // Ends the run and drops the session (another project: nothing of it is kept).
  void dropSession();
  // The learned state of the last session's model into the new session's (see the top).
  // True when anything was kept; quiet: no message (the state came from a file).
  bool carryLearned(graph::GraphModule& from, const graph::Graph& fromGraph, bool quiet);
  // A state dict the user loaded (validated by the document), into the session.
  void takeLoadedState(const nn::StateDict& state, bool strict);
  void syncProbes();
  void poll();
  void applyLiveSettings();
  // The document's frozen set onto the session's model (requires_grad), when its worker is
  // idle; a run that is going on takes it when it pauses.
  void applyFrozen();
  // The session, or false after telling why there is none (runFailed, message).
  bool ensureTrainable();
  // Runs fn with the session's worker idle (pausing a run for the moment and resuming it).
  bool withIdleSession(const QString& what, const std::function<void(train::TrainingSession&)>& fn);
  // The store for the document's file (none without one).
  void openRunStore();
  // Starts recording a run before the first step of a session (a branch when it has a
  // lineage_.branchFrom).
  void beginRun();
  // Writes the current run's last figures and stops recording it.
  void endRun();

  ProjectDocument* document_;
  QTimer* timer_;
  std::unique_ptr<train::TrainingSession> session_;
  std::unique_ptr<Built> built_;
  TrainingPhase phase_ = TrainingPhase::Idle;
  // Whether the project changed since the session was made (a cache's state, not a phase:
  // session() makes the new one), and the session being made in the background.
  SessionFreshness<Making> freshness_;
  std::optional<PendingWeights> pending_;
  QString lastError_;
  train::SessionStatus status_;
  size_t epochsSent_ = 0;
  int64_t resetsSeen_ = 0;
  std::optional<train::Evaluation> evaluationSent_;
  bool evalMode_ = false;
  bool profiling_ = false;  // setProfiling
  qint64 lastEvalMs_ = 0;
  std::map<train::ProbeId, graph::NodeId> probeNodes_;
  std::shared_ptr<train::RunStore> store_;
  QString storeError_;
  std::shared_ptr<train::RunRecorder> recorder_;
  RunLineage lineage_;
  std::vector<std::shared_ptr<train::RunStore>> watched_;
  int64_t restedStep_ = -1;  // the step the session last rested at (snapshot, figures, weights)
  int64_t restedResets_ = -1;
  qint64 lastRemakeMs_ = 0;  // what the last rebuild() took
  graph::NodeId mismatchNode_ = 0;
  QString mismatch_;
  bool continues_ = false;
};

}  // namespace nns::ui

Q_DECLARE_METATYPE(nns::train::SessionStatus)
Q_DECLARE_METATYPE(nns::train::Evaluation)
Q_DECLARE_METATYPE(nns::train::Prediction)
Q_DECLARE_METATYPE(nns::train::SampleTrace)
Q_DECLARE_METATYPE(nns::ui::TrainingPhase)
