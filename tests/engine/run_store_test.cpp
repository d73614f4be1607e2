// SPDX-License-Identifier: GPL-3.0-or-later
// Runs (issue 18): a session continues from a saved training state bit for bit (weights, Adam's
// moments, the scheduler, the shuffling position, dropout's generator, the epoch's sums), in
// memory, through a checkpoint file and through a run store's snapshot; the store lists runs
// with their parents, keeps metrics, finds snapshots, thins to its budget (keeping each run's
// first and last) and reports a damaged database without touching anything else.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "engine/data/generators.h"
#include "engine/graph/project.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/optim/adam.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/tensor/generator.h"
#include "engine/train/checkpoint.h"
#include "engine/train/probes.h"
#include "engine/train/run_recorder.h"
#include "engine/train/run_store.h"
#include "engine/train/run_store_schema.h"
#include "engine/train/session.h"
#include "support/test_util.h"

namespace nns::train {
namespace {

using namespace std::chrono_literals;

// An MLP with dropout (so the default generator matters), Adam (state to carry) and StepLR.
SessionParts dropout_parts() {
  SessionParts parts;
  parts.make_model = []() -> nn::ModulePtr {
    return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
        std::make_shared<nn::Linear>(2, 24), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Dropout>(0.3), std::make_shared<nn::Linear>(24, 3)});
  };
  parts.loss = std::make_shared<nn::CrossEntropyLoss>();
  parts.make_optimizer = [](const std::vector<Tensor>& params) {
    return std::make_unique<optim::Adam>(params, optim::AdamOptions(0.01));
  };
  parts.make_scheduler = [](optim::Optimizer& o) {
    return std::make_unique<optim::StepLR>(o, /*step_size=*/2, /*gamma=*/0.5);
  };
  data::SpiralsOptions o;
  o.samples = 300;
  o.seed = 5;
  data::DatasetSplit split = data::make_spirals(o).split(0.2, 0);
  parts.train = split.train;
  parts.test = split.test;
  return parts;
}

SessionConfig config(int64_t max_steps) {
  SessionConfig c;
  c.batch_size = 16;  // 15 batches an epoch
  c.max_steps = max_steps;
  c.seed = 11;
  return c;
}

// Every tensor's values, by key (a safetensors file keeps its keys sorted).
std::vector<float> weights(const TrainingState& s) {
  std::map<std::string, Tensor> sorted;
  for (const auto& item : s.model) sorted.emplace(item.key(), item.value());
  std::vector<float> out;
  for (const auto& [key, value] : sorted) {
    const Tensor t = value.contiguous();
    const float* p = t.data_ptr<float>();
    out.insert(out.end(), p, p + t.numel());
  }
  return out;
}

// Trains `steps` steps from where the session is and returns the state there.
TrainingState train_steps(TrainingSession& s, int64_t steps) {
  s.step(steps);
  EXPECT_TRUE(s.wait_idle(60s));
  EXPECT_NE(s.status().state, RunState::Failed) << s.status().error;
  return s.training_state();
}

TEST(TrainingStateTest, GeneratorStateRoundTripsWithTheCachedNormal) {
  Generator g(42);
  g.random();
  g.next_double_normal_sample = 0.125;
  const std::string state = g.get_state();
  const uint32_t a = g.random(), b = g.random();
  Generator h(7);
  h.set_state(state);
  EXPECT_EQ(h.initial_seed(), 42u);
  EXPECT_EQ(h.next_double_normal_sample, 0.125);
  EXPECT_EQ(h.random(), a);
  EXPECT_EQ(h.random(), b);
  test::expect_error<ValueError>([&] { h.set_state("not a state"); }, {"not a generator state"});
  EXPECT_EQ(h.initial_seed(), 42u);  // unchanged by the refused state
}

// Mid-epoch (step 37 of 15-batch epochs), with dropout, Adam and a scheduler: the restored
// session's next 43 steps are the original's, bit for bit, and so are the epoch figures.
TEST(TrainingStateTest, RestoringMidEpochRetracesTheRunBitForBit) {
  TrainingSession original(dropout_parts(), config(0));
  const TrainingState at37 = train_steps(original, 37);
  EXPECT_EQ(at37.batch, 7);
  EXPECT_EQ(at37.epoch, 2);
  ASSERT_TRUE(at37.scheduler.has_value());
  const TrainingState at80 = train_steps(original, 43);
  const std::vector<EpochMetrics> history = original.epoch_history();

  // Another session, its generator elsewhere: everything comes from the state.
  manual_seed(999);
  TrainingSession resumed(dropout_parts(), config(0));
  resumed.restore(at37);
  ASSERT_TRUE(resumed.wait_idle(60s));
  EXPECT_EQ(resumed.status().step, 37);
  EXPECT_EQ(resumed.status().state, RunState::Paused);
  const TrainingState again = train_steps(resumed, 43);
  EXPECT_EQ(weights(again), weights(at80));
  EXPECT_EQ(again.generator, at80.generator);
  const std::vector<EpochMetrics> resumed_history = resumed.epoch_history();
  ASSERT_EQ(resumed_history.size(), 3u);  // epochs 3, 4 and 5 end at steps 45, 60, 75
  for (size_t i = 0; i < resumed_history.size(); ++i) {
    const EpochMetrics& e = history[i + 2];
    EXPECT_EQ(resumed_history[i].epoch, e.epoch);
    EXPECT_EQ(resumed_history[i].train_loss, e.train_loss);
    EXPECT_EQ(resumed_history[i].test_loss, e.test_loss);
    EXPECT_EQ(resumed_history[i].train_accuracy, e.train_accuracy);
  }
}

class RunStoreTest : public test::TempDirTest {
 protected:
  std::string folder() const { return (dir_ / "net.runs").string(); }
};

TEST_F(RunStoreTest, ACheckpointAndASnapshotCarryTheWholeState) {
  TrainingSession original(dropout_parts(), config(0));
  const TrainingState at20 = train_steps(original, 20);
  const TrainingState at50 = train_steps(original, 30);

  const std::string ckpt = (dir_ / "at20.pt").string();
  save_checkpoint(at20, ckpt);
  RunStore store(folder());
  const int64_t run = store.begin_run(RunInfo{});
  store.add_snapshot(run, at20);
  for (const TrainingState& loaded :
       {load_checkpoint(ckpt), store.load(*store.snapshot_at(run, 20))}) {
    TrainingSession resumed(dropout_parts(), config(0));
    resumed.restore(loaded);
    EXPECT_EQ(weights(train_steps(resumed, 30)), weights(at50));
  }
  // The snapshot's weights file is a plain state dict, as PyTorch's load_state_dict wants.
  EXPECT_EQ(store.load_weights(*store.snapshot_at(run, 25)).size(), at20.model.size());
}

// A store is read as untrusted: a snapshot row that names a file outside the store's folder
// (written by hand, or by anyone who shared the folder) is damaged, and nothing is read there.
TEST_F(RunStoreTest, ASnapshotRowNamingAFileOutsideTheStoreIsDamagedAndNotFollowed) {
  TrainingSession session(dropout_parts(), config(0));
  const TrainingState at5 = train_steps(session, 5);
  {
    RunStore store(folder());
    store.add_snapshot(store.begin_run(RunInfo{}), at5);
  }
  const std::string outside = (dir_ / "outside.safetensors").string();
  std::ofstream(outside) << "not the store's";
  for (const std::string& path : {std::string("../outside.safetensors"),
                                  std::string("snapshots/../../outside.safetensors"), outside}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((folder() + "/runs.db").c_str(), &db), SQLITE_OK);
    const std::string sql = "UPDATE snapshots SET weights = '" + path + "'";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    RunStore store(folder());
    test::expect_error<RunStoreError>([&] { store.snapshots(1); },
                                      {"damaged", path, "outside its folder"});
    test::expect_error<RunStoreError>([&] { store.snapshot_at(1, 5); }, {"outside its folder"});
  }
  // A path inside the folder, however written, is still the store's own.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((folder() + "/runs.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE snapshots SET weights = './' || state", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  RunStore store(folder());
  ASSERT_EQ(store.snapshots(1).size(), 1u);
  EXPECT_EQ(store.snapshots(1)[0].weights_path.rfind(folder(), 0), 0u);
}

TEST_F(RunStoreTest, ARestoreThatDoesNotFitChangesNothing) {
  TrainingSession s(dropout_parts(), config(0));
  const TrainingState at5 = train_steps(s, 5);
  TrainingState wrong = at5;
  wrong.model.pop(wrong.model.keys().front());
  test::expect_error<ValueError>([&] { s.check_restorable(wrong); }, {"missing"});
  TrainingState bad_generator = at5;
  bad_generator.generator = "garbage";
  test::expect_error<ValueError>([&] { s.check_restorable(bad_generator); },
                                 {"not a generator state"});
  EXPECT_EQ(weights(s.training_state()), weights(at5));
}

TEST_F(RunStoreTest, RunsMetricsAndSnapshots) {
  RunStore store(folder());
  EXPECT_TRUE(store.runs().empty());
  graph::Project project;  // an empty project: settings and a hash all the same
  const int64_t first = store.begin_run(new_run_info(project, std::nullopt, 0));
  EXPECT_EQ(first, 1);
  store.add_steps(first, {{1, 1, 0.9, 0.9, 0.5, 0.1}, {2, 1, 0.8, 0.85, 0.6, 0.1}});
  EpochMetrics e;
  e.epoch = 1;
  e.step = 2;
  e.train_loss = 0.85;
  e.train_accuracy = std::nan("");  // regression
  e.test_loss = 0.7;
  e.test_accuracy = 0.75;
  store.add_epochs(first, {e});
  store.finish_run(first, RunResult{2, 0.85, 0.55, 0.7, 0.75});
  project.training.optimizer_options["lr"] = 0.003;
  const int64_t second = store.begin_run(new_run_info(project, store.run(first), 1));
  EXPECT_EQ(second, 2);

  const std::vector<RunInfo> runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].steps, 2);
  EXPECT_TRUE(runs[0].finished);
  EXPECT_EQ(runs[0].test_accuracy, 0.75);
  EXPECT_EQ(runs[1].parent, 1);
  EXPECT_EQ(runs[1].parent_step, 1);
  EXPECT_EQ(runs[1].first_step, 1);
  EXPECT_FALSE(runs[1].finished);
  EXPECT_TRUE(std::isnan(runs[1].test_loss));
  EXPECT_NE(runs[1].changes.find("lr 0.003"), std::string::npos) << runs[1].changes;
  const std::vector<StepMetrics> steps = store.steps(first);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].loss, 0.8);
  EXPECT_EQ(steps[1].smoothed_loss, 0.85);
  const std::vector<EpochMetrics> epochs = store.epochs(first);
  ASSERT_EQ(epochs.size(), 1u);
  EXPECT_EQ(epochs[0].test_accuracy, 0.75);
  EXPECT_TRUE(std::isnan(epochs[0].train_accuracy));  // NaN stays NaN

  store.rename_run(second, "lower lr");
  EXPECT_EQ(store.run(second)->name, "lower lr");
  // Deleting a run moves its branches to its parent and removes its files.
  TrainingSession s(dropout_parts(), config(0));
  store.add_snapshot(first, train_steps(s, 1));
  const std::string file = store.snapshots(first).at(0).weights_path;
  ASSERT_TRUE(std::filesystem::exists(file));
  store.delete_run(first);
  EXPECT_FALSE(std::filesystem::exists(file));
  EXPECT_EQ(store.run(second)->parent, 0);
  EXPECT_TRUE(store.steps(first).empty());
  // Ids are never reused.
  EXPECT_EQ(store.begin_run(new_run_info(project, std::nullopt, 0)), 3);
}

TEST_F(RunStoreTest, ThinsIntermediateSnapshotsToTheBudgetKeepingFirstAndLast) {
  RunStore store(folder());
  TrainingSession s(dropout_parts(), config(0));
  const int64_t run = store.begin_run(RunInfo{});
  std::vector<int64_t> steps;
  for (int64_t step = 1; step <= 40; ++step) {
    const TrainingState state = train_steps(s, 1);
    if (SnapshotSchedule{}.due(step)) {
      store.add_snapshot(run, state);
      steps.push_back(step);
    }
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40}));
  const int64_t each = store.snapshots(run).front().bytes;
  ASSERT_GT(each, 0);
  store.set_budget(5 * each);
  std::vector<int64_t> kept;
  for (const SnapshotInfo& si : store.snapshots(run)) kept.push_back(si.step);
  ASSERT_EQ(kept.size(), 5u);
  EXPECT_EQ(kept.front(), 1);
  EXPECT_EQ(kept.back(), 40);
  EXPECT_LE(store.snapshot_bytes(), store.budget());
  // The files of the thinned ones are gone: the folder holds two per snapshot kept.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ / "net.runs" / "run-1")) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 10u);
  // Under a budget too small for firsts and lasts, those stay.
  store.set_budget(1);
  EXPECT_EQ(store.snapshots(run).size(), 2u);
  EXPECT_EQ(store.snapshot_at(run, 39)->step, 1);
  EXPECT_FALSE(store.snapshot_at(run, 0).has_value());
}

TEST_F(RunStoreTest, ADamagedDatabaseIsReportedAndLeftAsItIs) {
  std::filesystem::create_directories(folder());
  const std::string db = write("net.runs/runs.db", std::string(4096, 'x'));
  test::expect_error<RunStoreError>([&] { RunStore store(folder()); },
                                    {db, "damaged or not a run store", "move the folder"});
  std::ifstream in(db, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), std::string(4096, 'x'));

  // A real store cut short (a disk that lost its tail) is refused as well.
  const std::string other = (dir_ / "other.runs").string();
  {
    RunStore store(other);
    const int64_t run = store.begin_run(RunInfo{});
    std::vector<StepMetrics> many(5000);
    for (size_t i = 0; i < many.size(); ++i) many[i].step = static_cast<int64_t>(i + 1);
    store.add_steps(run, many);
  }
  const std::filesystem::path other_db = std::filesystem::path(other) / "runs.db";
  std::filesystem::resize_file(other_db, std::filesystem::file_size(other_db) / 2);
  test::expect_error<RunStoreError>([&] { RunStore store(other); }, {"runs.db"});
}

// The window and a CLI run open one store at the same moment: the second to make the schema
// finds it made (it read the version before the first committed, and ALTER TABLE's second
// upgrade failed with "duplicate column name", a healthy store reported as damaged).
TEST_F(RunStoreTest, TwoOpeningANewStoreAtOnceBothOpenIt) {
  for (int round = 0; round < 20; ++round) {
    const std::string store = (dir_ / ("race" + std::to_string(round) + ".runs")).string();
    std::atomic<int> ready{0};
    std::array<std::string, 2> errors;
    std::vector<std::thread> openers;
    for (size_t i = 0; i < errors.size(); ++i) {
      openers.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < 2) {
        }
        try {
          RunStore opened(store);
        } catch (const RunStoreError& e) {
          errors[i] = e.what();
        }
      });
    }
    for (std::thread& t : openers) t.join();
    for (const std::string& e : errors) ASSERT_EQ(e, "") << "round " << round;
  }
}

TEST(RunRecorderTest, SnapshotScheduleIsLogSpacedOrEveryN) {
  std::vector<int64_t> due;
  for (int64_t step = 0; step <= 1300; ++step) {
    if (SnapshotSchedule{}.due(step)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{1,   2,   3,   4,   5,   6,   8,   10,   12,  15,
                                       20,  25,  30,  40,  50,  60,  80,  100,  120, 150,
                                       200, 250, 300, 400, 500, 600, 800, 1000, 1200}));
  EXPECT_TRUE(SnapshotSchedule{7}.due(14));
  EXPECT_FALSE(SnapshotSchedule{7}.due(15));
  EXPECT_FALSE(SnapshotSchedule{7}.due(0));
}

TEST_F(RunStoreTest, TheRecorderWritesWhatTheSessionDid) {
  auto store = std::make_shared<RunStore>(folder());
  const int64_t run = store->begin_run(RunInfo{});
  auto recorder = std::make_shared<RunRecorder>(store, run, SnapshotSchedule{10});
  TrainingSession s(dropout_parts(), config(33));
  s.set_observer(recorder);
  s.snapshot();
  s.start();
  ASSERT_TRUE(s.wait_idle(60s));
  s.snapshot();
  ASSERT_TRUE(s.wait_idle(60s));
  recorder->finish({33});
  EXPECT_EQ(recorder->error(), "");
  std::vector<int64_t> snaps;
  for (const SnapshotInfo& si : store->snapshots(run)) snaps.push_back(si.step);
  EXPECT_EQ(snaps, (std::vector<int64_t>{0, 10, 20, 30, 33}));
  const std::vector<StepMetrics> steps = store->steps(run);
  ASSERT_EQ(steps.size(), 33u);
  const std::vector<EpochMetrics> history = s.epoch_history();
  const std::vector<EpochMetrics> epochs = store->epochs(run);
  ASSERT_EQ(epochs.size(), history.size());
  EXPECT_EQ(epochs.back().train_loss, history.back().train_loss);
  EXPECT_EQ(store->run(run)->steps, 33);
  // The last snapshot is the session's state at the end.
  EXPECT_EQ(weights(store->load(*store->snapshot_at(run, 33))), weights(s.training_state()));
}

// Two samples are the same record: every figure the store keeps, bit for bit.
void expect_same_sample(const ProbeSample& a, const ProbeSample& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.module, b.module);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.tensor, b.tensor);
  EXPECT_EQ(a.interval, b.interval);
  const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
  EXPECT_TRUE(same(a.update_ratio, b.update_ratio)) << a.update_ratio << " " << b.update_ratio;
  EXPECT_EQ(a.stats.numel, b.stats.numel);
  EXPECT_EQ(a.stats.nonfinite, b.stats.nonfinite);
  for (auto [x, y] : {std::pair{a.stats.mean, b.stats.mean},
                      {a.stats.std, b.stats.std},
                      {a.stats.min, b.stats.min},
                      {a.stats.max, b.stats.max},
                      {a.stats.norm, b.stats.norm},
                      {a.stats.zero_fraction, b.stats.zero_fraction},
                      {a.stats.saturated_fraction, b.stats.saturated_fraction},
                      {a.stats.histogram.lo, b.stats.histogram.lo},
                      {a.stats.histogram.hi, b.stats.histogram.hi}}) {
    EXPECT_TRUE(same(x, y)) << a.module << " " << a.tensor << " step " << a.step << ": " << x
                            << " vs " << y;
  }
  EXPECT_EQ(a.stats.histogram.counts, b.stats.histogram.counts);
}

// The probes' samples of a real session go through the recorder into the store and come back
// as they were; a branch's history is its parent's up to the branch point, then its own.
TEST_F(RunStoreTest, ProbeSamplesAreKeptAndABranchContinuesThem) {
  auto store = std::make_shared<RunStore>(folder());
  const int64_t run = store->begin_run(RunInfo{});
  auto recorder = std::make_shared<RunRecorder>(store, run, SnapshotSchedule{10});
  TrainingSession s(dropout_parts(), config(40));
  s.set_observer(recorder);
  for (const char* module : {"0", "1"}) s.add_probe(module, {.every = 5, .max_overhead = 0});
  std::vector<ProbeSample> live;
  s.start();
  for (bool done = false; !done;) {
    done = s.wait_idle(20ms);
    std::vector<ProbeSample> taken = s.take_probe_samples();
    recorder->add_probe_samples(taken);  // as the window and the CLI hand them over
    live.insert(live.end(), taken.begin(), taken.end());
  }
  recorder->finish({40});
  EXPECT_EQ(recorder->error(), "");
  // Steps 1, 6, ..., 36 of two probes: the first Linear's output, its gradient and its
  // parameters' (weight, bias; its input, the data, has none); ReLU's output and gradients.
  ASSERT_EQ(live.size(), 8u * (4 + 3));
  const std::vector<ProbeSample> kept = store->probe_samples(run);
  ASSERT_EQ(kept.size(), live.size());
  std::stable_sort(live.begin(), live.end(),
                   [](const ProbeSample& a, const ProbeSample& b) { return a.step < b.step; });
  for (size_t i = 0; i < live.size(); ++i) expect_same_sample(kept[i], live[i]);
  EXPECT_EQ(kept.front().probe, 0);  // ids are the session's, not kept

  // Up to a step: those at or before it.
  const std::vector<ProbeSample> upTo16 = store->probe_samples(run, 16);
  ASSERT_EQ(upTo16.size(), 4u * 7);
  EXPECT_EQ(upTo16.back().step, 16);

  // A branch from step 20 with its own samples from step 21 on.
  RunInfo branchInfo;
  branchInfo.parent = run;
  branchInfo.parent_step = 20;
  const int64_t branch = store->begin_run(branchInfo);
  ProbeSample own = live.back();
  own.step = 26;
  store->add_probe_samples(branch, {own});
  const std::vector<ProbeSample> history = store->probe_history(branch);
  ASSERT_EQ(history.size(), 4u * 7 + 1);
  EXPECT_EQ(history[4 * 7 - 1].step, 16);
  expect_same_sample(history.back(), own);
  EXPECT_EQ(store->probe_history(branch, 25).size(), 4u * 7);
  EXPECT_EQ(store->probe_history(run, 20).size(), 4u * 7);

  // Attention samples (their maps) are not kept; a deleted run's samples go with it.
  ProbeSample attention = own;
  attention.kind = ProbeKind::Attention;
  store->add_probe_samples(branch, {attention});
  EXPECT_EQ(store->probe_samples(branch).size(), 1u);
  store->delete_run(branch);
  EXPECT_TRUE(store->probe_samples(branch).empty());
}

// A store written before probe samples were kept (schema 1, tests/fixtures/run_store_v1) opens,
// keeps its runs and metrics, and takes probe samples from then on.
TEST_F(RunStoreTest, AStoreOfSchemaOneOpensAndTakesProbeSamples) {
  std::filesystem::create_directories(folder());
  std::filesystem::copy_file(NNS_FIXTURE_DIR "/run_store_v1/runs.db", folder() + "/runs.db");
  {
    RunStore store(folder());
    const std::vector<RunInfo> runs = store.runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].name, "before probes");
    EXPECT_TRUE(runs[0].finished);
    EXPECT_EQ(runs[0].test_accuracy, 0.7);
    ASSERT_EQ(store.steps(1).size(), 3u);
    EXPECT_EQ(store.steps(1)[1].loss, 0.5);
    EXPECT_EQ(store.epochs(1).size(), 1u);
    EXPECT_TRUE(store.probe_samples(1).empty());
    ProbeSample p;
    p.module = "fc1";
    p.step = 3;
    p.stats.mean = 0.25;
    p.stats.histogram.counts = {1, 2, 3};
    store.add_probe_samples(1, {p});
  }
  RunStore again(folder());
  ASSERT_EQ(again.probe_samples(1).size(), 1u);
  EXPECT_EQ(again.probe_samples(1)[0].stats.histogram.counts, (std::vector<int64_t>{1, 2, 3}));
}

// revision() tells a reader that the store changed, whoever wrote it; a finished run that
// records steps again is going again.
TEST_F(RunStoreTest, TheRevisionMovesWithEveryWrite) {
  RunStore store(folder());
  RunStore other(folder());  // another connection, as another process has
  const uint64_t start = store.revision();
  const int64_t run = store.begin_run(RunInfo{});
  const uint64_t begun = store.revision();
  EXPECT_NE(begun, start);
  EXPECT_EQ(store.revision(), begun);  // reading changes nothing
  store.finish_run(run, RunResult{0});
  EXPECT_TRUE(store.run(run)->finished);
  const uint64_t finished = store.revision();
  EXPECT_NE(finished, begun);
  other.add_steps(run, {{1, 1, 0.9, 0.9, 0.5, 0.1}});
  EXPECT_NE(store.revision(), finished);
  EXPECT_FALSE(store.run(run)->finished);
  EXPECT_EQ(store.run(run)->steps, 1);
}

// Who trained a run (schema 3): NN Studio's own by default, a PyTorch job's as its recorder
// (resources/python/nnstudio_runs.py) writes it; a store of schema 1 takes the columns, its
// runs NN Studio's.
TEST_F(RunStoreTest, ARunKeepsItsSource) {
  {
    RunStore store(folder());
    RunInfo pytorch;
    pytorch.source = "pytorch";
    pytorch.processes = 2;
    pytorch.host = "node7";
    pytorch.device = "cuda:0";
    store.begin_run(RunInfo{});
    store.begin_run(pytorch);
  }
  const std::vector<RunInfo> runs = RunStore(folder()).runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].source, "nnstudio");
  EXPECT_EQ(runs[0].processes, 1);
  EXPECT_EQ(runs[1].source, "pytorch");
  EXPECT_EQ(runs[1].processes, 2);
  EXPECT_EQ(runs[1].host, "node7");
  EXPECT_EQ(runs[1].device, "cuda:0");

  const std::string old = (dir_ / "old.runs").string();
  std::filesystem::create_directories(old);
  std::filesystem::copy_file(NNS_FIXTURE_DIR "/run_store_v1/runs.db", old + "/runs.db");
  const std::vector<RunInfo> old_runs = RunStore(old).runs();
  ASSERT_EQ(old_runs.size(), 1u);
  EXPECT_EQ(old_runs[0].source, "nnstudio");
  EXPECT_EQ(old_runs[0].processes, 1);
}

// The schema file (resources/python/nnstudio_runs_schema.json) is what the PyTorch recorder
// reads: the engine's own constants and layouts must be the ones it holds.
TEST(RunStoreSchema, TheSchemaFileHoldsTheEnginesConstantsAndLayouts) {
  const graph::Json& schema = run_store_schema();
  const graph::Json& recorder = schema.at("recorder");
  EXPECT_EQ(recorder.at("histogram_bins").get<int>(), kHistogramBins);
  EXPECT_EQ(recorder.at("smoothing").get<double>(), kLossSmoothing);
  EXPECT_EQ(recorder.at("floor_early_steps").get<int64_t>(), kFloorEarlySteps);
  EXPECT_EQ(recorder.at("floor_gap").get<int64_t>(), kFloorGap);
  EXPECT_EQ(recorder.at("outlier_factor").get<double>(), kOutlierFactor);
  EXPECT_EQ(recorder.at("budget_aim").get<double>(), kBudgetAim);
  // The records' sizes are the engine's (static_asserts in run_store.cpp).
  EXPECT_EQ(schema.at("records").at("step").at("size").get<int>(), 48);
  EXPECT_EQ(schema.at("records").at("probe").at("size").get<int>(), 128);
  const graph::Json& kinds = schema.at("records").at("probe").at("kinds");
  EXPECT_EQ(kinds.size(), 4u);
  for (ProbeKind kind :
       {ProbeKind::Activation, ProbeKind::GradOutput, ProbeKind::GradInput, ProbeKind::ParamGrad}) {
    EXPECT_EQ(kinds.at(probe_kind_name(kind)).get<int>(), static_cast<int>(kind));
  }
  // The log-spaced snapshot schedule, as documented: ten a decade, dense early.
  std::vector<int64_t> due;
  for (int64_t step = 0; step <= 1000; ++step) {
    if (SnapshotSchedule{}.due(step)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{1,   2,   3,   4,   5,   6,   8,   10,  12,  15,
                                       20,  25,  30,  40,  50,  60,  80,  100, 120, 150,
                                       200, 250, 300, 400, 500, 600, 800, 1000}));
}

TEST_F(RunStoreTest, ANewStoreHasTheSchemaFilesVersionAndTables) {
  { RunStore store(folder()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((std::filesystem::path(folder()) / "runs.db").c_str(), &db,
                            SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  const auto integer = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql, -1, &s, nullptr);
    const int64_t value = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return value;
  };
  EXPECT_EQ(integer("PRAGMA user_version"), run_store_schema().at("version").get<int64_t>());
  // Every table and index the file makes, and the columns its upgrades add.
  EXPECT_EQ(integer("SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'index') AND "
                    "name NOT LIKE 'sqlite_%'"),
            static_cast<int64_t>(run_store_schema().at("tables").size()));
  EXPECT_EQ(integer("SELECT count(*) FROM pragma_table_info('runs') WHERE name IN ('source', "
                    "'processes', 'host', 'device')"),
            4);
  sqlite3_close(db);
}

}  // namespace
}  // namespace nns::train
