// SPDX-License-Identifier: GPL-3.0-or-later
// Probes in the window: adding one from the canvas's context menu (undo, redo, saved with the
// project), the probe panel fed by a real training session, removing a probe removing its
// hooks, health on the nodes, and a NaN run highlighting the node it started in. Waits are
// bounded polls of the event loop.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QContextMenuEvent>
#include <QMenu>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QWheelEvent>
#include <memory>

#include "engine/graph/layout.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/canvas/probe_item.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/probes/histogram_view.h"
#include "ui/probes/node_health.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using train::RunState;

using test::waitFor;

graph::NodeId nodeNamed(const ProjectDocument& doc, const std::string& name) {
  const graph::Node* n = doc.project().graph.find_by_name(name);
  return n ? n->id : 0;
}

// The example, shown at this size. It ships with probes on its layers; these tests place
// their own, from none.
void showExampleWithoutProbes(MainWindow& window, QSize size) {
  window.openExample();
  ProjectDocument* doc = window.document();
  const std::vector<graph::ProbeSpec> shipped = doc->project().probes;
  for (const graph::ProbeSpec& probe : shipped) doc->removeProbe(probe.node);
  doc->undoStack()->clear();
  ASSERT_TRUE(doc->project().probes.empty());
  window.resize(size);
  window.show();
  test::settle();
}

// Right-clicks the node's box on the canvas and triggers the menu entry with this text.
void contextMenuAction(MainWindow& window, graph::NodeId node, const QString& text) {
  NodeItem* item = window.scene()->nodeItem(node);
  ASSERT_NE(item, nullptr);
  const QPointF at = item->mapToScene(QPointF(graph::kNodeWidth / 2, NodeItem::kHeader / 2));
  const QPoint local = window.view()->mapFromScene(at);
  bool triggered = false;
  QTimer::singleShot(0, [&] {
    auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
    if (!menu) return;
    for (QAction* a : menu->actions()) {
      if (a->text() == text && a->isEnabled()) {
        menu->close();
        a->trigger();
        triggered = true;
        return;
      }
    }
    menu->close();
  });
  QContextMenuEvent event(QContextMenuEvent::Mouse, local,
                          window.view()->viewport()->mapToGlobal(local));
  QApplication::sendEvent(window.view()->viewport(), &event);
  test::settle();
  EXPECT_TRUE(triggered) << "no enabled menu entry " << text.toStdString();
}

TEST(ProbeUi, ContextMenuAddsAProbeThatUndoesAndIsSavedWithTheProject) {
  MainWindow window;
  showExampleWithoutProbes(window, {1200, 800});
  ProjectDocument* doc = window.document();
  const graph::NodeId fc2 = nodeNamed(*doc, "fc2");
  ASSERT_NE(fc2, 0);
  ASSERT_EQ(doc->probeOf(fc2), nullptr);

  contextMenuAction(window, fc2, QObject::tr("Add &Probe"));
  ASSERT_NE(doc->probeOf(fc2), nullptr);
  EXPECT_EQ(doc->project().probes.size(), 1u);
  ProbeItem* probe = window.scene()->probeItem(fc2);
  ASSERT_NE(probe, nullptr);
  // The tag sits on the node's top edge and follows it.
  NodeItem* item = window.scene()->nodeItem(fc2);
  EXPECT_NEAR(probe->scenePos().y(), item->scenePos().y() - ProbeItem::kHeight / 2, 1e-9);
  doc->moveNodes({{fc2, item->pos() + QPointF(40, 30)}});
  test::settle();
  EXPECT_NEAR(probe->scenePos().y(), item->scenePos().y() - ProbeItem::kHeight / 2, 1e-9);

  // Undo the move, then the probe; redo brings it back.
  doc->undoStack()->undo();
  doc->undoStack()->undo();
  test::settle();
  EXPECT_EQ(doc->probeOf(fc2), nullptr);
  EXPECT_EQ(window.scene()->probeItem(fc2), nullptr);
  doc->undoStack()->redo();
  test::settle();
  ASSERT_NE(doc->probeOf(fc2), nullptr);
  ASSERT_NE(window.scene()->probeItem(fc2), nullptr);

  // A node that makes no module offers no probe; a second probe on fc2 is refused.
  const graph::NodeId input = nodeNamed(*doc, "x");
  EXPECT_FALSE(doc->canProbe(input));
  EXPECT_FALSE(doc->addProbe(input));
  EXPECT_FALSE(doc->addProbe(fc2));
  EXPECT_EQ(doc->project().probes.size(), 1u);

  QTemporaryDir dir;
  const QString path = dir.filePath("probed.nns");
  ASSERT_TRUE(window.saveTo(path));
  MainWindow reopened;
  ASSERT_TRUE(reopened.openFile(path));
  test::settle();
  const graph::NodeId fc2Again = nodeNamed(*reopened.document(), "fc2");
  ASSERT_NE(reopened.document()->probeOf(fc2Again), nullptr);
  EXPECT_NE(reopened.scene()->probeItem(fc2Again), nullptr);

  // Selecting the tag and deleting removes the probe, not the node.
  window.scene()->clearSelection();
  window.scene()->probeItem(fc2)->setSelected(true);
  window.deleteSelection();
  test::settle();
  EXPECT_EQ(doc->probeOf(fc2), nullptr);
  EXPECT_NE(doc->project().graph.find(fc2), nullptr);
  doc->undoStack()->setClean();
}

TEST(ProbeUi, OneClickOnTheTagSelectsItsNodeAndOpensTheProbeTab) {
  MainWindow window;
  showExampleWithoutProbes(window, {1600, 1000});
  ProjectDocument* doc = window.document();
  const graph::NodeId fc2 = nodeNamed(*doc, "fc2");
  ASSERT_TRUE(doc->addProbe(fc2));
  test::settle();
  window.inspector()->setCurrentIndex(0);
  doc->setSelection({});
  ProbeItem* probe = window.scene()->probeItem(fc2);
  ASSERT_NE(probe, nullptr);
  window.view()->centerOn(probe);
  test::clickMouse(window.view(), probe->sceneBoundingRect().center());
  EXPECT_EQ(doc->selection(), std::vector<graph::NodeId>{fc2});
  EXPECT_EQ(window.inspector()->currentWidget(), window.probePanel());
  doc->undoStack()->setClean();
}

TEST(OutputPanel, AMessageFromTheStartupProjectDoesNotOutliveIt) {
  MainWindow window;
  window.show();
  test::settle();
  // The empty project at startup has no model: the panel says why.
  EXPECT_FALSE(window.boundary()->message().isEmpty());
  window.openExample();
  // The Output panel, shown, asks for the new project's session (made on demand).
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return window.boundary()->mode() == DecisionBoundaryWidget::Mode::Heatmap; }, 5000));
  EXPECT_TRUE(window.boundary()->message().isEmpty()) << window.boundary()->message().toStdString();
  window.document()->undoStack()->setClean();
}

class ProbeTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    document = std::make_unique<ProjectDocument>();
    graph::Project project = spiralsExample();
    // Without the example's own probes: each test places the ones it checks.
    project.probes.clear();
    document->setProject(std::move(project), QString());
    controller = std::make_unique<TrainingController>(document.get());
    health = std::make_unique<NodeHealthModel>();
    health->follow(controller.get());
    scene = std::make_unique<GraphScene>(document.get());
    scene->setHealthModel(health.get());
  }
  void TearDown() override {
    panel.reset();
    scene.reset();
    controller.reset();
    health.reset();
    document.reset();
  }
  void makePanel() {
    panel = std::make_unique<ProbePanel>(document.get(), controller.get(), health.get());
    panel->resize(420, 900);
    panel->show();
  }

  std::unique_ptr<ProjectDocument> document;
  std::unique_ptr<TrainingController> controller;
  std::unique_ptr<NodeHealthModel> health;
  std::unique_ptr<GraphScene> scene;
  std::unique_ptr<ProbePanel> panel;
};

TEST_F(ProbeTraining, PanelReceivesSamplesAndRemovingTheProbeRemovesItsHooks) {
  const graph::NodeId fc1 = nodeNamed(*document, "fc1");
  // Exactly every 2 steps (no overhead budget), so samples keep coming while it runs.
  ASSERT_TRUE(document->addProbe(fc1, graph::ProbeSpec{.every = 2, .max_overhead = 0}));
  // Long enough a run that it is still going after the first samples (the example's 40
  // epochs take well under a second).
  graph::TrainingSettings settings = document->project().training;
  settings.epochs = 100000;
  document->setTrainingSettings(settings, "epochs");
  document->setSelection({fc1});
  makePanel();
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  const train::ProbeId probe = controller->probeOf(fc1);
  ASSERT_NE(probe, 0);

  controller->start();
  ASSERT_TRUE(waitFor([&] { return panel->sampleCount() >= 3; }));
  EXPECT_GT(panel->histogram()->latestTotal(), 0);
  EXPECT_GT(panel->histogram()->columns(), 1);
  const int64_t seen = panel->lastStep();
  ASSERT_TRUE(waitFor([&] { return panel->lastStep() > seen; }));
  // fc1 is a Linear: the chooser lists its output and both parameters' gradients.
  EXPECT_GE(panel->seriesBox()->count(), 4);
  EXPECT_EQ(panel->parameterTable()->rowCount(), 2);
  // Health on the node: a verdict and a sparkline.
  ASSERT_TRUE(health->health(fc1).has_value());
  EXPECT_FALSE(health->sparkline(fc1).empty());
  // The health strip is drawn, in the room the layout keeps for it on a probed node.
  EXPECT_TRUE(scene->nodeItem(fc1)->showsHealth());
  EXPECT_EQ(scene->nodeItem(fc1)->boxSize().height(),
            graph::kNodeHeight + graph::kHealthStripHeight);

  controller->pause();
  // Paused, or Stopped when the configured epochs ran out first.
  ASSERT_TRUE(waitFor([&] { return !controller->isRunning(); }))
      << train::run_state_name(controller->status().state);
  // Zooming re-bins from the values the probe kept.
  HistogramView* h = panel->histogram();
  const double lo = h->valueLow(), hi = h->valueHigh();
  h->zoomTo(h->firstStep(), h->lastStep(), lo + (hi - lo) / 4, hi - (hi - lo) / 4);
  EXPECT_TRUE(h->isZoomed());
  EXPECT_GT(h->rows(), 0u);
  EXPECT_GT(h->latestTotal(), 0);
  h->resetZoom();
  EXPECT_FALSE(h->isZoomed());
  // The mouse wheel over the heatmap zooms the values the same way; the log toggle redraws.
  const QPointF centre = h->axisRect(0)->rect().center();
  QWheelEvent wheel(centre, h->mapToGlobal(centre), QPoint(), QPoint(0, 240), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(h, &wheel);
  EXPECT_TRUE(h->isZoomed());
  EXPECT_LT(h->valueHigh() - h->valueLow(), hi - lo);
  EXPECT_GT(h->rows(), 0u);
  panel->logScaleBox()->setChecked(true);
  EXPECT_TRUE(h->logScale());
  h->resetZoom();

  // Removing the probe takes its hooks off the model.
  train::TrainingSession* session = controller->session();
  ASSERT_NE(session, nullptr);
  nn::ModulePtr model = session->model();
  size_t hooks = 0;
  for (const auto& [name, m] : model->named_modules()) hooks += m->hook_count();
  EXPECT_GT(hooks, 0u);
  ASSERT_TRUE(document->removeProbe(fc1));
  test::settle();
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(10)));
  hooks = 0;
  for (const auto& [name, m] : model->named_modules()) hooks += m->hook_count();
  EXPECT_EQ(hooks, 0u);
  EXPECT_EQ(session->probes().hook_count(probe), 0u);
  EXPECT_FALSE(health->health(fc1).has_value());
}

TEST_F(ProbeTraining, ANanRunHighlightsTheNodeWhereItStarted) {
  const graph::NodeId fc2 = nodeNamed(*document, "fc2");
  ASSERT_TRUE(document->addProbe(fc2, graph::ProbeSpec{.every = 1}));
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  ASSERT_TRUE(controller->setLearningRate(1e30));
  QSignalSpy failures(health.get(), &NodeHealthModel::failureChanged);
  controller->start();
  ASSERT_TRUE(waitFor([&] { return health->failed(); }));
  EXPECT_EQ(controller->status().state, RunState::Failed);
  const std::string module = controller->status().failed_module;
  ASSERT_FALSE(module.empty()) << controller->status().error;
  const graph::NodeId expected = nodeNamed(*document, module.substr(0, module.find('.')));
  ASSERT_NE(expected, 0);
  EXPECT_EQ(health->failedNode(), expected);
  EXPECT_FALSE(health->failureMessage().isEmpty());
  EXPECT_GE(failures.count(), 1);

  // Reset clears the highlight.
  controller->reset();
  ASSERT_TRUE(waitFor([&] { return !health->failed(); }));
  EXPECT_EQ(health->failedNode(), 0);
}

TEST(NodeHealth, ThresholdsJudgeTheLatestPoint) {
  HealthPoint p{.step = 10, .dead = 0.1, .saturation = 0.2, .gradNorm = 0.5};
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::Ok);
  p.dead = 0.6;  // a healthy ReLU zeroes about half its outputs
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::Ok);
  p.dead = 0.95;
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::DeadUnits);
  p.dead = 0.1;
  p.saturation = 0.9;
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::Saturated);
  p.gradNorm = 1e-8;
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::Vanishing);
  p.gradNorm = 1e4;
  EXPECT_EQ(judgeHealth(p).health, NodeHealth::Exploding);
  p.gradNorm = 1;
  p.nonfinite = true;
  const HealthReport r = judgeHealth(p);
  EXPECT_EQ(r.health, NodeHealth::Exploding);
  EXPECT_TRUE(r.summary.contains("step 10")) << r.summary.toStdString();
}

// A probe placed on a box that stands for a folded run (issue 29) goes on every repeat, and the
// panel shows the chosen series of each repeat side by side; removing it removes them all.
TEST_F(ProbeTraining, AProbeOnAFoldedRunShowsEveryRepeatSideBySide) {
  graph::Project project = document->project();
  graph::Graph g;
  const graph::NodeId x = g.add_node("Input", "x", {{"shape", {2}}});
  const graph::NodeId stem =
      g.add_node("Linear", "stem", {{"in_features", 2}, {"out_features", 8}});
  const graph::NodeId body = g.add_node("Sequential", "body");
  for (int b = 0; b < 4; ++b) {
    const graph::NodeId block = g.add_node("Sequential", "block" + std::to_string(b));
    g.at(block).members = {
        g.add_node("Linear", "fc" + std::to_string(b), {{"in_features", 8}, {"out_features", 8}}),
        g.add_node("Tanh", "act" + std::to_string(b))};
    g.at(body).members.push_back(block);
  }
  const graph::NodeId head =
      g.add_node("Linear", "head", {{"in_features", 8}, {"out_features", 3}});
  const graph::NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {stem, "in"});
  g.connect({stem, "out"}, {body, "in"});
  g.connect({body, "out"}, {head, "in"});
  g.connect({head, "out"}, {y, "in"});
  project.graph = std::move(g);
  project.training.epochs = 100000;
  document->setProject(std::move(project), QString());
  document->setFolded(body, true);
  const std::vector<graph::NodeId> blocks = document->project().graph.at(body).members;
  ASSERT_EQ(scene->repeatCount(blocks[0]), 4);
  EXPECT_EQ(document->repeatRun(blocks[0]), blocks);

  ASSERT_TRUE(document->addProbe(blocks[0], graph::ProbeSpec{.every = 2, .max_overhead = 0}));
  for (graph::NodeId b : blocks) EXPECT_TRUE(document->probeOf(b));
  document->setSelection({blocks[0]});
  makePanel();
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  controller->start();
  // Every repeat sampled: each column holds a step and a mean.
  QTableWidget* table = panel->repeatTable();
  ASSERT_TRUE(waitFor([&] {
    panel->refresh();
    if (table->columnCount() != 4 || table->rowCount() < 2) return false;
    for (int c = 0; c < 4; ++c) {
      if (!table->item(0, c) || table->item(0, c)->text().toLongLong() <= 0) return false;
    }
    return true;
  }));
  controller->pause();
  ASSERT_TRUE(waitFor([&] { return !controller->isRunning(); }));
  panel->refresh();
  EXPECT_TRUE(table->isVisibleTo(panel.get()));
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(table->horizontalHeaderItem(c)->text(),
              QString::fromStdString(document->project().graph.at(blocks[c]).name));
    // The column is that repeat's own latest sample.
    const auto& samples = health->series(blocks[c])->at({train::ProbeKind::Activation, "output"});
    EXPECT_EQ(table->item(0, c)->text(), QString::number(samples.back().step));
  }
  // Different layers, different outputs.
  EXPECT_NE(table->item(1, 0)->text(), table->item(1, 3)->text());
  if (const QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR"); !dir.isEmpty()) {
    EXPECT_TRUE(panel->grab().save(dir + "/probe_folded_run.png"));
  }

  ASSERT_TRUE(document->removeProbe(blocks[0]));
  for (graph::NodeId b : blocks) EXPECT_FALSE(document->probeOf(b));
  document->undoStack()->setClean();
}

}  // namespace
}  // namespace nns::ui
