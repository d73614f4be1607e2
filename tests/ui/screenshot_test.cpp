// SPDX-License-Identifier: GPL-3.0-or-later
// Screenshots of the window with the example project, saved as PNGs (the test artifacts) in
// NNS_SCREENSHOT_DIR (the build's screenshots/ folder). ctest runs them under Xvfb when
// xvfb-run is installed, on the offscreen platform otherwise.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <QProcess>
#include <QTreeWidget>
#include <memory>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QImage>
#include <QPalette>
#include <QPixmap>
#include <QScrollArea>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <set>

#include "engine/plugin/loader.h"
#include "reverse_example.h"
#include "support/generated_projects.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/app/plugins_dialog.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/palette_widget.h"
#include "ui/panels/problems_widget.h"
#include "ui/probes/attention_view.h"
#include "ui/probes/node_health.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/runs_panel.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_dock.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

QString shotPath(const QString& name) {
  QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = QDir::tempPath() + "/nnstudio-screenshots";
  QDir().mkpath(dir);
  return QDir(dir).filePath(name);
}

// A blank or one-colour grab means nothing was drawn.
size_t colourCount(const QImage& image) {
  std::set<QRgb> colours;
  for (int y = 0; y < image.height(); y += 7) {
    for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
  }
  return colours.size();
}

void shoot(MainWindow& window, const QString& name, QSize size = {1600, 1000}) {
  window.resize(size);
  window.show();
  test::settle();
  window.view()->frameAll();
  test::settle();
  const QImage image = window.grab().toImage();
  const QString path = shotPath(name);
  ASSERT_TRUE(image.save(path)) << path.toStdString();
  EXPECT_EQ(image.width(), size.width());
  EXPECT_GT(colourCount(image), 50u) << path.toStdString();
}

TEST(Screenshot, ExampleProject) {
  MainWindow window;
  window.openExample();
  window.document()->setSelection({window.document()->project().graph.nodes.at(1).id});
  shoot(window, "main_window.png");
}

TEST(Screenshot, GroupsProblemsAndTheParameterTable) {
  MainWindow window;
  window.openExample();
  ProjectDocument* doc = window.document();
  const graph::Graph& g = doc->project().graph;
  // Group the middle layers, then wire in a layer of the wrong size, to show both.
  std::vector<graph::NodeId> middle;
  for (const graph::Node& n : g.nodes) {
    if (n.type == "Linear" || n.type == "ReLU") middle.push_back(n.id);
  }
  ASSERT_GE(middle.size(), 3u);
  doc->groupNodes({middle[1], middle[2]}, "Sequential");
  doc->autoLayout();
  const graph::NodeId wrong = doc->addNode("Linear", {0, 260});
  doc->connectPorts({g.nodes.front().id, "out"}, {wrong, "in"});
  doc->setSelection({middle[0]});
  window.inspector()->setCurrentIndex(2);
  shoot(window, "main_window_groups_problems.png");
  doc->undoStack()->setClean();
}

TEST(Screenshot, DynamicNetWithBlocksAndContainers) {
  const QString path = findExampleFile("dynamic_net.nns");
  if (path.isEmpty()) GTEST_SKIP() << "resources/examples/dynamic_net.nns is not there";
  MainWindow window;
  ASSERT_TRUE(window.openFile(path));
  window.inspector()->setCurrentIndex(1);
  shoot(window, "main_window_dynamic_net.png");
}

// The window mid-training with probes on the hidden layers and fc2's probe panel open.
void shootProbesMidTraining(QSize size, const char* file) {
  MainWindow window;
  window.openExample();
  ProjectDocument* doc = window.document();
  std::map<std::string, graph::NodeId> ids;
  for (const graph::Node& n : doc->project().graph.nodes) ids[n.name] = n.id;
  for (const char* name : {"fc1", "relu1", "fc2", "relu2"}) {
    // The example's probes, replaced by ones without an overhead budget: every 5th step
    // sampled, so the heatmap fills in a few seconds.
    doc->removeProbe(ids.at(name));
    ASSERT_TRUE(doc->addProbe(ids.at(name), graph::ProbeSpec{.every = 5, .max_overhead = 0}));
  }
  doc->setSelection({ids.at("fc2")});
  window.inspector()->setCurrentWidget(window.probePanel());
  window.resize(size);
  window.show();
  test::settle();
  window.training()->start();
  // Mid-training: enough sampled steps for the heatmap to show a trend, then paused so the
  // picture holds still.
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.probePanel()->sampleCount() >= 40; }, 30000));
  window.training()->pause();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !window.training()->isRunning(); }, 10000));
  test::settle();
  QTest::qWait(2 * ProbePanel::kFrameMs);
  shoot(window, file, size);
  doc->undoStack()->setClean();
}

TEST(Screenshot, ProbesMidTraining) {
  shootProbesMidTraining({1600, 1000}, "main_window_probes.png");
}

// The sibling at the shipped settings: the spirals example as it opens, its own probes (every
// 10 steps within a 5% budget), fc2's probe panel, after one Start has run all its epochs.
TEST(Screenshot, SpiralsAfterOneStart) {
  MainWindow window;
  window.openExample();
  ProjectDocument* doc = window.document();
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (n.name == "fc2") doc->setSelection({n.id});
  }
  window.inspector()->setCurrentWidget(window.probePanel());
  window.resize(1600, 1000);
  window.show();
  test::settle();
  window.training()->start();
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return window.training()->status().state == train::RunState::Stopped; }, 300000));
  test::settle();
  QTest::qWait(2 * ProbePanel::kFrameMs);
  shoot(window, "spirals_after_one_start.png");
  doc->undoStack()->setClean();
}

// The Training dock scrolled to its training settings (epochs, optimizer, the device and its
// CUDA graphs box, the probes' budget), as the spirals example opens them on a machine without
// a GPU: the box is there, greyed (the project keeps its setting for a GPU), and says why.
TEST(Screenshot, TrainingSettingsInTheDock) {
  MainWindow window;
  window.openExample();
  window.resize(1600, 1000);
  window.show();
  test::settle();
  QCheckBox* graphs = nullptr;
  for (QCheckBox* box : window.trainingDock()->findChildren<QCheckBox*>()) {
    if (box->text() == "CUDA graphs") graphs = box;
  }
  ASSERT_NE(graphs, nullptr);
  QScrollArea* scroll = nullptr;
  for (QWidget* w = graphs->parentWidget(); w != nullptr && scroll == nullptr;
       w = w->parentWidget()) {
    scroll = qobject_cast<QScrollArea*>(w);
  }
  ASSERT_NE(scroll, nullptr);
  scroll->ensureWidgetVisible(graphs, 0, 200);
  test::settle();
  EXPECT_TRUE(graphs->isVisible());
  EXPECT_FALSE(graphs->isEnabled());
  EXPECT_FALSE(graphs->toolTip().isEmpty());
  const QImage image = window.trainingDock()->grab().toImage();
  const QString path = shotPath("training_settings_in_the_dock.png");
  ASSERT_TRUE(image.save(path)) << path.toStdString();
  EXPECT_GT(colourCount(image), 20u) << path.toStdString();
}

TEST(Screenshot, ProbesMidTrainingFullHd) {
  shootProbesMidTraining({1920, 1080}, "main_window_probes_1920.png");
}

// A dark desktop: the window takes the system's palette (here Fusion's usual dark one), the
// canvas and the plots with it.
TEST(Screenshot, ProbesMidTrainingDark) {
  const QPalette light = QApplication::palette();
  QPalette dark;
  dark.setColor(QPalette::Window, QColor(45, 45, 48));
  dark.setColor(QPalette::WindowText, QColor(220, 220, 220));
  dark.setColor(QPalette::Base, QColor(30, 30, 32));
  dark.setColor(QPalette::AlternateBase, QColor(45, 45, 48));
  dark.setColor(QPalette::Text, QColor(220, 220, 220));
  dark.setColor(QPalette::Button, QColor(53, 53, 56));
  dark.setColor(QPalette::ButtonText, QColor(220, 220, 220));
  dark.setColor(QPalette::Highlight, QColor(42, 130, 218));
  dark.setColor(QPalette::HighlightedText, Qt::black);
  dark.setColor(QPalette::ToolTipBase, QColor(53, 53, 56));
  dark.setColor(QPalette::ToolTipText, QColor(220, 220, 220));
  dark.setColor(QPalette::PlaceholderText, QColor(140, 140, 140));
  dark.setColor(QPalette::Mid, QColor(90, 90, 95));
  dark.setColor(QPalette::Disabled, QPalette::Text, QColor(120, 120, 120));
  dark.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(120, 120, 120));
  QApplication::setPalette(dark);
  shootProbesMidTraining({1600, 1000}, "main_window_probes_dark.png");
  QApplication::setPalette(light);
}

TEST(Screenshot, NanHighlightsTheNode) {
  MainWindow window;
  window.openExample();
  ProjectDocument* doc = window.document();
  for (const graph::Node& n : doc->project().graph.nodes) {
    // The example ships with a probe on every layer.
    if (n.type == "Linear" || n.type == "ReLU") {
      ASSERT_NE(doc->probeOf(n.id), nullptr) << n.name;
    }
  }
  window.resize(1600, 1000);
  window.show();
  test::settle();
  ASSERT_TRUE(window.training()->setLearningRate(1e30));
  window.training()->start();
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.nodeHealth()->failed(); }, 30000));
  const graph::NodeId failed = window.nodeHealth()->failedNode();
  ASSERT_NE(failed, 0);
  doc->setSelection({failed});
  // The Problems panel lists the failure first, on the node it names.
  ASSERT_GT(window.problems()->topLevelItemCount(), 0);
  EXPECT_EQ(window.problems()->topLevelItem(0)->text(0),
            QString::fromStdString(doc->project().graph.at(failed).name));
  EXPECT_EQ(window.problems()->topLevelItem(0)->text(2), window.nodeHealth()->failureMessage());
  shoot(window, "main_window_nan.png");
  doc->undoStack()->setClean();
}

// The canvas at a glance: each example, a ModuleList of Sequential blocks with residual Adds
// (the transformer pattern), and a 300-node model as it opens (collapsed one level down) and
// fully expanded.
// The reverse transformer mid-training (issue 17): encoder.0's attention maps per head in the
// Probe tab, the test sequences with the model's answers in the Output panel.
TEST(Screenshot, AttentionMapsMidTraining) {
  MainWindow window;
  ASSERT_NE(test::openReverseWithProbedLayer(window), 0);
  ProjectDocument* doc = window.document();
  window.training()->start();
  // Mid-training: three epochs of ten done, the maps formed but the run not over.
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.training()->status().epoch >= 3; }, 60000));
  window.training()->pause();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !window.training()->isRunning(); }, 10000));
  ASSERT_TRUE(QTest::qWaitFor(
      [&] {
        const int64_t step = window.training()->status().step;
        return window.probePanel()->attentionView()->shownStep() == step &&
               window.boundary()->shownStep() == step;
      },
      10000));
  shoot(window, "main_window_attention.png");
  doc->undoStack()->setClean();
}

// The sine LSTM mid-training with a probe on the LSTM (issue 17): its forget gate's values over
// steps and how saturated they are, in the Probe tab; the forecast windows in the Output panel.
TEST(Screenshot, LstmGatesMidTraining) {
  MainWindow window;
  ASSERT_TRUE(window.openFile(QString(NNS_SOURCE_DIR) + "/resources/examples/sine_lstm.nns"));
  ProjectDocument* doc = window.document();
  const graph::Node* lstm = doc->project().graph.find_by_name("lstm");
  ASSERT_NE(lstm, nullptr);
  ASSERT_TRUE(doc->addProbe(lstm->id, graph::ProbeSpec{.every = 5, .max_overhead = 0}));
  doc->setSelection({lstm->id});
  window.inspector()->setCurrentWidget(window.probePanel());
  window.resize(1600, 1000);
  window.show();
  test::settle();
  window.training()->start();
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.training()->status().epoch >= 5; }, 60000));
  window.training()->pause();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !window.training()->isRunning(); }, 10000));
  QComboBox* series = window.probePanel()->seriesBox();
  const int forget = series->findText("activation: gates.forget");
  ASSERT_GE(forget, 0);
  series->setCurrentIndex(forget);
  QTest::qWait(2 * ProbePanel::kFrameMs);
  shoot(window, "main_window_lstm_gates.png");
  doc->undoStack()->setClean();
}

TEST(Screenshot, CanvasOfEachExample) {
  for (const char* name :
       {"spirals", "digits", "residual_mlp", "dynamic_net", "reverse_transformer", "sine_lstm"}) {
    const QString path = findExampleFile(QString(name) + ".nns");
    ASSERT_FALSE(path.isEmpty()) << name;
    MainWindow window;
    ASSERT_TRUE(window.openFile(path));
    shoot(window, QString("canvas_%1.png").arg(name));
  }
}

// A ResNet-like model torch.onnx.export wrote (tests/fixtures/onnx/make_onnx_fixtures.py),
// opened by File → Import → ONNX Model: PyTorch's module names, groups and weights.
TEST(Screenshot, ImportedOnnxModel) {
  QTemporaryDir tmp;
  MainWindow window;
  ASSERT_TRUE(window.importOnnxTo(QString(NNS_SOURCE_DIR) + "/tests/fixtures/onnx/residual.onnx",
                                  tmp.filePath("residual.nns")));
  shoot(window, "imported_onnx.png");
}

// The sequence layers (issue 17): an LSTM's three outputs, MultiheadAttention's query, key
// and value, a Transformer decoder layer's memory.
TEST(Screenshot, CanvasOfSequenceLayers) {
  MainWindow window;
  ASSERT_TRUE(window.openFile(QString(NNS_SOURCE_DIR) + "/tests/torch/sequence_models.nns"));
  shoot(window, "canvas_sequence_models.png");
  window.document()->undoStack()->setClean();
}

TEST(Screenshot, CanvasOfANestedModel) {
  MainWindow window;
  window.document()->setProject(nns::test::residual_tower(3, 3), QString());
  window.document()->prepareForCanvas();
  shoot(window, "canvas_nested.png");
  window.document()->setLayoutDirection("LR");
  shoot(window, "canvas_nested_left_to_right.png");
  window.document()->undoStack()->setClean();
}

TEST(Screenshot, CanvasOfA300NodeModelCollapsedAndExpanded) {
  MainWindow window;
  window.document()->setProject(nns::test::residual_tower(30, 8), QString());
  window.document()->prepareForCanvas();
  shoot(window, "canvas_300_collapsed.png");
  ProjectDocument* doc = window.document();
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (n.collapsed) {
      graph::Project p = doc->project();
      for (graph::Node& m : p.graph.nodes) m.collapsed = false;
      doc->setProject(p, QString());
      doc->autoLayout();
      break;
    }
  }
  shoot(window, "canvas_300_expanded.png");
  doc->undoStack()->setClean();
}

// Plugins: a project built of plugin layers, with the palette scrolled to the plugins'
// sections, and Help > Plugins with the test folder's broken files among the good ones.
TEST(Screenshot, PluginLayersAndThePluginList) {
  plugin::load_plugins({NNS_PLUGIN_BUILD_DIR, NNS_TEST_PLUGIN_DIR});
  MainWindow window;
  ASSERT_TRUE(window.openFile(QString(NNS_SOURCE_DIR) + "/tests/cli/plugins_net.nns"));
  window.document()->setSelection({window.document()->project().graph.find_by_name("rms")->id});
  for (QDockWidget* dock : window.findChildren<QDockWidget*>()) {
    if (dock->isAncestorOf(window.palette())) dock->raise();
  }
  window.palette()->tree()->scrollToItem(window.palette()->itemFor("RMSNorm"));
  shoot(window, "plugins_project.png");
  // A project whose plugin is not installed: its node and wires stay, marked with the problem.
  QTemporaryDir dir;
  QFile missing(dir.filePath("missing_plugin.nns"));
  ASSERT_TRUE(missing.open(QIODevice::WriteOnly));
  missing.write(R"({"format": "nnstudio-project", "version": 1, "name": "Fancy",
    "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "options": {"shape": [4]}},
                        {"id": 2, "type": "FancyNorm", "name": "norm", "options": {"groups": 2}},
                        {"id": 3, "type": "Linear", "name": "fc",
                         "options": {"in_features": 4, "out_features": 2}},
                        {"id": 4, "type": "Output", "name": "y"}],
              "edges": [{"from": {"node": 1, "port": "out"}, "to": {"node": 2, "port": "in"}},
                        {"from": {"node": 2, "port": "out"}, "to": {"node": 3, "port": "in"}},
                        {"from": {"node": 3, "port": "out"}, "to": {"node": 4, "port": "in"}}]},
    "plugin_types": {"FancyNorm": {"plugin": "fancy", "version": "2.1.0"}}})");
  missing.close();
  MainWindow other;
  ASSERT_TRUE(other.openFile(missing.fileName()));
  shoot(other, "plugin_missing.png");
  PluginsDialog dialog(plugin::plugin_report(), &window);
  dialog.show();
  test::settle();
  const QImage image = dialog.grab().toImage();
  ASSERT_TRUE(image.save(shotPath("plugins_dialog.png")));
  EXPECT_GT(colourCount(image), 20u);
}

}  // namespace
}  // namespace nns::ui

namespace nns::ui {
namespace {

// A copy of the spirals example opened with its own run store beside it (not the suite's
// NNSTUDIO_RUNS_DIR), the Runs tab raised, and run 1 trained to its end and recorded.
class ScreenshotRuns : public ::testing::Test {
 protected:
  void SetUp() override {
    runsDir_ = qgetenv("NNSTUDIO_RUNS_DIR");
    qunsetenv("NNSTUDIO_RUNS_DIR");
    const QString path = dir_.filePath("spirals.nns");
    ASSERT_TRUE(QFile::copy(NNS_SOURCE_DIR "/resources/examples/spirals.nns", path));
    QFile::setPermissions(path, QFile::ReadOwner | QFile::WriteOwner);
    ASSERT_TRUE(window_.openFile(path));
    window_.findChild<QDockWidget*>("runsDock")->raise();
    window_.resize(1600, 1000);
    window_.show();
    controller_ = window_.training();
    panel_ = window_.runsPanel();
    controller_->start();
    ASSERT_TRUE(QTest::qWaitFor(
        [&] { return controller_->status().state == train::RunState::Stopped; }, 60000));
    ASSERT_TRUE(QTest::qWaitFor([&] {
      const auto run = controller_->runStore()->run(1);
      return run && run->finished;
    }));
    panel_->refresh();
  }
  void TearDown() override {
    window_.document()->undoStack()->setClean();
    if (!runsDir_.isEmpty()) qputenv("NNSTUDIO_RUNS_DIR", runsDir_);
  }

  QByteArray runsDir_;
  QTemporaryDir dir_;
  MainWindow window_;
  TrainingController* controller_ = nullptr;
  RunsPanel* panel_ = nullptr;
};

// Two runs compared: run 1 of the spirals example, and a branch of it from step 300 with a
// lower learning rate, whose curves continue from there; the Runs panel shows the branch
// under its parent and the slider at the step it branched from.
TEST_F(ScreenshotRuns, TwoRunsOverlaid) {
  panel_->scrubTo(300);
  ASSERT_TRUE(QTest::qWaitFor([&] { return controller_->status().step == 300; }));
  ASSERT_TRUE(controller_->setLearningRate(0.001));
  panel_->branchFromHere();
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return controller_->status().state == train::RunState::Stopped; }, 60000));
  QTest::qWait(3 * TrainingController::kPollMs);
  panel_->refresh();
  panel_->selectRun(2);
  shoot(window_, "runs_two_overlaid.png");
}

// Compare: the spirals model at step 10 against step 760 of the same run, each layer tinted
// by how far its weights moved, the figure on the node.
TEST_F(ScreenshotRuns, CompareTwoSnapshots) {
  panel_->scrubTo(10);
  ASSERT_TRUE(QTest::qWaitFor([&] { return controller_->status().step == 10; }));
  ASSERT_TRUE(panel_->compareWith(1, 760));
  shoot(window_, "runs_compare.png");
}

// A PyTorch job's run watched beside the project's own: the exported train.py trained by two
// DDP processes (Debian's torch, gloo) records into its runs/, which the Runs panel watches;
// the run carries the PyTorch badge with its two processes, its curves drawn with run 1's.
TEST_F(ScreenshotRuns, APyTorchTwoProcessRunWatched) {
  if (!test::pythonHasTorch()) {
    GTEST_SKIP() << "Debian's torch is not importable by /usr/bin/python3";
  }
  const QString exported = dir_.filePath("export");
  QProcess cli;
  cli.start(NNS_CLI,
            {"export", window_.document()->filePath(), "--format", "pytorch", "--out", exported});
  ASSERT_TRUE(cli.waitForFinished(60000));
  ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
  // Rank 0 listens on a port the system hands out; rank 1 joins it.
  int port = 0;
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
    port = ntohs(address.sin_port);
    ::close(fd);
  }
  std::vector<std::unique_ptr<QProcess>> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    auto p = std::make_unique<QProcess>();
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("RANK", QString::number(rank));
    env.insert("LOCAL_RANK", QString::number(rank));
    env.insert("WORLD_SIZE", "2");
    env.insert("MASTER_ADDR", "127.0.0.1");
    env.insert("MASTER_PORT", QString::number(port));
    p->setProcessEnvironment(env);
    p->setProcessChannelMode(QProcess::MergedChannels);
    p->start("/usr/bin/python3", {exported + "/train.py", "--steps", "760"});
    ranks.push_back(std::move(p));
  }
  for (auto& p : ranks) {
    ASSERT_TRUE(p->waitForFinished(180000)) << p->readAll().toStdString();
    ASSERT_EQ(p->exitCode(), 0) << p->readAll().toStdString();
  }
  const QString watched = exported + "/runs";
  ASSERT_TRUE(panel_->watchFolder(watched));
  const QTreeWidgetItem* item = panel_->itemOf(1, watched);
  ASSERT_NE(item, nullptr);
  EXPECT_TRUE(item->text(0).contains(QString("PyTorch ×2"))) << item->text(0).toStdString();
  panel_->setRunChecked(1, true);
  panel_->selectRun(1, watched);
  // The Runs dock tall enough for the project's run 1, the folder's heading and its run.
  window_.resizeDocks({window_.findChild<QDockWidget*>("runsDock")}, {380}, Qt::Vertical);
  shoot(window_, "runs_pytorch_watched.png");
}

// One test sample traced through the trained spirals model: each layer's output as bars, the
// loss's gradient as the blue tint and figure, the point ringed in the Output panel.
TEST(Screenshot, TracedSample) {
  MainWindow window;
  window.openExample();
  window.resize(1600, 1000);
  window.show();
  TrainingController* controller = window.training();
  controller->start();
  ASSERT_TRUE(QTest::qWaitFor([&] { return controller->status().step >= 200; }, 60000));
  controller->pause();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !controller->isRunning(); }, 10000));
  ASSERT_TRUE(window.boundary()->traceTestSample(5));
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.scene()->hasNodeBadges(); }));
  shoot(window, "traced_sample.png");
  window.document()->undoStack()->setClean();
}

}  // namespace
}  // namespace nns::ui
