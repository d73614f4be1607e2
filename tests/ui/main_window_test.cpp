// SPDX-License-Identifier: GPL-3.0-or-later
// The window driven as a user drives it: palette drops, port-to-port drags, shortcuts, the
// inspector's editors, files and recovery.
#include <gtest/gtest.h>

#include <QAbstractItemModel>
#include <QAction>
#include <QDir>
#include <QDockWidget>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <memory>

#include "engine/graph/layout.h"
#include "engine/graph/node_types.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/factories.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/options_editor.h"
#include "ui/panels/palette_widget.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using graph::NodeId;
using test::settle;

class MainWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    window->resize(1400, 900);
    window->document()->setProject(spiralsExample(), QString());
    window->show();
    QApplication::setActiveWindow(window.get());
    settle();
    window->view()->frameAll();
    settle();
  }
  void TearDown() override {
    // Nothing to ask about on close: the tests' changes are thrown away.
    window->document()->undoStack()->setClean();
    window->close();
    window.reset();
  }

  ProjectDocument* doc() const { return window->document(); }
  NodeId id(const std::string& name) const {
    const graph::Node* n = doc()->project().graph.find_by_name(name);
    EXPECT_TRUE(n) << name;
    return n ? n->id : 0;
  }
  QPointF port(NodeId node, const std::string& name, bool output) const {
    return window->scene()->shownItem(node)->portScenePos(name, output);
  }
  // Drops a palette entry on the canvas at a scene position, as a drag from the palette ends.
  void dropFromPalette(const QString& type, QPointF scenePos) {
    QTreeWidgetItem* item = window->palette()->itemFor(type);
    ASSERT_TRUE(item) << type.toStdString();
    QTreeWidget* tree = window->palette()->tree();
    const QModelIndex index = tree->indexFromItem(item);
    std::unique_ptr<QMimeData> mime(tree->model()->mimeData({index}));
    ASSERT_TRUE(mime);
    QWidget* viewport = window->view()->viewport();
    const QPoint at = window->view()->mapFromScene(scenePos);
    QDragEnterEvent enter(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &enter);
    ASSERT_TRUE(enter.isAccepted());
    QDragMoveEvent move(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &move);
    QDropEvent drop(QPointF(at), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &drop);
    settle();
  }
  void key(int k, Qt::KeyboardModifiers mods = Qt::NoModifier) {
    QTest::keyClick(window->view(), static_cast<Qt::Key>(k), mods);
    settle();
  }

  std::unique_ptr<MainWindow> window;
};

TEST_F(MainWindowTest, PaletteListsEveryNodeTypeWithItsReprAsTooltip) {
  for (const graph::NodeType& t : graph::node_types()) {
    EXPECT_TRUE(window->palette()->itemFor(QString::fromStdString(t.name))) << t.name;
  }
  const QString tip = window->palette()->itemFor("Linear")->toolTip(0);
  EXPECT_TRUE(tip.contains("Linear(in_features=")) << tip.toStdString();
  window->palette()->searchBox()->setText("relu");
  EXPECT_FALSE(window->palette()->itemFor("ReLU")->isHidden());
  EXPECT_TRUE(window->palette()->itemFor("Linear")->isHidden());
}

TEST_F(MainWindowTest, DroppingFromThePaletteAddsANodeWhereItFalls) {
  const size_t before = doc()->project().graph.nodes.size();
  const QPointF at = window->view()->mapToScene(window->view()->viewport()->rect().center());
  dropFromPalette("Dropout", at);
  ASSERT_EQ(doc()->project().graph.nodes.size(), before + 1);
  const graph::Node& added = doc()->project().graph.nodes.back();
  EXPECT_EQ(added.type, "Dropout");
  EXPECT_NEAR(added.x + graph::kNodeWidth / 2, at.x(), 2);
  EXPECT_EQ(doc()->selection(), std::vector<NodeId>{added.id});
  ASSERT_TRUE(window->scene()->nodeItem(added.id));
  EXPECT_TRUE(window->scene()->nodeItem(added.id)->isSelected());
}

TEST_F(MainWindowTest, DraggingFromPortToPortConnectsAndACycleIsRefused) {
  const QPointF at = port(id("fc3"), "out", true) + QPointF(0, 250);
  dropFromPalette("Linear", at);
  const NodeId extra = doc()->selection().front();
  const auto edgesBefore = doc()->project().graph.edges.size();

  test::dragMouse(window->view(), port(id("relu1"), "out", true), port(extra, "in", false));
  ASSERT_EQ(doc()->project().graph.edges.size(), edgesBefore + 1);
  EXPECT_EQ(doc()->project().graph.edge_into({extra, "in"})->from.node, id("relu1"));
  // The new Linear takes 1 feature and gets 64: its input is marked with the reason.
  const QStringList problems = doc()->problemsOf(extra, "in");
  ASSERT_FALSE(problems.isEmpty());
  EXPECT_TRUE(problems.front().contains("[N, 64]")) << problems.front().toStdString();

  // fc3 -> fc1 closes a loop: nothing changes.
  test::dragMouse(window->view(), port(id("fc3"), "out", true), port(id("fc1"), "in", false));
  EXPECT_EQ(doc()->project().graph.edge_into({id("fc1"), "in"})->from.node, id("x"));

  // Pulling a wire off an input and dropping it on empty canvas disconnects it.
  test::dragMouse(window->view(), port(extra, "in", false),
                  port(extra, "in", false) + QPointF(-150, 80));
  EXPECT_EQ(doc()->project().graph.edge_into({extra, "in"}), nullptr);
}

TEST_F(MainWindowTest, MovingANodeIsOneUndoStep) {
  NodeItem* item = window->scene()->nodeItem(id("fc2"));
  const QPointF start = item->pos();
  const QPointF grip = item->mapToScene(QPointF(60, 12));
  test::dragMouse(window->view(), grip, grip + QPointF(40, 120));
  const graph::Node& n = doc()->project().graph.at(id("fc2"));
  // The mouse moves by whole pixels of the zoomed view: the scene distance it really covered.
  QGraphicsView* view = window->view();
  const double moved = view->mapToScene(view->mapFromScene(grip + QPointF(40, 120))).y() -
                       view->mapToScene(view->mapFromScene(grip)).y();
  EXPECT_NEAR(n.y, start.y() + moved, 0.01);
  doc()->undoStack()->undo();
  settle();
  EXPECT_EQ(window->scene()->nodeItem(id("fc2"))->pos(), start);
}

TEST_F(MainWindowTest, GroupCollapseAndUndoEverythingBackToTheStart) {
  const graph::Project start = doc()->project();
  // Select fc2 and act2 with the mouse: click, then Ctrl+click.
  test::clickMouse(window->view(),
                   window->scene()->nodeItem(id("fc2"))->mapToScene(QPointF(60, 12)));
  test::clickMouse(window->view(),
                   window->scene()->nodeItem(id("relu2"))->mapToScene(QPointF(60, 12)),
                   Qt::ControlModifier);
  ASSERT_EQ(doc()->selection().size(), 2u);
  key(Qt::Key_G, Qt::ControlModifier);
  ASSERT_EQ(doc()->selection().size(), 1u);
  const NodeId group = doc()->selection().front();
  EXPECT_EQ(doc()->project().graph.at(group).type, "Sequential");
  EXPECT_TRUE(window->scene()->nodeItem(group)->isFrame());
  EXPECT_TRUE(doc()->analysis().ok());

  // Double-click the frame's title bar: it collapses to one node.
  NodeItem* frame = window->scene()->nodeItem(group);
  const QPointF title = frame->mapToScene(QPointF(40, NodeItem::kHeader / 2));
  test::sendMouse(window->view(), QEvent::MouseButtonPress, title, Qt::LeftButton, Qt::LeftButton);
  test::sendMouse(window->view(), QEvent::MouseButtonRelease, title, Qt::LeftButton, Qt::NoButton);
  test::sendMouse(window->view(), QEvent::MouseButtonDblClick, title, Qt::LeftButton,
                  Qt::LeftButton);
  test::sendMouse(window->view(), QEvent::MouseButtonRelease, title, Qt::LeftButton, Qt::NoButton);
  settle();
  EXPECT_TRUE(doc()->project().graph.at(group).collapsed);
  EXPECT_FALSE(window->scene()->nodeItem(id("fc2"))->isVisible());
  EXPECT_FALSE(window->scene()->nodeItem(group)->isFrame());

  while (doc()->undoStack()->canUndo()) key(Qt::Key_Z, Qt::ControlModifier);
  EXPECT_EQ(doc()->project(), start);
  EXPECT_TRUE(window->scene()->nodeItem(id("fc2"))->isVisible());
  EXPECT_EQ(window->scene()->nodeItem(group), nullptr);
  while (doc()->undoStack()->canRedo()) key(Qt::Key_Y, Qt::ControlModifier);
  EXPECT_TRUE(doc()->project().graph.at(group).collapsed);
}

TEST_F(MainWindowTest, DeleteKeyRemovesTheSelection) {
  doc()->setSelection({id("relu1")});
  key(Qt::Key_Delete);
  EXPECT_EQ(doc()->project().graph.find_by_name("relu1"), nullptr);
  key(Qt::Key_Z, Qt::ControlModifier);
  EXPECT_NE(doc()->project().graph.find_by_name("relu1"), nullptr);
}

TEST_F(MainWindowTest, EditingAnOptionInTheInspectorIsUndoable) {
  doc()->setSelection({id("fc3")});
  settle();
  auto* box =
      qobject_cast<QSpinBox*>(window->inspector()->optionsEditor()->editorFor("out_features"));
  ASSERT_TRUE(box);
  EXPECT_EQ(box->value(), 3);
  box->setValue(5);
  settle();
  EXPECT_EQ(doc()->project().graph.at(id("fc3")).options["out_features"], 5);
  EXPECT_EQ(graph::shape_str(doc()->analysis().output_shapes.at(id("fc3")).at("out")), "[N, 5]");
  EXPECT_TRUE(window->inspector()->reprView()->toPlainText().contains("out_features=5"));
  doc()->undoStack()->undo();
  settle();
  EXPECT_EQ(doc()->project().graph.at(id("fc3")).options["out_features"], 3);
  box = qobject_cast<QSpinBox*>(window->inspector()->optionsEditor()->editorFor("out_features"));
  ASSERT_TRUE(box);
  EXPECT_EQ(box->value(), 3);
}

TEST_F(MainWindowTest, ParameterTableFreezesAndShowsPyTorchNames) {
  // The Params tab open, as when the user ticks a box in it (a hidden tab is filled when shown).
  QTableWidget* table = window->inspector()->parameterTable();
  window->inspector()->setCurrentWidget(table->parentWidget());
  window->inspector()->refresh();
  QStringList names;
  for (int r = 0; r < table->rowCount(); ++r) names << table->item(r, 0)->text();
  EXPECT_EQ(names, QStringList({"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight",
                                "fc3.bias"}));
  EXPECT_EQ(table->item(0, 1)->text(), "[64, 2]");
  EXPECT_EQ(table->item(0, 4)->text(), "128");

  doc()->setSelection({id("fc2")});
  window->inspector()->refresh();
  ASSERT_EQ(table->rowCount(), 2);
  ASSERT_EQ(table->item(0, 0)->text(), "fc2.weight");
  table->item(0, 3)->setCheckState(Qt::Unchecked);
  settle();
  EXPECT_FALSE(doc()->model()->get_parameter("fc2.weight").requires_grad());
  EXPECT_EQ(table->item(0, 3)->checkState(), Qt::Unchecked);
  doc()->undoStack()->undo();
  settle();
  EXPECT_TRUE(doc()->model()->get_parameter("fc2.weight").requires_grad());
  EXPECT_EQ(table->item(0, 3)->checkState(), Qt::Checked);

  // Selected while the Node tab shows: the table is filled for fc1 when its tab is shown.
  window->inspector()->setCurrentIndex(0);
  doc()->setSelection({id("fc1")});
  settle();
  window->inspector()->setCurrentWidget(table->parentWidget());
  ASSERT_EQ(table->rowCount(), 2);
  EXPECT_EQ(table->item(0, 0)->text(), "fc1.weight");
}

TEST_F(MainWindowTest, ModuleTreeListsNamedModulesAndSelectsTheirNodes) {
  window->inspector()->refresh();
  QTreeWidget* tree = window->inspector()->moduleTree();
  ASSERT_EQ(tree->topLevelItemCount(), 1);
  QTreeWidgetItem* root = tree->topLevelItem(0);
  EXPECT_EQ(root->text(1), "SpiralNet");
  ASSERT_EQ(root->childCount(), 5);
  EXPECT_EQ(root->child(0)->text(0), "fc1");
  EXPECT_EQ(root->child(0)->text(1), "Linear");
  EXPECT_EQ(root->child(0)->text(2), "train");
  emit tree->itemClicked(root->child(0), 0);
  EXPECT_EQ(doc()->selection(), std::vector<NodeId>{id("fc1")});
}

TEST_F(MainWindowTest, SaveAndReopen) {
  doc()->setNodeOptions(id("fc2"), {{"in_features", 64}, {"out_features", 32}, {"bias", false}});
  QTemporaryDir dir;
  const QString path = dir.filePath("spirals.nns");
  ASSERT_TRUE(window->saveTo(path));
  EXPECT_FALSE(window->isWindowModified());
  EXPECT_TRUE(window->windowTitle().startsWith("spirals.nns"));
  MainWindow other;
  ASSERT_TRUE(other.openFile(path));
  EXPECT_EQ(other.document()->project(), doc()->project());
}

TEST_F(MainWindowTest, LoadingAStateDictMarksTheNodeWithAMissingKey) {
  // The document's model is structure only (its weights never initialized, whatever memory
  // held): the file's values are made here, so that they are finite.
  nn::StateDict sd = doc()->model()->state_dict();
  nn::StateDict partial;
  for (const auto& item : sd) {
    if (item.key() != "fc2.bias") partial.insert(item.key(), full_like(item.value(), 0.5));
  }
  QTemporaryDir dir;
  const QString path = dir.filePath("partial.safetensors");
  serialize::save_state_dict_file(partial, path.toStdString());

  // Strict: refused, but the report is on the nodes.
  doc()->loadStateDict(path, /*strict=*/true);
  ASSERT_TRUE(doc()->loadMarks().count(id("fc2")));
  EXPECT_EQ(doc()->loadMarks().at(id("fc2")).status, NodeLoadMark::Status::Missing);
  EXPECT_EQ(doc()->loadMarks().at(id("fc2")).details, QStringList{"missing: fc2.bias"});
  EXPECT_EQ(doc()->loadMarks().at(id("fc1")).status, NodeLoadMark::Status::Matched);

  // Strict and refused: the session's weights are as they were.
  const nn::StateDict before = *window->training()->stateDict();
  EXPECT_EQ((*window->training()->stateDict())["fc2.weight"].sum().item(),
            before["fc2.weight"].sum().item());

  // Non-strict: loaded into the session (which owns the weights); fc2.bias keeps its value.
  doc()->loadStateDict(path, /*strict=*/false);
  const nn::StateDict after = *window->training()->stateDict();
  EXPECT_EQ(after["fc1.weight"].sum().item(), partial.find("fc1.weight")->detach().sum().item());
  EXPECT_EQ(after["fc2.bias"].sum().item(), before["fc2.bias"].sum().item());
  EXPECT_EQ(doc()->loadMarks().at(id("fc2")).status, NodeLoadMark::Status::Missing);
}

// The timer's autosave writes a copy of the project on a worker thread (a 10,000-node project
// takes a tenth of a second to write): the file is the project as it was, and a save waits
// for it, so that the recovery file it removes is not written again after.
TEST_F(MainWindowTest, TheTimersAutosaveWritesOnAWorkerAndASaveWaitsForIt) {
  MainWindow w;
  w.document()->setProject(spiralsExample(), QString());
  const QString file = w.recoveryFile();
  w.document()->addNode("Tanh", {0, 400});
  const graph::Project unsaved = w.document()->project();
  w.setAutosaveInterval(1);
  ASSERT_TRUE(test::waitFor([&] { return QFile::exists(file); }));
  ASSERT_TRUE(test::waitFor([&] {
    try {
      return graph::load_project(file.toStdString()) == unsaved;
    } catch (const std::exception&) {
      return false;  // never half-written (an atomic write), but not there yet
    }
  }));
  QTemporaryDir dir;
  w.document()->addNode("Sigmoid", {0, 500});  // the next tick writes again
  ASSERT_TRUE(w.saveTo(dir.filePath("saved.nns")));
  EXPECT_FALSE(QFile::exists(file));
  // Nothing is unsaved now: the ticks after the save write no recovery file.
  QTimer tick;
  bool ticked = false;
  QObject::connect(&tick, &QTimer::timeout, [&] { ticked = true; });
  tick.start(2500);
  ASSERT_TRUE(test::waitFor([&] { return ticked; }));
  EXPECT_FALSE(QFile::exists(file));
}

TEST_F(MainWindowTest, AutosaveIsOfferedBackAfterACrash) {
  // The window that will "crash": gone without a close, as after a kill.
  auto crashed = std::make_unique<MainWindow>();
  crashed->document()->setProject(spiralsExample(), QString());
  const QString file = crashed->recoveryFile();
  crashed->autosave();  // nothing unsaved yet
  EXPECT_FALSE(QFile::exists(file));
  crashed->document()->addNode("Tanh", {0, 400});
  crashed->autosave();
  ASSERT_TRUE(QFile::exists(file));
  const graph::Project unsaved = crashed->document()->project();

  // While it lives its work is its own: another window does not take it.
  {
    MainWindow other;
    EXPECT_FALSE(other.offerRecovery(/*ask=*/false));
    EXPECT_TRUE(QFile::exists(file));
  }
  crashed.reset();  // its lock goes with it, its recovery file stays

  MainWindow next;
  ASSERT_TRUE(next.offerRecovery(/*ask=*/false));
  EXPECT_EQ(next.document()->project(), unsaved);
  EXPECT_TRUE(next.document()->isModified());
  // The work is now the new window's own recovery file, and the orphan is gone.
  EXPECT_FALSE(QFile::exists(file));
  EXPECT_TRUE(QFile::exists(next.recoveryFile()));
  next.document()->undoStack()->setClean();
  next.close();  // a clean close removes the recovery file
  EXPECT_FALSE(QFile::exists(next.recoveryFile()));
  EXPECT_FALSE(window->offerRecovery(/*ask=*/false));
}

// The examples are built into the window and open as they were saved: loadable, and laid out
// for the canvas's boxes (a file that needs re-laying out on open would come back changed when
// saved and reopened).
TEST(MainWindow, EveryBuiltInExampleOpensLaidOut) {
  const QStringList files = QDir(":/examples").entryList({"*.nns"});
  EXPECT_GE(files.size(), 4) << files.join(", ").toStdString();
  for (const QString& file : files) {
    ProjectDocument doc;
    ASSERT_NO_THROW(doc.setProject(exampleProject(file), QString())) << file.toStdString();
    GraphScene scene(&doc);
    EXPECT_FALSE(scene.hasOverlaps()) << file.toStdString();
  }
  EXPECT_THROW(exampleProject("missing.nns"), ValueError);
}

TEST(MainWindow, ResetLayoutBringsBackEveryDockInItsPlace) {
  MainWindow window;
  window.resize(1600, 1000);
  window.show();
  test::settle();
  auto* inspector = window.findChild<QDockWidget*>("inspectorDock");
  auto* curves = window.findChild<QDockWidget*>("curvesDock");
  ASSERT_NE(inspector, nullptr);
  ASSERT_NE(curves, nullptr);
  inspector->setFloating(true);
  curves->hide();
  window.removeDockWidget(window.findChild<QDockWidget*>("boundaryDock"));
  QAction* reset = nullptr;
  for (QAction* a : window.findChildren<QAction*>()) {
    if (a->text() == QObject::tr("&Reset Layout")) reset = a;
  }
  ASSERT_NE(reset, nullptr);
  reset->trigger();
  test::settle();
  EXPECT_FALSE(inspector->isFloating());
  EXPECT_EQ(window.dockWidgetArea(inspector), Qt::RightDockWidgetArea);
  EXPECT_TRUE(curves->isVisible());
  auto* boundary = window.findChild<QDockWidget*>("boundaryDock");
  EXPECT_TRUE(boundary->isVisible());
  EXPECT_EQ(window.dockWidgetArea(boundary), Qt::BottomDockWidgetArea);
  // The canvas keeps most of the width.
  EXPECT_GT(window.view()->width(), window.width() / 2);
}

// File > Export PyTorch Code: model.py and the weights as the window has them now, in a new
// folder; the weights load back into the model they came from.
TEST_F(MainWindowTest, ExportPyTorchCodeWritesTheModelAndItsWeights) {
  auto* action = window->findChild<QAction*>("exportPyTorchAction");
  ASSERT_TRUE(action);
  EXPECT_TRUE(action->isEnabled());
  EXPECT_EQ(action->text(), "&PyTorch Code…");
  QTemporaryDir tmp;
  const QString dir = tmp.filePath("spirals_pytorch");
  ASSERT_TRUE(window->exportPyTorchTo(dir, false));
  QFile model(dir + "/model.py");
  ASSERT_TRUE(model.open(QIODevice::ReadOnly));
  EXPECT_TRUE(model.readAll().contains("class SpiralNet(nn.Module):"));
  EXPECT_TRUE(QFileInfo::exists(dir + "/train.py"));
  EXPECT_TRUE(QFileInfo::exists(dir + "/data.pt"));
  const nn::StateDict weights =
      serialize::load_state_dict_file((dir + "/weights.pt").toStdString());
  const nn::StateDict now = *window->training()->stateDict();
  ASSERT_EQ(weights.keys(), now.keys());
  for (const std::string& key : now.keys())
    EXPECT_EQ(weights[key].contiguous().to_vector<float>(),
              now[key].contiguous().to_vector<float>())
        << key;
  // Replacing: the same folder again.
  EXPECT_TRUE(window->exportPyTorchTo(dir, true));
  EXPECT_TRUE(QFileInfo::exists(dir + "/README.md"));
}

TEST_F(MainWindowTest, ExportOnnxThenImportOnnxOpensTheModelWithItsWeights) {
  // Both in the File menu: Export ▸ ONNX Model… and Import ▸ ONNX Model….
  auto* exportAction = window->findChild<QAction*>("exportOnnxAction");
  auto* importAction = window->findChild<QAction*>("importOnnxAction");
  ASSERT_TRUE(exportAction && importAction);
  bool inImportMenu = false;
  for (QAction* menu : window->menuBar()->actions()) {
    if (!menu->menu() || menu->text() != "&File") continue;
    for (QAction* sub : menu->menu()->actions()) {
      if (sub->menu() && sub->text() == "&Import")
        inImportMenu = sub->menu()->actions().contains(importAction);
    }
  }
  EXPECT_TRUE(inImportMenu);

  QTemporaryDir tmp;
  const QString model = tmp.filePath("spirals.onnx");
  ASSERT_TRUE(window->exportOnnxTo(model, 17));
  const nn::StateDict before = *window->training()->stateDict();

  // The import writes the project and its weights, opens the project and loads the weights.
  const QString project = tmp.filePath("imported.nns");
  ASSERT_TRUE(window->importOnnxTo(model, project));
  EXPECT_EQ(QFileInfo(doc()->filePath()).absoluteFilePath(), QFileInfo(project).absoluteFilePath());
  EXPECT_TRUE(QFileInfo::exists(tmp.filePath("imported.safetensors")));
  EXPECT_TRUE(doc()->project().graph.find_by_name("fc1"));
  const nn::StateDict after = *window->training()->stateDict();
  ASSERT_EQ(after.keys(), before.keys());
  for (const std::string& key : before.keys())
    EXPECT_EQ(after[key].contiguous().to_vector<float>(),
              before[key].contiguous().to_vector<float>())
        << key;
  EXPECT_TRUE(window->log()->toPlainText().contains("Imported"));

  // A file that is not ONNX: the error is shown (the message box, closed here) and logged, and
  // nothing is written.
  QFile junk(tmp.filePath("junk.onnx"));
  ASSERT_TRUE(junk.open(QIODevice::WriteOnly));
  junk.write("not a model");
  junk.close();
  bool shown = false;
  QTimer::singleShot(0, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      shown = true;
      box->close();
    }
  });
  EXPECT_FALSE(window->importOnnxTo(junk.fileName(), tmp.filePath("junk.nns")));
  EXPECT_TRUE(shown);
  EXPECT_FALSE(QFileInfo::exists(tmp.filePath("junk.nns")));
  EXPECT_FALSE(QFileInfo::exists(tmp.filePath("junk.safetensors")));
  EXPECT_TRUE(window->log()->toPlainText().contains("not an ONNX model"));
}

}  // namespace
}  // namespace nns::ui
