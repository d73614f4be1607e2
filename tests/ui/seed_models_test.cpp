// SPDX-License-Identifier: GPL-3.0-or-later
// The seeds' models built in the window as a user builds them: palette drops, port-to-port
// drags, options and names typed in the inspector, Ctrl+click selection and "Make Custom
// Block" with the class name typed in its dialog; then the parameter names PyTorch gives the
// same model, a save and reopen, and undo back to the empty start.
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QInputDialog>
#include <QLineEdit>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QTreeWidget>
#include <memory>

#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/options_editor.h"
#include "ui/panels/palette_widget.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using graph::NodeId;
using test::settle;

class SeedModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    window->resize(1400, 900);
    window->document()->setProject(graph::Project{}, QString());
    window->show();
    QApplication::setActiveWindow(window.get());
    settle();
  }
  void TearDown() override {
    window->document()->undoStack()->setClean();
    window->close();
    window.reset();
  }

  ProjectDocument* doc() const { return window->document(); }
  QPointF port(NodeId node, const std::string& name, bool output) const {
    return window->scene()->shownItem(node)->portScenePos(name, output);
  }
  QPointF grip(NodeId node) const {
    return window->scene()->shownItem(node)->mapToScene(QPointF(60, 12));
  }

  // Drags a palette entry onto the canvas; returns the node it added (the new selection).
  NodeId drop(const QString& type, QPointF scenePos) {
    QTreeWidgetItem* item = window->palette()->itemFor(type);
    EXPECT_TRUE(item) << type.toStdString();
    if (!item) return 0;
    QTreeWidget* tree = window->palette()->tree();
    std::unique_ptr<QMimeData> mime(tree->model()->mimeData({tree->indexFromItem(item)}));
    QWidget* viewport = window->view()->viewport();
    const QPoint at = window->view()->mapFromScene(scenePos);
    QDragEnterEvent enter(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &enter);
    QDragMoveEvent move(at, Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &move);
    QDropEvent dropEvent(QPointF(at), Qt::CopyAction, mime.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(viewport, &dropEvent);
    settle();
    EXPECT_EQ(doc()->selection().size(), 1u);
    return doc()->selection().empty() ? 0 : doc()->selection().front();
  }
  // Types into a line edit of the inspector (for the selected node) and presses Return.
  void type(QWidget* editor, const QString& text) {
    auto* edit = qobject_cast<QLineEdit*>(editor);
    ASSERT_TRUE(edit);
    edit->setFocus();
    edit->selectAll();
    QTest::keyClicks(edit, text);
    QTest::keyClick(edit, Qt::Key_Return);
    settle();
  }
  void rename(NodeId node, const QString& name) {
    test::clickMouse(window->view(), grip(node));
    type(window->inspector()->optionsEditor()->nameEditor(), name);
    EXPECT_EQ(doc()->project().graph.at(node).name, name.toStdString());
  }
  void setOption(NodeId node, const QString& option, const QString& text) {
    test::clickMouse(window->view(), grip(node));
    type(window->inspector()->optionsEditor()->editorFor(option), text);
  }
  void wire(NodeId from, const std::string& out, NodeId to, const std::string& in) {
    test::dragMouse(window->view(), port(from, out, true), port(to, in, false));
    const graph::Edge* e = doc()->project().graph.edge_into({to, in});
    ASSERT_TRUE(e) << in;
    EXPECT_EQ(e->from.node, from);
  }
  void key(int k, Qt::KeyboardModifiers mods = Qt::NoModifier) {
    // The offscreen platform does not give the window its activation back after a dialog
    // closes, as a desktop does; shortcuts only fire in the active window.
    QApplication::setActiveWindow(window.get());
    QTest::keyClick(window->view(), static_cast<Qt::Key>(k), mods);
    settle();
  }
  // Click the first node, Ctrl+click the others, press Ctrl+B and type the class name into
  // the dialog the window shows. Returns the instance put in their place.
  NodeId makeBlock(const std::vector<NodeId>& nodes, const QString& className) {
    test::clickMouse(window->view(), grip(nodes.front()));
    for (size_t i = 1; i < nodes.size(); ++i) {
      test::clickMouse(window->view(), grip(nodes[i]), Qt::ControlModifier);
    }
    EXPECT_EQ(doc()->selection().size(), nodes.size());
    bool answered = false;
    QTimer::singleShot(0, [&] {
      auto* dialog = qobject_cast<QInputDialog*>(QApplication::activeModalWidget());
      if (!dialog) return;
      auto* edit = dialog->findChild<QLineEdit*>();
      if (!edit) return;
      edit->selectAll();
      QTest::keyClicks(edit, className);
      QTest::keyClick(edit, Qt::Key_Return);
      answered = true;
    });
    key(Qt::Key_B, Qt::ControlModifier);
    EXPECT_TRUE(answered);
    EXPECT_EQ(doc()->selection().size(), 1u) << window->log()->toPlainText().toStdString();
    return doc()->selection().empty() ? 0 : doc()->selection().front();
  }
  // One MyLinear's inside, built at the top level between `from` and `to`, then made a
  // block named className whose instance is renamed `name`: (input @ weight) + bias.
  NodeId myLinear(NodeId from, NodeId to, QPointF at, const QString& shapes,
                  const QString& biasShape, const QString& className, const QString& name) {
    const NodeId w = drop("Parameter", at + QPointF(0, 150));
    rename(w, "weight");
    setOption(w, "shape", shapes);
    const NodeId b = drop("Parameter", at + QPointF(220, 150));
    rename(b, "bias");
    setOption(b, "shape", biasShape);
    const NodeId mm = drop("MatMul", at);
    const NodeId add = drop("Add", at + QPointF(220, 0));
    key(Qt::Key_F);  // frame all: every port in view
    wire(from, "out", mm, "in0");
    wire(w, "out", mm, "in1");
    wire(mm, "out", add, "in0");
    wire(b, "out", add, "in1");
    wire(add, "out", to, "in");
    const NodeId instance = makeBlock({w, b, mm, add}, className);
    rename(instance, name);
    return instance;
  }
  QLineEdit* field(const QString& name) const {
    return qobject_cast<QLineEdit*>(window->inspector()->optionsEditor()->field(name));
  }
  // Gives the selected MyLinear instance's class the seeds' constructor arguments, typed into
  // the inspector: MyLinear(in_features, out_features), with weight's shape and bias's bound
  // to them.
  void giveArguments(NodeId instance, const QString& in, const QString& out) {
    test::clickMouse(window->view(), grip(instance));
    for (const auto& [name, value] :
         {std::pair{QString("in_features"), in}, std::pair{QString("out_features"), out}}) {
      type(field("blockNewArgument"), name);
      type(field("blockNewDefault"), value);
    }
    type(field("inner:weight:shape"), "$in_features, $out_features");
    type(field("inner:bias:shape"), "$out_features");
    const graph::Graph& inside = doc()->project().find_block("MyLinear")->graph;
    EXPECT_EQ(inside.find_by_name("weight")->options["shape"],
              (graph::Json{"$in_features", "$out_features"}))
        << window->log()->toPlainText().toStdString();
    EXPECT_EQ(inside.find_by_name("bias")->options["shape"], graph::Json::array({"$out_features"}));
    const graph::BlockDef* block =
        doc()->project().find_block(doc()->project().graph.at(instance).type);
    ASSERT_TRUE(block);
    EXPECT_EQ(block->arguments,
              (graph::Json{{"in_features", in.toInt()}, {"out_features", out.toInt()}}))
        << window->log()->toPlainText().toStdString();
  }
  // MyLinear(in, out) for one instance: its argument values typed into the inspector.
  void setArguments(NodeId instance, const QString& in, const QString& out) {
    test::clickMouse(window->view(), grip(instance));
    type(field("argument:in_features"), in);
    type(field("argument:out_features"), out);
    EXPECT_EQ(doc()->project().graph.at(instance).options,
              (graph::Json{{"in_features", in.toInt()}, {"out_features", out.toInt()}}));
  }
  // Drops one more instance of a project's block from the palette, named and sized.
  NodeId dropMyLinear(QPointF at, const QString& name, const QString& in, const QString& out) {
    const NodeId instance = drop("MyLinear", at);
    rename(instance, name);
    setArguments(instance, in, out);
    return instance;
  }

  // Selects the nodes (click, Ctrl+click) and triggers the Edit menu's action of that text.
  NodeId groupAs(const std::vector<NodeId>& nodes, const QString& actionText) {
    test::clickMouse(window->view(), grip(nodes.front()));
    for (size_t i = 1; i < nodes.size(); ++i) {
      test::clickMouse(window->view(), grip(nodes[i]), Qt::ControlModifier);
    }
    EXPECT_EQ(doc()->selection().size(), nodes.size());
    QAction* action = nullptr;
    for (QAction* a : window->findChildren<QAction*>()) {
      if (a->text() == actionText) action = a;
    }
    EXPECT_TRUE(action) << actionText.toStdString();
    if (action) action->trigger();
    settle();
    return doc()->selection().size() == 1 ? doc()->selection().front() : 0;
  }

  // The name of a block's (only) Input or Output node: its instances' port.
  std::string portOf(const std::string& block, const std::string& type) const {
    for (const graph::Node& n : doc()->project().find_block(block)->graph.nodes) {
      if (n.type == type) return n.name;
    }
    return {};
  }
  // Saves the project, reopens it in another window (the same project, the same
  // named_parameters), then undoes with Ctrl+Z back to `start`. Saving records the canvas's
  // layout direction in the project (the file says its positions are a layered layout's); that
  // is no edit, so undoing the edits keeps it (an undo step holds only what its edit changed).

  void expectSavesReopensAndUndoesTo(const graph::Project& start, const QString& fileName) {
    QTemporaryDir dir;
    const QString path = dir.filePath(fileName);
    ASSERT_TRUE(window->saveTo(path));
    MainWindow other;
    ASSERT_TRUE(other.openFile(path));
    EXPECT_EQ(other.document()->project(), doc()->project());
    ASSERT_TRUE(other.document()->model());
    QStringList reopened;
    for (const auto& [name, p] : other.document()->model()->named_parameters()) {
      reopened << QString::fromStdString(name);
    }
    EXPECT_EQ(reopened, parameterNames());

    while (doc()->undoStack()->canUndo()) key(Qt::Key_Z, Qt::ControlModifier);
    graph::Project saved = start;
    saved.layout_direction = doc()->layout().direction;
    EXPECT_EQ(doc()->project(), saved);
  }
  QStringList parameterNames() {
    doc()->setSelection({});
    window->inspector()->refresh();
    QTableWidget* table = window->inspector()->parameterTable();
    QStringList names;
    for (int r = 0; r < table->rowCount(); ++r) names << table->item(r, 0)->text();
    return names;
  }

  std::unique_ptr<MainWindow> window;
};

TEST_F(SeedModelsTest, NetBuiltWithTheMouseHasPyTorchsNamesSavesReopensAndUndoes) {
  const graph::Project start = doc()->project();
  const NodeId x = drop("Input", {0, 0});
  rename(x, "x");
  setOption(x, "shape", "4");
  const NodeId relu = drop("F.relu", {700, 0});
  const NodeId y = drop("Output", {1400, 0});
  rename(y, "y");

  // One MyLinear class with the seeds' arguments, two instances: MyLinear(4, 3), MyLinear(3, 1).
  const NodeId l0 = myLinear(x, relu, {250, 0}, "4, 3", "3", "MyLinear", "l0");
  giveArguments(l0, "4", "3");
  setArguments(l0, "4", "3");
  const NodeId l1 = dropMyLinear({950, 0}, "l1", "3", "1");
  key(Qt::Key_F);
  wire(relu, "out", l1, portOf("MyLinear", "Input"));
  wire(l1, portOf("MyLinear", "Output"), y, "in");
  ASSERT_EQ(doc()->project().blocks.size(), 1u);
  ASSERT_TRUE(doc()->analysis().ok());
  ASSERT_TRUE(doc()->model()) << doc()->modelError().toStdString();

  // The names PyTorch gives the seeds' Net (tests/fixtures/graph.json: net.named_parameters).
  EXPECT_EQ(parameterNames(), QStringList({"l0.weight", "l0.bias", "l1.weight", "l1.bias"}));
  EXPECT_EQ(doc()->model()->get_parameter("l0.weight").sizes(), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(doc()->model()->get_parameter("l1.weight").sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(doc()->model()->get_parameter("l0.bias").sizes(), (std::vector<int64_t>{3}));
  EXPECT_EQ(graph::shape_str(doc()->analysis().output_shapes.at(l1).begin()->second), "[N, 1]");

  expectSavesReopensAndUndoesTo(start, "net.nns");
}

// BigNet: net(l1(x)) with net a Net block of l0, relu, l1: the Net of the test above, built
// behind a first MyLinear, then selected with it and made a block of its own.
TEST_F(SeedModelsTest, BigNetBuiltWithTheMouseHasPyTorchsNamesSavesReopensAndUndoes) {
  const graph::Project start = doc()->project();
  // Click on the empty canvas: the inspector shows the model, whose class is renamed (Net is
  // the block made below).
  test::clickMouse(window->view(),
                   window->view()->mapToScene(window->view()->viewport()->rect().center()));
  type(window->inspector()->optionsEditor()->findChild<QLineEdit*>("modelName"), "BigNet");
  EXPECT_EQ(doc()->project().name, "BigNet");
  const NodeId input = drop("Input", {0, 0});
  rename(input, "input");
  setOption(input, "shape", "5");
  const NodeId y = drop("Output", {1900, 0});
  rename(y, "y");
  // In PyTorch's order: BigNet's l1 first. It is called x while the Net block is made: a
  // block's input port is named after the node that feeds it, and the seeds' Net calls it x.
  const NodeId pre = myLinear(input, y, {250, 0}, "5, 4", "4", "MyLinear", "x");
  giveArguments(pre, "5", "4");
  setArguments(pre, "5", "4");
  const std::string in = portOf("MyLinear", "Input"), out = portOf("MyLinear", "Output");
  const NodeId l0 = dropMyLinear({750, 0}, "l0", "4", "3");
  const NodeId relu = drop("F.relu", {1200, 0});
  const NodeId inner1 = dropMyLinear({1450, 0}, "l1", "3", "1");
  key(Qt::Key_F);
  wire(pre, out, l0, in);
  wire(l0, out, relu, "in");
  wire(relu, "out", inner1, in);
  wire(inner1, out, y, "in");
  const NodeId net = makeBlock({l0, relu, inner1}, "Net");
  rename(net, "net");
  rename(pre, "l1");
  ASSERT_TRUE(doc()->analysis().ok());
  ASSERT_TRUE(doc()->model()) << doc()->modelError().toStdString();

  // The names PyTorch gives the seeds' BigNet (tests/fixtures/graph.json:
  // bignet.named_parameters).
  EXPECT_EQ(parameterNames(), QStringList({"l1.weight", "l1.bias", "net.l0.weight", "net.l0.bias",
                                           "net.l1.weight", "net.l1.bias"}));
  EXPECT_EQ(doc()->model()->get_parameter("l1.weight").sizes(), (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(doc()->model()->get_parameter("net.l1.weight").sizes(), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(doc()->model()->get_parameter("net.l0.bias").sizes(), (std::vector<int64_t>{3}));
  ASSERT_EQ(doc()->project().blocks.size(), 2u);  // MyLinear and Net

  expectSavesReopensAndUndoesTo(start, "bignet.nns");
}

// DynamicNet(3): linears, a ModuleList of three MyLinear(4, 4) wired in a chain; activations, a
// ModuleDict switch of relu and lrelu (self.activations[act](x)); final, a MyLinear(4, 1).
TEST_F(SeedModelsTest, DynamicNetBuiltWithTheMouseHasPyTorchsNamesSavesReopensAndUndoes) {
  const graph::Project start = doc()->project();
  const NodeId x = drop("Input", {0, 0});
  rename(x, "x");
  setOption(x, "shape", "4");
  const NodeId y = drop("Output", {2000, 0});
  rename(y, "y");
  const NodeId l0 = myLinear(x, y, {250, 0}, "4, 4", "4", "MyLinear", "l0");
  giveArguments(l0, "4", "4");
  const std::string in = portOf("MyLinear", "Input"), out = portOf("MyLinear", "Output");
  const NodeId l1 = dropMyLinear({600, 0}, "l1", "4", "4");
  const NodeId l2 = dropMyLinear({900, 0}, "l2", "4", "4");
  const NodeId relu = drop("ReLU", {1250, 0});
  rename(relu, "relu");
  const NodeId lrelu = drop("LeakyReLU", {1250, 200});
  rename(lrelu, "leaky");
  const NodeId final = dropMyLinear({1650, 0}, "final", "4", "1");
  key(Qt::Key_F);
  wire(l0, out, l1, in);
  wire(l1, out, l2, in);
  wire(final, out, y, "in");

  const NodeId linears = groupAs({l0, l1, l2}, "Group as Module&List");
  ASSERT_NE(linears, 0);
  rename(linears, "linears");
  const NodeId activations = groupAs({relu, lrelu}, "Group as Module&Dict");
  ASSERT_NE(activations, 0);
  rename(activations, "activations");
  // The switch, in the inspector: on, then the active key.
  test::clickMouse(window->view(), grip(activations));
  auto* on = qobject_cast<QCheckBox*>(window->inspector()->optionsEditor()->field("switch"));
  ASSERT_TRUE(on);
  on->click();
  settle();
  EXPECT_EQ(doc()->project().graph.at(activations).options,
            (graph::Json{{"switch", true}, {"active", "relu"}}));
  // A ModuleDict's keys are its members' names: renaming one renames the key.
  rename(lrelu, "lrelu");
  test::clickMouse(window->view(), grip(activations));
  auto* active = qobject_cast<QComboBox*>(window->inspector()->optionsEditor()->field("active"));
  ASSERT_TRUE(active);
  EXPECT_EQ(active->count(), 2);
  EXPECT_EQ(active->itemText(1), "lrelu");
  active->setFocus();
  QTest::keyClick(active, Qt::Key_Down);
  settle();
  EXPECT_EQ(doc()->project().graph.at(activations).options.value("active", ""), "lrelu");
  // Frame all keeps the wide graph readable: never below the minimum zoom, starting at its
  // input.
  key(Qt::Key_F);
  EXPECT_GE(window->view()->zoom(), GraphView::kMinFrameZoom - 1e-9);
  EXPECT_TRUE(window->view()->viewport()->rect().contains(window->view()->mapFromScene(grip(x))));
  wire(l2, out, activations, "in");
  wire(activations, "out", final, in);
  ASSERT_TRUE(doc()->analysis().ok()) << doc()->analysis().problems.front().message;
  ASSERT_TRUE(doc()->model()) << doc()->modelError().toStdString();

  // The names PyTorch gives the seeds' DynamicNet(3) (tests/fixtures/graph.json:
  // dynamicnet.named_parameters).
  EXPECT_EQ(parameterNames(),
            QStringList({"linears.0.weight", "linears.0.bias", "linears.1.weight", "linears.1.bias",
                         "linears.2.weight", "linears.2.bias", "final.weight", "final.bias"}));
  EXPECT_EQ(doc()->model()->get_parameter("final.weight").sizes(), (std::vector<int64_t>{4, 1}));
  const std::string repr = doc()->model()->repr();
  EXPECT_NE(repr.find("(activations): ModuleDict(\n    (relu): ReLU()\n    (lrelu): LeakyReLU("),
            std::string::npos)
      << repr;

  expectSavesReopensAndUndoesTo(start, "dynamic.nns");
}

}  // namespace
}  // namespace nns::ui
