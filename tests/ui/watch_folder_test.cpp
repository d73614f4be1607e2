// SPDX-License-Identifier: GPL-3.0-or-later
// Watch Folder (issue 30) end to end with a real PyTorch job, and several folders watched at
// once. Not among the ThreadSanitizer stage's tests (tests/CMakeLists.txt,
// NNS_THREADED_UI_TESTS): the job is a process started while the window's threads run, and
// ThreadSanitizer does not support a fork in a multi-threaded process (its child dies); the
// window's threaded parts are the session's, which runs_test.cpp covers there.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QIcon>
#include <QImage>
#include <QPixmap>
#include <QProcess>
#include <QSlider>
#include <QTreeWidget>
#include <algorithm>
#include <set>

#include "engine/train/run_store.h"
#include "runs_fixture.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/probes/node_health.h"
#include "ui/training/runs_panel.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

// Watch Folder: a PyTorch job (the exported train.py, run by Debian's torch) records into its
// runs/ while the window watches that folder: the run appears with the PyTorch badge, grows
// while the job trains and shows as finished when it ends; its curves are drawn, the slider puts
// the session at its snapshot, Compare measures it against a run of the project's own, and
// Branch from here trains on from it as a run of the project that says where it came from.
TEST_F(RunsTest, AWatchedFolderShowsAPyTorchJobsRunLiveAndBranchesFromIt) {
  if (!test::pythonHasTorch()) {
    GTEST_SKIP() << "Debian's torch is not importable by /usr/bin/python3";
  }
  const QString exported = dir_.filePath("export");
  const Result exportRun = cli({"export", project_, "--format", "pytorch", "--out", exported});
  ASSERT_EQ(exportRun.code, 0) << exportRun.err.toStdString();
  const QString runs = exported + "/runs";

  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  TrainingController* controller = window.training();
  RunsPanel* panel = window.runsPanel();
  ASSERT_NE(controller->runStore(), nullptr) << controller->runStoreError().toStdString();
  // A run of the project's own, to compare with.
  controller->start();
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step >= 100; }, 60000));
  controller->pause();
  ASSERT_TRUE(test::waitFor([&] { return !controller->isRunning(); }));

  // A folder without a store is refused by name.
  EXPECT_FALSE(panel->watchFolder(dir_.path()));
  EXPECT_TRUE(controller->watchedStores().empty());

  QProcess job;
  job.setProcessChannelMode(QProcess::MergedChannels);
  job.start("/usr/bin/python3", {exported + "/train.py", "--steps", "3000", "--runs", runs});
  ASSERT_TRUE(job.waitForStarted(30000));
  ASSERT_TRUE(test::waitFor([&] { return QFile::exists(runs + "/runs.db"); }, 120000))
      << job.readAll().toStdString();
  ASSERT_TRUE(panel->watchFolder(runs));
  ASSERT_EQ(controller->watchedStores().size(), 1u);
  const auto watchedItem = [&]() { return panel->itemOf(1, runs); };
  // Selected, its probes' history is on the canvas in place of the paused session's.
  ASSERT_TRUE(test::waitFor([&] { return watchedItem() != nullptr; }));
  panel->selectRun(1, runs);
  NodeHealthModel* health = window.nodeHealth();
  const auto probeSamples = [&] {
    size_t n = 0;
    for (const graph::Node& node : window.document()->project().graph.nodes) {
      if (const NodeHealthModel::SeriesMap* series = health->series(node.id)) {
        for (const auto& [key, samples] : *series) n += samples.size();
      }
    }
    return n;
  };
  // It grows while the job writes: two different step counts seen, the run still recording,
  // and what its probes recorded so far on the canvas (read again as the store changes).
  std::set<QString> seen;
  size_t probesWhileRecording = 0;
  ASSERT_TRUE(test::waitFor(
      [&] {
        const QTreeWidgetItem* item = watchedItem();
        if (item && item->text(0).contains("PyTorch") && item->text(0).contains("recording") &&
            item->text(1).toLongLong() > 0) {
          seen.insert(item->text(1));
          probesWhileRecording = std::max(probesWhileRecording, probeSamples());
        }
        return seen.size() >= 2 || job.state() == QProcess::NotRunning;
      },
      120000));
  EXPECT_GE(seen.size(), 2u) << "the watched run did not grow while the job ran";
  EXPECT_GT(probesWhileRecording, 0u) << "the job's probes were not shown while it ran";
  // Its curves are drawn as they grow (the project's run is not checked).
  EXPECT_TRUE(panel->checkedKeys().count({runs, 1}));
  if (job.state() != QProcess::NotRunning) {
    ASSERT_TRUE(job.waitForFinished(180000));
  }
  ASSERT_EQ(job.exitCode(), 0) << job.readAll().toStdString();
  // Finished: the store's figures, no longer recording.
  ASSERT_TRUE(test::waitFor([&] {
    const QTreeWidgetItem* item = watchedItem();
    return item && !item->text(0).contains("recording") && item->text(1) == "3000";
  }));
  EXPECT_TRUE(watchedItem()->parent() != nullptr);  // under its folder's heading
  EXPECT_TRUE(watchedItem()->parent()->text(0).contains(runs));
  // Every probe sample the job recorded is on the canvas.
  ASSERT_TRUE(test::waitFor([&] {
    return probeSamples() == controller->watchedStores()[0]->probe_samples(1).size();
  })) << probeSamples()
      << " of " << controller->watchedStores()[0]->probe_samples(1).size();

  // The slider: the session at the PyTorch run's snapshot (before the project's 760 steps, so
  // that its branch has epochs left to train).
  panel->selectRun(1, runs);
  ASSERT_EQ(panel->selectedStore(), runs);
  ASSERT_TRUE(test::waitFor([&] { return panel->slider()->maximum() == 3000; }));
  panel->scrubTo(400);
  ASSERT_TRUE(test::waitFor([&] { return controller->shownSnapshot().has_value(); }));
  EXPECT_EQ(controller->shownSnapshot()->first, 1);
  EXPECT_LE(controller->shownSnapshot()->second, 400);
  EXPECT_EQ(controller->shownSource(), controller->watchedStores()[0].get());
  const int64_t shownStep = controller->shownSnapshot()->second;
  // Compare against the project's run 1 at its first snapshot.
  EXPECT_TRUE(panel->compareWith(1, 0));
  // Branch from here: a new run of the project, from the PyTorch run's step.
  panel->branchFromHere();
  ASSERT_TRUE(test::waitFor([&] { return controller->currentRun() == 2; }, 30000));
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step > shownStep + 20; }, 60000));
  controller->pause();
  ASSERT_TRUE(test::waitFor([&] { return !controller->isRunning(); }));
  const std::optional<train::RunInfo> branch = controller->runStore()->run(2);
  ASSERT_TRUE(branch.has_value());
  EXPECT_EQ(branch->parent, 0);
  EXPECT_EQ(branch->first_step, shownStep);
  EXPECT_NE(branch->changes.find("from PyTorch run 1 of"), std::string::npos) << branch->changes;

  // Stop Watching: its runs leave the tree.
  panel->selectRun(1, runs);
  panel->unwatchSelected();
  EXPECT_TRUE(controller->watchedStores().empty());
  EXPECT_EQ(panel->itemOf(1, runs), nullptr);
}

// Each watched store is known by its folder, not by its place among the watched ones: with two
// folders watched, unwatching the first leaves the second's runs checked (or not) as the user
// left them, under the same keys and in the same colours.
TEST_F(RunsTest, UnwatchingAWatchedFolderLeavesAnothersRunsAsTheyWere) {
  const QString first = dir_.filePath("first.runs");
  const QString second = dir_.filePath("second.runs");
  train::RunInfo info;
  info.settings = "{}";
  for (const QString& folder : {first, second}) {
    ASSERT_TRUE(QDir().mkpath(folder));
    train::RunStore job(folder.toStdString());
    job.begin_run(info);
    job.begin_run(info);
  }
  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  TrainingController* controller = window.training();
  RunsPanel* panel = window.runsPanel();
  ASSERT_TRUE(panel->watchFolder(first));
  ASSERT_TRUE(panel->watchFolder(second));
  ASSERT_NE(panel->itemOf(1, first), nullptr);
  ASSERT_NE(panel->itemOf(1, second), nullptr);
  ASSERT_NE(panel->itemOf(2, second), nullptr);
  // A watched folder's runs are drawn as they appear: the second's run 1 unchecked, its run 2
  // checked.
  panel->setRunChecked(1, false, second);
  panel->setRunChecked(2, true, second);
  ASSERT_TRUE(panel->checkedKeys().count({second, 2}));
  const QImage swatch = panel->itemOf(2, second)->icon(0).pixmap(12, 12).toImage();

  panel->selectRun(1, first);
  ASSERT_EQ(panel->selectedStore(), first);
  panel->unwatchSelected();
  ASSERT_EQ(controller->watchedStores().size(), 1u);
  EXPECT_EQ(panel->itemOf(1, first), nullptr);
  const QTreeWidgetItem* kept = panel->itemOf(2, second);
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->checkState(0), Qt::Checked);
  ASSERT_NE(panel->itemOf(1, second), nullptr);
  EXPECT_EQ(panel->itemOf(1, second)->checkState(0), Qt::Unchecked);
  EXPECT_EQ(panel->checkedKeys(), (std::set<RunsPanel::RunKey>{{second, 2}}));
  EXPECT_EQ(kept->icon(0).pixmap(12, 12).toImage(), swatch);
}

}  // namespace
}  // namespace nns::ui
