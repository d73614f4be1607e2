// SPDX-License-Identifier: GPL-3.0-or-later
// Runs (issue 18) end to end: nnstudio-cli train records runs beside the project, runs lists
// them (a branch under its parent, the figures train printed), a branch with the same settings
// retraces its parent bit for bit, a killed training leaves a store that opens, a damaged store
// is reported while training goes on; in the window, the Runs panel shows the store's state of
// a run that ended, its slider puts the model and the probes' history at a snapshot and Branch
// from here trains a new run from it.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QSlider>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <map>
#include <set>

#include "engine/serialize/serialize.h"
#include "engine/train/run_store.h"
#include "runs_fixture.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/document/project_document.h"
#include "ui/probes/node_health.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/curves_widget.h"
#include "ui/training/runs_panel.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

TEST_F(RunsTest, TheCliRecordsListsBranchesAndExports) {
  const Result first = cli({"train", project_, "--epochs", "3"});
  ASSERT_EQ(first.code, 0) << first.err.toStdString();
  EXPECT_TRUE(first.out.contains("recorded as run 1 in")) << first.out.toStdString();
  EXPECT_EQ(folder(), dir_.filePath("spirals.runs").toStdString());

  // The store's figures are the ones train printed.
  train::RunStore store(folder());
  const std::vector<train::EpochMetrics> epochs = store.epochs(1);
  ASSERT_EQ(epochs.size(), 3u);
  const QRegularExpression line(R"(epoch +(\d+)/3 +train loss ([0-9.]+) .*test loss ([0-9.]+))");
  int matched = 0;
  for (auto it = line.globalMatch(first.out); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const train::EpochMetrics& e = epochs.at(m.captured(1).toInt() - 1);
    EXPECT_EQ(m.captured(2), QString::asprintf("%.4f", e.train_loss));
    EXPECT_EQ(m.captured(3), QString::asprintf("%.4f", e.test_loss));
    ++matched;
  }
  EXPECT_EQ(matched, 3);
  const int64_t steps = store.run(1)->steps;
  EXPECT_EQ(steps, epochs.back().step);
  EXPECT_EQ(store.steps(1).size(), static_cast<size_t>(steps));

  // runs --probes: the probes' summaries of every sampled step as CSV, the last of each series
  // the figures train printed (the example has five probes).
  const QString csvPath = dir_.filePath("probes.csv");
  const Result probes = cli({"runs", project_, "--probes", "1", "--out", csvPath});
  ASSERT_EQ(probes.code, 0) << probes.err.toStdString();
  const QStringList rows = QString::fromUtf8(fileBytes(csvPath)).trimmed().split('\n');
  ASSERT_EQ(rows.front(), "step,module,kind,tensor,mean,std,min,max,norm,zeros");
  EXPECT_EQ(static_cast<size_t>(rows.size() - 1), store.probe_samples(1).size());
  const QRegularExpression printed(
      R"(probe (\S+) (\S+) (\S+) \(step (\d+)\): mean (\S+) std (\S+) min (\S+) max (\S+) norm (\S+))");
  int compared = 0;
  for (auto it = printed.globalMatch(first.out); it.hasNext();) {
    const QRegularExpressionMatch m = it.next();
    const QString key =
        m.captured(4) + "," + m.captured(1) + "," + m.captured(2) + "," + m.captured(3) + ",";
    const auto row =
        std::find_if(rows.begin(), rows.end(), [&](const QString& r) { return r.startsWith(key); });
    ASSERT_NE(row, rows.end()) << key.toStdString();
    const QStringList cells = row->split(',');
    ASSERT_EQ(cells.size(), 10) << row->toStdString();
    for (int i = 0; i < 5; ++i) {
      // train printed 4 significant digits of the same number.
      const double shown = m.captured(5 + i).toDouble();
      EXPECT_NEAR(cells[4 + i].toDouble(), shown, 5.1e-4 * std::abs(shown))
          << key.toStdString() << " column " << i;
    }
    ++compared;
  }
  EXPECT_GE(compared, 5 * 3);  // each probe's output, its gradient and more

  // A branch from step 20 with the same settings ends where its parent ended, bit for bit.
  const Result same = cli({"train", project_, "--epochs", "3", "--from", "1:20", "--quiet"});
  ASSERT_EQ(same.code, 0) << same.err.toStdString();
  const QString a = dir_.filePath("a.safetensors"), b = dir_.filePath("b.safetensors");
  const QString at = QString("1:%1").arg(steps), at2 = QString("2:%1").arg(steps);
  ASSERT_EQ(cli({"runs", project_, "--export", at, "--out", a}).code, 0);
  ASSERT_EQ(cli({"runs", project_, "--export", at2, "--out", b}).code, 0);
  EXPECT_EQ(fileBytes(a), fileBytes(b));
  // Its probe history is its parent's up to step 20, then its own.
  const QString branchCsv = dir_.filePath("branch_probes.csv");
  ASSERT_EQ(cli({"runs", project_, "--probes", "2", "--out", branchCsv}).code, 0);
  const QStringList branchRows = QString::fromUtf8(fileBytes(branchCsv)).trimmed().split('\n');
  EXPECT_EQ(static_cast<size_t>(branchRows.size() - 1),
            store.probe_samples(1, 20).size() + store.probe_samples(2).size());
  EXPECT_EQ(branchRows.mid(0, 1 + static_cast<int>(store.probe_samples(1, 20).size())),
            rows.mid(0, 1 + static_cast<int>(store.probe_samples(1, 20).size())));
  EXPECT_GT(store.probe_samples(2).size(), 0u);
  EXPECT_GT(store.probe_samples(2).front().step, 20);
  // ... and PyTorch's safetensors layout holds the model's keys.
  EXPECT_EQ(serialize::load_state_dict_file(a.toStdString()).size(), 6u);

  // A branch with another learning rate: listed under its parent, with what changed.
  ASSERT_EQ(
      cli({"train", project_, "--from", "1:20", "--lr", "0.003", "--steps", "10", "--quiet"}).code,
      0);
  const Result list = cli({"runs", project_});
  ASSERT_EQ(list.code, 0) << list.err.toStdString();
  const QStringList lines = list.out.split('\n');
  ASSERT_GE(lines.size(), 4);
  EXPECT_TRUE(lines[1].trimmed().startsWith("1 ")) << lines[1].toStdString();
  EXPECT_TRUE(QRegularExpression(R"(^\s*2\s+1:20\s)").match(lines[2]).hasMatch())
      << lines[2].toStdString();
  EXPECT_TRUE(lines[2].contains("(none)")) << lines[2].toStdString();
  EXPECT_TRUE(QRegularExpression(R"(^\s*3\s+1:20\s+30\s)").match(lines[3]).hasMatch())
      << lines[3].toStdString();
  EXPECT_TRUE(lines[3].contains("lr 0.01 -> 0.003")) << lines[3].toStdString();

  // Delete, and the errors a user can make.
  const Result deleted = cli({"runs", project_, "--delete", "2"});
  EXPECT_EQ(deleted.code, 0);
  EXPECT_FALSE(train::RunStore(folder()).run(2).has_value());
  EXPECT_FALSE(QDir(dir_.filePath("spirals.runs/run-2")).exists());
  const Result missing = cli({"train", project_, "--from", "2:5"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(missing.err.contains("there is no run 2")) << missing.err.toStdString();
  const Result noOut = cli({"runs", project_, "--probes", "1"});
  EXPECT_EQ(noOut.code, 2);
  EXPECT_TRUE(noOut.err.contains("--out FILE")) << noOut.err.toStdString();
  const Result noRun = cli({"runs", project_, "--probes", "7", "--out", csvPath});
  EXPECT_EQ(noRun.code, 1);
  EXPECT_TRUE(noRun.err.contains("there is no run 7")) << noRun.err.toStdString();
  const Result bad = cli({"runs", project_, "--export", "x:1", "--out", a});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(bad.err.contains("RUN:STEP")) << bad.err.toStdString();
  const Result none = cli({"train", project_, "--steps", "3", "--no-record", "--quiet"});
  EXPECT_EQ(none.code, 0);
  EXPECT_EQ(train::RunStore(folder()).runs().size(), 2u);
}

TEST_F(RunsTest, AKilledTrainingLeavesAStoreThatOpens) {
  QProcess p;
  p.setProcessEnvironment(QProcessEnvironment::systemEnvironment());
  p.start(NNS_CLI, {"train", project_, "--epochs", "100000", "--snapshot-every", "40"});
  ASSERT_TRUE(p.waitForStarted());
  // Killed without warning once a few snapshots are in.
  ASSERT_TRUE(test::waitFor(
      [&] {
        try {
          return QFile::exists(QString::fromStdString(folder() + "/runs.db")) &&
                 train::RunStore(folder()).snapshots(1).size() >= 4;
        } catch (const train::RunStoreError&) {
          return false;  // the first moments: the database is being made
        }
      },
      60000));
  ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
  ASSERT_TRUE(p.waitForFinished(10000));

  train::RunStore store(folder());
  const std::optional<train::RunInfo> run = store.run(1);
  ASSERT_TRUE(run.has_value());
  EXPECT_FALSE(run->finished);
  const std::vector<train::SnapshotInfo> snapshots = store.snapshots(1);
  ASSERT_GE(snapshots.size(), 4u);
  for (const train::SnapshotInfo& s : snapshots) {
    EXPECT_EQ(store.load(s).step, s.step);  // every snapshot listed is whole
  }
  const Result list = cli({"runs", project_});
  EXPECT_EQ(list.code, 0);
  EXPECT_TRUE(list.out.contains("(unfinished)")) << list.out.toStdString();
  const QString from = QString("1:%1").arg(snapshots.back().step);
  const Result branch = cli({"train", project_, "--from", from, "--steps", "5", "--quiet"});
  EXPECT_EQ(branch.code, 0) << branch.err.toStdString();
}

// The same float values, bit for bit.
bool sameValues(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::equal(x.data_ptr<float>(), x.data_ptr<float>() + x.numel(), y.data_ptr<float>());
}

// Every weight of a snapshot equals the session's (what the inspector shows: the session owns
// the weights).
bool documentShows(TrainingController* training, const nn::StateDict& snapshot) {
  const std::optional<nn::StateDict> state = training->stateDict();
  if (!state) return false;
  const nn::StateDict& model = *state;
  for (const auto& item : snapshot) {
    const Tensor* t = model.find(item.key());
    if (!t || !sameValues(*t, item.value())) return false;
  }
  return true;
}

TEST_F(RunsTest, TheSliderShowsASnapshotAndBranchFromHereTrainsANewRun) {
  sampleEveryNSteps();
  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  TrainingController* controller = window.training();
  RunsPanel* panel = window.runsPanel();
  ASSERT_NE(controller->runStore(), nullptr) << controller->runStoreError().toStdString();
  // Run 1 to its end (the example's 40 epochs of 19 batches).
  controller->start();
  ASSERT_TRUE(
      test::waitFor([&] { return controller->status().state == train::RunState::Stopped; }, 60000));
  const int64_t end = controller->status().step;
  ASSERT_EQ(end, 760);
  ASSERT_TRUE(test::waitFor([&] {
    const auto run = controller->runStore()->run(1);
    return run && run->finished && run->steps == end && !std::isnan(run->test_accuracy);
  }));
  // The panel shows the store's state of the run that ended (it showed "(recording)" at the
  // step count of an earlier refresh, without test accuracy, while the recorder's thread was
  // still writing): the store's steps and test accuracy, no longer recording. It asks the
  // store whether it changed every kStorePollMs.
  const train::RunInfo ended = *controller->runStore()->run(1);
  ASSERT_TRUE(test::waitFor(
      [&] {
        const QTreeWidgetItem* item = panel->tree()->topLevelItem(0);
        return item && !item->text(0).contains("recording") && item->text(1) == "760" &&
               item->text(2) == QString::number(100 * ended.test_accuracy, 'f', 1) + "%";
      },
      5000))
      << panel->tree()->topLevelItem(0)->text(0).toStdString() << " | "
      << panel->tree()->topLevelItem(0)->text(1).toStdString() << " | "
      << panel->tree()->topLevelItem(0)->text(2).toStdString();
  EXPECT_EQ(panel->tree()->topLevelItemCount(), 1);
  EXPECT_EQ(panel->selectedRun(), 1);
  EXPECT_TRUE(test::waitFor([&] { return panel->slider()->maximum() == 760; }));

  // What the probes (the example has five) showed live, by node and series.
  NodeHealthModel* health = window.nodeHealth();
  std::map<graph::NodeId, NodeHealthModel::SeriesMap> live;
  for (const graph::Node& n : window.document()->project().graph.nodes) {
    if (const NodeHealthModel::SeriesMap* series = health->series(n.id)) live[n.id] = *series;
  }
  ASSERT_EQ(live.size(), 5u);

  // Drag the slider back to 300: the model as it was there.
  panel->slider()->setValue(300);
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step == 300; }));
  // Every probe's series as they were live up to step 300, from the run store, and the
  // sparklines and health those make.
  for (const auto& [node, seriesMap] : live) {
    NodeHealthModel expected;
    std::vector<train::ProbeSample> upTo300;
    for (const auto& [key, samples] : seriesMap) {
      for (const train::ProbeSample& sample : samples) {
        if (sample.step <= 300) upTo300.push_back(sample);
      }
    }
    std::stable_sort(upTo300.begin(), upTo300.end(),
                     [](const auto& a, const auto& b) { return a.step < b.step; });
    expected.add(node, upTo300);
    const NodeHealthModel::SeriesMap* shown = health->series(node);
    ASSERT_NE(shown, nullptr) << node;
    ASSERT_EQ(shown->size(), seriesMap.size()) << node;
    for (const auto& [key, samples] : *expected.series(node)) {
      const std::vector<train::ProbeSample>& got = shown->at(key);
      ASSERT_EQ(got.size(), samples.size()) << node << " " << key.second;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].step, samples[i].step);
        EXPECT_EQ(got[i].stats.mean, samples[i].stats.mean);
        EXPECT_EQ(got[i].stats.std, samples[i].stats.std);
        EXPECT_EQ(got[i].stats.norm, samples[i].stats.norm);
        EXPECT_EQ(got[i].stats.zero_fraction, samples[i].stats.zero_fraction);
        EXPECT_EQ(got[i].stats.histogram.counts, samples[i].stats.histogram.counts);
      }
    }
    const std::vector<HealthPoint>& sparkline = health->sparkline(node);
    ASSERT_EQ(sparkline.size(), expected.sparkline(node).size()) << node;
    ASSERT_FALSE(sparkline.empty());
    EXPECT_LE(sparkline.back().step, 300);
    EXPECT_EQ(sparkline.back().step, expected.sparkline(node).back().step);
    EXPECT_EQ(health->health(node)->summary, expected.health(node)->summary);
  }
  // The probe panel draws the selected node's series from there.
  const graph::NodeId probed = live.begin()->first;
  window.document()->setSelection({probed});
  window.probePanel()->refresh();
  EXPECT_LE(window.probePanel()->lastStep(), 300);
  EXPECT_GT(window.probePanel()->sampleCount(), 0u);
  train::RunStore& store = *controller->runStore();
  const nn::StateDict at300 = store.load_weights(*store.snapshot_at(1, 300));
  ASSERT_TRUE(test::waitFor([&] { return documentShows(window.training(), at300); }));
  EXPECT_EQ(window.curves()->cursorStep(), 300);
  EXPECT_TRUE(panel->checkedRuns().count(1));  // its curves drawn from the store
  EXPECT_EQ(window.curves()->overlayCount(), 1);
  EXPECT_TRUE(panel->branchButton()->isEnabled());

  // Branch from here with nothing changed: it retraces run 1 to the same weights.
  panel->branchFromHere();
  ASSERT_TRUE(
      test::waitFor([&] { return controller->status().state == train::RunState::Stopped; }, 60000));
  ASSERT_TRUE(test::waitFor([&] {
    const auto run = store.run(2);
    return run && run->finished && run->steps == 760;
  }));
  EXPECT_EQ(store.run(2)->parent, 1);
  EXPECT_EQ(store.run(2)->parent_step, 300);
  // The branch's probe history goes on from step 300's: what the probe panel draws is run 1's
  // samples up to 300, then run 2's (once the last poll took them).
  const std::string module = controller->moduleNameOf(probed).toStdString();
  const NodeHealthModel::SeriesKey output{train::ProbeKind::Activation, "output"};
  // The store marks the run finished before the recorder's thread has written the samples of
  // the last poll, and the window may take them before the store has them all: compare what is
  // shown with what the store holds, both read again each time, until they agree.
  const auto recordedSteps = [&] {
    std::vector<int64_t> steps;
    for (const train::ProbeSample& p : store.probe_history(2)) {
      if (p.module == module && p.kind == output.first && p.tensor == output.second) {
        steps.push_back(p.step);
      }
    }
    return steps;
  };
  const auto shownSteps = [&] {
    std::vector<int64_t> steps;
    if (const NodeHealthModel::SeriesMap* series = health->series(probed)) {
      for (const train::ProbeSample& p : series->at(output)) steps.push_back(p.step);
    }
    return steps;
  };
  std::vector<int64_t> expectedSteps;
  EXPECT_TRUE(test::waitFor([&] {
    expectedSteps = recordedSteps();
    return !expectedSteps.empty() && expectedSteps.back() > 300 && shownSteps() == expectedSteps;
  })) << shownSteps().size()
      << " steps shown, " << expectedSteps.size() << " recorded";
  ASSERT_FALSE(expectedSteps.empty());
  EXPECT_EQ(expectedSteps.front(), 1);
  ASSERT_EQ(store.snapshot_at(1, 760)->step, 760);  // the last one is written before the end
  ASSERT_EQ(store.snapshot_at(2, 760)->step, 760);
  const nn::StateDict end1 = store.load_weights(*store.snapshot_at(1, 760));
  const nn::StateDict end2 = store.load_weights(*store.snapshot_at(2, 760));
  for (const auto& item : end1) {
    EXPECT_TRUE(sameValues(*end2.find(item.key()), item.value())) << item.key();
  }

  // Back to 300 of run 1, a lower learning rate, a branch: it differs and says why.
  panel->selectRun(1);
  panel->scrubTo(300);
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step == 300; }));
  ASSERT_TRUE(controller->setLearningRate(0.001));
  panel->branchFromHere();
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step >= 340; }, 60000));
  controller->pause();
  ASSERT_TRUE(test::waitFor([&] {
    const auto run = store.run(3);
    return run && run->parent == 1 && run->parent_step == 300;
  }));
  EXPECT_NE(store.run(3)->changes.find("lr 0.01 -> 0.001"), std::string::npos)
      << store.run(3)->changes;
  ASSERT_TRUE(test::waitFor([&] { return panel->tree()->topLevelItemCount() == 1; }));
  EXPECT_EQ(panel->tree()->topLevelItem(0)->childCount(), 2);  // runs 2 and 3 under run 1
  window.document()->undoStack()->setClean();
}

// Compare: each layer is tinted by how far its weights moved between two snapshots, with the
// figure computed from the files themselves.
TEST_F(RunsTest, CompareTintsEachLayerByTheChangeOfItsWeights) {
  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  TrainingController* controller = window.training();
  RunsPanel* panel = window.runsPanel();
  controller->start();
  ASSERT_TRUE(
      test::waitFor([&] { return controller->status().state == train::RunState::Stopped; }, 60000));
  ASSERT_TRUE(test::waitFor([&] {
    const auto run = controller->runStore()->run(1);
    return run && run->finished;
  }));
  panel->scrubTo(10);
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step == 10; }));
  // The snapshots to compare with, the run's last ones among them (the panel follows the store).
  ASSERT_TRUE(test::waitFor([&] { return panel->compareBox()->count() > 10; }));
  ASSERT_TRUE(panel->compareWith(1, 760));
  train::RunStore& store = *controller->runStore();
  const nn::StateDict a = store.load_weights(*store.snapshot_at(1, 10));
  const nn::StateDict b = store.load_weights(*store.snapshot_at(1, 760));
  GraphScene* scene = window.scene();
  for (const graph::Node& n : window.document()->project().graph.nodes) {
    const GraphScene::NodeBadge* badge = scene->nodeBadge(n.id);
    if (n.type != "Linear") {
      EXPECT_EQ(badge, nullptr) << n.name;  // no weights, no figure
      continue;
    }
    ASSERT_NE(badge, nullptr) << n.name;
    // ||b - a|| / ||a|| over the layer's weight and bias, from the snapshots' files.
    double change = 0, norm = 0;
    for (const char* entry : {".weight", ".bias"}) {
      const Tensor x = a.find(n.name + entry)->contiguous();
      const Tensor y = b.find(n.name + entry)->contiguous();
      for (int64_t i = 0; i < x.numel(); ++i) {
        const double u = x.data_ptr<float>()[i], v = y.data_ptr<float>()[i];
        change += (v - u) * (v - u);
        norm += u * u;
      }
    }
    const double percent = 100 * std::sqrt(change) / std::sqrt(norm);
    EXPECT_EQ(badge->text, QString("Δ %1%").arg(percent, 0, 'g', 3)) << n.name;
    EXPECT_EQ(badge->colour, RunsPanel::changeColour(percent / 100)) << n.name;
    EXPECT_TRUE(badge->tooltip.contains("run 1 step 10 → run 1 step 760"));
  }
  EXPECT_EQ(RunsPanel::changeColour(0.0005), RunsPanel::changeColour(0.001));  // pale floor
  EXPECT_NE(RunsPanel::changeColour(0.01), RunsPanel::changeColour(0.1));
  panel->clearComparison();
  EXPECT_FALSE(scene->hasNodeBadges());
  window.document()->undoStack()->setClean();
}

}  // namespace
}  // namespace nns::ui

namespace nns::ui {
namespace {

// A job's run may start after its folder is watched (its store made first): it is drawn as it
// appears, as the runs there when it was watched are; one the user unchecked stays unchecked.
TEST_F(RunsTest, AWatchedFoldersRunsAreDrawnAsTheyAppear) {
  const QString folder = dir_.filePath("job.runs");
  ASSERT_TRUE(QDir().mkpath(folder));
  train::RunStore job(folder.toStdString());  // the job's store, no run yet
  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  RunsPanel* panel = window.runsPanel();
  ASSERT_TRUE(panel->watchFolder(folder));
  train::RunInfo info;
  info.settings = "{}";
  const int64_t first = job.begin_run(info);
  ASSERT_TRUE(test::waitFor([&] { return panel->itemOf(first, folder) != nullptr; }));
  EXPECT_TRUE(panel->checkedKeys().count({folder, first}));
  panel->setRunChecked(first, false, folder);
  const int64_t second = job.begin_run(info);
  ASSERT_TRUE(test::waitFor([&] { return panel->itemOf(second, folder) != nullptr; }));
  EXPECT_TRUE(panel->checkedKeys().count({folder, second}));
  EXPECT_FALSE(panel->checkedKeys().count({folder, first}));
}

}  // namespace
}  // namespace nns::ui
