// SPDX-License-Identifier: GPL-3.0-or-later
// The model diff: what differs between two projects node by node (engine/graph/diff.h), their
// union for the canvas, and both models on one batch (engine/train/model_diff.h). The pair of
// projects is tests/cli/diff_a.nns and diff_b.nns, which nnstudio-cli's tests diff too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/graph/builder.h"
#include "engine/graph/diff.h"
#include "engine/graph/layout.h"
#include "engine/train/model_diff.h"

namespace nns {
namespace {

using graph::DiffKind;
using graph::FieldChange;
using graph::NodeDiff;

graph::Project fixture(const std::string& name) {
  return graph::load_project(std::string(NNS_SOURCE_DIR) + "/tests/cli/" + name);
}

std::vector<std::string> changes_of(const NodeDiff& d) {
  std::vector<std::string> out;
  for (const FieldChange& c : d.changes) out.push_back(c.field + ": " + c.a + " -> " + c.b);
  return out;
}

// One NodeDiff as a line: "renamed fc2 dense Linear Linear".
std::string line(const NodeDiff& d) {
  return graph::diff_kind_name(d.kind) + " " + d.path_a + "|" + d.path_b + " " + d.type_a + "|" +
         d.type_b;
}

const NodeDiff& by_path(const graph::ProjectDiff& diff, const std::string& path) {
  for (const NodeDiff& d : diff.nodes) {
    if (d.path_a == path || (d.path_a.empty() && d.path_b == path)) return d;
  }
  throw std::runtime_error("no NodeDiff for " + path);
}

// diff_b.nns is diff_a.nns with fc2 renamed dense, fc3 widened from 16 to 32 outputs, the
// Sequential `block` (Linear + ReLU) removed and a ReLU act3 added after fc3.
TEST(ProjectDiff, FindsTheRenamedWidenedRemovedAndAddedNodes) {
  const graph::Project a = fixture("diff_a.nns"), b = fixture("diff_b.nns");
  const graph::ProjectDiff diff = graph::diff_projects(a, b);

  // Every node with a module, in A's order with the added one after the node before it in B;
  // the Input and Output nodes are the same and left out.
  std::vector<std::string> lines;
  for (const NodeDiff& d : diff.nodes) lines.push_back(line(d));
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "same fc1|fc1 Linear|Linear", "same act1|act1 ReLU|ReLU",
                       "renamed fc2|dense Linear|Linear", "same act2|act2 ReLU|ReLU",
                       "changed fc3|fc3 Linear|Linear", "added |act3 |ReLU",
                       "removed block| Sequential|", "removed block.0| Linear|",
                       "removed block.1| ReLU|", "changed head|head Linear|Linear"}));

  EXPECT_EQ(changes_of(by_path(diff, "fc2")), std::vector<std::string>{"name: fc2 -> dense"});
  EXPECT_EQ(
      changes_of(by_path(diff, "fc3")),
      (std::vector<std::string>{"option out_features: 16 -> 32", "output shape: [N, 16] -> [N, 32]",
                                "parameters: 272 -> 544"}));
  // Widening fc3 changes what head takes: head is changed too, rightly (its weight has another
  // shape), though its own output keeps its shape.
  EXPECT_EQ(changes_of(by_path(diff, "head")),
            (std::vector<std::string>{"option in_features: 16 -> 32", "parameters: 51 -> 99"}));
  for (const char* path : {"act3", "block", "block.0", "block.1"})
    EXPECT_TRUE(by_path(diff, path).changes.empty()) << path;

  const NodeDiff& renamed = by_path(diff, "fc2");
  EXPECT_EQ(renamed.a, a.graph.find_by_name("fc2")->id);
  EXPECT_EQ(renamed.b, b.graph.find_by_name("dense")->id);
  EXPECT_EQ(renamed.parameters_a, 272);
  EXPECT_EQ(renamed.parameters_b, 272);
  const NodeDiff& added = by_path(diff, "act3");
  EXPECT_EQ(added.a, 0);
  EXPECT_EQ(added.b, b.graph.find_by_name("act3")->id);
  const NodeDiff& removed = by_path(diff, "block");
  EXPECT_EQ(removed.b, 0);
  EXPECT_EQ(removed.parameters_a, 272);
  EXPECT_FALSE(removed.parameters_b.has_value());
  // A layer without weights has a module all the same: 0 parameters, not none.
  EXPECT_EQ(by_path(diff, "act1").parameters_a, 0);

  std::vector<std::string> differences;
  for (const NodeDiff* d : diff.differences()) differences.push_back(d->path_a + d->path_b);
  EXPECT_EQ(differences, (std::vector<std::string>{"fc2dense", "fc3fc3", "act3", "block", "block.0",
                                                   "block.1", "headhead"}));
  // The Input and Output nodes are matched, though they are no difference.
  EXPECT_EQ(diff.matched.size(), 8u);
}

TEST(ProjectDiff, ALayerInsertedIntoASequentialLeavesItsNeighboursTheSame) {
  const graph::Project a = fixture("diff_a.nns");
  graph::Project b = a;
  const graph::NodeId dropout = b.graph.add_node("Dropout", "drop", {{"p", 0.5}});
  graph::Node& block = b.graph.at(b.graph.find_by_name("block")->id);
  block.members.insert(block.members.begin() + 1, dropout);  // Linear, Dropout, ReLU

  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  ASSERT_EQ(diff.differences().size(), 1u);
  EXPECT_EQ(line(*diff.differences()[0]), "added |block.1 |Dropout");
  // The ReLU moved from index 1 to 2: the same layer, its path shifted.
  const NodeDiff& relu = by_path(diff, "block.1");
  EXPECT_EQ(relu.kind, DiffKind::Same);
  EXPECT_EQ(relu.path_b, "block.2");
}

TEST(ProjectDiff, AnInputOfAnotherShapeIsADifferenceAndThatModelCannotRunOnTheDataOfA) {
  const graph::Project a = fixture("diff_a.nns");
  graph::Project b = a;
  b.graph.at(b.graph.find_by_name("x")->id).options["shape"] = {3};
  b.graph.at(b.graph.find_by_name("fc1")->id).options["in_features"] = 3;

  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  std::vector<std::string> differences;
  for (const NodeDiff* d : diff.differences())
    differences.push_back(line(*d) + " " + changes_of(*d).front());
  EXPECT_EQ(differences,
            (std::vector<std::string>{"changed x|x Input|Input option shape: [2] -> [3]",
                                      "changed fc1|fc1 Linear|Linear option in_features: 2 -> 3"}));

  // A's data has two features: B's forward fails, and says so instead of throwing.
  const train::ModelDiff m =
      train::diff_models({a, nullptr, "", ""}, {b, nullptr, "", ""}, diff, 8);
  EXPECT_EQ(m.error.rfind("B: ", 0), 0u) << m.error;
  EXPECT_TRUE(m.modules.empty());
  EXPECT_EQ(m.batch, 8);
}

TEST(ModelDiff, AProjectAgainstItselfDoesNotDiverge) {
  const graph::Project a = fixture("diff_a.nns");
  const graph::ProjectDiff diff = graph::diff_projects(a, a);
  EXPECT_TRUE(diff.differences().empty());
  EXPECT_EQ(diff.nodes.size(), 9u);

  const train::ModelDiff m =
      train::diff_models({a, nullptr, "", ""}, {a, nullptr, "", ""}, diff, 0);
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.batch, 32);  // A's batch size
  EXPECT_EQ(m.data, "spirals");
  EXPECT_EQ(m.weights_a, "initial (seed 0)");
  EXPECT_TRUE(std::isfinite(m.loss_a));
  EXPECT_EQ(m.loss_a, m.loss_b);
  // Every module with an output, the group and its members included.
  ASSERT_EQ(m.modules.size(), 9u);
  for (const train::ModuleDiff& d : m.modules) {
    EXPECT_EQ(d.divergence, 0) << d.path_a;
    EXPECT_EQ(d.output_cosine, 1) << d.path_a;
    EXPECT_EQ(d.output_a.norm, d.output_b.norm) << d.path_a;
    EXPECT_GT(d.output_a.norm, 0) << d.path_a;
    // The input requires grad, so the first layers have a gradient as well.
    EXPECT_GT(d.grad_a.norm, 0) << d.path_a;
  }
  // Ties keep A's order.
  EXPECT_EQ(m.modules.front().path_a, "fc1");
  EXPECT_EQ(m.modules.back().path_a, "head");
}

TEST(ModelDiff, DropoutIsOffSoAModelAgreesWithItself) {
  graph::Project a = fixture("diff_a.nns");
  const graph::NodeId dropout = a.graph.add_node("Dropout", "drop", {{"p", 0.5}});
  graph::Node& block = a.graph.at(a.graph.find_by_name("block")->id);
  block.members.insert(block.members.begin() + 1, dropout);
  const train::ModelDiff m =
      train::diff_models({a, nullptr, "", ""}, {a, nullptr, "", ""}, graph::diff_projects(a, a), 0);
  ASSERT_EQ(m.error, "");
  ASSERT_EQ(m.modules.size(), 10u);
  for (const train::ModuleDiff& d : m.modules) EXPECT_EQ(d.divergence, 0) << d.path_a;
  EXPECT_EQ(m.loss_a, m.loss_b);
}

TEST(ModelDiff, AFineTunedLastLayerLeadsAndTheLayersBeforeItDoNotMove) {
  const graph::Project a = fixture("diff_a.nns");
  nn::StateDict before = graph::build_initial_model(a)->state_dict();
  nn::StateDict after;
  for (const auto& item : before) {
    after.insert(item.key(),
                 item.key() == "head.weight" ? item.value() + 0.1 : item.value().clone());
  }
  const graph::ProjectDiff diff = graph::diff_projects(a, a);
  const train::ModelDiff m = train::diff_models({a, &before, "before.safetensors", ""},
                                                {a, &after, "after.safetensors", ""}, diff, 16);
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(m.weights_b, "after.safetensors");
  ASSERT_EQ(m.modules.size(), 9u);

  const train::ModuleDiff& head = m.modules[0];
  EXPECT_EQ(head.path_a, "head");
  // ||0.1 everywhere in the 3 x 16 weight|| over the norm of head's weight and bias.
  double squares = 0;
  for (const char* key : {"head.weight", "head.bias"}) {
    for (double v : before.find(key)->to_vector<double>()) squares += v * v;
  }
  const double norm = std::sqrt(squares);
  EXPECT_NEAR(head.weight_change, 0.1 * std::sqrt(48.0) / norm, 1e-6);
  EXPECT_LT(head.output_cosine, 1);
  EXPECT_GT(head.divergence, 0);
  EXPECT_NE(head.output_a.mean, head.output_b.mean);

  // Before head nothing moved: the same outputs, the same weights (layers without weights have
  // none to compare), in A's order.
  std::vector<std::string> rest;
  for (size_t i = 1; i < m.modules.size(); ++i) {
    const train::ModuleDiff& d = m.modules[i];
    rest.push_back(d.path_a);
    EXPECT_EQ(d.output_cosine, 1) << d.path_a;
    EXPECT_EQ(d.divergence, 0) << d.path_a;
    EXPECT_TRUE(d.weight_change == 0 || std::isnan(d.weight_change)) << d.path_a;
    // Their gradients come back through the changed head.
    EXPECT_NE(d.grad_a.norm, d.grad_b.norm) << d.path_a;
  }
  EXPECT_EQ(rest, (std::vector<std::string>{"fc1", "act1", "fc2", "act2", "fc3", "block", "block.0",
                                            "block.1"}));
  EXPECT_EQ(m.modules[1].weight_change, 0);
  EXPECT_TRUE(std::isnan(m.modules[2].weight_change));  // act1 has no weights
}

TEST(ModelDiff, AStructuralChangeIsTheMostDivergent) {
  const graph::Project a = fixture("diff_a.nns"), b = fixture("diff_b.nns");
  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  const train::ModelDiff m =
      train::diff_models({a, nullptr, "", ""}, {b, nullptr, "", ""}, diff, 0);
  ASSERT_EQ(m.error, "");
  // The matched modules: fc1, act1, fc2/dense, act2, fc3, head.
  ASSERT_EQ(m.modules.size(), 6u);
  // fc3's outputs have other shapes: nothing to compare, as far apart as can be.
  EXPECT_EQ(m.modules[0].path_a, "fc3");
  EXPECT_TRUE(std::isnan(m.modules[0].output_cosine));
  EXPECT_EQ(m.modules[0].divergence, 1);
  EXPECT_EQ(m.modules[1].path_a, "head");
  EXPECT_GT(m.modules[1].divergence, 0);
  for (size_t i = 1; i < m.modules.size(); ++i)
    EXPECT_LE(m.modules[i].divergence, m.modules[i - 1].divergence);
  // The renamed layer's module is compared under both its paths.
  const auto dense = std::find_if(m.modules.begin(), m.modules.end(),
                                  [](const train::ModuleDiff& d) { return d.path_b == "dense"; });
  ASSERT_NE(dense, m.modules.end());
  EXPECT_EQ(dense->path_a, "fc2");
}

TEST(ProjectDiff, TheUnionHoldsAllOfAAndTheAddedNodesUnderFreshIds) {
  const graph::Project a = fixture("diff_a.nns"), b = fixture("diff_b.nns");
  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  const graph::UnionProject u = graph::union_project(a, b, diff);

  for (const graph::Node& n : a.graph.nodes) {
    const graph::Node* kept = u.project.graph.find(n.id);
    ASSERT_NE(kept, nullptr) << n.name;
    EXPECT_EQ(kept->name, n.name);
    EXPECT_EQ(kept->members, n.members);
  }
  ASSERT_EQ(u.added_ids.size(), 1u);
  const graph::NodeId act3 = u.added_ids[0].second;
  EXPECT_EQ(u.added_ids[0].first, b.graph.find_by_name("act3")->id);
  EXPECT_GE(act3, a.graph.next_id);
  EXPECT_EQ(u.project.graph.nodes.size(), a.graph.nodes.size() + 1);
  EXPECT_EQ(u.project.graph.at(act3).name, "act3");
  EXPECT_EQ(u.node_of(by_path(diff, "act3")), act3);
  EXPECT_EQ(u.node_of(by_path(diff, "block")), a.graph.find_by_name("block")->id);
  // Placed after fc3, as in B.
  const auto& nodes = u.project.graph.nodes;
  const auto at = [&](graph::NodeId id) {
    return std::find_if(nodes.begin(), nodes.end(),
                        [id](const graph::Node& n) { return n.id == id; }) -
           nodes.begin();
  };
  EXPECT_EQ(at(act3), at(a.graph.find_by_name("fc3")->id) + 1);

  // fc3 feeds act3 as in B; act3's wire into head is left out, since head already takes
  // block's.
  const graph::NodeId fc3 = a.graph.find_by_name("fc3")->id,
                      head = a.graph.find_by_name("head")->id;
  const auto& edges = u.project.graph.edges;
  EXPECT_NE(std::find(edges.begin(), edges.end(), graph::Edge{{fc3, "out"}, {act3, "in"}}),
            edges.end());
  EXPECT_EQ(u.project.graph.edge_into({head, "in"})->from.node, a.graph.find_by_name("block")->id);
  EXPECT_EQ(edges.size(), a.graph.edges.size() + 1);

  // Laid out: every node has a box, the added one apart from the others.
  EXPECT_EQ(u.project.layout_direction, "TB");
  const graph::Layout layout = graph::layout_graph(u.project);
  for (const graph::Node& n : nodes) EXPECT_TRUE(layout.boxes.count(n.id)) << n.name;
  EXPECT_EQ(layout.boxes.at(act3).x, u.project.graph.at(act3).x);
  EXPECT_EQ(layout.boxes.at(act3).y, u.project.graph.at(act3).y);
}

// B wires q into an added ReLU that feeds p, where A has p before q: both wires together would
// close a cycle with A's p -> q, so the second is left out.
TEST(ProjectDiff, TheUnionLeavesOutAWireThatWouldCloseACycle) {
  graph::Project a, b;
  for (graph::Project* p : {&a, &b}) {
    p->graph.add_node("Input", "x", {{"shape", {4}}});
    p->graph.add_node("Add", "p", {{"inputs", 2}});
    p->graph.add_node("ReLU", "q");
    p->graph.add_node("Output", "o");
  }
  const auto id = [](const graph::Project& p, const char* name) {
    return p.graph.find_by_name(name)->id;
  };
  a.graph.connect({id(a, "x"), "out"}, {id(a, "p"), "in0"});
  a.graph.connect({id(a, "p"), "out"}, {id(a, "q"), "in"});
  a.graph.connect({id(a, "q"), "out"}, {id(a, "o"), "in"});
  const graph::NodeId n = b.graph.add_node("ReLU", "n");
  b.graph.connect({id(b, "x"), "out"}, {id(b, "q"), "in"});
  b.graph.connect({id(b, "q"), "out"}, {n, "in"});
  b.graph.connect({n, "out"}, {id(b, "p"), "in1"});
  b.graph.connect({id(b, "x"), "out"}, {id(b, "p"), "in0"});
  b.graph.connect({id(b, "p"), "out"}, {id(b, "o"), "in"});

  const graph::ProjectDiff diff = graph::diff_projects(a, b);
  ASSERT_EQ(diff.differences().size(), 1u);
  EXPECT_EQ(line(*diff.differences()[0]), "added |n |ReLU");
  const graph::UnionProject u = graph::union_project(a, b, diff);
  const graph::NodeId added = u.node_of(*diff.differences()[0]);
  const auto& edges = u.project.graph.edges;
  EXPECT_NE(std::find(edges.begin(), edges.end(), graph::Edge{{id(a, "q"), "out"}, {added, "in"}}),
            edges.end());
  EXPECT_EQ(u.project.graph.edge_into({id(a, "p"), "in1"}), nullptr);
  EXPECT_EQ(edges.size(), a.graph.edges.size() + 1);
}

}  // namespace
}  // namespace nns
