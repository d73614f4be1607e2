// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli train: trains a project's model with the project's dataset and training
// settings (options override them) in a TrainingSession, printing one line per epoch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/cli/commands.h"
#include "engine/data/sources.h"
#include "engine/graph/project.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/serialize.h"
#include "engine/train/checkpoint.h"
#include "engine/train/run_recorder.h"
#include "engine/train/run_store.h"
#include "engine/train/session.h"

namespace nns::cli {
namespace {

using namespace std::chrono_literals;

// "loss 0.0412 accuracy 98.7%" (no accuracy for regression); with a class per position, the
// accuracy is over positions and " sequences 95.0%" follows when the whole-sequence figure is
// known.
std::string loss_and_accuracy(double loss, double accuracy,
                              double sequence_accuracy = std::nan("")) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "loss %.4f", loss);
  std::string out = buf;
  if (!std::isnan(accuracy)) out += " accuracy " + percent(accuracy);
  if (!std::isnan(sequence_accuracy)) out += " sequences " + percent(sequence_accuracy);
  return out;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

// The last sample of each (module, kind, tensor) a run took: all that its summary prints, so
// that a long run holds one sample a series, not its whole history.
using LastSamples = std::map<std::tuple<std::string, int, std::string>, train::ProbeSample>;

void keep_last(std::vector<train::ProbeSample>& taken, LastSamples& last) {
  for (train::ProbeSample& s : taken) {
    last.insert_or_assign({s.module, static_cast<int>(s.kind), s.tensor}, std::move(s));
  }
}

// One line each.
void print_probe_summaries(const LastSamples& last) {
  for (const auto& [key, s] : last) {
    const train::TensorStats& t = s.stats;
    std::printf("probe %s %s %s (step %lld): mean %.4g std %.4g min %.4g max %.4g norm %.4g",
                s.module.empty() ? "(model)" : s.module.c_str(),
                train::probe_kind_name(s.kind).c_str(), s.tensor.c_str(),
                static_cast<long long>(s.step), t.mean, t.std, t.min, t.max, t.norm);
    if (s.kind == train::ProbeKind::Activation) {
      std::printf(" zeros %s", percent(t.zero_fraction).c_str());
      if (!std::isnan(t.saturated_fraction)) {
        std::printf(" saturated %s", percent(t.saturated_fraction).c_str());
      }
    }
    if (s.kind == train::ProbeKind::Attention) {
      const train::AttentionMap& a = s.attention;
      std::printf(" heads %lld queries %lld keys %lld", static_cast<long long>(a.heads),
                  static_cast<long long>(a.queries), static_cast<long long>(a.keys));
    }
    if (s.kind == train::ProbeKind::ParamGrad && !std::isnan(s.update_ratio)) {
      std::printf(" update/weight %.3g", s.update_ratio);
    }
    std::printf("\n");
  }
}

// One line per epoch, as a spreadsheet or pandas reads it.
std::string metrics_csv(const std::vector<train::EpochMetrics>& history) {
  std::string out =
      "epoch,step,train_loss,train_accuracy,test_loss,test_accuracy,seconds,steps_per_second\n";
  char line[512];
  for (const train::EpochMetrics& e : history) {
    std::snprintf(line, sizeof line, "%lld,%lld,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g\n",
                  static_cast<long long>(e.epoch), static_cast<long long>(e.step), e.train_loss,
                  e.train_accuracy, e.test_loss, e.test_accuracy, e.seconds, e.steps_per_second);
    out += line;
  }
  return out;
}

// "[#########           ]  1234/3000 steps  loss 0.4321", redrawn in place on a terminal.
void draw_progress(const train::SessionStatus& st, int64_t total_steps) {
  constexpr int kWidth = 30;
  const double done =
      total_steps > 0 ? std::min(1.0, static_cast<double>(st.step) / total_steps) : 0.0;
  const int filled = static_cast<int>(done * kWidth);
  std::printf("\r[%s%s] %lld/%lld steps  loss %.4f  %.0f steps/s ",
              std::string(static_cast<size_t>(filled), '#').c_str(),
              std::string(static_cast<size_t>(kWidth - filled), ' ').c_str(),
              static_cast<long long>(st.step), static_cast<long long>(total_steps),
              st.smoothed_loss, st.steps_per_second);
  std::fflush(stdout);
}

// What the command line asks of this run: the project, its settings overridden by the options,
// and what the options decide beyond them.
struct TrainRequest {
  std::string path;  // the project file
  graph::Project project;
  int64_t steps = 0;  // batches to train; 0: the project's epochs
  bool quiet = false;
  bool record = true;
  train::SnapshotSchedule snapshots;
  double probe_budget = 0;    // --probe's max_overhead
  std::string graphs_off_by;  // what turned CUDA graphs off, for the summary ("": nothing)
};

// --cuda-graphs on|off; without it, NNSTUDIO_CUDA_GRAPHS=0 (the switch before there was an
// option, still read here for scripts that set it), else the project's training.cuda_graphs.
void choose_cuda_graphs(const Options& o, TrainRequest& r) {
  bool& on = r.project.training.cuda_graphs;
  const char* env = std::getenv("NNSTUDIO_CUDA_GRAPHS");
  if (o.has("cuda-graphs")) {
    on = o.choice("cuda-graphs", {"on", "off"}) == "on";
    r.graphs_off_by = "--cuda-graphs off";
  } else if (env != nullptr && std::string(env) == "0") {
    on = false;
    r.graphs_off_by = "NNSTUDIO_CUDA_GRAPHS=0";
  } else {
    r.graphs_off_by = "the project's training.cuda_graphs";
  }
  if (on) r.graphs_off_by.clear();
}

TrainRequest parse_request(const Options& o) {
  TrainRequest r;
  r.path = o.positional(0);
  r.project = graph::load_project(r.path);
  graph::TrainingSettings& t = r.project.training;
  if (o.has("epochs")) t.epochs = o.integer("epochs", 1, 1000000);
  if (o.has("batch-size")) t.batch_size = o.integer("batch-size", 1, 1000000);
  if (o.has("seed")) t.seed = o.integer("seed", 0, INT64_MAX);
  if (o.has("optimizer")) t.optimizer = o.choice("optimizer", {"sgd", "adam", "adamw", "rmsprop"});
  if (o.has("lr")) t.optimizer_options["lr"] = o.real("lr", 0, 1e6);
  if (o.has("momentum")) t.optimizer_options["momentum"] = o.real("momentum", 0, 1);
  if (o.has("weight-decay")) t.optimizer_options["weight_decay"] = o.real("weight-decay", 0, 1e6);
  if (o.has("device")) t.device = o.text("device");
  choose_cuda_graphs(o, r);
  // Checked before anything is read or recorded: a GPU this machine lacks is one line naming
  // CUDA and the reason (no backend library, no driver, no GPU).
  train::training_device(t.device);
  if (o.has("dataset") && o.text("dataset") != r.project.dataset.name) {
    // Another generator's options mean nothing to this one: it starts from its defaults.
    r.project.dataset.name = o.text("dataset");
    r.project.dataset.options = graph::Json::object();
  }
  if (o.has("data")) {
    if (o.has("dataset"))
      throw UsageError("--data and --dataset both name the data; give one", "train");
    // A user's files in place of the project's data; a relative path is the command line's.
    graph::DatasetSettings& d = r.project.dataset;
    if (d.name != "files") d.transforms.clear();
    d.name = "files";
    d.options = graph::Json::object();
    d.path = std::filesystem::absolute(o.text("data")).string();
    if (data::source_kind(d.path).empty()) {
      o.bad("data", o.text("data"),
            "an image folder (a subfolder per class), a folder of MNIST or CIFAR files, an "
            ".npz/.npy or a .csv");
    }
  }
  if (o.has("transform")) {
    if (r.project.dataset.name != "files") {
      throw UsageError("--transform applies to a user's data: give --data SOURCE too", "train");
    }
    try {
      r.project.dataset.transforms =
          data::transforms_text(data::parse_transforms(o.text("transform")));
    } catch (const ValueError& e) {
      o.bad("transform", o.text("transform"), e.what());
    }
  }
  r.steps = o.has("steps") ? o.integer("steps", 1, INT64_MAX) : 0;
  // --steps replaces the project's epochs as the run's length; with --epochs as well, the run
  // ends at whichever comes first.
  if (r.steps > 0 && !o.has("epochs")) t.epochs = 0;
  r.quiet = o.flag("quiet");
  r.record = !o.flag("no-record");
  // Read with the rest, before a run begins in the store: a bad value records nothing.
  if (o.has("snapshot-every")) r.snapshots.every = o.integer("snapshot-every", 1, INT64_MAX);
  r.probe_budget = o.real("probe-budget", 0, 1);
  if (o.has("from") && o.has("resume")) {
    throw UsageError("--from and --resume both say where to start; give one", "train");
  }
  return r;
}

// The run store: a branch needs it; recording without one (a damaged store, a read-only
// folder) trains anyway and says so. Null when there is none or none is needed.
std::shared_ptr<train::RunStore> open_store(const Options& o, const TrainRequest& r) {
  if (!r.record && !o.has("from")) return nullptr;
  try {
    return std::make_shared<train::RunStore>(train::RunStore::folder_for(r.path));
  } catch (const train::RunStoreError& e) {
    if (o.has("from")) throw;
    std::fprintf(stderr, "%s: warning: %s; training without recording\n", kProgram, e.what());
    return nullptr;
  }
}

// Where the run starts, for its record: a branch of a run of the project's store (parent), or
// of another store's run (a PyTorch job's runs/), recorded here as a run of its own that starts
// at that step and says where it came from (from_elsewhere).
struct Origin {
  std::optional<train::RunInfo> parent;
  std::optional<train::RunInfo> from_elsewhere;
  std::string from_folder;  // from_elsewhere's store
  int64_t step = 0;         // the parent's step the run starts at
};

// The store --from's run is in: the project's own, or the folder it names.
std::shared_ptr<train::RunStore> source_store(const RunReference& from,
                                              const std::shared_ptr<train::RunStore>& store) {
  std::error_code ec;
  if (from.store.empty() || std::filesystem::equivalent(from.store, store->folder(), ec)) {
    return store;
  }
  if (!std::filesystem::exists(std::filesystem::path(from.store) / "runs.db")) {
    throw train::RunStoreError("there is no run store in " + from.store +
                               " (no runs.db; 'nnstudio-cli runs FOLDER' lists a store)");
  }
  return std::make_shared<train::RunStore>(from.store);
}

// --from: the session starts from the recorded snapshot, with the settings given here.
Origin branch_from(const Options& o, const TrainRequest& r,
                   const std::shared_ptr<train::RunStore>& store, train::TrainingSession& session) {
  const RunReference from = run_reference(o, "from");
  const std::shared_ptr<train::RunStore> source = source_store(from, store);
  const train::SnapshotInfo snapshot = recorded_snapshot(*source, from.run, from.step);
  const std::optional<train::RunInfo> from_run = source->run(from.run);
  train::BranchStart branch =
      train::branch_start(*source, *from_run, snapshot, r.project, *session.model());
  session.restore(std::move(branch.state));
  if (branch.lr) session.set_lr(*branch.lr);
  Origin origin;
  origin.step = snapshot.step;
  if (source == store) {
    origin.parent = from_run;
  } else {
    origin.from_elsewhere = from_run;
    origin.from_folder = source->folder();
  }
  if (!r.quiet) {
    std::printf("branch of run %lld%s from its snapshot at step %lld%s%s\n",
                static_cast<long long>(from.run),
                source == store ? "" : (" of " + source->folder()).c_str(),
                static_cast<long long>(snapshot.step), branch.note.empty() ? "" : ": ",
                branch.note.c_str());
  }
  return origin;
}

// The state the session starts from when --weights, --resume or --from give one.
Origin restore(const Options& o, const TrainRequest& r,
               const std::shared_ptr<train::RunStore>& store, train::TrainingSession& session) {
  if (o.has("weights")) {
    serialize::load_into(*session.model(), serialize::load_state_dict_file(o.text("weights")),
                         /*strict=*/true);
  }
  if (o.has("resume")) session.restore(train::load_checkpoint(o.text("resume")));
  if (!o.has("from")) return {};
  return branch_from(o, r, store, session);
}

// The session restores on its worker, so a state that does not fit shows up as a failed
// session: one error line, before anything is recorded or trained.
bool restore_failed(const Options& o, train::TrainingSession& session) {
  if (!o.has("resume") && !o.has("from")) return false;
  session.wait_idle();
  const train::SessionStatus restored = session.status();
  if (restored.state != train::RunState::Failed) return false;
  std::fprintf(stderr, "%s: error: %s\n", kProgram, restored.error.c_str());
  return true;
}

// Records the run in the store; null without a store or with --no-record.
std::shared_ptr<train::RunRecorder> start_recording(const TrainRequest& r, const Origin& origin,
                                                    const std::shared_ptr<train::RunStore>& store,
                                                    train::TrainingSession& session) {
  if (!r.record || !store) return nullptr;
  const train::RunInfo info = origin.from_elsewhere
                                  ? train::new_run_info_from(r.project, *origin.from_elsewhere,
                                                             origin.from_folder, origin.step)
                                  : train::new_run_info(r.project, origin.parent, origin.step);
  const int64_t run = store->begin_run(info);
  auto recorder = std::make_shared<train::RunRecorder>(store, run, r.snapshots);
  session.set_observer(recorder);
  session.snapshot();  // where the run starts (its first snapshot; a branch has it already)
  return recorder;
}

// The probes asked for here: with --quiet, only theirs are summarized (not the project's own).
std::set<train::ProbeId> add_probes(const Options& o, const TrainRequest& r,
                                    train::TrainingSession& session) {
  train::ProbeOptions probe_options;
  probe_options.max_overhead = r.probe_budget;
  std::set<train::ProbeId> asked;
  for (const std::string& module : split_list(o.text("probe")))
    asked.insert(session.add_probe(module, probe_options));
  return asked;
}

// "train: SpiralNet, 4547 parameters; CrossEntropyLoss, Adam on spirals (...), batch 64, ..."
void print_header(const TrainRequest& r, const train::TrainingSession& session,
                  const train::SessionStatus& start) {
  const graph::TrainingSettings& t = r.project.training;
  int64_t parameters = 0;
  for (const Tensor& p : session.model()->parameters()) parameters += p.numel();
  const std::string length =
      r.steps > 0 ? std::to_string(r.steps) + " steps" : std::to_string(t.epochs) + " epochs";
  // A user's files by their kind and folder or file: "CIFAR-10 from cifar-10-batches-bin".
  const graph::DatasetSettings& d = r.project.dataset;
  const std::string data =
      d.name == "files"
          ? data::source_kind((std::filesystem::path(r.path).parent_path() / d.path).string()) +
                " from " + std::filesystem::path(d.path).filename().string()
          : d.name;
  std::printf("train: %s, %lld parameters; %s, %s on %s (%lld train, %lld test), batch %lld, %s\n",
              r.project.name.c_str(), static_cast<long long>(parameters), t.loss.c_str(),
              t.optimizer.c_str(), data.c_str(), static_cast<long long>(session.train_set().size()),
              static_cast<long long>(session.test_set().size()),
              static_cast<long long>(start.batch_size), length.c_str());
  std::fflush(stdout);
}

// "epoch   3/16  train loss 0.2521 accuracy 90.2%  test loss 0.2030 accuracy 93.0%  1067 steps/s"
void print_epoch(const train::EpochMetrics& e, int64_t epochs, bool has_test_set) {
  const std::string test =
      has_test_set
          ? "  test " + loss_and_accuracy(e.test_loss, e.test_accuracy, e.test_sequence_accuracy)
          : "";
  std::printf("epoch %3lld/%lld  train %s%s  %.0f steps/s\n", static_cast<long long>(e.epoch),
              static_cast<long long>(epochs),
              loss_and_accuracy(e.train_loss, e.train_accuracy).c_str(), test.c_str(),
              e.steps_per_second);
  std::fflush(stdout);
}

// Until the run ends: each epoch's line as it ends (a progress bar between them on a terminal),
// and the probes' samples to the recorder. Returns the last sample of each series.
LastSamples watch(const TrainRequest& r, train::TrainingSession& session,
                  const train::SessionStatus& start, train::RunRecorder* recorder) {
  const int64_t project_epochs = r.project.training.epochs;
  const bool progress_bar = !r.quiet && isatty(STDOUT_FILENO) == 1;
  const int64_t total_steps =
      r.steps > 0 ? start.step + r.steps : project_epochs * start.batches_per_epoch;
  // The epochs the run reaches: with --steps, those its steps cover (the last may be partial).
  const int64_t batches = std::max<int64_t>(start.batches_per_epoch, 1);
  const int64_t epochs = r.steps > 0 ? (total_steps + batches - 1) / batches : project_epochs;
  const bool has_test_set = session.test_set().size() > 0;
  size_t printed = 0;
  LastSamples samples;
  for (bool done = false; !done;) {
    done = session.wait_idle(100ms);
    if (progress_bar) std::printf("\r\033[K");  // the epoch lines print over the bar
    std::vector<train::ProbeSample> taken = session.take_probe_samples();
    // The run store keeps them too (nnstudio-cli runs --probes, the window's history).
    if (recorder) recorder->add_probe_samples(taken);
    keep_last(taken, samples);
    // Only the epochs not printed yet: a fast model ends hundreds a second.
    for (const train::EpochMetrics& e : session.epoch_history(printed)) {
      ++printed;
      if (!r.quiet) print_epoch(e, epochs, has_test_set);
    }
    if (progress_bar && !done) draw_progress(session.status(), total_steps);
  }
  return samples;
}

// A failed run is recorded up to the step it failed at; exit code 1.
int report_failure(const train::SessionStatus& st, train::RunRecorder* recorder) {
  if (recorder) {
    recorder->finish({st.step});
    std::printf("run %lld recorded up to step %lld (it failed there)\n",
                static_cast<long long>(recorder->run()), static_cast<long long>(st.step));
  }
  std::fprintf(stderr, "%s: error: training failed: %s\n", kProgram, st.error.c_str());
  return 1;
}

// The final train and test figures ("train: ..." when the last epoch ended at the last step);
// returns them for the run's record.
train::RunResult print_final_figures(const train::SessionStatus& st,
                                     const std::vector<train::EpochMetrics>& history,
                                     bool has_test_set) {
  train::RunResult result{st.step};
  if (!history.empty() && history.back().step == st.step) {
    const train::EpochMetrics& e = history.back();
    std::printf("train: %s\n", loss_and_accuracy(e.train_loss, e.train_accuracy).c_str());
    result.train_loss = e.train_loss;
    result.train_accuracy = e.train_accuracy;
  }
  if (st.last_evaluation) {
    const train::Evaluation& test = *st.last_evaluation;
    result.test_loss = test.loss;
    result.test_accuracy = test.accuracy;
    std::printf("test: %s\n",
                loss_and_accuracy(test.loss, test.accuracy, test.sequence_accuracy).c_str());
    if (!test.position_accuracy.empty()) {
      std::string line = "test accuracy per position:";
      for (double a : test.position_accuracy) {
        line += " " + percent(a);
      }
      std::printf("%s\n", line.c_str());
    }
  } else if (!has_test_set) {
    std::printf("test: no test set (the project's test_fraction is 0)\n");
  }
  return result;
}

// The run's speed, what watching cost and, on a GPU, how its steps ran.
void print_costs(const TrainRequest& r, const train::SessionStatus& st, int64_t start_step,
                 double seconds) {
  std::printf("%lld steps, %.0f steps/s\n", static_cast<long long>(st.step),
              seconds > 0 ? static_cast<double>(st.step - start_step) / seconds : 0.0);
  // What watching cost, as the probes measured it (what their budget holds to).
  const train::ProbeOverhead& probed = st.probe_overhead;
  if (!r.quiet && probed.sampled + probed.skipped > 0) {
    std::printf(
        "probes: %s of the training time; %lld samples (%lld beyond the budget, for the "
        "floor), %lld skipped\n",
        percent(probed.fraction).c_str(), static_cast<long long>(probed.sampled),
        static_cast<long long>(probed.forced), static_cast<long long>(probed.skipped));
  }
  if (!train::training_device(r.project.training.device).is_cpu()) {
    if (!r.graphs_off_by.empty()) {
      std::printf("CUDA graphs: off (%s)\n", r.graphs_off_by.c_str());
    } else if (st.graphs_off.empty()) {
      std::printf("CUDA graphs: %lld steps replayed\n", static_cast<long long>(st.graph_replays));
    } else {
      std::printf("CUDA graphs: off (%s)\n", st.graphs_off.c_str());
    }
  }
}

void finish_recording(train::RunRecorder& recorder, const train::RunResult& result,
                      const train::RunStore& store, bool quiet) {
  recorder.finish(result);
  if (!recorder.error().empty()) {
    std::fprintf(stderr, "%s: warning: recording stopped: %s\n", kProgram,
                 recorder.error().c_str());
  } else if (!quiet) {
    std::printf("recorded as run %lld in %s (%zu snapshots)\n",
                static_cast<long long>(recorder.run()), store.folder().c_str(),
                store.snapshots(recorder.run()).size());
  }
}

// --metrics
void write_metrics(const Options& o, const std::vector<train::EpochMetrics>& history, bool quiet) {
  if (!o.has("metrics")) return;
  const std::string csv = metrics_csv(history);
  serialize::write_file_atomically(o.text("metrics"),
                                   [&](serialize::ByteSink& sink) { sink.write(csv); });
  if (!quiet) std::printf("wrote %s\n", o.text("metrics").c_str());
}

// --save: a .pt checkpoint continues the run; another format holds the weights alone.
void save(const Options& o, const train::TrainingSession& session, bool quiet) {
  if (!o.has("save")) return;
  const std::string out = o.text("save");
  if (serialize::format_from_extension(out) == serialize::Format::TorchZip) {
    train::save_checkpoint(session.training_state(), out);
  } else {
    serialize::save_state_dict_file(session.model()->state_dict(), out);
  }
  if (!quiet) std::printf("saved %s\n", out.c_str());
}

int run_train(const Options& o) {
  const TrainRequest r = parse_request(o);
  const std::shared_ptr<train::RunStore> store = open_store(o, r);
  const std::string base_dir = std::filesystem::path(r.path).parent_path().string();
  std::unique_ptr<train::TrainingSession> session = train::make_session(r.project, base_dir);
  const Origin origin = restore(o, r, store, *session);
  if (restore_failed(o, *session)) return 1;
  // Probes first: a module the model lacks is refused before a run begins in the store.
  const std::set<train::ProbeId> asked = add_probes(o, r, *session);
  const std::shared_ptr<train::RunRecorder> recorder = start_recording(r, origin, store, *session);

  session->wait_idle();
  const train::SessionStatus start = session->status();
  if (!r.quiet) print_header(r, *session, start);
  const auto started = std::chrono::steady_clock::now();
  if (r.steps > 0) {
    session->step(r.steps);
  } else {
    session->start();
  }
  LastSamples samples = watch(r, *session, start, recorder.get());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (const train::SessionStatus st = session->status(); st.state == train::RunState::Failed) {
    return report_failure(st, recorder.get());
  }

  // The final figures, with the weights as they are now (steps may end mid-epoch), and the
  // last step's snapshot.
  session->evaluate();
  session->snapshot();
  session->wait_idle();
  const train::SessionStatus st = session->status();
  const std::vector<train::EpochMetrics> history = session->epoch_history();
  const train::RunResult result = print_final_figures(st, history, session->test_set().size() > 0);
  print_costs(r, st, start.step, seconds);
  if (recorder) finish_recording(*recorder, result, *store, r.quiet);
  if (r.quiet) {
    std::erase_if(samples, [&](const auto& entry) { return !asked.count(entry.second.probe); });
  }
  print_probe_summaries(samples);
  write_metrics(o, history, r.quiet);
  save(o, *session, r.quiet);
  return 0;
}

}  // namespace

Command train_command() {
  return {
      "train",
      "train a project's model with its dataset and training settings",
      {{"PROJECT", "the project file (.nns)"}},
      {
          {"epochs", "N", "", "passes over the training set (default: the project's)"},
          {"steps", "N", "", "train this many batches instead of the project's epochs"},
          {"batch-size", "N", "", "samples per step (default: the project's)"},
          {"optimizer", "NAME", "", "sgd, adam, adamw or rmsprop (default: the project's)"},
          {"dataset", "NAME", "", "train on this dataset (default: the project's)"},
          {"data", "SOURCE", "",
           "train on your own data: a folder of class folders, a folder of MNIST or CIFAR "
           "files, an .npz/.npy or a .csv"},
          {"transform", "T", "",
           "with --data: torchvision transforms, as \"Resize(40), RandomCrop(32), ToTensor()\""},
          {"lr", "X", "", "learning rate (default: the project's)"},
          {"momentum", "X", "", "momentum (SGD, RMSprop)"},
          {"weight-decay", "X", "", "weight decay"},
          {"seed", "N", "", "seed of the initial weights and the shuffling"},
          {"device", "DEVICE", "",
           "train on cpu, cuda or cuda:N (default: the project's; see nnstudio-cli devices)"},
          {"cuda-graphs", "on|off", "",
           "on a GPU, replay the training steps as CUDA graphs (default: the project's, on; "
           "without this option NNSTUDIO_CUDA_GRAPHS=0 in the environment turns them off)"},
          {"probe", "MODULES", "",
           "comma-separated module names to probe; their last "
           "summaries are printed at the end"},
          {"probe-budget", "F", "0.05",
           "the most of the training time the --probe probes may take (a fraction): a "
           "step they would sample is skipped while they cost more; 0: sample exactly "
           "every 10 steps"},
          {"weights", "FILE", "", "load the model's weights (.pt, .pth, .safetensors) first"},
          {"resume", "FILE", "",
           "continue from a checkpoint (.pt: model, optimizer, step; one --save wrote "
           "continues bit for bit)"},
          {"from", "[STORE:]RUN:STEP", "",
           "branch from a recorded run: its snapshot nearest at or before STEP, with the "
           "settings given here (the new run is recorded under it); STORE: a run of that "
           "store folder (a PyTorch job's runs/), recorded here as a run starting there"},
          {"no-record", "", "", "do not record the run in the project's run store"},
          {"snapshot-every", "N", "",
           "snapshot the training state every N steps (default: log-spaced, dense early)"},
          {"save", "FILE", "", "save at the end: .pt a checkpoint, .safetensors the weights"},
          {"metrics", "FILE", "", "write each epoch's losses and accuracies as CSV"},
          {"quiet", "", "",
           "print only the final result (and the summaries of the --probe probes)"},
      },
      run_train};
}

}  // namespace nns::cli
