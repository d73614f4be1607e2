// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TrainingSession: a model, its loss, optimizer, learning-rate scheduler and data, trained on
// a worker thread of its own and steered from any other thread (the window, the CLI, tests).
//
//   auto session = nns::train::make_session(project, "/path/to/project/dir");
//   session->start();                       // returns at once; the worker trains
//   session->set_lr(0.01);                  // applied between two steps
//   nns::train::SessionStatus s = session->status();   // a copy; never waits on a step
//   for (const nns::train::StepMetrics& m : session->take_step_metrics()) plot(m);
//   session->pause();
//   session->step();                        // one batch, then paused again
//
// Commands (start, pause, resume, step, stop, reset, set_lr, set_batch_size, evaluate,
// add_probe, remove_probe, set_profiling, predict) return at once: they go into a queue that
// the worker empties, in order, before its next step. Everything the worker produces is read
// through copies taken under a mutex that the worker holds only to publish (never during a
// step): the status, the per-step metrics (a bounded queue that drops the oldest), the
// per-epoch history, probe samples, the profile and predictions. The model, loss and optimizer
// belong to the worker while the session lives; read them only through these calls.
//
// A run is reproducible: the session seeds the default generator with `seed` before it makes
// the model (and again on reset), the data loader shuffles epoch e with epoch_seed(seed, e),
// and nothing else draws numbers on the worker, so the same seed gives bit-identical losses
// whether the run was paused, stepped or resumed on the way. (Other code that draws from the
// default generator while a session with dropout trains changes that run's masks.)
//
// A NaN or an infinity in the loss or in a gradient stops the run (state Failed) before the
// optimizer's step, so the weights stay finite, and names the first module where it appeared:
// the batch is replayed with forward hooks on every module (the first output that is not
// finite, in execution order) and, for gradients, full backward hooks (the first in backward
// order). Any other error in a step (a shape mismatch between the model and the data, say)
// also stops the run with its message. Nothing throws out of the worker.
//
// Threads: the worker leaves the BLAS thread count as the process has it (Eigen's own
// products run on the worker alone). Measured with tests/bench/bench_train on the 2-core
// build machine under load, the 784-512-512-10 MLP took 121 steps/s with one OpenBLAS thread
// and 131 with two: within the noise, so the session does not override the BLAS setting.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/data/dataloader.h"
#include "engine/data/dataset.h"
#include "engine/data/device_batches.h"
#include "engine/nn/module.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"
#include "engine/train/accuracy.h"
#include "engine/train/attention_maps.h"
#include "engine/train/checkpoint.h"
#include "engine/train/probes.h"
#include "engine/train/profiler.h"
#include "engine/train/step_graph.h"

namespace nns::graph {
struct Project;
}

namespace nns::train {

enum class RunState {
  Idle,     // made or reset, no step taken since
  Running,  // the worker steps continuously
  Paused,   // waiting; step(n) runs n batches and pauses again
  Stopped,  // stop() was called (start() goes on), or the configured epochs or steps are done
  Failed,   // a NaN/Inf or an error stopped the run; reset() makes it trainable again
};
// "idle", "running", "paused", "stopped", "failed".
std::string run_state_name(RunState state);

// The smoothed loss's factor (the run store's schema file holds it too, for the PyTorch
// recorder's smoothed loss).
constexpr double kLossSmoothing = 0.9;

struct StepMetrics {
  int64_t step = 0;   // counted from 1
  int64_t epoch = 0;  // the epoch this step belongs to, counted from 1
  double loss = 0;
  double smoothed_loss = 0;  // exponential moving average (kLossSmoothing), bias-corrected
  double accuracy = 0;       // on this batch (of its positions, for a class per position);
                             // NaN for regression
  double lr = 0;             // the first parameter group's learning rate for this step
};

struct EpochMetrics {
  int64_t epoch = 0;          // counted from 1
  int64_t step = 0;           // steps taken when the epoch ended
  double train_loss = 0;      // mean over the epoch's samples, with the weights as they were
  double train_accuracy = 0;  // then (as PyTorch loops report it); NaN for regression
  double test_loss = 0;       // on the test set after the epoch, eval mode, no grad (NaN: no test
  double test_accuracy = 0;   // set)
  // A class per position: the test sequences right at every position (else NaN).
  double test_sequence_accuracy = std::numeric_limits<double>::quiet_NaN();
  double seconds = 0;  // wall time of the epoch's steps
  double steps_per_second = 0;
};

// The test set's loss and accuracy at a step (after evaluate() or an epoch's end).
// With a class per position (data::Dataset::per_position), the loss and accuracy are over the
// positions that count, and the sequence and per-position figures are filled in.
struct Evaluation {
  int64_t step = 0;
  double loss = 0;
  double accuracy = 0;
  // Sequences with every position right; NaN without positions.
  double sequence_accuracy = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> position_accuracy{};  // [T]; empty without positions
  // A class per sample: the class the model gives each test sample, in the test set's order
  // (its confusion matrix and the samples it gets wrong); null otherwise. Shared: a status is
  // copied at every poll.
  std::shared_ptr<const std::vector<int64_t>> predicted{};
};

struct SessionStatus {
  RunState state = RunState::Idle;
  int64_t step = 0;   // steps taken
  int64_t epoch = 0;  // epochs completed
  int64_t batch = 0;  // batches taken in the current epoch
  int64_t batches_per_epoch = 0;
  int64_t batch_size = 0;
  double lr = 0;
  double loss = 0;               // last step's
  double smoothed_loss = 0;      // see StepMetrics
  double steps_per_second = 0;   // over the last half second or so of running
  ProbeOverhead probe_overhead;  // the probes' measured cost and budget skips (probes.h)
  std::optional<EpochMetrics> last_epoch;
  std::optional<Evaluation> last_evaluation;
  int64_t resets = 0;  // reset() calls applied so far: a UI clears its curves when it changes
  std::string error;   // why the run failed (Failed)
  std::string failed_module;  // the module named in `error` ("" for none or the loss)
  int64_t graph_replays = 0;  // steps run as a CUDA graph replay
  std::string graphs_off;     // on a GPU, why steps do not run as CUDA graphs ("" if they do)
};

struct Prediction {
  uint64_t id = 0;  // what predict() returned
  int64_t step = 0;
  Tensor outputs;  // the model's outputs in eval mode (a tensor of its own)
  // The attention weights per head of every MultiheadAttention in the model, for the first
  // input (row 0); empty for a model without attention.
  std::vector<AttentionMap> attention;
  std::string error;  // the forward's error, if it failed (outputs undefined)
};

// One sample traced through the model (TrainingSession::trace): every module's input and
// output in the order they ran, and the gradient of the sample's loss w.r.t. each output.
struct ModuleTrace {
  std::string module;  // named_modules name ("fc1", "features.0")
  Tensor input;        // its first input (a tensor of its own; undefined when it had none)
  Tensor output;       // its first output
  Tensor grad_output;  // d loss / d output (undefined when no gradient reached it)
};

struct SampleTrace {
  uint64_t id = 0;  // what trace() returned
  int64_t step = 0;
  double loss = 0;
  std::vector<ModuleTrace> modules;  // in execution order (the model itself last)
  std::string error;                 // the pass's error, if it failed (modules empty)
};

struct SessionConfig {
  int64_t batch_size = 32;
  int64_t epochs = 0;     // stop after this many epochs; 0: run until stopped
  int64_t max_steps = 0;  // stop after this many steps; 0: no limit
  uint64_t seed = 0;      // the initial weights (via the default generator) and the shuffling
  bool shuffle = true;
  double clip_grad_norm = 0;  // max total gradient norm (nn::clip_grad_norm_); 0: off
  // Where the model and each batch live during the run (make_session checks that it exists).
  Device device = kCPU;
  // On a GPU, every step the probes do not sample after the first runs as a CUDA graph
  // (train::StepGraph): captured once per batch shape, then replayed. Off, every step runs
  // eagerly (SessionStatus::graphs_off says so).
  bool cuda_graphs = true;
  bool scheduler_per_step = false;
  size_t metrics_capacity = 100000;  // step metrics kept for take_step_metrics()
  int64_t eval_chunk = 4096;         // test samples per forward in an evaluation
  // The worker thread flushes denormal floats to zero (nns::set_flush_denormal): a moment or
  // momentum buffer that decays towards zero otherwise turns denormal within a few hundred
  // steps and halves the speed of the run (engine/cpu/flush_denormal.h has the figures).
  bool flush_denormal = true;
};

// What a session is made of. make_model is called with the default generator seeded with
// the config's seed (at construction and on every reset, whose fresh weights are copied into
// the session's model, so module pointers held elsewhere stay valid). make_optimizer is
// called with the model's parameters (again on reset, for a fresh state).
struct SessionParts {
  std::function<nn::ModulePtr()> make_model;
  // Called as loss({output, target}) and must return the scalar loss first.
  nn::ModulePtr loss;
  std::function<std::unique_ptr<optim::Optimizer>(const std::vector<Tensor>& params)>
      make_optimizer;
  // Optional: called with the optimizer (again on reset); stepped once per epoch, or once
  // per step when SessionConfig::scheduler_per_step (OneCycleLR).
  std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer& optimizer)> make_scheduler;
  data::Dataset train;
  data::Dataset test;  // may be empty (no test metrics)
};

// Sees a session's run as it goes, on the session's worker thread, between two steps: every
// step's and epoch's metrics, and a snapshot of the training state at the steps it asks for.
// A run store's recorder (run_recorder.h) is one. The calls must return quickly: hand the
// work to another thread.
class SessionObserver {
 public:
  virtual ~SessionObserver() = default;
  virtual void on_step(const StepMetrics& metrics) = 0;
  virtual void on_epoch(const EpochMetrics& metrics) = 0;
  // Whether the state after `step` is to be snapshotted (on_snapshot follows at once).
  virtual bool wants_snapshot(int64_t step) = 0;
  virtual void on_snapshot(TrainingState state) = 0;
};

class TrainingSession {
 public:
  // Makes the model and optimizer and checks the parts (ValueError naming what is missing);
  // the worker starts waiting for commands.
  TrainingSession(SessionParts parts, const SessionConfig& config);
  // Stops the worker (after the step it is in) and joins it.
  ~TrainingSession();
  TrainingSession(const TrainingSession&) = delete;
  TrainingSession& operator=(const TrainingSession&) = delete;

  // ---- Commands: queued, applied by the worker in order ------------------------------------
  // From Idle, Paused or Stopped; nothing in Failed or when the configured epochs or steps
  // are done (reset first).
  void start();
  void resume() { start(); }
  void pause();
  void stop();
  // Runs `batches` more batches (from any state but Failed and Running), then pauses.
  void step(int64_t batches = 1);
  // Fresh weights from the seed (a new seed if given), a fresh optimizer and scheduler
  // state, step and epoch 0, history and metrics cleared, probes kept; state Idle.
  void reset(std::optional<uint64_t> seed = std::nullopt);
  // Every parameter group's learning rate, from the next step on.
  void set_lr(double lr);
  // From the next epoch on (the current one keeps its batches).
  void set_batch_size(int64_t batch_size);
  // Test loss and accuracy now (see status().last_evaluation; none without a test set).
  void evaluate();
  // The model's outputs for `inputs` in eval mode, computed between two steps; the result
  // appears in take_prediction() with the returned id (answers come in the order asked).
  uint64_t predict(const Tensor& inputs);
  // One sample's forward and backward pass in eval mode, between two steps, with hooks on
  // every module (no dropout, so the run's generator is untouched; the gradients are cleared
  // after, so the next step is as it would have been): `input` and `target` are a batch of
  // one. The answer appears in take_trace() with the returned id.
  uint64_t trace(const Tensor& input, const Tensor& target);
  // Checks the name and options at once (KeyError, ValueError as Probes::add); the hooks are
  // placed before the next step. The id is valid at once.
  ProbeId add_probe(const std::string& module_name, const ProbeOptions& options = {});
  void remove_probe(ProbeId id);
  // on: a Profiler over the model from the next step on (a new one, with these options, if one
  // was on; ValueError at once for bad options); off: it and its hooks are gone. reset() and
  // restore() clear its profile (a new run).
  void set_profiling(bool on, ProfilerOptions options = {});
  // Continues from a training state (a snapshot or a checkpoint): its weights (strict: every
  // key, the model's shapes), the optimizer's and scheduler's state, step, epoch and batch,
  // the batch size, the shuffling seed, the default generator's state and the epoch's sums,
  // each where the state has it. The history and step metrics start again from there (state
  // Paused, or Idle at step 0). An error (a key or shape that does not fit) fails the run
  // with its message, like a failed step; the model is then as it was.
  void restore(TrainingState state);
  // From the next step on, `observer` sees the run (nullptr: none). The session keeps it.
  void set_observer(std::shared_ptr<SessionObserver> observer);
  // Hands the observer a snapshot of the state as it is now (the last step of a run, or
  // where it paused), unless it had one of this step already.
  void snapshot();

  // ---- Reading: any thread, never waits for a step -----------------------------------------
  SessionStatus status() const;
  std::vector<StepMetrics> take_step_metrics();
  // The metrics of every epoch since the session was made or reset (of the last
  // epoch_history_limit, when one is set), oldest first.
  std::vector<EpochMetrics> epoch_history() const;
  // Only the epochs after the first `from` ended, for a reader that polls: a copy of the whole
  // history on every poll grows with the run (a small model ends hundreds of epochs a second).
  std::vector<EpochMetrics> epoch_history(size_t from) const;
  // The number of epochs ended since the session was made or reset (kept or not).
  size_t epoch_count() const;
  // Keeps only the last `limit` epochs' metrics (0, the default: all). A reader that takes
  // each epoch as it ends (a window, which draws them and records them in its run store) needs
  // no more, and a run of a fast model then holds the same memory after an hour as after a
  // minute.
  void set_epoch_history_limit(size_t limit);
  std::vector<ProbeSample> take_probe_samples() { return probes_.take_samples(); }
  // The oldest answered prediction not taken yet (none when there is none).
  std::optional<Prediction> take_prediction();
  // The oldest answered trace not taken yet.
  std::optional<SampleTrace> take_trace();
  // Where the sampled steps' time went (profiler.h); nullopt while profiling is off.
  std::optional<StepProfile> profile() const;
  // rebin, kept_steps and dropped are safe from any thread (see probes.h).
  const Probes& probes() const { return probes_; }
  // The model's module names (named_modules order), for a UI that offers probes.
  const std::vector<std::string>& module_names() const { return module_names_; }
  // The names of its MultiheadAttention modules, whose maps predictions carry.
  std::vector<std::string> attention_module_names() const;
  // The data, for drawing it (it never changes while the session lives).
  const data::Dataset& train_set() const { return parts_.train; }
  const data::Dataset& test_set() const { return parts_.test; }

  // ---- Waiting (CLI and tests; a window never calls it) ------------------------------------
  // Until every command queued before this call is applied (also while running: commands go
  // between two steps). Returns false on timeout.
  bool sync(std::chrono::milliseconds timeout = std::chrono::hours(24));
  // Until every queued command is applied and the worker is not running: Paused after
  // step(n), Stopped after the last epoch, Failed. Returns false on timeout.
  bool wait_idle(std::chrono::milliseconds timeout = std::chrono::hours(24));
  // The model and optimizer, for while the session is idle (before the first command, or
  // after wait_idle() returned true with nothing queued since): loading weights or a
  // checkpoint, saving, printing a summary. Never while it runs.
  nn::ModulePtr model() const { return model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  // The whole state (checkpoint.h), for the same moments as model(): copies of every tensor.
  TrainingState training_state() const;
  // Whether restore(state) would take it (weights and optimizer state fitting the model, a
  // generator state that reads), for the same moments: ValueError saying what does not fit.
  void check_restorable(const TrainingState& state) const;
  // Queued: continue counting from here (a resumed checkpoint): the next step is step + 1,
  // in epoch `epoch` + 1 from its first batch.
  void set_progress(int64_t step, int64_t epoch);

 private:
  using Command = std::function<void()>;
  void post(Command command);
  void worker_loop();
  // One training step: the batch, train_step or its graph, the checks and the step's figures.
  void run_step();
  // The step on the device: a CUDA graph's replay where one may run it (a step neither the
  // probes nor the profiler sample), else train_step eagerly.
  StepResult take_step(const data::Batch& batch);
  // A step whose loss or gradients were not finite: the run fails (no weight changed), naming
  // the first module where the value appeared.
  void fail_non_finite(int64_t step, double loss_value, const data::Batch& batch);
  // The probes' and the profiler's step ends with the step's failure.
  void end_failed_step();
  // A step taken: its figures into the epoch's sums, the rate and the metrics the readers and
  // the observer see; the epoch's end, the step limit and a snapshot when they are due.
  void record_step(int64_t step, double loss_value, const std::optional<Accuracy>& accuracy,
                   int64_t samples, double seconds);
  void begin_epoch();
  void end_epoch();
  // Drops the oldest epochs beyond history_limit_ (mutex_ held).
  void trim_history();
  Evaluation run_evaluation();
  void fail(const std::string& message, const std::string& module);
  std::string locate_non_finite_activation(const data::Batch& batch);
  std::string locate_non_finite_gradient(const data::Batch& batch);
  void apply_reset(uint64_t seed);
  void apply_restore(const TrainingState& state);
  // A new data loader for the configured batch size and seed.
  void make_loader();
  // The step for the current model and optimizer, and its CUDA graphs (none on the CPU).
  void make_train_step();
  void offer_snapshot(bool forced);
  void publish_step(const StepMetrics& metrics);
  double current_lr() const;

  SessionConfig config_;
  SessionParts parts_;
  nn::ModulePtr model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<TrainStep> train_step_;    // over model_ and optimizer_
  std::unique_ptr<StepGraph> step_graph_;  // on a GPU with SessionConfig::cuda_graphs
  std::unique_ptr<optim::LRScheduler> scheduler_;
  std::unique_ptr<data::DataLoader> loader_;
  std::optional<data::EpochBatches> epoch_batches_;
  // How run_step's batches reach config_.device (on a GPU: a step ahead, asynchronously).
  data::DeviceBatches device_batches_{config_.device};
  std::vector<std::string> module_names_;
  AttentionModules attention_modules_;  // the model's, for predictions
  Probes probes_;
  std::atomic<ProbeId> next_probe_id_{1};
  // Set and replaced by the worker under mutex_ (profile() reads it from other threads).
  std::unique_ptr<Profiler> profiler_;

  // Worker-only training state.
  int64_t step_ = 0;
  int64_t epoch_ = 0;  // completed
  int64_t batch_ = 0;  // taken in the current epoch
  int64_t pending_batch_size_ = 0;
  double epoch_loss_sum_ = 0;
  Accuracy epoch_accuracy_;
  int64_t epoch_samples_ = 0;
  double epoch_seconds_ = 0;
  double smoothed_ = 0;
  int64_t smoothed_count_ = 0;
  double rate_seconds_ = 0;
  int64_t rate_steps_ = 0;
  double rate_ = 0;
  std::string failed_module_;  // set by locate_non_finite_gradient
  std::shared_ptr<SessionObserver> observer_;
  int64_t snapshot_step_ = -1;  // the step of the observer's last snapshot

  // Shared with the reading threads, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the worker: a command, or stepping to do
  std::condition_variable settled_;  // wait_idle: the queue is empty and nothing is running
  std::deque<Command> commands_;
  bool busy_ = false;  // the worker is applying a command or taking a step
  bool quit_ = false;
  int64_t steps_to_run_ = 0;  // step(n) while not running
  SessionStatus status_;
  std::deque<StepMetrics> step_metrics_;
  // A deque: it grows by a run's whole length, and a vector's doubling would copy it all and
  // hold up to twice its size.
  std::deque<EpochMetrics> history_;
  size_t history_dropped_ = 0;  // epochs dropped from the front of history_ by the limit
  size_t history_limit_ = 0;
  // Answered predictions not yet taken, oldest first: several readers (a window's output
  // panel and attention maps) may each wait for their own. At most kKeptPredictions; the
  // oldest are dropped (their reader asks again).
  static constexpr size_t kKeptPredictions = 16;
  std::deque<Prediction> predictions_;
  uint64_t next_prediction_ = 1;  // predictions' and traces' ids
  std::deque<SampleTrace> traces_;

  std::thread worker_;
};

// A session for a project: the model from its graph (graph::build_model; a bad graph throws
// its GraphError here), the train and test sets from its dataset settings (a CSV path or
// a text file is relative to base_dir), its loss (make_loss), optimizer and scheduler
// (optim::make_optimizer, make_scheduler; OneCycleLR steps per batch and, without a length of its
// own, spans the configured epochs), batch size, epochs and seed, and its probes placed.
std::unique_ptr<TrainingSession> make_session(const graph::Project& project,
                                              const std::string& base_dir);

// The train and test sets a project's session trains and tests on: its dataset settings' data
// (a CSV path or a text file relative to base_dir), split by its test fraction and seed.
data::DatasetSplit project_split(const graph::Project& project, const std::string& base_dir);

// The device a project's training.device setting names ("cpu", "cuda", "cuda:1"): a
// ValueError for a malformed one, a DeviceError naming CUDA and the reason (no backend
// library, no driver, no GPU, too few GPUs) for a GPU this machine does not have.
Device training_device(const std::string& setting);

}  // namespace nns::train
