// bench_runs: what recording a run costs (issue 18: at most 3% of the training speed of the
// small spirals MLP at full speed) and how long scrubbing to a snapshot takes (target: within
// 100 ms), in one run on one machine.
//
//   build/release/tests/bench/bench_runs [--steps N] [--rounds R]
//
// Training: the spirals example (resources/examples/spirals.nns: 2-64-64-3, Adam, batch 64,
// a test pass every 19 steps) through a TrainingSession, N steps at full speed, without a
// recorder, with one on the default log-spaced snapshots, and with one snapshotting every 100
// steps; R rounds, interleaved, and the best round of each counts (the machine is shared).
// Scrubbing: what the window does when the slider moves (the snapshot found in the store,
// its files read, the session restored to it), for every snapshot of a 3,000-step run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/graph/project.h"
#include "engine/train/run_recorder.h"
#include "engine/train/run_store.h"
#include "engine/train/session.h"

namespace {

using Clock = std::chrono::steady_clock;
using nns::train::RunRecorder;
using nns::train::RunStore;
using nns::train::SnapshotSchedule;
using nns::train::TrainingSession;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Steps per second of `steps` steps of a fresh session, recorded into `store` when given.
double steps_per_second(const nns::graph::Project& project, int64_t steps,
                        const std::shared_ptr<RunStore>& store, int64_t every) {
  std::unique_ptr<TrainingSession> session = nns::train::make_session(project, ".");
  std::shared_ptr<RunRecorder> recorder;
  if (store) {
    const int64_t run =
        store->begin_run(nns::train::new_run_info(project, std::nullopt, 0));
    recorder = std::make_shared<RunRecorder>(store, run, SnapshotSchedule{every});
    session->set_observer(recorder);
    session->snapshot();
    session->wait_idle();
  }
  const auto start = Clock::now();
  session->step(steps);
  session->wait_idle();
  if (recorder) {
    // The last snapshot and everything still queued are part of the cost.
    session->snapshot();
    session->wait_idle();
    recorder->finish({steps});
  }
  return static_cast<double>(steps) / seconds_since(start);
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 3000;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      steps = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_runs [--steps N] [--rounds R]\n");
      return 2;
    }
  }
  nns::graph::Project project =
      nns::graph::load_project(NNS_SOURCE_DIR "/resources/examples/spirals.nns");
  project.training.epochs = 0;
  const std::filesystem::path folder =
      std::filesystem::temp_directory_path() / ("bench_runs_" + std::to_string(::getpid()));
  auto store = std::make_shared<RunStore>(folder.string());

  double plain = 0, logged = 0, every100 = 0;
  for (int r = 0; r < rounds; ++r) {
    plain = std::max(plain, steps_per_second(project, steps, nullptr, 0));
    logged = std::max(logged, steps_per_second(project, steps, store, 0));
    every100 = std::max(every100, steps_per_second(project, steps, store, 100));
  }
  std::printf("spirals MLP, %lld steps, best of %d rounds\n", static_cast<long long>(steps),
              rounds);
  std::printf("  not recorded                     %8.0f steps/s\n", plain);
  std::printf("  recorded, log-spaced snapshots   %8.0f steps/s  (%.1f%% slower)\n", logged,
              100 * (1 - logged / plain));
  std::printf("  recorded, a snapshot every 100   %8.0f steps/s  (%.1f%% slower)\n", every100,
              100 * (1 - every100 / plain));

  // Scrubbing: the last run recorded (every 100 steps) and a session to restore into.
  const int64_t run = store->runs().back().id;
  std::unique_ptr<TrainingSession> session = nns::train::make_session(project, ".");
  std::vector<double> ms;
  for (const nns::train::SnapshotInfo& s : store->snapshots(run)) {
    const auto start = Clock::now();
    const std::optional<nns::train::SnapshotInfo> found = store->snapshot_at(run, s.step);
    session->restore(store->load(*found));
    session->wait_idle();
    ms.push_back(1000 * seconds_since(start));
    if (session->status().step != s.step) {
      std::fprintf(stderr, "bench_runs: restored step %lld, not %lld\n",
                   static_cast<long long>(session->status().step),
                   static_cast<long long>(s.step));
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  std::printf("scrub to a snapshot (find, read, restore), %zu snapshots: median %.2f ms, "
              "max %.2f ms\n",
              ms.size(), ms[ms.size() / 2], ms.back());
  std::filesystem::remove_all(folder);
  return 0;
}
