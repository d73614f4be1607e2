// SPDX-License-Identifier: GPL-3.0-or-later
// The canvas shows the module tree (issue 12): for every example and generated nested models,
// each group's frame holds exactly its members, no two boxes overlap, no wire passes through a
// box, the data flows downwards, and nnstudio-cli's layout is the window's.
#include <gtest/gtest.h>

#include <QDir>
#include <QGraphicsView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QProcess>
#include <QTemporaryDir>
#include <functional>

#include "engine/graph/layout.h"
#include "support/generated_projects.h"
#include "ui/app/example_project.h"
#include "ui/canvas/edge_item.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/node_item.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using graph::NodeId;

struct Case {
  std::string name;
  graph::Project project;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const QString& file : QDir(":/examples").entryList({"*.nns"})) {
    out.push_back({file.toStdString(), exampleProject(file)});
  }
  out.push_back(
      {"ModuleList of 3 Sequential blocks with residual Adds", nns::test::residual_tower(3, 3)});
  out.push_back({"12 blocks of 5", nns::test::residual_tower(12, 5)});
  // Groups in groups in groups: the tower's blocks, each holding a nested Sequential.
  graph::Project deep = nns::test::residual_tower(4, 4);
  for (graph::Node& n : std::vector<graph::Node>(deep.graph.nodes)) {
    if (n.type != "Sequential") continue;
    const std::vector<NodeId> members = deep.graph.at(n.id).members;
    const NodeId inner = deep.graph.add_node("Sequential", n.name + "_inner");
    deep.graph.at(inner).members = {members[1], members[2]};
    deep.graph.at(n.id).members = {members[0], inner, members[3]};
  }
  out.push_back({"nested three deep", deep});
  out.push_back({"300 nodes as opened", nns::test::residual_tower(30, 8)});
  return out;
}

bool isAncestor(const graph::Graph& g, NodeId group, NodeId id) {
  for (const graph::Node* p = g.parent_of(id); p; p = g.parent_of(p->id)) {
    if (p->id == group) return true;
  }
  return false;
}

QRectF boxOf(const NodeItem* item) {
  return QRectF(item->pos(), item->boxSize());
}

void checkCanvas(const std::string& name, ProjectDocument& doc, GraphScene& scene) {
  SCOPED_TRACE(name);
  const graph::Graph& g = doc.project().graph;
  std::vector<const NodeItem*> boxes, frames;
  for (const graph::Node& n : g.nodes) {
    const NodeItem* item = scene.nodeItem(n.id);
    // Each node the canvas shows has its item; one inside a collapsed group has none (or a
    // hidden one, once shown).
    if (scene.shownNode(n.id) != n.id) {
      EXPECT_TRUE(!item || !item->isVisible()) << n.name;
      continue;
    }
    ASSERT_NE(item, nullptr) << n.name;
    ASSERT_TRUE(item->isVisible()) << n.name;
    (item->isFrame() ? frames : boxes).push_back(item);
  }
  ASSERT_FALSE(boxes.empty());
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size(); ++j) {
      EXPECT_FALSE(boxOf(boxes[i]).intersects(boxOf(boxes[j])))
          << g.at(boxes[i]->id()).name << " overlaps " << g.at(boxes[j]->id()).name;
    }
  }
  for (const NodeItem* frame : frames) {
    const QRectF f = boxOf(frame);
    const std::string& group = g.at(frame->id()).name;
    for (const NodeItem* box : boxes) {
      const bool member = isAncestor(g, frame->id(), box->id());
      if (member) {
        EXPECT_TRUE(f.contains(boxOf(box))) << g.at(box->id()).name << " outside " << group;
      } else {
        EXPECT_FALSE(f.intersects(boxOf(box))) << g.at(box->id()).name << " inside " << group;
      }
    }
    for (const NodeItem* other : frames) {
      if (other == frame || isAncestor(g, frame->id(), other->id()) ||
          isAncestor(g, other->id(), frame->id())) {
        continue;
      }
      EXPECT_FALSE(f.intersects(boxOf(other))) << group << " overlaps " << g.at(other->id()).name;
    }
  }
  int wires = 0, downwards = 0;
  for (const EdgeItem* edge : scene.edgeItems()) {
    if (!edge->isVisible()) continue;
    ++wires;
    const QPainterPath path = edge->path();
    const QPointF from = path.pointAtPercent(0), to = path.pointAtPercent(1);
    if (to.y() > from.y()) ++downwards;
    const NodeItem* a = scene.shownItem(edge->edge().from.node);
    const NodeItem* b = scene.shownItem(edge->edge().to.node);
    for (int i = 0; i <= 200; ++i) {
      const QPointF p = path.pointAtPercent(i / 200.0);
      // The ends sit on the ports, on the boxes' edges: what matters is the way between.
      if (QLineF(p, from).length() < 8 || QLineF(p, to).length() < 8) continue;
      for (const NodeItem* box : boxes) {
        if (box == a || box == b) continue;
        EXPECT_FALSE(boxOf(box).adjusted(1, 1, -1, -1).contains(p))
            << "the wire " << g.at(edge->edge().from.node).name << " -> "
            << g.at(edge->edge().to.node).name << " crosses " << g.at(box->id()).name;
      }
    }
  }
  EXPECT_GE(downwards * 10, wires * 9) << downwards << " of " << wires << " wires flow down";
}

// The scene after edits shows what a scene made now for the document shows, box for box and
// wire for wire.
void drawnAsFresh(const std::string& name, ProjectDocument& doc, GraphScene& scene) {
  SCOPED_TRACE(name);
  GraphScene fresh(&doc);
  for (const graph::Node& n : doc.project().graph.nodes) {
    const NodeItem* a = scene.nodeItem(n.id);
    const NodeItem* b = fresh.nodeItem(n.id);
    if (!b || !b->isVisible()) {
      EXPECT_TRUE(!a || !a->isVisible()) << n.name;
      continue;
    }
    ASSERT_TRUE(a && a->isVisible()) << n.name;
    EXPECT_EQ(boxOf(a), boxOf(b)) << n.name;
    EXPECT_EQ(a->isFrame(), b->isFrame()) << n.name;
  }
  auto wires = [](GraphScene& s) {
    std::map<std::pair<NodeId, std::string>, QPainterPath> out;
    for (const EdgeItem* e : s.edgeItems()) {
      if (e->isVisible()) out[{e->edge().to.node, e->edge().to.port}] = e->path();
    }
    return out;
  };
  EXPECT_TRUE(wires(scene) == wires(fresh));
}

TEST(CanvasLayout, GroupsHoldExactlyTheirMembersAndWiresFlowDownAroundTheBoxes) {
  for (Case& c : cases()) {
    ProjectDocument doc;
    doc.setProject(c.project, QString());
    doc.prepareForCanvas();
    GraphScene scene(&doc);
    checkCanvas(c.name, doc, scene);
  }
}

TEST(CanvasLayout, LeftToRightKeepsTheSameRulesAcross) {
  ProjectDocument doc;
  doc.setProject(nns::test::residual_tower(3, 3), QString());
  doc.prepareForCanvas();
  doc.setLayoutDirection("LR");
  GraphScene scene(&doc);
  const graph::Layout& layout = doc.layout();
  EXPECT_EQ(layout.direction, "LR");
  // Inputs on the left, outputs on the right: a wire runs rightwards.
  const NodeId x = doc.project().graph.find_by_name("x")->id;
  const NodeId stem = doc.project().graph.find_by_name("stem")->id;
  EXPECT_LT(scene.nodeItem(x)->pos().x() + graph::kNodeWidth, scene.nodeItem(stem)->pos().x());
  EXPECT_NEAR(scene.nodeItem(stem)->portScenePos("in", false).x(), scene.nodeItem(stem)->pos().x(),
              0.01);
  doc.undoStack()->undo();
  EXPECT_EQ(doc.project().layout_direction, "TB");
}

TEST(CanvasLayout, LargeProjectsOpenWithNestedGroupsCollapsed) {
  ProjectDocument doc;
  doc.setProject(nns::test::residual_tower(30, 8), QString());
  doc.prepareForCanvas();
  const graph::Graph& g = doc.project().graph;
  ASSERT_GT(g.nodes.size(), ProjectDocument::kLargeGraph);
  EXPECT_FALSE(g.find_by_name("layers")->collapsed);
  EXPECT_TRUE(g.find_by_name("block0")->collapsed);
  GraphScene scene(&doc);
  // A member of a collapsed group is drawn by the group's box, and has no item of its own.
  const NodeId member = g.find_by_name("b0_fc0")->id;
  EXPECT_EQ(scene.nodeItem(member), nullptr);
  const NodeId block0 = g.find_by_name("block0")->id;
  EXPECT_EQ(scene.shownItem(member), scene.nodeItem(block0));
  // Its box says what it holds (counted when first drawn).
  const std::optional<int64_t> params = doc.parameterCount(block0);
  ASSERT_TRUE(params && *params > 0);
  EXPECT_EQ(scene.nodeItem(block0)->summary(),
            QString("8 module(s) · %1 params").arg(QLocale().toString(qlonglong(*params))));
  EXPECT_TRUE(scene.nodeItem(g.find_by_name("layers")->id)->summary().isEmpty());  // a frame
  // Expanded, the block's members get their items (its runs of equal layers folded, as a
  // fresh canvas draws them), and the canvas is as a fresh one draws it.
  doc.setCollapsed(block0, false);
  ASSERT_NE(scene.nodeItem(member), nullptr);
  EXPECT_TRUE(scene.nodeItem(member)->isVisible());
  EXPECT_TRUE(scene.nodeItem(block0)->isFrame());
  checkCanvas("block0 expanded", doc, scene);
  drawnAsFresh("block0 expanded", doc, scene);
  doc.undoStack()->undo();
  EXPECT_FALSE(scene.nodeItem(member)->isVisible());
  EXPECT_FALSE(scene.nodeItem(block0)->isFrame());
  checkCanvas("block0 collapsed by undo", doc, scene);
  EXPECT_FALSE(scene.nodeItem(g.find_by_name("block0")->id)->isFrame());
  // A small one opens as it is.
  ProjectDocument small;
  small.setProject(nns::test::residual_tower(3, 3), QString());
  small.prepareForCanvas();
  EXPECT_FALSE(small.project().graph.find_by_name("block0")->collapsed);
}

// Expanding a block in the middle of a tall tower moves every box below it and thousands of
// wires: those in the view's sight move and are drawn again at once, the rest in the events
// after the edit, and then the canvas is as a fresh one draws it.
TEST(CanvasLayout, BoxesAndWiresOutOfSightFollowAnExpandInTheEventsAfterIt) {
  ProjectDocument doc;
  doc.setProject(nns::test::residual_tower(1200, 4), QString());
  doc.prepareForCanvas();
  GraphScene scene(&doc);
  QGraphicsView view(&scene);
  view.resize(800, 600);
  const graph::Graph& g = doc.project().graph;
  const NodeId block = g.find_by_name("block100")->id;
  const NodeId near = g.find_by_name("block101")->id;
  const NodeId far = g.find_by_name("block1100")->id;
  view.centerOn(scene.nodeItem(block));
  auto inPlace = [&](NodeId id) {
    const graph::Node& n = doc.project().graph.at(id);
    return scene.nodeItem(id)->pos() == QPointF(n.x, n.y);
  };
  ASSERT_TRUE(g.at(block).collapsed);
  const double nearWas = g.at(near).y;
  doc.setCollapsed(block, false);
  ASSERT_GT(g.at(near).y, nearWas);  // pushed down by the block's members
  EXPECT_TRUE(inPlace(near));        // in sight: moved with the edit
  EXPECT_FALSE(inPlace(far));        // out of sight: where it was, for now
  EXPECT_TRUE(scene.isStale(far));
  ASSERT_TRUE(scene.hasStale());
  ASSERT_TRUE(test::waitFor([&] { return !scene.hasStale(); }));
  EXPECT_TRUE(inPlace(far));
  drawnAsFresh("block100 expanded", doc, scene);
  doc.undoStack()->undo();
  EXPECT_TRUE(inPlace(near));
  EXPECT_FALSE(inPlace(far));
  ASSERT_TRUE(test::waitFor([&] { return !scene.hasStale(); }));
  drawnAsFresh("block100 collapsed by undo", doc, scene);
  // An image export draws the whole scene at once: every box and wire where it goes.
  doc.setCollapsed(block, false);
  ASSERT_TRUE(scene.hasStale());
  scene.finishStale();
  EXPECT_FALSE(scene.hasStale());
  drawnAsFresh("block100 expanded, finished at once", doc, scene);
}

TEST(CanvasLayout, CollapseAndExpandRoundTripPositionsAndACollapsedGroupReopensCollapsed) {
  ProjectDocument doc;
  doc.setProject(nns::test::residual_tower(4, 4), QString());
  doc.prepareForCanvas();
  GraphScene scene(&doc);
  const graph::Project before = doc.project();
  const NodeId block = before.graph.find_by_name("block1")->id;
  doc.setCollapsed(block, true);
  EXPECT_FALSE(scene.nodeItem(block)->isFrame());
  EXPECT_EQ(scene.nodeItem(block)->boxSize(),
            QSizeF(graph::kCollapsedGroupWidth, graph::kCollapsedGroupHeight));
  checkCanvas("block1 collapsed", doc, scene);
  drawnAsFresh("block1 collapsed", doc, scene);
  doc.setCollapsed(block, false);
  drawnAsFresh("block1 expanded", doc, scene);
  for (const graph::Node& n : before.graph.nodes) {
    const graph::Node& now = doc.project().graph.at(n.id);
    EXPECT_EQ(QPointF(now.x, now.y), QPointF(n.x, n.y)) << n.name;
  }
  doc.undoStack()->undo();
  EXPECT_TRUE(doc.project().graph.at(block).collapsed);
  checkCanvas("block1 collapsed again by undo", doc, scene);
  drawnAsFresh("block1 collapsed again by undo", doc, scene);

  QTemporaryDir dir;
  const QString path = dir.filePath("collapsed.nns");
  doc.save(path);
  ProjectDocument reopened;
  reopened.load(path);
  reopened.prepareForCanvas();
  EXPECT_TRUE(reopened.project().graph.at(block).collapsed);
  EXPECT_EQ(reopened.project(), doc.project());
}

// An edit makes only the items it adds; every other item stays the same object.
TEST(CanvasLayout, AnEditMakesOnlyTheItemsItAdds) {
  ProjectDocument doc;
  doc.setProject(nns::test::residual_tower(10, 4), QString());
  doc.prepareForCanvas();
  GraphScene scene(&doc);
  const graph::Graph& g = doc.project().graph;
  std::map<NodeId, const NodeItem*> items;
  for (const graph::Node& n : g.nodes) items[n.id] = scene.nodeItem(n.id);
  const std::vector<EdgeItem*> wires = scene.edgeItems();
  auto unchanged = [&] {
    for (const auto& [id, item] : items) EXPECT_EQ(scene.nodeItem(id), item) << g.at(id).name;
    for (EdgeItem* wire : wires) {
      const auto now = scene.edgeItems();
      EXPECT_NE(std::find(now.begin(), now.end(), wire), now.end());
    }
  };
  const int made = scene.itemsMade();
  const NodeId head = g.find_by_name("head")->id;

  ASSERT_TRUE(doc.renameNode(head, "classifier"));
  EXPECT_EQ(scene.itemsMade(), made);
  unchanged();

  const NodeId extra = doc.addNode("ReLU", QPointF(-400, 0));
  EXPECT_EQ(scene.itemsMade(), made + 1);
  ASSERT_TRUE(doc.connectPorts({head, "out"}, {extra, "in"}));
  EXPECT_EQ(scene.itemsMade(), made + 2);
  ASSERT_NE(scene.nodeItem(extra), nullptr);
  EXPECT_EQ(scene.edgeItems().size(), wires.size() + 1);
  unchanged();

  doc.removeItems({extra}, {});
  EXPECT_EQ(scene.nodeItem(extra), nullptr);
  EXPECT_EQ(scene.edgeItems().size(), wires.size());
  EXPECT_EQ(scene.itemsMade(), made + 2);
  doc.undoStack()->undo();  // the node and its wire come back: two items
  EXPECT_EQ(scene.itemsMade(), made + 4);
  ASSERT_NE(scene.nodeItem(extra), nullptr);
  unchanged();
  // The analysis's news reaches the node it is about: a wire of the wrong width marks its
  // target at once.
  const NodeId narrow = doc.addNode("Linear", QPointF(-400, 100));
  ASSERT_TRUE(doc.connectPorts({head, "out"}, {narrow, "in"}));
  EXPECT_FALSE(doc.problemsOf(narrow, "in").isEmpty());
  // Wires to hand-placed nodes are plain curves until the graph is laid out again.
  doc.autoLayout();
  checkCanvas("after the edits, laid out", doc, scene);
}

// nnstudio-cli layout prints what the window draws, node for node.
TEST(CanvasLayout, TheCliPrintsTheWindowsLayout) {
  QTemporaryDir dir;
  for (Case& c : cases()) {
    SCOPED_TRACE(c.name);
    ProjectDocument doc;
    doc.setProject(c.project, QString());
    doc.prepareForCanvas();
    GraphScene scene(&doc);
    const QString path = dir.filePath("model.nns");
    doc.save(path);
    QProcess cli;
    cli.start(NNS_CLI, {"layout", path});
    ASSERT_TRUE(cli.waitForFinished(30000));
    ASSERT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
    const QJsonArray nodes =
        QJsonDocument::fromJson(cli.readAllStandardOutput()).object()["nodes"].toArray();
    int visible = 0;
    for (const graph::Node& n : doc.project().graph.nodes) {
      const NodeItem* item = scene.nodeItem(n.id);
      visible += item && item->isVisible();
    }
    EXPECT_EQ(nodes.size(), visible);
    for (const QJsonValue& v : nodes) {
      const QJsonObject o = v.toObject();
      const NodeItem* item = scene.nodeItem(o["id"].toInteger());
      ASSERT_NE(item, nullptr);
      EXPECT_EQ(o["name"].toString().toStdString(), doc.project().graph.at(item->id()).name);
      const QRectF box = boxOf(item);
      EXPECT_NEAR(o["x"].toDouble(), box.x(), 0.5) << o["name"].toString().toStdString();
      EXPECT_NEAR(o["y"].toDouble(), box.y(), 0.5) << o["name"].toString().toStdString();
      EXPECT_NEAR(o["width"].toDouble(), box.width(), 0.5);
      EXPECT_NEAR(o["height"].toDouble(), box.height(), 0.5);
    }
  }
}

}  // namespace
}  // namespace nns::ui
