// SPDX-License-Identifier: GPL-3.0-or-later
// ProjectDocument: every edit is one undo step, undo returns the exact spec, drags merge,
// no-op edits leave no step, refused edits change nothing.
#include <gtest/gtest.h>

#include <QCoreApplication>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <functional>
#include <stdexcept>

#include "engine/graph/node_types.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "support/generated_projects.h"
#include "ui/app/example_project.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"

namespace nns::ui {
namespace {

using graph::NodeId;

// x -> linear (2->8) -> relu -> output, unsaved.
struct Chain {
  ProjectDocument doc;
  NodeId x, fc1, act, y;
  Chain() {
    doc.newProject();
    x = doc.project().graph.find_by_name("x")->id;
    fc1 = doc.addNode("Linear", {200, 0});
    doc.setNodeOptions(fc1, {{"in_features", 2}, {"out_features", 8}, {"bias", true}});
    act = doc.addNode("ReLU", {400, 0});
    y = doc.addNode("Output", {600, 0});
    EXPECT_TRUE(doc.connectPorts({x, "out"}, {fc1, "in"}));
    EXPECT_TRUE(doc.connectPorts({fc1, "out"}, {act, "in"}));
    EXPECT_TRUE(doc.connectPorts({act, "out"}, {y, "in"}));
  }
};

TEST(ProjectDocument, AddNodeIsOneUndoStepWithDefaultOptionsAndAFreeName) {
  ProjectDocument doc;
  doc.newProject();
  const graph::Project start = doc.project();
  const NodeId a = doc.addNode("Linear", {10, 20});
  const NodeId b = doc.addNode("Linear", {10, 120});
  EXPECT_EQ(doc.project().graph.at(a).name, "linear");
  EXPECT_EQ(doc.project().graph.at(b).name, "linear1");
  EXPECT_EQ(doc.project().graph.at(a).options, graph::node_type("Linear").default_options());
  EXPECT_EQ(doc.project().graph.at(a).x, 10);
  EXPECT_EQ(doc.undoStack()->count(), 2);
  doc.undoStack()->undo();
  doc.undoStack()->undo();
  EXPECT_EQ(doc.project(), start);
  doc.undoStack()->redo();
  EXPECT_EQ(doc.project().graph.at(a).name, "linear");
}

TEST(ProjectDocument, UnknownTypeIsRefusedAndLogged) {
  ProjectDocument doc;
  doc.newProject();
  QStringList log;
  QObject::connect(&doc, &ProjectDocument::logMessage, [&](const QString& m) { log << m; });
  EXPECT_EQ(doc.addNode("Linearr", {0, 0}), 0);
  EXPECT_EQ(doc.undoStack()->count(), 0);
  ASSERT_EQ(log.size(), 1);
  EXPECT_TRUE(log[0].contains("unknown node type 'Linearr'")) << log[0].toStdString();
}

TEST(ProjectDocument, ConnectAnalyzesShapesAndRefusesCycles) {
  Chain c;
  const auto& shapes = c.doc.analysis().output_shapes;
  EXPECT_EQ(graph::shape_str(shapes.at(c.fc1).at("out")), "[N, 8]");
  EXPECT_EQ(graph::shape_str(shapes.at(c.act).at("out")), "[N, 8]");
  EXPECT_TRUE(c.doc.analysis().ok()) << c.doc.analysis().problems.front().message;

  const int steps = c.doc.undoStack()->count();
  const auto check = c.doc.checkConnection({c.act, "out"}, {c.fc1, "in"});
  EXPECT_TRUE(check.refusal.contains("would form a cycle")) << check.refusal.toStdString();
  EXPECT_FALSE(c.doc.connectPorts({c.act, "out"}, {c.fc1, "in"}));
  EXPECT_EQ(c.doc.undoStack()->count(), steps);
  EXPECT_EQ(c.doc.project().graph.edge_into({c.fc1, "in"})->from.node, c.x);
}

TEST(ProjectDocument, AnEditsAnalysisComesInTheEventAfterItAndRedrawsWhatItChanged) {
  Chain c;
  QCoreApplication::processEvents();  // the chain's own analyses told
  GraphScene scene(&c.doc);
  std::vector<GraphChange> told;
  int analysed = 0;
  QObject::connect(&c.doc, &ProjectDocument::graphEdited,
                   [&](const GraphChange& change) { told.push_back(change); });
  QObject::connect(&c.doc, &ProjectDocument::analysed, [&] { ++analysed; });
  ASSERT_TRUE(c.doc.setNodeOptions(c.fc1, {{"in_features", 2}, {"out_features", 16}}));
  // The edit is told at once (the linear redrawn), its analysis not yet: the canvas still
  // draws the shapes it had, while whoever asks for the analysis gets the new one.
  ASSERT_EQ(told.size(), 1u);
  EXPECT_TRUE(told[0].changed.count(c.fc1));
  EXPECT_EQ(analysed, 0);
  EXPECT_EQ(graph::shape_str(c.doc.lastAnalysis().output_shapes.at(c.act).at("out")), "[N, 8]");
  EXPECT_EQ(scene.nodeItem(c.act)->outputText(), "[N, 8]");
  EXPECT_EQ(graph::shape_str(c.doc.analysis().output_shapes.at(c.act).at("out")), "[N, 16]");
  // In the next event: the nodes whose shapes changed (the linear and the ReLU after it, not
  // the input) are told and drawn again, once.
  QTRY_COMPARE(analysed, 1);
  ASSERT_EQ(told.size(), 2u);
  EXPECT_TRUE(told[1].changed.count(c.fc1));
  EXPECT_TRUE(told[1].changed.count(c.act));
  EXPECT_FALSE(told[1].changed.count(c.x));
  EXPECT_EQ(scene.nodeItem(c.act)->outputText(), "[N, 16]");
  // A burst of edits is analysed once, after the last.
  c.doc.renameNode(c.act, "relu_a");
  c.doc.renameNode(c.act, "relu_b");
  QTRY_COMPARE(analysed, 2);
  QCoreApplication::processEvents();
  EXPECT_EQ(analysed, 2);
}

// An opened project is analysed on a worker while the canvas makes its items: its boxes and
// wires show its own shapes and problems, not those of the project before.
TEST(ProjectDocument, AnOpenedProjectsBoxesAndWiresShowItsOwnShapesAndProblems) {
  Chain c;
  const NodeId wide = c.doc.addNode("Linear", {400, 200});
  c.doc.setNodeOptions(wide, {{"in_features", 5}, {"out_features", 3}, {"bias", true}});
  ASSERT_TRUE(c.doc.connectPorts({c.act, "out"}, {wide, "in"}));  // 8 features into 5
  const graph::Project opened = c.doc.project();

  ProjectDocument doc;
  doc.newProject();
  GraphScene scene(&doc);
  doc.open(opened, QString());
  EXPECT_EQ(scene.nodeItem(c.act)->outputText(), "[N, 8]");
  EXPECT_EQ(scene.nodeItem(wide)->outputText(), "?");  // its input does not fit
  EXPECT_TRUE(scene.nodeItem(wide)->drawsProblem());
  EXPECT_FALSE(scene.nodeItem(c.fc1)->drawsProblem());
  int redWires = 0;
  for (EdgeItem* e : scene.edgeItems()) {
    EXPECT_EQ(e->drawsProblem(), e->edge().to.node == wide) << e->edge().to.node;
    redWires += e->drawsProblem();
  }
  EXPECT_EQ(redWires, 1);
  EXPECT_EQ(doc.analysis().problems.size(), 1u);
}

TEST(ProjectDocument, AShapeMismatchIsAWarningNamingTheShape) {
  Chain c;
  const NodeId wide = c.doc.addNode("Linear", {200, 200});
  c.doc.setNodeOptions(wide, {{"in_features", 5}, {"out_features", 3}, {"bias", true}});
  const auto check = c.doc.checkConnection({c.fc1, "out"}, {wide, "in"});
  EXPECT_TRUE(check.refusal.isEmpty()) << check.refusal.toStdString();
  EXPECT_TRUE(check.warning.contains("[N, 8]")) << check.warning.toStdString();
  const auto fine = c.doc.checkConnection({c.x, "out"}, {c.fc1, "in"});
  EXPECT_TRUE(fine.refusal.isEmpty() && fine.warning.isEmpty());
}

TEST(ProjectDocument, RefusedOptionChangesNothing) {
  Chain c;
  const int steps = c.doc.undoStack()->count();
  const graph::Json before = c.doc.project().graph.at(c.fc1).options;
  EXPECT_FALSE(c.doc.setNodeOptions(c.fc1, {{"in_features", -3}, {"out_features", 8}}));
  EXPECT_EQ(c.doc.project().graph.at(c.fc1).options, before);
  EXPECT_EQ(c.doc.undoStack()->count(), steps);
}

TEST(ProjectDocument, ConsecutiveDragsMergeAndADragBackIsObsolete) {
  Chain c;
  const int steps = c.doc.undoStack()->count();
  c.doc.moveNodes({{c.fc1, QPointF(210, 10)}});
  c.doc.moveNodes({{c.fc1, QPointF(260, 40)}});
  EXPECT_EQ(c.doc.undoStack()->count(), steps + 1);
  EXPECT_EQ(c.doc.project().graph.at(c.fc1).x, 260);
  c.doc.undoStack()->undo();
  EXPECT_EQ(c.doc.project().graph.at(c.fc1).x, 200);
  c.doc.undoStack()->redo();
  c.doc.moveNodes({{c.fc1, QPointF(200, 0)}});  // back where the drag began
  EXPECT_EQ(c.doc.undoStack()->count(), steps);
  EXPECT_EQ(c.doc.project().graph.at(c.fc1).x, 200);
}

TEST(ProjectDocument, NoOpEditsPushNothing) {
  Chain c;
  const int steps = c.doc.undoStack()->count();
  EXPECT_TRUE(c.doc.setNodeOptions(c.fc1, c.doc.project().graph.at(c.fc1).options));
  EXPECT_TRUE(c.doc.renameNode(c.fc1, "linear"));
  EXPECT_EQ(c.doc.undoStack()->count(), steps);
}

TEST(ProjectDocument, RenameRefusesTakenAndDottedNames) {
  Chain c;
  EXPECT_FALSE(c.doc.renameNode(c.fc1, "relu"));
  EXPECT_FALSE(c.doc.renameNode(c.fc1, "a.b"));
  EXPECT_TRUE(c.doc.renameNode(c.fc1, "features"));
  ASSERT_TRUE(c.doc.model());
  EXPECT_EQ(c.doc.model()->module_name(c.fc1), "features");
}

TEST(ProjectDocument, RenamingTheModelIsUndoableAndRefusesABlocksName) {
  Chain c;
  ASSERT_NE(c.doc.makeBlock({c.fc1}, "Block"), 0);
  const graph::Project before = c.doc.project();
  EXPECT_FALSE(c.doc.renameModel("Block"));
  EXPECT_FALSE(c.doc.renameModel("a.b"));
  EXPECT_EQ(c.doc.project(), before);
  EXPECT_TRUE(c.doc.renameModel("BigNet"));
  EXPECT_EQ(c.doc.project().name, "BigNet");
  c.doc.undoStack()->undo();
  EXPECT_EQ(c.doc.project(), before);
  c.doc.undoStack()->redo();
  EXPECT_EQ(c.doc.project().name, "BigNet");
}

TEST(ProjectDocument, SequentialGroupTakesTheChainsWiresAndUngroupGivesThemBack) {
  Chain c;
  const graph::Project before = c.doc.project();
  const NodeId g = c.doc.groupNodes({c.fc1, c.act}, "Sequential");
  ASSERT_NE(g, 0);
  const graph::Graph& graph = c.doc.project().graph;
  EXPECT_EQ(graph.at(g).members, (std::vector<NodeId>{c.fc1, c.act}));
  EXPECT_EQ(graph.edge_into({g, "in"})->from.node, c.x);
  EXPECT_EQ(graph.edge_into({c.y, "in"})->from.node, g);
  EXPECT_TRUE(c.doc.analysis().ok()) << c.doc.analysis().problems.front().message;
  auto model = c.doc.model();
  ASSERT_TRUE(model);
  std::vector<std::string> names;
  for (auto& [name, p] : model->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"sequential.0.weight", "sequential.0.bias"}));

  c.doc.ungroup(g);
  EXPECT_EQ(c.doc.project().graph.edges.size(), before.graph.edges.size());
  EXPECT_EQ(c.doc.project().graph.edge_into({c.act, "in"})->from.node, c.fc1);
  c.doc.undoStack()->undo();
  c.doc.undoStack()->undo();
  EXPECT_EQ(c.doc.project(), before);
}

TEST(ProjectDocument, SequentialRefusesWhatIsNotAChain) {
  Chain c;
  const int steps = c.doc.undoStack()->count();
  EXPECT_EQ(c.doc.groupNodes({c.x, c.act}, "Sequential"), 0);
  EXPECT_EQ(c.doc.undoStack()->count(), steps);
}

// The document's model is the architecture (names, shapes; the weights are the training
// session's, which keeps them across edits: training_dock_test): an edit builds it again.
TEST(ProjectDocument, EditsBuildTheArchitectureAgain) {
  Chain c;
  ASSERT_TRUE(c.doc.model());
  // A second layer between relu and the output.
  const NodeId fc2 = c.doc.addNode("Linear", {500, 200});
  c.doc.setNodeOptions(fc2, {{"in_features", 8}, {"out_features", 2}});
  c.doc.connectPorts({c.act, "out"}, {fc2, "in"});
  c.doc.connectPorts({fc2, "out"}, {c.y, "in"});
  auto model = c.doc.model();
  ASSERT_TRUE(model) << c.doc.modelError().toStdString();
  EXPECT_EQ(model->get_parameter("linear.weight").shape(), (Shape{8, 2}));
  EXPECT_EQ(model->get_parameter("linear1.weight").shape(), (Shape{2, 8}));
}

// The architecture is the structure only: building it runs no initializer, so it draws no
// random numbers (and a large model's weights stay untouched virtual memory).
TEST(ProjectDocument, TheArchitectureIsBuiltWithoutInitializingItsWeights) {
  Chain c;
  c.doc.setNodeOptions(c.fc1, {{"in_features", 2}, {"out_features", 512}, {"bias", true}});
  manual_seed(7);
  const Tensor expected = rand({4});
  manual_seed(7);
  ASSERT_TRUE(c.doc.model()) << c.doc.modelError().toStdString();
  EXPECT_EQ(c.doc.model()->get_parameter("linear.weight").shape(), (Shape{512, 2}));
  EXPECT_EQ(rand({4}).to_vector<float>(), expected.to_vector<float>());
}

TEST(ProjectDocument, FreezingIsUndoableAndSavedWithTheProject) {
  Chain c;
  c.doc.setParameterFrozen("linear.weight", true);
  ASSERT_TRUE(c.doc.model());
  EXPECT_FALSE(c.doc.model()->get_parameter("linear.weight").requires_grad());
  EXPECT_TRUE(c.doc.model()->get_parameter("linear.bias").requires_grad());
  QTemporaryDir dir;
  const QString path = dir.filePath("net.nns");
  c.doc.save(path);
  ProjectDocument reopened;
  reopened.load(path);
  EXPECT_TRUE(reopened.isParameterFrozen("linear.weight"));
  EXPECT_FALSE(reopened.model()->get_parameter("linear.weight").requires_grad());
  c.doc.undoStack()->undo();
  EXPECT_TRUE(c.doc.model()->get_parameter("linear.weight").requires_grad());
}

TEST(ProjectDocument, CopyPasteMakesFreshIdsAndNamesWithTheInnerWires) {
  Chain c;
  const graph::Json clip = c.doc.copyNodes({c.fc1, c.act});
  const auto pasted = c.doc.pasteNodes(clip, {0, 200});
  ASSERT_EQ(pasted.size(), 2u);
  const graph::Graph& g = c.doc.project().graph;
  EXPECT_EQ(g.at(pasted[0]).name, "linear1");
  EXPECT_EQ(g.at(pasted[0]).y, 200);
  EXPECT_EQ(g.edge_into({pasted[1], "in"})->from.node, pasted[0]);
  EXPECT_EQ(g.edge_into({pasted[0], "in"}), nullptr);
  EXPECT_EQ(c.doc.selection(), pasted);
}

TEST(ProjectDocument, DeleteRemovesNodesWithTheirWiresInOneStep) {
  Chain c;
  const graph::Project before = c.doc.project();
  c.doc.removeItems({c.act}, {});
  EXPECT_EQ(c.doc.project().graph.find(c.act), nullptr);
  EXPECT_EQ(c.doc.project().graph.edges.size(), 1u);
  c.doc.undoStack()->undo();
  EXPECT_EQ(c.doc.project(), before);
}

TEST(ProjectDocument, RenamingAModuleDictsActiveMemberKeepsItActive) {
  ProjectDocument doc;
  doc.setProject(exampleProject("dynamic_net.nns"), QString());
  const graph::Node* relu = doc.project().graph.find_by_name("relu");
  ASSERT_NE(relu, nullptr);
  const graph::NodeId dict = doc.project().graph.parent_of(relu->id)->id;
  ASSERT_EQ(doc.project().graph.at(dict).options["active"], "relu");
  ASSERT_TRUE(doc.renameNode(relu->id, "rectifier"));
  EXPECT_EQ(doc.project().graph.at(dict).options["active"], "rectifier");
  EXPECT_TRUE(doc.analysis().ok());
  doc.undoStack()->undo();
  EXPECT_EQ(doc.project().graph.at(dict).options["active"], "relu");
}

TEST(ProjectDocument, SaveAndReopenGivesTheSameProjectAndACleanStack) {
  Chain c;
  QTemporaryDir dir;
  const QString path = dir.filePath("chain.nns");
  EXPECT_TRUE(c.doc.isModified());
  c.doc.save(path);
  EXPECT_FALSE(c.doc.isModified());
  ProjectDocument reopened;
  reopened.load(path);
  EXPECT_EQ(reopened.project(), c.doc.project());
  EXPECT_EQ(reopened.filePath(), path);
  EXPECT_EQ(reopened.undoStack()->count(), 0);
}

// Edits run on a spare copy of the project (edit()): what changed the project between two
// edits (a drag, a setting, a refused edit, an undo) is in the copy too, so the next edit
// neither loses it nor undoes it.
TEST(ProjectDocument, AnEditKeepsWhatHappenedSinceTheLastOne) {
  Chain c;
  c.doc.moveNodes({{c.fc1, QPointF(250, 30)}});
  graph::TrainingSettings training = c.doc.project().training;
  training.epochs = 7;
  c.doc.setTrainingSettings(training, "epochs");
  EXPECT_FALSE(c.doc.renameNode(c.act, "x"));  // refused: taken
  c.doc.undoStack()->undo();                   // the epochs
  c.doc.undoStack()->redo();
  ASSERT_TRUE(c.doc.renameNode(c.act, "act"));
  const graph::Project& p = c.doc.project();
  EXPECT_EQ(p.graph.at(c.fc1).x, 250);
  EXPECT_EQ(p.graph.at(c.fc1).y, 30);
  EXPECT_EQ(p.training.epochs, 7);
  EXPECT_EQ(p.graph.at(c.act).name, "act");
  EXPECT_EQ(p.graph.at(c.x).name, "x");
  c.doc.undoStack()->undo();  // the rename only
  EXPECT_EQ(p.graph.at(c.act).name, "relu");
  EXPECT_EQ(p.graph.at(c.fc1).x, 250);
  // A move undone, then an edit: the node stays where the undo put it.
  c.doc.undoStack()->undo();  // the epochs
  c.doc.undoStack()->undo();  // the move
  EXPECT_EQ(p.graph.at(c.fc1).x, 200);
  ASSERT_TRUE(c.doc.renameNode(c.y, "out"));
  EXPECT_EQ(p.graph.at(c.fc1).x, 200);
  EXPECT_EQ(p.training.epochs, graph::TrainingSettings{}.epochs);
  // An edit that throws what no edit should (not an engine error) changes nothing either,
  // then or at the next edit.
  EXPECT_THROW(c.doc.edit("broken",
                          [&](graph::Project& q) {
                            q.graph.at(c.fc1).name = "half_done";
                            throw std::runtime_error("a bug in an edit");
                          }),
               std::runtime_error);
  ASSERT_TRUE(c.doc.renameNode(c.y, "output"));
  EXPECT_EQ(p.graph.at(c.fc1).name, "linear");
}

// Each undo step keeps only what its edit changed (GraphPatch): undoing every step of a long
// mixed session gives back each state before it exactly, and redoing gives each state after,
// node order, ids, wires, blocks and probes included.
bool sameProject(const graph::Project& a, const graph::Project& b) {
  return a.graph == b.graph && a.blocks == b.blocks && a.probes == b.probes && a.extra == b.extra &&
         a.name == b.name && a.frozen_parameters == b.frozen_parameters &&
         a.layout_direction == b.layout_direction && a.dataset == b.dataset &&
         a.training == b.training;
}

TEST(ProjectDocument, UndoAndRedoOfEveryKindOfEditGiveBackEachStateExactly) {
  ProjectDocument doc;
  graph::Project tower = test::residual_tower(6, 4);
  tower.layout_direction = "TB";
  doc.setProject(tower, QString());
  const graph::Graph& g = doc.project().graph;
  auto id = [&](const char* name) { return g.find_by_name(name)->id; };
  std::vector<graph::Project> states{doc.project()};
  auto step = [&](const std::function<void()>& edit) {
    const int before = doc.undoStack()->count();
    edit();
    ASSERT_EQ(doc.undoStack()->count(), before + 1) << "the edit made no undo step";
    states.push_back(doc.project());
  };
  step([&] { doc.renameNode(id("head"), "classifier"); });
  step([&] { doc.setNodeOptions(id("b1_fc0"), {{"in_features", 16}, {"out_features", 8}}); });
  step([&] { doc.moveNodes({{id("stem"), QPointF(-300, 40)}}); });
  step([&] { doc.addNode("Tanh", QPointF(500, 500)); });
  step([&] { doc.connectPorts({id("add2"), "out"}, {id("tanh"), "in"}); });
  step([&] { doc.removeItems({id("block3")}, {}); });  // a group and its members, mid-order
  step([&] { doc.disconnectPort({id("add4"), "in0"}); });
  step([&] { doc.groupNodes({id("classifier")}, "Sequential"); });
  step([&] { doc.setCollapsed(id("block1"), true); });  // positions of many nodes
  step([&] { doc.addProbe(id("stem")); });
  step([&] { doc.setParameterFrozen("stem.weight", true); });
  step([&] { doc.makeBlock({id("tanh")}, "Squash"); });
  step([&] { doc.pasteNodes(doc.copyNodes({id("block0")}), QPointF(40, 40)); });
  step([&] { doc.renameModel("Tower2"); });
  step([&] { doc.setLayoutDirection("LR"); });
  step([&] { doc.ungroup(id("block5")); });  // a group in a group: its members join the outer
  for (size_t i = states.size() - 1; i > 0; --i) {
    doc.undoStack()->undo();
    ASSERT_TRUE(sameProject(doc.project(), states[i - 1])) << "undo of step " << i;
  }
  for (size_t i = 1; i < states.size(); ++i) {
    doc.undoStack()->redo();
    ASSERT_TRUE(sameProject(doc.project(), states[i])) << "redo of step " << i;
  }
  const graph::Node& layers = *g.find_by_name("layers");
  EXPECT_EQ(std::count(layers.members.begin(), layers.members.end(), id("b5_fc0")), 1);
  for (graph::NodeId m : layers.members) EXPECT_NE(g.find(m), nullptr) << m;
  // And the analysis after all that is what a fresh one finds.
  const graph::Analysis fresh = graph::analyze(doc.project());
  EXPECT_EQ(doc.analysis().output_shapes, fresh.output_shapes);
  EXPECT_EQ(doc.analysis().problems.size(), fresh.problems.size());
}

}  // namespace
}  // namespace nns::ui
