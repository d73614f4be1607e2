// SPDX-License-Identifier: GPL-3.0-or-later
// Repeated blocks folded into one box xN (issue 29): which members form runs, and how a folded
// group is laid out and saved.
#include <gtest/gtest.h>

#include "engine/graph/layout.h"
#include "engine/graph/repeats.h"
#include "support/generated_projects.h"

namespace nns::graph {
namespace {

// x -> body: Sequential[five equal blocks Sequential[Linear(8, 8), ReLU], one Linear(8, 3)]
// -> y.
Project stack_of_blocks() {
  Project p;
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {8}}});
  const NodeId body = g.add_node("Sequential", "body");
  for (int b = 0; b < 5; ++b) {
    const NodeId block = g.add_node("Sequential", "block" + std::to_string(b));
    const NodeId fc =
        g.add_node("Linear", "fc" + std::to_string(b), {{"in_features", 8}, {"out_features", 8}});
    const NodeId act = g.add_node("ReLU", "act" + std::to_string(b));
    g.at(block).members = {fc, act};
    g.at(body).members.push_back(block);
  }
  const NodeId head = g.add_node("Linear", "head", {{"in_features", 8}, {"out_features", 3}});
  g.at(body).members.push_back(head);
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {body, "in"});
  g.connect({body, "out"}, {y, "in"});
  return p;
}

TEST(GraphRepeats, EqualMembersWiredOneToTheNextFormARun) {
  Project p = stack_of_blocks();
  const Node& body = *p.graph.find_by_name("body");
  std::vector<RepeatRun> runs = repeat_runs(p, body);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].members, std::vector<NodeId>(body.members.begin(), body.members.begin() + 5));
  // Another option in the middle block splits the run in two.
  p.graph.at(p.graph.find_by_name("fc2")->id).options["bias"] = false;
  runs = repeat_runs(p, *p.graph.find_by_name("body"));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].members.size(), 2u);
  EXPECT_EQ(runs[1].members.size(), 2u);
  // A ModuleList whose blocks are fed by residual Adds outside it holds no run: folding it
  // would hide the blocks the Adds read.
  Project tower = test::residual_tower(6, 3);
  EXPECT_TRUE(repeat_runs(tower, *tower.graph.find_by_name("layers")).empty());
  EXPECT_EQ(fold_all_repeats(tower), 0);
}

TEST(GraphRepeats, LayersInARowAreEqualWhenTheirTypesAndOptionsAre) {
  // ModuleList[Linear(8, 8), Linear(8, 8), Linear(8, 4), ReLU, ReLU, Tanh]: layers are compared
  // as they are (no members to write out), type first, then options.
  Project p;
  Graph& g = p.graph;
  const NodeId seq = g.add_node("ModuleList", "list");
  auto linear = [&](const char* name, int out) {
    return g.add_node("Linear", name, {{"in_features", 8}, {"out_features", out}});
  };
  g.at(seq).members = {linear("a", 8),          linear("b", 8),          linear("c", 4),
                       g.add_node("ReLU", "d"), g.add_node("ReLU", "e"), g.add_node("Tanh", "f")};
  const std::vector<NodeId> m = g.at(seq).members;
  const std::vector<RepeatRun> runs = repeat_runs(p, g.at(seq));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].members, std::vector<NodeId>({m[0], m[1]}));
  EXPECT_EQ(runs[1].members, std::vector<NodeId>({m[3], m[4]}));
  // A wire into the middle of the run from outside it ends the run there.
  const NodeId x = g.add_node("Input", "x", {{"shape", {8}}});
  g.connect({x, "out"}, {m[4], "in"});
  const std::vector<RepeatRun> fed = repeat_runs(p, g.at(seq));
  ASSERT_EQ(fed.size(), 1u);
  EXPECT_EQ(fed[0].members, std::vector<NodeId>({m[0], m[1]}));
}

TEST(GraphRepeats, AFoldedGroupDrawsARunAsItsFirstMemberMarkedWithItsSize) {
  Project p = stack_of_blocks();
  EXPECT_EQ(fold_all_repeats(p), 1);
  const Node& body = *p.graph.find_by_name("body");
  EXPECT_TRUE(body.folded);
  const NodeId first = body.members[0], last = body.members[4], head = body.members[5];
  const Layout l = layout_graph(p);
  EXPECT_EQ(l.repeats.at(first), 5);
  EXPECT_TRUE(l.boxes.count(first));
  EXPECT_TRUE(l.boxes.count(p.graph.find_by_name("fc0")->id));
  for (int b = 1; b < 5; ++b) {
    EXPECT_FALSE(l.boxes.count(body.members[b])) << b;
    EXPECT_FALSE(l.boxes.count(p.graph.find_by_name("fc" + std::to_string(b))->id)) << b;
  }
  // The chain goes on from the run's box to the member after the run.
  const Layout::RouteKey after{last, "out", head, "in"};
  ASSERT_TRUE(l.route_index.count(after));
  const LayoutRoute& route = l.routes[l.route_index.at(after)];
  const LayoutBox& from = l.boxes.at(first);
  EXPECT_NEAR(route.points.front().y, from.y + from.height / 2, from.height);
  EXPECT_LT(l.boxes.at(first).y, l.boxes.at(head).y);
  const Json j = layout_to_json(p, l);
  int repeats = 0;
  for (const Json& n : j["nodes"]) repeats += n.value("repeat", 0);
  EXPECT_EQ(repeats, 5);
  // Saved and read back folded.
  const Project again = parse_project(project_to_json(p));
  EXPECT_TRUE(again.graph.find_by_name("body")->folded);
  // shown_node: a hidden repeat and what it holds show as the run's first member.
  const FoldedRepeats folds = folded_repeats(p);
  const auto parents = parent_index(p.graph);
  EXPECT_EQ(shown_node(p.graph, parents, folds, p.graph.find_by_name("act3")->id), first);
  EXPECT_EQ(shown_node(p.graph, parents, folds, head), head);
  // Collapsed, the group is one box and folds nothing.
  p.graph.at(body.id).collapsed = true;
  EXPECT_TRUE(folded_repeats(p).empty());
}

}  // namespace
}  // namespace nns::graph
