// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the run store's reader on an arbitrary database file. A watched folder can
// come from anyone (a PyTorch job's runs/), so a bad store must be a RunStoreError (or another
// nns::Error): its runs, metrics, snapshots (whose files must stay inside the folder) and
// probe samples (packed records) are all read. Anything else is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/train/run_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  // One folder per process, emptied for each input: the store opens what is there.
  static const fs::path folder =
      fs::temp_directory_path() / ("nns_fuzz_run_store." + std::to_string(getpid()));
  fs::remove_all(folder);
  fs::create_directories(folder);
  std::ofstream(folder / "runs.db", std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    nns::train::RunStore store(folder.string());
    store.budget();
    store.snapshot_bytes();
    for (const nns::train::RunInfo& run : store.runs()) {
      store.steps(run.id);
      store.epochs(run.id);
      store.probe_history(run.id);
      try {
        for (const nns::train::SnapshotInfo& snapshot : store.snapshots(run.id)) {
          store.load_weights(snapshot);
        }
      } catch (const nns::Error&) {
      }
    }
  } catch (const nns::Error&) {
  }
  return 0;
}
