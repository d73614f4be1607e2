// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli runs: the runs recorded in a project's run store (train records them) or in a
// store folder a PyTorch job wrote (resources/python/nnstudio_runs.py), one line each with who
// trained it, and what can be done with them: export a snapshot's weights or a run's probe
// history (CSV), delete a run.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "app/cli/commands.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/serialize.h"
#include "engine/train/checkpoint.h"
#include "engine/train/run_store.h"

namespace nns::cli {

namespace {

// "RUN:STEP" from `text`, the value of `option` (a UsageError naming it, with `form`, when not).
std::pair<int64_t, int64_t> parse_run_step(const Options& o, const std::string& option,
                                           const std::string& text, const char* form) {
  const size_t colon = text.find(':');
  try {
    size_t used = 0;
    if (colon == std::string::npos) throw std::invalid_argument("no colon");
    const long long run = std::stoll(text.substr(0, colon), &used);
    if (used != colon || run < 1) throw std::invalid_argument("run");
    const std::string step_text = text.substr(colon + 1);
    const long long step = std::stoll(step_text, &used);
    if (used != step_text.size() || step < 0) throw std::invalid_argument("step");
    return {run, step};
  } catch (const std::logic_error&) {
    o.bad(option, text, form);
  }
}

}  // namespace

std::pair<int64_t, int64_t> run_and_step(const Options& o, const std::string& option) {
  return parse_run_step(o, option, o.text(option),
                        "RUN:STEP, e.g. 3:300 (a run id from 'nnstudio-cli runs' and a step)");
}

RunReference run_reference(const Options& o, const std::string& option) {
  const std::string& text = o.text(option);
  // RUN and STEP are the last two fields: a folder may hold colons of its own.
  const size_t last = text.rfind(':');
  const size_t before =
      last == std::string::npos || last == 0 ? std::string::npos : text.rfind(':', last - 1);
  RunReference ref;
  if (before != std::string::npos) ref.store = text.substr(0, before);
  const char* form =
      "RUN:STEP or STORE:RUN:STEP, e.g. 3:300, or runs:1:500 for run 1 of the store folder "
      "runs/ (a run id from 'nnstudio-cli runs' and a step)";
  if (before != std::string::npos && ref.store.empty()) o.bad(option, text, form);
  std::tie(ref.run, ref.step) =
      parse_run_step(o, option, ref.store.empty() ? text : text.substr(before + 1), form);
  return ref;
}

train::SnapshotInfo recorded_snapshot(const train::RunStore& store, int64_t run, int64_t step) {
  if (!store.run(run)) {
    throw train::RunStoreError("there is no run " + std::to_string(run) + " in " + store.folder() +
                               " ('nnstudio-cli runs PROJECT' lists them)");
  }
  std::optional<train::SnapshotInfo> snapshot = store.snapshot_at(run, step);
  if (!snapshot) {
    throw train::RunStoreError("run " + std::to_string(run) +
                               " has no snapshot at or before step " + std::to_string(step));
  }
  return *snapshot;
}

std::string percent(double fraction) {
  if (std::isnan(fraction)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * fraction);
  return buf;
}

namespace {

std::string number(double v, const char* format) {
  if (std::isnan(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

void list_runs(const train::RunStore& store) {
  const std::vector<train::RunInfo> runs = store.runs();
  if (runs.empty()) {
    std::printf("no runs recorded in %s yet ('nnstudio-cli train' records one)\n",
                store.folder().c_str());
    return;
  }
  std::printf("%4s  %-10s %8s  %-12s %10s %9s  %10s %9s  %5s  %-19s  %s\n", "run", "parent",
              "steps", "source", "train loss", "train acc", "test loss", "test acc", "snaps",
              "started", "changes from parent");
  size_t snapshots = 0;
  for (const train::RunInfo& r : runs) {
    const size_t count = store.snapshots(r.id).size();
    snapshots += count;
    const std::string parent =
        r.parent ? std::to_string(r.parent) + ":" + std::to_string(r.parent_step) : "-";
    // A root run's changes say where it came from when it branched from another store's run.
    std::string changes = r.parent ? (r.changes.empty() ? "(none)" : r.changes) : r.changes;
    if (!r.name.empty()) changes = "\"" + r.name + "\" " + changes;
    if (!r.finished) changes += changes.empty() ? "(unfinished)" : " (unfinished)";
    // "pytorch x2": a run nnstudio_runs.py recorded from a DDP job of two processes.
    std::string source = r.source;
    if (r.source != "nnstudio") source += " x" + std::to_string(r.processes);
    std::printf("%4lld  %-10s %8lld  %-12s %10s %9s  %10s %9s  %5zu  %-19s  %s\n",
                static_cast<long long>(r.id), parent.c_str(), static_cast<long long>(r.steps),
                source.c_str(), number(r.train_loss, "%.4f").c_str(),
                percent(r.train_accuracy).c_str(), number(r.test_loss, "%.4f").c_str(),
                percent(r.test_accuracy).c_str(), count, r.started.c_str(), changes.c_str());
  }
  std::printf("%zu snapshots' files take %.1f MiB of the %.0f MiB budget\n", snapshots,
              store.snapshot_bytes() / 1048576.0, store.budget() / 1048576.0);
}

// The probes' summaries of the run as the window shows them when scrubbing (its parents' up
// to where it branched, then its own): one row per sampled step, probe and series.
std::string probes_csv(const std::vector<train::ProbeSample>& samples) {
  std::string csv = "step,module,kind,tensor,mean,std,min,max,norm,zeros\n";
  char numbers[256];
  for (const train::ProbeSample& p : samples) {
    const train::TensorStats& t = p.stats;
    std::snprintf(numbers, sizeof numbers, ",%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n", t.mean, t.std, t.min,
                  t.max, t.norm, t.zero_fraction);
    // Module and tensor names are PyTorch's dotted names: no commas or quotes to escape.
    csv += std::to_string(p.step) + "," + p.module + "," + train::probe_kind_name(p.kind) + "," +
           p.tensor + numbers;
  }
  return csv;
}

int run_runs(const Options& o) {
  const std::string path = o.positional(0);
  const int actions = o.has("export") + o.has("probes") + o.has("delete");
  if (actions > 1) throw UsageError("give one of --export, --probes and --delete", "runs");
  if ((o.has("export") || o.has("probes")) != o.has("out")) {
    throw UsageError("--export RUN:STEP and --probes RUN take --out FILE (and only they)", "runs");
  }
  // A store folder itself (a PyTorch job's `runs/`, nnstudio_runs.py), or a project's.
  const bool is_store = std::filesystem::is_directory(path);
  const std::string folder = is_store ? path : train::RunStore::folder_for(path);
  if (!std::filesystem::exists(folder)) {
    if (actions > 0) {
      throw train::RunStoreError("no runs are recorded beside " + path + " (no " + folder + ")");
    }
    std::printf("no runs recorded beside %s yet ('nnstudio-cli train' records one)\n",
                path.c_str());
    return 0;
  }
  train::RunStore store(folder);
  if (o.has("export")) {
    const auto [run, step] = run_and_step(o, "export");
    const train::SnapshotInfo snapshot = recorded_snapshot(store, run, step);
    const std::string out = o.text("out");
    if (serialize::format_from_extension(out) == serialize::Format::TorchZip) {
      train::save_checkpoint(store.load(snapshot), out);
    } else {
      serialize::save_state_dict_file(store.load_weights(snapshot), out);
    }
    std::printf("wrote %s: run %lld at step %lld%s\n", out.c_str(), static_cast<long long>(run),
                static_cast<long long>(snapshot.step),
                snapshot.step == step ? "" : " (the snapshot nearest before the step asked for)");
    return 0;
  }
  if (o.has("probes")) {
    const int64_t run = o.integer("probes", 1, INT64_MAX);
    if (!store.run(run)) {
      throw train::RunStoreError("there is no run " + std::to_string(run) + " in " +
                                 store.folder() + " ('nnstudio-cli runs PROJECT' lists them)");
    }
    const std::vector<train::ProbeSample> samples = store.probe_history(run);
    const std::string out = o.text("out");
    const std::string csv = probes_csv(samples);
    serialize::write_file_atomically(out, [&](serialize::ByteSink& sink) { sink.write(csv); });
    std::printf(
        "wrote %s: %zu probe samples of run %lld%s\n", out.c_str(), samples.size(),
        static_cast<long long>(run),
        samples.empty() ? " (it was trained without probes, or before NN Studio kept them)" : "");
    return 0;
  }
  if (o.has("delete")) {
    const int64_t run = o.integer("delete", 1, INT64_MAX);
    store.delete_run(run);
    std::printf("deleted run %lld\n", static_cast<long long>(run));
    return 0;
  }
  list_runs(store);
  return 0;
}

}  // namespace

Command runs_command() {
  return {"runs",
          "list the training runs recorded beside a project, export a snapshot or a run's "
          "probe history, delete a run",
          {{"PROJECT",
            "the project file (.nns), its runs in PROJECT's folder, <name>.runs/; or a "
            "run store folder (runs/ of a PyTorch job recording with nnstudio_runs)"}},
          {
              {"export", "RUN:STEP", "",
               "write the weights of run RUN's snapshot nearest at or before STEP (with --out)"},
              {"probes", "RUN", "",
               "write what the probes saw in run RUN (and its parents up to where it branched) "
               "as CSV (with --out): a row per sampled step, probe and series, columns step, "
               "module, kind, tensor, mean, std, min, max, norm, zeros (the fraction of exact "
               "zeros)"},
              {"out", "FILE", "",
               "where --export writes (.safetensors the weights, .pt the whole training state), "
               "or --probes (CSV)"},
              {"delete", "RUN", "",
               "delete a run, its metrics and snapshots (branches of it "
               "become branches of its parent)"},
          },
          run_runs};
}

}  // namespace nns::cli
