// SPDX-License-Identifier: GPL-3.0-or-later
// File > Import > PyTorch Code... driven as a user drives it: the dialog traces the code in a
// QProcess while the window keeps handling events, then the project opens with its groups and
// weights; a failure stays in the dialog with the tracer's message and writes nothing. Needs
// the system Python's torch (Debian's python3-torch); skipped without it.
#include <gtest/gtest.h>

#include <QAction>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QPointer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "engine/serialize/serialize.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/app/torch_import_dialog.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

const char* kPython = "/usr/bin/python3";

class TorchImportUiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::pythonHasTorch()) GTEST_SKIP() << kPython << " has no torch";
    window = std::make_unique<MainWindow>();
    window->resize(1200, 800);
    window->document()->setProject(spiralsExample(), QString());
    window->show();
    test::settle();
  }
  void TearDown() override {
    if (!window) return;
    window->document()->undoStack()->setClean();
    window->close();
    window.reset();
  }
  // Imports `source` through File > Import > PyTorch Code into `project` and waits until the
  // window has it open.
  void importCode(const QString& source, const QString& inputs, const QString& project) {
    TorchImportDialog* dialog = window->importPyTorchDialog();
    dialog->setSource(source);
    dialog->setInputs(inputs);
    dialog->setPython(kPython);
    dialog->setProjectPath(project);
    ASSERT_TRUE(dialog->start());
    ASSERT_TRUE(test::waitFor([&] { return window->document()->filePath() == project; }, 60000));
    window->resize(1600, 1000);
    test::settle();
  }
  std::unique_ptr<MainWindow> window;
};

TEST_F(TorchImportUiTest, TracesInTheBackgroundAndOpensTheProjectWithItsGroups) {
  auto* action = window->findChild<QAction*>("importPyTorchAction");
  ASSERT_TRUE(action);
  bool inImportMenu = false;
  for (QAction* menu : window->menuBar()->actions()) {
    if (!menu->menu() || menu->text() != "&File") continue;
    for (QAction* sub : menu->menu()->actions()) {
      if (sub->menu() && sub->text() == "&Import")
        inImportMenu = sub->menu()->actions().contains(action);
    }
  }
  EXPECT_TRUE(inImportMenu);

  QTemporaryDir tmp;
  const QString project = tmp.filePath("containers.nns");
  TorchImportDialog* dialog = window->importPyTorchDialog();
  ASSERT_TRUE(dialog);
  dialog->setSource(QString(NNS_SOURCE_DIR) + "/tests/torch/import/models.py:Containers");
  dialog->setInputs("3,8,8");
  dialog->setPython(kPython);
  dialog->setProjectPath(project);
  ASSERT_TRUE(dialog->start());
  // The window is not blocked: the dialog reports it is running while events are handled.
  EXPECT_TRUE(dialog->isRunning());
  auto* status = dialog->findChild<QLabel*>("torchImportStatus");
  ASSERT_TRUE(status);
  ASSERT_TRUE(test::waitFor(
      [&] {
        return QFileInfo(window->document()->filePath()).absoluteFilePath() ==
               QFileInfo(project).absoluteFilePath();
      },
      60000));
  EXPECT_TRUE(QFileInfo::exists(tmp.filePath("containers.safetensors")));

  // The module tree as groups, laid out.
  const graph::Project& p = window->document()->project();
  EXPECT_EQ(p.name, "Containers");
  const graph::Node* stem = p.graph.find_by_name("stem");
  const graph::Node* blocks = p.graph.find_by_name("blocks");
  const graph::Node* heads = p.graph.find_by_name("heads");
  ASSERT_TRUE(stem && blocks && heads);
  EXPECT_EQ(stem->type, "Sequential");
  EXPECT_EQ(blocks->type, "ModuleList");
  EXPECT_EQ(heads->type, "ModuleDict");
  EXPECT_FALSE(p.layout_direction.empty());
  EXPECT_TRUE(window->scene()->shownItem(blocks->id));
  // The imported weights are the model's.
  const nn::StateDict written =
      serialize::load_state_dict_file(tmp.filePath("containers.safetensors").toStdString());
  const std::optional<nn::StateDict> loaded = window->training()->stateDict();
  ASSERT_TRUE(loaded);
  // (safetensors keeps its keys in data order: compared by key.)
  ASSERT_EQ(loaded->size(), written.size());
  for (const std::string& key : written.keys()) {
    ASSERT_TRUE(loaded->contains(key)) << key;
    if (!written[key].is_floating_point()) continue;
    EXPECT_EQ((*loaded)[key].contiguous().to_vector<float>(),
              written[key].contiguous().to_vector<float>())
        << key;
  }
}

TEST_F(TorchImportUiTest, AFailureStaysInTheDialogAndWritesNothing) {
  QTemporaryDir tmp;
  const QString project = tmp.filePath("branchy.nns");
  TorchImportDialog* dialog = window->importPyTorchDialog();
  dialog->setSource(QString(NNS_SOURCE_DIR) + "/tests/torch/import/models.py:Unknown");
  dialog->setInputs("4");
  dialog->setPython(kPython);
  dialog->setProjectPath(project);
  ASSERT_TRUE(dialog->start());
  ASSERT_TRUE(test::waitFor([&] { return !dialog->isRunning(); }, 60000));
  EXPECT_TRUE(dialog->errorText().contains("torch.cumsum")) << dialog->errorText().toStdString();
  EXPECT_TRUE(dialog->errorText().contains("models.py")) << dialog->errorText().toStdString();
  EXPECT_TRUE(dialog->isVisible());
  EXPECT_FALSE(QFileInfo::exists(project));
  EXPECT_FALSE(QFileInfo::exists(tmp.filePath("branchy.safetensors")));
  dialog->close();
}

// The project is built from the trace on a worker thread; when that fails (here its weights
// cannot be written where a folder stands), the dialog shows why and stays open.
TEST_F(TorchImportUiTest, AFailedBuildFromTheTraceIsShownInTheDialog) {
  QTemporaryDir tmp;
  const QString project = tmp.filePath("taken.nns");
  ASSERT_TRUE(QDir(tmp.path()).mkdir("taken.safetensors"));
  TorchImportDialog* dialog = window->importPyTorchDialog();
  dialog->setSource(QString(NNS_SOURCE_DIR) + "/tests/torch/import/models.py:Containers");
  dialog->setInputs("3,8,8");
  dialog->setPython(kPython);
  dialog->setProjectPath(project);
  ASSERT_TRUE(dialog->start());
  ASSERT_TRUE(test::waitFor([&] { return !dialog->isRunning(); }, 60000));
  EXPECT_EQ(dialog->errorText(),
            tmp.filePath("taken.safetensors") + ": cannot replace the file: Is a directory");
  EXPECT_TRUE(dialog->isVisible());
  EXPECT_TRUE(dialog->findChild<QLabel*>("torchImportError")->isVisible());
  EXPECT_FALSE(QFileInfo::exists(project));
  EXPECT_TRUE(window->document()->filePath().isEmpty());
  dialog->close();
}

// Closed while its worker builds the project, the dialog goes (File > Import's dialog deletes
// itself on close) once the worker has finished writing, and the window opens nothing.
TEST_F(TorchImportUiTest, ADialogClosedWhileItBuildsWaitsForItsWorkerAndOpensNothing) {
  QTemporaryDir tmp;
  const QString project = tmp.filePath("containers.nns");
  QPointer<TorchImportDialog> dialog = window->importPyTorchDialog();
  dialog->setSource(QString(NNS_SOURCE_DIR) + "/tests/torch/import/models.py:Containers");
  dialog->setInputs("3,8,8");
  dialog->setPython(kPython);
  dialog->setProjectPath(project);
  ASSERT_TRUE(dialog->start());
  auto* tracer = dialog->findChild<QProcess*>();
  ASSERT_TRUE(tracer);
  bool closedWhileBuilding = false;
  // After the dialog's own handler, which has started the worker.
  QObject::connect(tracer, &QProcess::finished, dialog, [&] {
    closedWhileBuilding = dialog->isRunning();
    dialog->close();
  });
  ASSERT_TRUE(test::waitFor([&] { return dialog.isNull(); }, 60000));
  EXPECT_TRUE(closedWhileBuilding);
  EXPECT_TRUE(QFileInfo::exists(project));
  EXPECT_TRUE(QFileInfo::exists(tmp.filePath("containers.safetensors")));
  test::settle();
  EXPECT_TRUE(window->document()->filePath().isEmpty());
}

// A picture of an imported torchvision resnet18 in the window, for people to judge: written to
// $NNS_SCREENSHOT_DIR/torch_import_resnet18.png when that is set (skipped otherwise).
TEST_F(TorchImportUiTest, ScreenshotOfAnImportedResnet18) {
  const QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR");
  if (dir.isEmpty()) GTEST_SKIP() << "NNS_SCREENSHOT_DIR is not set";
  QTemporaryDir tmp;
  importCode("torchvision.models:resnet18()", "3,224,224", tmp.filePath("resnet18.nns"));
  EXPECT_TRUE(window->grab().save(dir + "/torch_import_resnet18.png"));
}

// An imported transformer (tests/torch/import/models.py:Stack) opens with its six equal
// encoder layers folded into one box x6 (the others hidden, the wires running from that box on);
// Fold / Show Repeats on it shows all six, and undo folds them again. With $NNS_SCREENSHOT_DIR set,
// both pictures are written there.
TEST_F(TorchImportUiTest, AnImportedTransformerOpensFoldedAndShowsEveryLayerOnRequest) {
  QTemporaryDir tmp;
  importCode(QString(NNS_SOURCE_DIR) + "/tests/torch/import/models.py:Stack", "12,6",
             tmp.filePath("stack.nns"));
  ProjectDocument* doc = window->document();
  const graph::Node* layers = nullptr;
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (n.type == "Sequential" && n.members.size() == 6) layers = &n;
  }
  ASSERT_TRUE(layers);
  const graph::NodeId layersId = layers->id;
  const std::vector<graph::NodeId> members = layers->members;
  EXPECT_TRUE(layers->folded);
  GraphScene* scene = window->scene();
  EXPECT_EQ(scene->repeatCount(members[0]), 6);
  EXPECT_TRUE(scene->nodeItem(members[0])->isVisible());
  for (size_t k = 1; k < members.size(); ++k) {
    // A hidden repeat has no item of its own, or a hidden one.
    const NodeItem* item = scene->nodeItem(members[k]);
    EXPECT_TRUE(!item || !item->isVisible()) << k;
    EXPECT_EQ(scene->shownItem(members[k]), scene->nodeItem(members[0]));
  }
  EXPECT_EQ(doc->layout().repeats.at(members[0]), 6);
  const QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR");
  if (!dir.isEmpty()) {
    EXPECT_TRUE(window->grab().save(dir + "/transformer_folded.png"));
  }

  auto* fold = window->findChild<QAction*>("foldAction");
  ASSERT_TRUE(fold);
  doc->setSelection({members[0]});
  ASSERT_TRUE(fold->isEnabled());
  fold->trigger();
  QTRY_VERIFY(!doc->project().graph.at(layersId).folded);
  EXPECT_EQ(scene->repeatCount(members[0]), 0);
  for (graph::NodeId m : members) {
    ASSERT_TRUE(scene->nodeItem(m));
    EXPECT_TRUE(scene->nodeItem(m)->isVisible());
  }
  EXPECT_TRUE(doc->layout().repeats.empty());
  test::settle();
  if (!dir.isEmpty()) {
    EXPECT_TRUE(window->grab().save(dir + "/transformer_expanded.png"));
  }

  doc->undoStack()->undo();
  EXPECT_TRUE(doc->project().graph.at(layersId).folded);
  EXPECT_FALSE(scene->nodeItem(members[5])->isVisible());
}

}  // namespace
}  // namespace nns::ui
