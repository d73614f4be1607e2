// SPDX-License-Identifier: GPL-3.0-or-later
// The canvas's layout (engine/graph/layout.h), headless: the same boxes the window draws.
#include <gtest/gtest.h>

#include "engine/graph/layout.h"
#include "engine/tensor/error.h"
#include "support/generated_projects.h"

namespace nns::graph {
namespace {

bool inside(const LayoutBox& outer, const LayoutBox& inner) {
  return inner.x >= outer.x && inner.y >= outer.y &&
         inner.x + inner.width <= outer.x + outer.width &&
         inner.y + inner.height <= outer.y + outer.height;
}

TEST(GraphLayout, ClustersHoldTheirMembersInOrderTopToBottom) {
  const Project p = test::residual_tower(3, 3);
  const Layout l = layout_graph(p);
  EXPECT_EQ(l.direction, "TB");
  const Graph& g = p.graph;
  for (const Node& n : g.nodes) {
    ASSERT_TRUE(l.boxes.count(n.id)) << n.name;
    for (NodeId m : n.members) EXPECT_TRUE(inside(l.boxes.at(n.id), l.boxes.at(m))) << g.at(m).name;
    if (n.type == "Sequential") {
      // Members keep their order along the flow.
      for (size_t i = 1; i < n.members.size(); ++i) {
        EXPECT_GT(l.boxes.at(n.members[i]).y, l.boxes.at(n.members[i - 1]).y);
      }
    }
  }
  // The residual Add beside its block, below the block's first member and above what follows.
  const LayoutBox add = l.boxes.at(g.find_by_name("add0")->id);
  const LayoutBox block = l.boxes.at(g.find_by_name("block0")->id);
  EXPECT_FALSE(add.x < block.x + block.width && block.x < add.x + add.width &&
               add.y < block.y + block.height && block.y < add.y + add.height);
  EXPECT_LT(add.y, l.boxes.at(g.find_by_name("b1_fc0")->id).y);
  EXPECT_EQ(add.width, kNodeWidth);
  EXPECT_EQ(add.height, kNodeHeight);
  // Every wire has a route.
  for (const Edge& e : g.edges) EXPECT_NE(l.route(e), nullptr);
}

TEST(GraphLayout, CollapsedGroupsAreOneBoxAndTheirMembersAreLeftOut) {
  Project p = test::residual_tower(3, 3);
  const NodeId block = p.graph.find_by_name("block1")->id;
  p.graph.at(block).collapsed = true;
  const Layout l = layout_graph(p, "LR");
  EXPECT_EQ(l.direction, "LR");
  EXPECT_EQ(l.boxes.at(block).width, kCollapsedGroupWidth);
  EXPECT_FALSE(l.boxes.count(p.graph.find_by_name("b1_fc0")->id));
  const Json j = layout_to_json(p, l);
  EXPECT_EQ(j["nodes"].size(), p.graph.nodes.size() - 3);
  EXPECT_EQ(j["nodes"][0]["name"], "x");
  EXPECT_EQ(j["nodes"][0]["width"], 160);
  // Left to right: x grows along the flow.
  EXPECT_LT(l.boxes.at(p.graph.find_by_name("x")->id).x,
            l.boxes.at(p.graph.find_by_name("stem")->id).x);
}

bool overlap(const LayoutBox& a, const LayoutBox& b) {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

// A level of over 400 boxes (the top level here holds 250 blocks and their Adds) is laid out
// directly by ranks rather than by dot (issue 31): the same rules hold, both ways.
TEST(GraphLayout, ALargeLevelKeepsTheRules) {
  for (const char* direction : {"TB", "LR"}) {
    SCOPED_TRACE(direction);
    const Project p = test::residual_tower(250, 3);
    const Layout l = layout_graph(p, direction);
    const Graph& g = p.graph;
    const bool tb = std::string(direction) == "TB";
    std::vector<const Node*> boxes;
    for (const Node& n : g.nodes) {
      ASSERT_TRUE(l.boxes.count(n.id)) << n.name;
      if (n.members.empty()) boxes.push_back(&n);
      for (NodeId m : n.members)
        EXPECT_TRUE(inside(l.boxes.at(n.id), l.boxes.at(m))) << g.at(m).name;
      for (size_t i = 1; i < n.members.size(); ++i) {
        const LayoutBox& a = l.boxes.at(n.members[i - 1]);
        const LayoutBox& b = l.boxes.at(n.members[i]);
        EXPECT_GT(tb ? b.y : b.x, tb ? a.y + a.height : a.x + a.width) << g.at(n.members[i]).name;
      }
    }
    for (size_t i = 0; i < boxes.size(); ++i) {
      for (size_t j = i + 1; j < boxes.size(); ++j) {
        EXPECT_FALSE(overlap(l.boxes.at(boxes[i]->id), l.boxes.at(boxes[j]->id)))
            << boxes[i]->name << " overlaps " << boxes[j]->name;
      }
    }
    // The Adds stand outside the ModuleList's frame, each after its block along the flow.
    const LayoutBox layers = l.boxes.at(g.find_by_name("layers")->id);
    for (int b = 0; b < 250; ++b) {
      const LayoutBox add = l.boxes.at(g.find_by_name("add" + std::to_string(b))->id);
      const LayoutBox block = l.boxes.at(g.find_by_name("block" + std::to_string(b))->id);
      EXPECT_FALSE(overlap(add, layers)) << b;
      EXPECT_GT(tb ? add.y : add.x, tb ? block.y + block.height : block.x + block.width) << b;
    }
    for (const Edge& e : g.edges) EXPECT_NE(l.route(e), nullptr);
    // The same project again is the same drawing (each level from the cache).
    const Layout again = layout_graph(p, direction);
    EXPECT_EQ(again.boxes, l.boxes);
  }
}

TEST(GraphLayout, ABadDirectionIsRefused) {
  EXPECT_THROW(layout_graph(test::residual_tower(1, 1), "BT"), ValueError);
}

}  // namespace
}  // namespace nns::graph
