// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/run_recorder.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "engine/graph/builder.h"
#include "engine/graph/project.h"
#include "engine/serialize/serialize.h"
#include "engine/train/run_store_schema.h"

namespace nns::train {
namespace {

// Step metrics are written in batches at most this far apart (one transaction each): the
// schema file's, which the PyTorch recorder writes at too.
std::chrono::milliseconds write_every() {
  static const auto every = std::chrono::milliseconds(std::llround(
      1000 * run_store_schema().at("recorder").at("write_every_seconds").get<double>()));
  return every;
}

// The schema file's log-spaced schedule: a step below ten in below_ten, else the step with its
// trailing zeros taken off down to two digits in each_decade (read once: asked every step).
bool log_spaced(int64_t step) {
  static const auto [below_ten, each_decade] = [] {
    const graph::Json& schedule = run_store_schema().at("snapshot_schedule");
    return std::pair{schedule.at("below_ten").get<std::vector<int64_t>>(),
                     schedule.at("each_decade").get<std::vector<int64_t>>()};
  }();
  const auto listed = [](const std::vector<int64_t>& list, int64_t value) {
    return std::find(list.begin(), list.end(), value) != list.end();
  };
  if (step < 1) return false;
  if (step < 10) return listed(below_ten, step);
  while (step >= 100 && step % 10 == 0) step /= 10;
  return listed(each_decade, step);
}

}  // namespace

bool SnapshotSchedule::due(int64_t step) const {
  return every > 0 ? step > 0 && step % every == 0 : log_spaced(step);
}

RunResult result_of(const SessionStatus& status) {
  RunResult result{status.step};
  if (status.last_epoch) {
    result.train_loss = status.last_epoch->train_loss;
    result.train_accuracy = status.last_epoch->train_accuracy;
  }
  if (status.last_evaluation) {
    result.test_loss = status.last_evaluation->loss;
    result.test_accuracy = status.last_evaluation->accuracy;
  }
  return result;
}

RunInfo new_run_info(const graph::Project& project, const std::optional<RunInfo>& parent,
                     int64_t parent_step) {
  RunInfo info;
  info.settings = run_settings(project);
  info.architecture = architecture_hash(project);
  info.project = graph::project_to_json(project);
  if (parent) {
    info.parent = parent->id;
    info.parent_step = parent_step;
    info.changes = describe_changes(*parent, info);
  }
  return info;
}

RunInfo new_run_info_from(const graph::Project& project, const RunInfo& source_run,
                          const std::string& source_folder, int64_t step) {
  RunInfo info = new_run_info(project, std::nullopt, 0);
  info.parent_step = step;
  info.changes = "from " + std::string(source_run.source == "pytorch" ? "PyTorch " : "") + "run " +
                 std::to_string(source_run.id) + " of " + source_folder + " at step " +
                 std::to_string(step);
  return info;
}

BranchStart branch_start(const RunStore& store, const RunInfo& parent, const SnapshotInfo& snapshot,
                         const graph::Project& project, nn::Module& model) {
  BranchStart out;
  out.state = store.load(snapshot);
  TrainingState& s = out.state;
  const graph::Json now = graph::Json::parse(run_settings(project));
  const graph::Json& t1 = now["training"];
  // A run's training settings' learning rate (null where they name none).
  const auto lr_of = [](const graph::Json& training) {
    return training.value("optimizer_options", graph::Json::object()).value("lr", graph::Json());
  };
  const graph::Json lr1 = lr_of(t1);
  if (parent.source != "nnstudio") {
    // A run another program recorded (nnstudio_runs.py in a project's exported train.py): its
    // weights carry the export's names, which are the project's, and its settings and
    // architecture are not NN Studio's to compare. The weights go in as they are (the
    // session's restore checks them strictly against the project) and the optimizer's state
    // goes on, as when train --resume continues train.py's checkpoint.
    out.note = "a " + parent.source + " run of " + std::to_string(parent.processes) +
               (parent.processes == 1 ? " process" : " processes") +
               (parent.device.empty() ? "" : " on " + parent.device);
    // The project's learning rate, not the one the optimizer's state carries: the branch
    // trains with the settings given now.
    if (lr1.is_number()) out.lr = lr1.get<double>();
    return out;
  }
  const graph::Json before = graph::Json::parse(parent.settings);
  const graph::Json& t0 = before["training"];
  std::vector<std::string> notes;
  if (parent.architecture != architecture_hash(project)) {
    auto* to = dynamic_cast<graph::GraphModule*>(&model);
    if (!to) throw ValueError("branch: the session's model is not a project's graph model");
    std::shared_ptr<graph::GraphModule> from = graph::build_model(
        graph::parse_project(parent.project, "run " + std::to_string(parent.id)));
    serialize::load_into(*from, s.model, /*strict=*/true);
    const graph::CarriedState carried = graph::carry_state(*from, *to, project.graph);
    s.model = nn::StateDict();
    for (const auto& item : to->state_dict()) s.model.insert(item.key(), item.value().clone());
    s.optimizer.reset();
    s.scheduler.reset();
    notes.push_back("another architecture: " + std::to_string(carried.kept.size()) +
                    " nodes kept their weights, " + std::to_string(carried.mixed.size()) +
                    " some, " + std::to_string(carried.fresh.size()) +
                    " start fresh; the optimizer starts fresh");
  }
  if (t0.value("optimizer", "") != t1.value("optimizer", "") && s.optimizer) {
    s.optimizer.reset();
    notes.push_back("another optimizer: it starts fresh");
  }
  if (t0.value("scheduler", "") != t1.value("scheduler", "") ||
      t0.value("scheduler_options", graph::Json()) !=
          t1.value("scheduler_options", graph::Json())) {
    if (s.scheduler) notes.push_back("another scheduler: it starts fresh");
    s.scheduler.reset();
  }
  if (before["dataset"] != now["dataset"] && s.batch > 0) {
    // Another data set's batches are other batches: the branch starts at the next epoch.
    s.batch = 0;
    ++s.epoch;
    s.epoch_loss_sum = 0;
    s.epoch_samples = 0;
    s.epoch_seconds = 0;
    s.epoch_accuracy = Accuracy();
    notes.push_back("other data: the branch starts at epoch " + std::to_string(s.epoch + 1));
  }
  if (lr1.is_number() && lr_of(t0) != lr1) out.lr = lr1.get<double>();
  for (const std::string& n : notes) out.note += (out.note.empty() ? "" : "; ") + n;
  return out;
}

RunRecorder::RunRecorder(std::shared_ptr<RunStore> store, int64_t run, SnapshotSchedule schedule)
    : store_(std::move(store)), run_(run), schedule_(schedule) {
  writer_ = std::thread(&RunRecorder::writer_loop, this);
}

RunRecorder::~RunRecorder() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void RunRecorder::on_step(const StepMetrics& metrics) {
  std::lock_guard<std::mutex> lock(mutex_);
  steps_.push_back(metrics);
  ++handed_;
}

void RunRecorder::on_epoch(const EpochMetrics& metrics) {
  std::lock_guard<std::mutex> lock(mutex_);
  epochs_.push_back(metrics);
  ++handed_;
}

void RunRecorder::add_probe_samples(const std::vector<ProbeSample>& samples) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const ProbeSample& p : samples) {
    if (p.kind == ProbeKind::Attention) continue;  // not kept (run_store.h)
    probes_.push_back(p);
    ++handed_;
  }
}

void RunRecorder::on_snapshot(TrainingState state) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshots_.push_back(std::move(state));
    ++handed_;
  }
  wake_.notify_all();
}

void RunRecorder::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t target = handed_;
  ++flushing_;
  wake_.notify_all();
  written_.wait(lock, [&] { return written_count_ >= target || !error_.empty(); });
  --flushing_;
}

void RunRecorder::set_result(const RunResult& result) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!result_) ++handed_;  // a newer result replaces one not written yet
    result_ = result;
  }
  wake_.notify_all();
}

void RunRecorder::finish(const RunResult& result) {
  set_result(result);
  flush();
}

std::string RunRecorder::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void RunRecorder::writer_loop() {
#if defined(__linux__)
  // The writer takes what CPU the training leaves: on a machine whose cores the training's
  // BLAS threads fill, a writer at the same priority took 5-10% of the steps per second
  // (tests/bench/bench_runs). A nice value is per thread on Linux.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
#endif
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const bool pending = !steps_.empty() || !epochs_.empty() || !probes_.empty() ||
                         !snapshots_.empty() || result_.has_value();
    if (!pending) {
      if (quit_) return;
      wake_.wait(lock, [&] {
        return quit_ || !steps_.empty() || !epochs_.empty() || !probes_.empty() ||
               !snapshots_.empty() || result_.has_value();
      });
      continue;
    }
    // Metrics before the snapshot that follows them, in one go.
    std::vector<StepMetrics> steps;
    std::vector<EpochMetrics> epochs;
    std::vector<ProbeSample> probes;
    std::optional<TrainingState> snapshot;
    steps.swap(steps_);
    epochs.swap(epochs_);
    probes.swap(probes_);
    if (!snapshots_.empty()) {
      snapshot = std::move(snapshots_.front());
      snapshots_.pop_front();
    }
    // The figures go after the last snapshot handed over before them.
    std::optional<RunResult> result;
    if (snapshots_.empty()) result.swap(result_);
    const uint64_t count =
        steps.size() + epochs.size() + probes.size() + (snapshot ? 1 : 0) + (result ? 1 : 0);
    const bool failed = !error_.empty();
    lock.unlock();
    std::string error;
    if (!failed) {
      try {
        store_->add_steps(run_, steps);
        store_->add_epochs(run_, epochs);
        store_->add_probe_samples(run_, probes);
        if (snapshot) store_->add_snapshot(run_, *snapshot);
        if (result) store_->finish_run(run_, *result);
      } catch (const std::exception& e) {
        error = e.what();
      }
    }
    lock.lock();
    if (!error.empty() && error_.empty()) error_ = error;
    written_count_ += count;
    written_.notify_all();
    // Without a snapshot waiting, gather metrics for a while (one transaction per batch).
    wake_.wait_for(lock, write_every(), [&] {
      return quit_ || flushing_ > 0 || !snapshots_.empty() || result_.has_value();
    });
  }
}

}  // namespace nns::train
