// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The subcommands of nnstudio-cli. Each lives in its own file and returns its description
// here; cli/main.cpp lists them (the one place a new command is added) and dispatches.
#include <functional>
#include <string>
#include <vector>

#include "app/cli/options.h"
#include "engine/train/run_store.h"

namespace nns::cli {

struct Command {
  std::string name;
  std::string summary;  // one line, lower case, no full stop: "train a project's model"
  std::vector<PositionalSpec> positionals;
  std::vector<OptionSpec> options;
  std::function<int(const Options&)> run;  // returns the exit code
};

Command example_command();
Command train_command();
Command inspect_command();
Command convert_command();
Command summary_command();
Command forward_command();
Command layout_command();
Command plugins_command();
Command export_command();
Command import_command();
Command runs_command();
Command devices_command();
Command data_command();
Command diff_command();
Command profile_command();

// Shared by train --from and runs --export (app/cli/runs.cpp): "RUN:STEP" read from an option
// (a UsageError naming it otherwise), and the recorded snapshot of RUN nearest at or before
// STEP (a RunStoreError saying what is missing).
std::pair<int64_t, int64_t> run_and_step(const Options& o, const std::string& option);
// train --from's STORE:RUN:STEP: a run of the store folder STORE (a PyTorch job's runs/), or
// with RUN:STEP alone (store "") one of the project's own.
struct RunReference {
  std::string store;
  int64_t run = 0, step = 0;
};
RunReference run_reference(const Options& o, const std::string& option);
train::SnapshotInfo recorded_snapshot(const train::RunStore& store, int64_t run, int64_t step);
// A fraction as a percentage with one decimal ("98.7%"), "-" for NaN (train's and runs' tables).
std::string percent(double fraction);

}  // namespace nns::cli
