// SPDX-License-Identifier: GPL-3.0-or-later
// The model diff and the profile as a user meets them: File > Compare With... opens a window
// whose canvas draws both models with what differs in its colours and whose Differences table
// lists it (a click shows the node); View > Profile measures the run while it is shown, lists
// the modules by where the step's time goes and tints the canvas's nodes, and measures nothing
// once it is closed.
#include <gtest/gtest.h>

#include <QAction>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <memory>
#include <set>

#include "engine/graph/diff.h"
#include "engine/graph/project.h"
#include "engine/train/run_store.h"
#include "engine/train/session.h"
#include "ui/app/compare_dialog.h"
#include "ui/app/compare_window.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/project_document.h"
#include "ui/panels/profile_panel.h"
#include "ui/training/training_controller.h"
#include "ui/widgets/canvas_theme.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

const QString kSource = QStringLiteral(NNS_SOURCE_DIR);

void saveShot(QWidget* widget, const QString& name) {
  if (const QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR"); !dir.isEmpty()) {
    EXPECT_TRUE(widget->grab().save(dir + "/" + name));
  }
}

// View > Profile opened, the run started, and paused once the profile holds `steps` sampled
// steps (and the panel has read them).
bool profileSteps(MainWindow& window, int64_t steps) {
  if (!window.profilePanel()->isActive()) {
    window.findChild<QDockWidget*>("profileDock")->toggleViewAction()->trigger();
  }
  if (!test::waitFor([&] { return window.profilePanel()->isActive(); })) return false;
  TrainingController* controller = window.training();
  controller->start();
  const bool sampled = test::waitFor(
      [&] {
        const auto p = controller->profile();
        return p && p->steps >= steps;
      },
      60000);
  controller->pause();
  if (!sampled || !test::waitFor([&] { return !controller->isRunning(); })) return false;
  window.profilePanel()->refresh();
  return true;
}

TEST(CompareUi, TwoProjectsShowTheirDifferencesOnTheCanvasAndInTheTable) {
  MainWindow window;
  window.resize(1400, 900);
  ASSERT_TRUE(window.openFile(kSource + "/tests/cli/diff_a.nns"));
  window.show();
  test::settle();

  CompareSource source;
  source.path = kSource + "/tests/cli/diff_b.nns";
  source.batch = 16;
  CompareWindow* compare = window.compareWith(source);
  ASSERT_NE(compare, nullptr);
  compare->resize(1400, 900);
  const std::vector<const graph::NodeDiff*> differences = compare->diff().differences();
  // The fixtures differ by a renamed layer, a widened Linear (and the Linear after it, which
  // takes the wider input), a removed block and an added activation.
  std::multiset<graph::DiffKind> kinds;
  for (const graph::NodeDiff* d : differences) kinds.insert(d->kind);
  EXPECT_EQ(kinds.count(graph::DiffKind::Renamed), 1u);
  EXPECT_EQ(kinds.count(graph::DiffKind::Added), 1u);
  EXPECT_GE(kinds.count(graph::DiffKind::Removed), 1u);
  EXPECT_EQ(kinds.count(graph::DiffKind::Changed), 2u);

  // The table lists exactly the differences, in the diff's order, before any numbers come.
  QTableWidget* table = compare->table();
  ASSERT_GE(table->rowCount(), static_cast<int>(differences.size()));
  const CanvasTheme& theme = compare->scene()->theme();
  for (size_t i = 0; i < differences.size(); ++i) {
    const graph::NodeDiff& d = *differences[i];
    const int row = static_cast<int>(i);
    EXPECT_EQ(table->item(row, CompareWindow::Change)->text().toStdString(),
              graph::diff_kind_name(d.kind));
    // Its node is on the canvas with a badge saying what it is.
    const graph::NodeId node = compare->rowNode(row);
    ASSERT_NE(node, 0) << d.path_a << d.path_b;
    const GraphScene::NodeBadge* badge = compare->scene()->nodeBadge(node);
    ASSERT_NE(badge, nullptr) << d.path_a << d.path_b;
    if (d.kind == graph::DiffKind::Renamed) {
      EXPECT_EQ(badge->text.toStdString(), "→ " + d.path_b);  // B's name on A's node
    } else {
      EXPECT_EQ(badge->text.toStdString(), graph::diff_kind_name(d.kind));
    }
    EXPECT_NE(badge->colour, theme.nodeBody);
  }
  // The four kinds are four colours.
  std::set<QRgb> colours;
  for (size_t i = 0; i < differences.size(); ++i) {
    colours.insert(
        compare->scene()->nodeBadge(compare->rowNode(static_cast<int>(i)))->colour.rgb());
  }
  EXPECT_EQ(colours.size(), 4u);

  // A click on a row selects its node and brings it into view.
  const int removedRow = [&] {
    for (size_t i = 0; i < differences.size(); ++i) {
      if (differences[i]->kind == graph::DiffKind::Removed) return static_cast<int>(i);
    }
    return -1;
  }();
  ASSERT_GE(removedRow, 0);
  compare->view()->scale(3, 3);  // zoomed in, so the node is not in view by chance
  emit table->cellClicked(removedRow, CompareWindow::What);
  test::settle();
  const std::vector<graph::NodeId> selected = compare->scene()->selectedNodes();
  ASSERT_EQ(selected.size(), 1u);
  EXPECT_EQ(selected[0], compare->rowNode(removedRow));

  // The numbers come from the worker: both models ran on the batch.
  ASSERT_TRUE(test::waitFor([&] { return compare->numbersReady(); }, 120000));
  EXPECT_EQ(compare->numbers()->error, "");
  EXPECT_EQ(compare->numbers()->batch, 16);
  EXPECT_FALSE(compare->numbers()->modules.empty());
  EXPECT_TRUE(compare->summary()->text().contains("loss"));
  saveShot(compare, "compare_window.png");
}

// Fine-tuning: the first two layers frozen, the run trained on; the model now against the run's
// first snapshot has the same structure, and the layers that moved lead the table, the frozen
// ones not in it (their weights and outputs are equal on both sides).
TEST(CompareUi, AFineTunedModelAgainstItsStartListsTheLayersThatMovedFirst) {
  QTemporaryDir tmp;
  const QString path = tmp.filePath("spirals.nns");
  graph::Project project = spiralsExample();
  project.frozen_parameters = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"};
  project.training.epochs = 2;
  graph::save_project(project, path.toStdString());
  MainWindow window;
  ASSERT_TRUE(window.openFile(path));
  window.show();
  TrainingController* controller = window.training();
  controller->start();
  ASSERT_TRUE(test::waitFor([&] { return controller->status().state == train::RunState::Stopped; },
                            120000));
  ASSERT_TRUE(test::waitFor([&] {
    const auto run = controller->runStore()->run(1);
    return run && run->finished;
  }));
  const std::vector<train::SnapshotInfo> snapshots = controller->runStore()->snapshots(1);
  ASSERT_GE(snapshots.size(), 2u);

  CompareSource source;
  source.kind = CompareSource::Kind::Snapshot;
  source.run = 1;
  source.step = snapshots.front().step;
  CompareWindow* compare = window.compareWith(source);
  ASSERT_NE(compare, nullptr);
  EXPECT_TRUE(compare->diff().differences().empty());
  ASSERT_TRUE(test::waitFor([&] { return compare->numbersReady(); }, 120000));
  ASSERT_EQ(compare->numbers()->error, "");
  QTableWidget* table = compare->table();
  ASSERT_GE(table->rowCount(), 1);
  // fc3 trained: it leads, its weights moved; fc1 and fc2 did not and are not listed.
  EXPECT_EQ(table->item(0, CompareWindow::Change)->text(), "weights");
  EXPECT_TRUE(table->item(0, CompareWindow::ModuleA)->text().startsWith("fc3"))
      << table->item(0, CompareWindow::ModuleA)->text().toStdString();
  for (int row = 0; row < table->rowCount(); ++row) {
    const QString module = table->item(row, CompareWindow::ModuleA)->text();
    EXPECT_FALSE(module.startsWith("fc1") || module.startsWith("fc2") || module.startsWith("relu"))
        << module.toStdString();
  }
  const graph::Node* fc3 = window.document()->project().graph.find_by_name("fc3");
  ASSERT_NE(compare->scene()->nodeBadge(fc3->id), nullptr);
  EXPECT_TRUE(compare->scene()->nodeBadge(fc3->id)->text.startsWith("Δw"));
  saveShot(compare, "compare_fine_tuned.png");
  window.document()->undoStack()->setClean();
}

// The dialog: a file (a project's weights beside it filled in, as an import writes them) or,
// where the project has recorded runs, a snapshot; Compare waits for a file that is there.
TEST(CompareUi, TheDialogOffersAFileWithItsWeightsOrASnapshot) {
  QTemporaryDir tmp;
  const QString project = tmp.filePath("imported.nns");
  ASSERT_TRUE(QFile::copy(kSource + "/tests/cli/diff_b.nns", project));
  QFile weights(tmp.filePath("imported.safetensors"));
  ASSERT_TRUE(weights.open(QIODevice::WriteOnly));
  weights.close();
  CompareDialog dialog(nullptr, 48);
  auto* compare = dialog.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
  EXPECT_FALSE(compare->isEnabled());  // nothing chosen yet
  auto* snapshot = dialog.findChild<QRadioButton*>("compareSnapshot");
  ASSERT_NE(snapshot, nullptr);
  EXPECT_FALSE(snapshot->isEnabled());  // no runs to offer
  auto* path = dialog.findChild<QLineEdit*>("comparePath");
  ASSERT_NE(path, nullptr);
  path->setText(project);
  EXPECT_TRUE(compare->isEnabled());
  const CompareSource source = dialog.source();
  EXPECT_EQ(source.kind, CompareSource::Kind::File);
  EXPECT_EQ(source.path, project);
  EXPECT_EQ(source.weights, tmp.filePath("imported.safetensors"));
  EXPECT_EQ(source.batch, 48);
  dialog.show();
  test::settle();
  saveShot(&dialog, "compare_dialog.png");
}

TEST(CompareUi, AProjectAgainstItselfHasNoDifferences) {
  MainWindow window;
  ASSERT_TRUE(window.openFile(kSource + "/tests/cli/diff_a.nns"));
  window.show();
  test::settle();
  CompareSource source;
  source.path = kSource + "/tests/cli/diff_a.nns";
  CompareWindow* compare = window.compareWith(source);
  ASSERT_NE(compare, nullptr);
  EXPECT_TRUE(compare->diff().differences().empty());
  EXPECT_TRUE(compare->summary()->text().contains("No differences"));
  ASSERT_TRUE(test::waitFor([&] { return compare->numbersReady(); }, 120000));
  // A's weights are its initial ones (nothing trained) and so are B's: nothing diverges, so
  // nothing is listed and nothing is tinted.
  EXPECT_EQ(compare->table()->rowCount(), 0);
  EXPECT_FALSE(compare->scene()->hasNodeBadges());
}

TEST(CompareUi, AFileThatDoesNotLoadIsRefusedWithItsReason) {
  MainWindow window;
  window.document()->setProject(spiralsExample(), QString());
  QTemporaryDir tmp;
  CompareSource source;
  source.path = tmp.filePath("missing.nns");
  // The message box is modal: answered as soon as it shows.
  QTimer closer;
  QObject::connect(&closer, &QTimer::timeout, [] {
    for (QWidget* w : QApplication::topLevelWidgets()) {
      if (auto* box = qobject_cast<QMessageBox*>(w)) box->accept();
    }
  });
  closer.start(20);
  EXPECT_EQ(window.compareWith(source), nullptr);
  EXPECT_TRUE(window.log()->toPlainText().contains("Could not compare with"));
}

TEST(ProfileUi, ShownItProfilesTheRunAndTintsTheNodesClosedItMeasuresNothing) {
  MainWindow window;
  window.resize(1600, 1000);
  window.document()->setProject(spiralsExample(), QString());
  window.show();
  test::settle();
  auto* dock = window.findChild<QDockWidget*>("profileDock");
  ASSERT_NE(dock, nullptr);
  // Closed by default: a run costs nothing for it.
  EXPECT_FALSE(dock->isVisible());
  EXPECT_FALSE(window.training()->profiling());

  dock->toggleViewAction()->trigger();  // View > Profile
  ASSERT_TRUE(test::waitFor([&] { return window.profilePanel()->isActive(); }));
  EXPECT_TRUE(window.training()->profiling());
  TrainingController* controller = window.training();
  controller->start();
  // Every module of the example (fc1, relu1, fc2, relu2, fc3) and the rows outside them.
  QTableWidget* table = window.profilePanel()->table();
  ASSERT_TRUE(test::waitFor(
      [&] {
        const auto p = controller->profile();
        return p && p->steps >= 3 && table->rowCount() >= 10;
      },
      60000));
  controller->pause();
  ASSERT_TRUE(test::waitFor([&] { return !controller->isRunning(); }));
  window.profilePanel()->refresh();
  EXPECT_EQ(table->rowCount(), 10);
  // The table sorts by self time: its rows fall down the Self column.
  for (int row = 1; row < table->rowCount(); ++row) {
    EXPECT_GE(table->item(row - 1, ProfilePanel::Self)->data(Qt::UserRole).toDouble(),
              table->item(row, ProfilePanel::Self)->data(Qt::UserRole).toDouble());
  }
  EXPECT_TRUE(window.profilePanel()->summary()->text().contains("sampled steps"));
  // Every node with a module carries its share of the step.
  for (const graph::Node& n : window.document()->project().graph.nodes) {
    if (n.type == "Input" || n.type == "Output") continue;
    const GraphScene::NodeBadge* badge = window.scene()->nodeBadge(n.id);
    ASSERT_NE(badge, nullptr) << n.name;
    EXPECT_TRUE(badge->text.contains("%")) << n.name;
  }
  window.view()->frameAll();
  test::settle();
  saveShot(&window, "profile_spirals.png");

  // Closed: off, and the tint is gone.
  dock->toggleViewAction()->trigger();
  ASSERT_TRUE(test::waitFor([&] { return !window.profilePanel()->isActive(); }));
  EXPECT_FALSE(controller->profiling());
  EXPECT_FALSE(controller->profile().has_value());
  EXPECT_FALSE(window.scene()->hasNodeBadges());
}

// A collapsed group is one box: its figure is its module's time, which holds its members'.
TEST(ProfileUi, ACollapsedGroupShowsItsMembersSum) {
  MainWindow window;
  window.resize(1600, 1000);
  ASSERT_TRUE(window.openFile(kSource + "/tests/cli/diff_a.nns"));
  const graph::Node* block = window.document()->project().graph.find_by_name("block");
  ASSERT_NE(block, nullptr);
  const graph::NodeId group = block->id;
  window.document()->setCollapsed(group, true);
  window.show();
  test::settle();
  ASSERT_TRUE(profileSteps(window, 5));
  TrainingController* controller = window.training();
  const train::StepProfile p = *controller->profile();
  const auto total = [&](const std::string& module) {
    for (const train::ModuleProfile& m : p.modules) {
      if (m.module == module) return m.forward_seconds + m.backward_seconds;
    }
    ADD_FAILURE() << module << " not profiled";
    return 0.0;
  };
  // The group's time holds its members' and little more (the Sequential's own call).
  const double members = total("block.0") + total("block.1");
  EXPECT_GE(total("block"), members);
  const GraphScene::NodeBadge* badge = window.scene()->nodeBadge(group);
  ASSERT_NE(badge, nullptr);
  const QString expected = QString::number(100 * total("block") / p.step_seconds, 'f', 1) + "%";
  EXPECT_EQ(badge->text, expected);
}

TEST(ProfileUi, TheWideLayerIsOnTopAndTheHottestNode) {
  MainWindow window;
  window.resize(1600, 1000);
  ASSERT_TRUE(window.openFile(kSource + "/tests/cli/profile_wide.nns"));
  window.show();
  test::settle();
  ASSERT_TRUE(profileSteps(window, 5));
  QTableWidget* table = window.profilePanel()->table();
  // The wide Linear (16 -> 2048, or 2048 -> 16) is the top row; its node the deepest red.
  const QString top = table->item(0, ProfilePanel::Module)->text();

  const graph::Node* node = window.document()->project().graph.find_by_name(top.toStdString());
  ASSERT_NE(node, nullptr) << top.toStdString();
  EXPECT_EQ(node->type, "Linear");
  const graph::Json& o = node->options;
  EXPECT_TRUE(o.value("in_features", 0) == 2048 || o.value("out_features", 0) == 2048)
      << top.toStdString();
  // The widest node is tinted hottest of all.
  double hottestRed = -1;
  graph::NodeId hottest = 0;
  for (const graph::Node& n : window.document()->project().graph.nodes) {
    const GraphScene::NodeBadge* badge = window.scene()->nodeBadge(n.id);
    if (badge && badge->colour == heatColour(1.0)) {
      hottest = n.id;
      hottestRed = 1;
    }
  }
  EXPECT_EQ(hottestRed, 1);
  const graph::Node& h = window.document()->project().graph.at(hottest);
  EXPECT_TRUE(h.options.value("in_features", 0) == 2048 ||
              h.options.value("out_features", 0) == 2048)
      << h.name;
  window.view()->frameAll();
  test::settle();
  saveShot(&window, "profile_wide.png");
}

}  // namespace
}  // namespace nns::ui
