// SPDX-License-Identifier: GPL-3.0-or-later
// bench_runs: what recording a run costs (issue 18: at most 3% of the training speed of the
// small spirals MLP at full speed) and how long scrubbing to a snapshot takes (target: within
// 100 ms), in one run on one machine.
//
//   build/release/tests/bench/bench_runs [--steps N] [--rounds R]
//
// Training: the spirals example (resources/examples/spirals.nns: 2-64-64-3, Adam, batch 64,
// a test pass every 19 steps) through a TrainingSession, N steps at full speed (default
// 20,000), without a recorder, with one on the default log-spaced snapshots, and with one
// snapshotting every 100 steps; R rounds, interleaved, and the best round of each counts (the
// machine is shared). The end of a recorded run (its last snapshot written, fsynced, and the
// writer's queue flushed) happens after training and is reported on its own.
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

#include <time.h>
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

// The process's CPU time in seconds (the training worker and the recorder's writer together).
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Rate {
  double wall = 0;  // steps per second of wall time
  double cpu = 0;   // steps per second of the process's CPU time
};

// Steps per second of `steps` steps of a fresh session, recorded into `store` when given.
// finish_ms: the longest time the end of a recorded run took (its last snapshot and flush).
Rate steps_per_second(const nns::graph::Project& project, int64_t steps,
                      const std::shared_ptr<RunStore>& store, int64_t every, double* finish_ms) {
  std::unique_ptr<TrainingSession> session = nns::train::make_session(project, ".");
  std::shared_ptr<RunRecorder> recorder;
  if (store) {
    const int64_t run = store->begin_run(nns::train::new_run_info(project, std::nullopt, 0));
    recorder = std::make_shared<RunRecorder>(store, run, SnapshotSchedule{every});
    session->set_observer(recorder);
    session->snapshot();
    session->wait_idle();
  }
  const auto start = Clock::now();
  const double cpu_start = cpu_seconds();
  session->step(steps);
  session->wait_idle();
  const Rate rate{static_cast<double>(steps) / seconds_since(start),
                  static_cast<double>(steps) / (cpu_seconds() - cpu_start)};
  if (recorder) {
    // The end of a run: its last snapshot, and what the writer still holds, written.
    const auto end = Clock::now();
    session->snapshot();
    session->wait_idle();
    recorder->finish({steps});
    *finish_ms = std::max(*finish_ms, 1000 * seconds_since(end));
  }
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 20000;
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
  std::shared_ptr<RunStore> store;

  // Each recorded run in a store of its own, as a project with a few runs has.
  auto fresh_store = [&] {
    store.reset();
    std::filesystem::remove_all(folder);
    store = std::make_shared<RunStore>(folder.string());
    return store;
  };
  Rate plain, logged, every100;
  double finish_ms = 0;
  auto best = [](Rate& into, Rate r) {
    into.wall = std::max(into.wall, r.wall);
    into.cpu = std::max(into.cpu, r.cpu);
  };
  for (int r = 0; r < rounds; ++r) {
    best(plain, steps_per_second(project, steps, nullptr, 0, &finish_ms));
    best(logged, steps_per_second(project, steps, fresh_store(), 0, &finish_ms));
    best(every100, steps_per_second(project, steps, fresh_store(), 100, &finish_ms));
  }
  std::printf(
      "spirals MLP, %lld steps, best of %d rounds (wall time; CPU time of the whole "
      "process, the writer included)\n",
      static_cast<long long>(steps), rounds);
  auto row = [&](const char* what, const Rate& r) {
    std::printf("  %-32s %8.0f steps/s (%5.1f%% slower)  %8.0f steps/CPU-s (%5.1f%% more CPU)\n",
                what, r.wall, 100 * (1 - r.wall / plain.wall), r.cpu,
                100 * (plain.cpu / r.cpu - 1));
  };
  row("not recorded", plain);
  row("recorded, log-spaced snapshots", logged);
  row("recorded, a snapshot every 100", every100);
  std::printf("  the end of a recorded run (last snapshot, writes flushed): at most %.1f ms\n",
              finish_ms);

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
                   static_cast<long long>(session->status().step), static_cast<long long>(s.step));
      return 1;
    }
  }
  std::sort(ms.begin(), ms.end());
  // A snapshot's cost: taking the state (on the training thread) and writing it (the writer).
  {
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    nns::train::TrainingState state;
    for (int i = 0; i < 20; ++i) state = session->training_state();
    const double take_ms = 1000 * seconds_since(t0) / 20,
                 take_cpu = 1000 * (cpu_seconds() - c0) / 20;
    const double c1 = cpu_seconds();
    const auto t1 = Clock::now();
    for (int i = 0; i < 20; ++i) {
      state.step = 1000000 + i;
      store->add_snapshot(run, state);
    }
    std::printf(
        "a snapshot: taking the state %.3f ms (%.3f ms CPU), writing it %.2f ms (%.2f ms CPU)\n",
        take_ms, take_cpu, 1000 * seconds_since(t1) / 20, 1000 * (cpu_seconds() - c1) / 20);
  }
  std::printf(
      "scrub to a snapshot (find, read, restore), %zu snapshots: median %.2f ms, "
      "max %.2f ms\n",
      ms.size(), ms[ms.size() / 2], ms.back());
  std::filesystem::remove_all(folder);
  return 0;
}
