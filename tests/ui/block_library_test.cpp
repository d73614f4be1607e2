// SPDX-License-Identifier: GPL-3.0-or-later
// Custom blocks beyond one project. The user's block library: a block saved from one window's
// inspector, listed in another window's palette (with search and tooltip), dropped into a
// fresh project (class and instance in one undo step), name clashes renamed with a message,
// blocks that use blocks, removal, and files that do not read. And the edits of a block's
// arguments (block_arguments.h): renames reach references and instances, removal is refused
// while the argument is used, bad values are refused with the node and option named.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QMenu>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <functional>
#include <memory>

#include "engine/graph/builder.h"
#include "engine/graph/edit.h"
#include "engine/tensor/error.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/block_arguments.h"
#include "ui/document/block_library.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/options_editor.h"
#include "ui/panels/palette_widget.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using graph::NodeId;
using test::settle;

// x -> MyLinear(in_features=4, out_features=3) -> y, MyLinear being (input @ weight) + bias.
graph::Project myLinearProject(const std::string& description = "input @ weight + bias") {
  graph::Project p;
  const NodeId x = p.graph.add_node("Input", "x", {{"shape", {4}}}, 0, 0);
  const NodeId w =
      p.graph.add_node("Parameter", "weight", {{"shape", {"$in_features", "$out_features"}}});
  const NodeId b = p.graph.add_node("Parameter", "bias", {{"shape", {"$out_features"}}});
  const NodeId mm = p.graph.add_node("MatMul", "mm", graph::Json::object(), 200, 0);
  const NodeId add = p.graph.add_node("Add", "add", graph::Json::object(), 400, 0);
  const NodeId y = p.graph.add_node("Output", "y", graph::Json::object(), 600, 0);
  p.graph.connect({x, "out"}, {mm, "in0"});
  p.graph.connect({w, "out"}, {mm, "in1"});
  p.graph.connect({mm, "out"}, {add, "in0"});
  p.graph.connect({b, "out"}, {add, "in1"});
  p.graph.connect({add, "out"}, {y, "in"});
  graph::make_block(p, p.graph, {w, b, mm, add}, "MyLinear");
  p.blocks.front().arguments = {{"in_features", 4}, {"out_features", 3}};
  p.blocks.front().description = description;
  return p;
}

class BlockLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(folder.isValid());
    previous = BlockLibrary::user().folder();
    BlockLibrary::user().setFolder(folder.filePath("blocks"));
  }
  void TearDown() override {
    for (auto* w : {first.get(), second.get()}) {
      if (w) w->document()->undoStack()->setClean();
    }
    first.reset();
    second.reset();
    BlockLibrary::user().setFolder(previous);
  }

  std::unique_ptr<MainWindow> openWindow(graph::Project project) {
    auto window = std::make_unique<MainWindow>();
    window->resize(1400, 900);
    window->document()->setProject(std::move(project), QString());
    window->show();
    QApplication::setActiveWindow(window.get());
    settle();
    return window;
  }
  NodeId instanceOf(const MainWindow& window, const std::string& type) const {
    for (const graph::Node& n : window.document()->project().graph.nodes) {
      if (n.type == type) return n.id;
    }
    return 0;
  }
  // Selects the instance and presses the inspector's "Save to Library".
  void saveToLibrary(MainWindow& window, const std::string& type) {
    window.document()->setSelection({instanceOf(window, type)});
    settle();
    auto* save = qobject_cast<QPushButton*>(
        window.inspector()->optionsEditor()->field("blockSaveToLibrary"));
    ASSERT_TRUE(save);
    QTest::mouseClick(save, Qt::LeftButton);
    settle();
  }
  // Drags the palette's library entry onto the canvas, as the seed models' test drops types.
  NodeId dropFromLibrary(MainWindow& window, const QString& name, QPointF scenePos) {
    QTreeWidgetItem* item = window.palette()->itemFor(name, /*library=*/true);
    EXPECT_TRUE(item) << name.toStdString();
    if (!item) return 0;
    QTreeWidget* tree = window.palette()->tree();
    std::unique_ptr<QMimeData> mime(tree->model()->mimeData({tree->indexFromItem(item)}));
    EXPECT_TRUE(mime->hasFormat(GraphView::kLibraryBlockMime));
    QWidget* viewport = window.view()->viewport();
    const QPoint at = window.view()->mapFromScene(scenePos);
    QDragEnterEvent enter(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &enter);
    QDropEvent drop(QPointF(at), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &drop);
    settle();
    const auto& sel = window.document()->selection();
    return sel.size() == 1 ? sel.front() : 0;
  }

  QTemporaryDir folder;
  QString previous;
  std::unique_ptr<MainWindow> first, second;
};

TEST_F(BlockLibraryTest, SavedFromOneDocumentIsUsedInAFreshOne) {
  first = openWindow(myLinearProject());
  saveToLibrary(*first, "MyLinear");
  const QString file = QDir(BlockLibrary::user().folder()).filePath("MyLinear.json");
  ASSERT_TRUE(QFile::exists(file)) << first->log()->toPlainText().toStdString();
  ASSERT_NE(BlockLibrary::user().find("MyLinear"), nullptr)
      << BlockLibrary::user().problems().join("\n").toStdString();
  EXPECT_EQ(*BlockLibrary::user().find("MyLinear"), first->document()->project().blocks.front());

  second = openWindow(graph::Project{});
  QTreeWidgetItem* entry = second->palette()->itemFor("MyLinear", /*library=*/true);
  ASSERT_TRUE(entry);
  EXPECT_EQ(entry->parent()->text(0), "Library");
  EXPECT_TRUE(entry->toolTip(0).contains("MyLinear(in_features=4, out_features=3)"))
      << entry->toolTip(0).toStdString();
  second->palette()->searchBox()->setText("linear @");
  EXPECT_FALSE(entry->isHidden());
  EXPECT_TRUE(second->palette()->itemFor("Conv2d")->isHidden());
  second->palette()->searchBox()->clear();

  const graph::Project start = second->document()->project();
  const NodeId instance = dropFromLibrary(*second, "MyLinear", {300, 100});
  ASSERT_NE(instance, 0);
  const graph::Project& p = second->document()->project();
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(p.blocks.front(), first->document()->project().blocks.front());
  EXPECT_EQ(p.graph.at(instance).type, "MyLinear");
  // Its project block is now in the palette too, and its arguments in the inspector.
  EXPECT_TRUE(second->palette()->itemFor("MyLinear"));
  EXPECT_TRUE(second->inspector()->optionsEditor()->field("argument:in_features"));
  second->document()->undoStack()->undo();
  EXPECT_EQ(second->document()->project(), start);
}

TEST_F(BlockLibraryTest, ANameClashBringsTheLibrarysBlockInRenamed) {
  first = openWindow(myLinearProject());
  saveToLibrary(*first, "MyLinear");
  // The fresh project has a MyLinear of its own, which differs.
  second = openWindow(myLinearProject("another MyLinear"));
  const NodeId a = dropFromLibrary(*second, "MyLinear", {300, 200});
  ASSERT_NE(a, 0);
  const graph::Project& p = second->document()->project();
  ASSERT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.blocks[0].description, "another MyLinear");
  EXPECT_EQ(p.blocks[1].name, "MyLinear2");
  EXPECT_EQ(p.graph.at(a).type, "MyLinear2");
  EXPECT_TRUE(second->log()->toPlainText().contains(
      "the project already has a different MyLinear, so the library's MyLinear was added as "
      "MyLinear2"))
      << second->log()->toPlainText().toStdString();
  // A second drop uses the class the first one added.
  const NodeId b = dropFromLibrary(*second, "MyLinear", {300, 400});
  EXPECT_EQ(second->document()->project().blocks.size(), 2u);
  EXPECT_EQ(second->document()->project().graph.at(b).type, "MyLinear2");
}

TEST_F(BlockLibraryTest, ABlockTakesTheBlocksItUsesAlong) {
  graph::Project p = myLinearProject();
  p.name = "BigNet";
  // Net: the MyLinear instance, made a block of its own.
  for (const graph::Node& n : std::vector<graph::Node>(p.graph.nodes)) {
    if (n.type == "MyLinear") graph::make_block(p, p.graph, {n.id}, "Net");
  }
  first = openWindow(p);
  saveToLibrary(*first, "Net");
  EXPECT_TRUE(QFile::exists(QDir(BlockLibrary::user().folder()).filePath("Net.json")));
  EXPECT_TRUE(QFile::exists(QDir(BlockLibrary::user().folder()).filePath("MyLinear.json")));

  graph::Project fresh;
  fresh.name = "BigNet";  // not the default Net, which a block cannot then be called
  second = openWindow(fresh);
  ASSERT_NE(dropFromLibrary(*second, "Net", {200, 200}), 0);
  const graph::Project& q = second->document()->project();
  ASSERT_EQ(q.blocks.size(), 2u);
  EXPECT_EQ(q.blocks[0].name, "MyLinear");
  EXPECT_EQ(q.blocks[1], first->document()->project().blocks[1]);

  // Into a project whose model is the default Net, the block comes as Net2, and says why.
  second = openWindow(graph::Project{});
  const NodeId net = dropFromLibrary(*second, "Net", {200, 200});
  ASSERT_NE(net, 0);
  EXPECT_EQ(second->document()->project().graph.at(net).type, "Net2");
  EXPECT_TRUE(second->log()->toPlainText().contains(
      "the name Net is taken by the model or a node type, so the library's Net was added as Net2"))
      << second->log()->toPlainText().toStdString();
}

TEST_F(BlockLibraryTest, RemovedFromThePalettesContextMenu) {
  first = openWindow(myLinearProject());
  saveToLibrary(*first, "MyLinear");
  QTreeWidgetItem* entry = first->palette()->itemFor("MyLinear", /*library=*/true);
  ASSERT_TRUE(entry);
  first->palette()->tree()->setCurrentItem(entry);
  ASSERT_TRUE(first->palette()->removeFromLibraryAction()->isEnabled());
  first->palette()->removeFromLibraryAction()->trigger();
  settle();
  EXPECT_FALSE(QFile::exists(QDir(BlockLibrary::user().folder()).filePath("MyLinear.json")));
  EXPECT_EQ(first->palette()->itemFor("MyLinear", /*library=*/true), nullptr);
  // The project's own block stays.
  EXPECT_TRUE(first->palette()->itemFor("MyLinear"));
  first->palette()->tree()->setCurrentItem(first->palette()->itemFor("Linear"));
  EXPECT_FALSE(first->palette()->removeFromLibraryAction()->isEnabled());
}

TEST_F(BlockLibraryTest, AFileThatDoesNotReadIsLeftOutWithItsReason) {
  QDir().mkpath(BlockLibrary::user().folder());
  QFile bad(QDir(BlockLibrary::user().folder()).filePath("Broken.json"));
  ASSERT_TRUE(bad.open(QIODevice::WriteOnly));
  bad.write(R"({"name": "Broken", "graph": {"nodes": [{"id": "one"}]}})");
  bad.close();
  BlockLibrary::user().reload();
  EXPECT_EQ(BlockLibrary::user().find("Broken"), nullptr);
  ASSERT_EQ(BlockLibrary::user().problems().size(), 1);
  EXPECT_TRUE(BlockLibrary::user().problems().front().contains("Broken.json"));
  EXPECT_TRUE(BlockLibrary::user().problems().front().contains("blocks[0].graph.nodes[0].id"))
      << BlockLibrary::user().problems().front().toStdString();
}

// The inspector of an instance: an argument added to the class, a check box inside bound to it
// through the field's context menu, then undone.
TEST_F(BlockLibraryTest, AFieldInsideABlockIsBoundToAnArgumentByItsMenu) {
  first = openWindow(myLinearProject());
  ProjectDocument* doc = first->document();
  const graph::Project start = doc->project();
  doc->setSelection({instanceOf(*first, "MyLinear")});
  settle();
  OptionsEditor* editor = first->inspector()->optionsEditor();
  auto* name = qobject_cast<QLineEdit*>(editor->field("blockNewArgument"));
  auto* value = qobject_cast<QLineEdit*>(editor->field("blockNewDefault"));
  ASSERT_TRUE(name && value);
  name->setText("trainable");
  value->setText("true");
  QTest::mouseClick(qobject_cast<QPushButton*>(editor->field("blockAddArgument")), Qt::LeftButton);
  settle();
  EXPECT_EQ(doc->project().blocks.front().arguments["trainable"], true);

  QWidget* box = editor->field("inner:bias:requires_grad");
  ASSERT_TRUE(box);
  emit box->customContextMenuRequested(QPoint(2, 2));
  settle();
  auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget());
  ASSERT_TRUE(menu);
  auto* bind = menu->findChild<QMenu*>("bindMenu");
  ASSERT_TRUE(bind);
  QAction* trainable = nullptr;
  for (QAction* a : bind->actions()) {
    if (a->text() == "$trainable") trainable = a;
  }
  ASSERT_TRUE(trainable);
  trainable->trigger();
  menu->close();
  settle();
  const graph::Graph& inside = doc->project().blocks.front().graph;
  EXPECT_EQ(inside.find_by_name("bias")->options["requires_grad"], "$trainable");
  // Bound, the field shows the reference as text.
  auto* bound = qobject_cast<QLineEdit*>(editor->field("inner:bias:requires_grad"));
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->text(), "$trainable");
  EXPECT_TRUE(doc->analysis().ok());

  while (doc->undoStack()->canUndo()) doc->undoStack()->undo();
  EXPECT_EQ(doc->project(), start);
}

NodeId firstOfType(const graph::Graph& g, const std::string& type) {
  for (const graph::Node& n : g.nodes) {
    if (n.type == type) return n.id;
  }
  return 0;
}

std::string errorOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BlockArgumentsTest, ARenameReachesTheReferencesAndEveryInstance) {
  graph::Project p = myLinearProject();
  const NodeId instance = firstOfType(p.graph, "MyLinear");
  p.graph.at(instance).options = {{"in_features", 4}, {"out_features", 2}};
  renameBlockArgument(p, "MyLinear", "out_features", "fan_out");
  const graph::BlockDef& b = *p.find_block("MyLinear");
  EXPECT_EQ(b.arguments, (graph::Json{{"in_features", 4}, {"fan_out", 3}}));
  EXPECT_EQ(b.graph.find_by_name("weight")->options["shape"],
            (graph::Json{"$in_features", "$fan_out"}));
  EXPECT_EQ(b.graph.find_by_name("bias")->options["shape"], graph::Json::array({"$fan_out"}));
  EXPECT_EQ(p.graph.at(instance).options, (graph::Json{{"in_features", 4}, {"fan_out", 2}}));
  EXPECT_TRUE(graph::analyze(p).ok());
  EXPECT_EQ(graph::build_model(p)->get_parameter("my_linear.weight").sizes(),
            (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(errorOf([&] { renameBlockArgument(p, "MyLinear", "fan_out", "in_features"); }),
            "block 'MyLinear' already has an argument 'in_features': pick another name");
  EXPECT_EQ(errorOf([&] { renameBlockArgument(p, "MyLinear", "fan_out", "2x"); }),
            "block 'MyLinear': '2x' is not a valid argument name: use letters, digits and _, "
            "not starting with a digit");
}

TEST(BlockArgumentsTest, AnArgumentInUseIsNotRemovedAndBadValuesAreRefused) {
  graph::Project p = myLinearProject();
  const graph::Project before = p;
  EXPECT_EQ(errorOf([&] { removeBlockArgument(p, "MyLinear", "out_features"); }),
            "block 'MyLinear': node 'weight' uses the argument 'out_features' (option 'shape'): "
            "give that option a value of its own first");
  const NodeId bias = p.find_block("MyLinear")->graph.find_by_name("bias")->id;
  EXPECT_EQ(errorOf([&] { setBlockNodeOption(p, "MyLinear", bias, "shape", {"$width"}); }),
            "block 'MyLinear', node 'bias', option 'shape': '$width' is no argument of the block "
            "(its arguments: in_features, out_features); add it to the block's arguments first");
  EXPECT_NE(errorOf([&] {
              setBlockNodeOption(p, "MyLinear", bias, "shape", {-3});
            }).find("block 'MyLinear', node 'bias' (with the arguments' defaults): "),
            std::string::npos);
  EXPECT_EQ(errorOf([&] { addBlockArgument(p, "MyLinear", "width", nullptr); }),
            "block 'MyLinear': give the argument 'width' a default value (what instances that do "
            "not set it use)");
  EXPECT_EQ(p, before);  // nothing changed by the refusals

  // Unbound, then removed: the instances' values for it go too.
  setBlockNodeOption(p, "MyLinear", bias, "shape", {3});
  const NodeId w = p.find_block("MyLinear")->graph.find_by_name("weight")->id;
  setBlockNodeOption(p, "MyLinear", w, "shape", {"$in_features", 3});
  const NodeId instance = firstOfType(p.graph, "MyLinear");
  p.graph.at(instance).options = {{"out_features", 3}};
  removeBlockArgument(p, "MyLinear", "out_features");
  EXPECT_EQ(p.find_block("MyLinear")->arguments, (graph::Json{{"in_features", 4}}));
  EXPECT_EQ(p.graph.at(instance).options, graph::Json::object());
  EXPECT_TRUE(graph::analyze(p).ok());
}

}  // namespace
}  // namespace nns::ui
