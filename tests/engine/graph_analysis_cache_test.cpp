// SPDX-License-Identifier: GPL-3.0-or-later
// analyze() with an AnalysisCache (issue 31: what an edit did not touch is not worked out
// again) gives exactly what a fresh analysis gives: every port's shape and every problem, in
// the same order, after each of many random edits of the test models and the examples (options
// made wrong and right again, renames to taken names, wires cut and made, types changed,
// nodes added and removed, a block's inside changed); reanalyze() keeps one up to date in
// place and says which nodes changed.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/graph/builder.h"
#include "engine/graph/edit.h"
#include "graph_test_models.h"
#include "support/generated_projects.h"

namespace nns::test {
namespace {

using graph::Graph;
using graph::NodeId;
using graph::Project;

void expectSame(const graph::Analysis& cached, const graph::Analysis& fresh,
                const std::string& at) {
  ASSERT_EQ(cached.output_shapes, fresh.output_shapes) << at;
  auto list = [](const graph::Analysis& a) {
    std::string out;
    for (const graph::Problem& p : a.problems)
      out += "\n  " + std::to_string(p.node) + " " + p.port + ": " + p.message;
    return out;
  };
  ASSERT_EQ(cached.problems.size(), fresh.problems.size())
      << at << "\ncached:" << list(cached) << "\nfresh:" << list(fresh);
  for (size_t i = 0; i < fresh.problems.size(); ++i) {
    const graph::Problem& a = cached.problems[i];
    const graph::Problem& b = fresh.problems[i];
    EXPECT_EQ(a.node, b.node) << at << " problem " << i;
    EXPECT_EQ(a.port, b.port) << at << " problem " << i;
    EXPECT_EQ(a.message, b.message) << at << " problem " << i;
    EXPECT_EQ(a.block, b.block) << at << " problem " << i;
  }
}

// The test models (graph_test_models.h), a small tower and the examples: layers, groups, a
// switch ModuleDict, Refs, custom blocks with arguments.
std::vector<std::pair<std::string, Project>> testProjects() {
  std::vector<std::pair<std::string, Project>> projects = {
      {"Net", net_project()},
      {"BigNet", bignet_project()},
      {"DynamicNet", dynamicnet_project("relu")},
      {"Features", features_project()},
      {"Residual", residual_project()},
      {"Cnn", cnn_project()},
      {"Tower", residual_tower(6, 4)},
  };
  for (const char* example : {"spirals.nns", "digits.nns", "dynamic_net.nns", "residual_mlp.nns",
                              "reverse_transformer.nns", "sine_lstm.nns"}) {
    projects.emplace_back(example, graph::load_project(std::string(NNS_SOURCE_DIR) +
                                                       "/resources/examples/" + example));
  }
  return projects;
}

// One random edit of the top-level graph (or of the first block's); what the graph refuses
// (a cycle, a taken port) changes nothing.
void randomEdit(Project& p, std::mt19937& rng) {
  Graph& g = p.graph;
  auto pick = [&](const Graph& graph) -> const graph::Node& {
    return graph.nodes[std::uniform_int_distribution<size_t>(0, graph.nodes.size() - 1)(rng)];
  };
  const graph::Node& n = pick(g);
  const NodeId id = n.id;
  try {
    switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
      case 0:  // an option to a wrong value, or a size that changes what follows
        if (n.options.is_object() && !n.options.empty()) {
          auto it = n.options.begin();
          std::advance(it, std::uniform_int_distribution<size_t>(0, n.options.size() - 1)(rng));
          const int choice = std::uniform_int_distribution<int>(0, 3)(rng);
          g.at(id).options[it.key()] = choice == 0   ? graph::Json("wrong")
                                       : choice == 1 ? graph::Json(-3)
                                       : choice == 2 ? graph::Json("$missing")
                                                     : graph::Json(7);
        }
        break;
      case 1:  // an option the type does not have, then the node's options back to its type's
        g.at(id).options["nonsense"] = 1;
        break;
      case 2:
        if (const graph::NodeType* t = graph::find_node_type(n.type)) {
          g.at(id).options = t->default_options();
        }
        break;
      case 3:  // a name taken by another node, or an invalid one
        g.at(id).name = std::uniform_int_distribution<int>(0, 1)(rng) ? pick(g).name : "a.b";
        break;
      case 4:  // a wire cut
        if (!g.edges.empty()) {
          const graph::Edge e =
              g.edges[std::uniform_int_distribution<size_t>(0, g.edges.size() - 1)(rng)];
          g.disconnect(e.to);
        }
        break;
      case 5: {  // a wire made into a free port
        const graph::Node& to = pick(g);
        if (auto ports = graph::node_ports(to)) {
          for (const std::string& port : ports->inputs) {
            if (!g.edge_into({to.id, port})) {
              g.connect({id, "out"}, {to.id, port});
              break;
            }
          }
        }
        break;
      }
      case 6:  // another type
        g.at(id).type = std::uniform_int_distribution<int>(0, 1)(rng) ? "ReLU" : "Tanh";
        break;
      case 7:
        if (g.nodes.size() > 3) g.remove_node(id);
        break;
      case 8: {
        const NodeId added = g.add_node("Linear", graph::unique_name(g, "extra"),
                                        {{"in_features", 16}, {"out_features", 4}});
        g.connect({id, "out"}, {added, "in"});
        break;
      }
      case 9:  // inside a block: its instances' shapes and problems change with it
        if (!p.blocks.empty() && !p.blocks[0].graph.nodes.empty()) {
          Graph& inner = p.blocks[0].graph;
          graph::Node& m = inner.at(pick(inner).id);
          if (m.type == "Linear") m.options["out_features"] = 5;
          if (m.type != "Input" && m.type != "Output") m.name += "_";
        }
        break;
    }
  } catch (const Error&) {
    // Refused by the graph: nothing changed.
  }
}

TEST(GraphAnalysisCache, EveryEditGivesWhatAFreshAnalysisGives) {
  std::vector<std::pair<std::string, Project>> projects = testProjects();
  std::mt19937 rng(31);
  for (auto& [name, project] : projects) {
    graph::AnalysisCache cache;
    expectSame(graph::analyze(project, &cache), graph::analyze(project), name + " as made");
    // The second analysis takes everything from the cache.
    expectSame(graph::analyze(project, &cache), graph::analyze(project), name + " again");
    for (int step = 0; step < 60; ++step) {
      randomEdit(project, rng);
      expectSame(graph::analyze(project, &cache), graph::analyze(project),
                 name + " after edit " + std::to_string(step));
      if (HasFatalFailure()) return;
    }
  }
}

// The nodes whose shapes or problems differ between two fresh analyses: what reanalyze() must
// report as changed.
std::set<NodeId> differingNodes(const graph::Analysis& a, const graph::Analysis& b) {
  std::set<NodeId> out;
  std::set<NodeId> nodes;
  for (const auto& [id, ports] : a.output_shapes) nodes.insert(id);
  for (const auto& [id, ports] : b.output_shapes) nodes.insert(id);
  for (NodeId id : nodes) {
    const auto i = a.output_shapes.find(id);
    const auto j = b.output_shapes.find(id);
    if (i == a.output_shapes.end() || j == b.output_shapes.end() || i->second != j->second) {
      out.insert(id);
    }
  }
  auto byNode = [](const graph::Analysis& x) {
    std::map<NodeId, std::vector<std::string>> m;
    for (const graph::Problem& p : x.problems)
      if (p.block.empty()) m[p.node].push_back(p.port + ": " + p.message);
    return m;
  };
  const auto pa = byNode(a);
  const auto pb = byNode(b);
  for (const auto& [id, list] : pa) {
    const auto j = pb.find(id);
    if (j == pb.end() || j->second != list) out.insert(id);
  }
  for (const auto& [id, list] : pb) {
    if (!pa.count(id)) out.insert(id);
  }
  out.erase(0);
  return out;
}

// reanalyze() keeps one analysis up to date in place (the window's document): after every
// edit it equals a fresh analysis, and what it reports changed is exactly the nodes whose
// shapes or problems differ from the analysis before the edit. Trial analyses on the same
// cache between edits (a wire being dragged) do not upset it.
TEST(GraphAnalysisCache, ReanalysisInPlaceGivesAFreshAnalysisAndWhatChanged) {
  std::vector<std::pair<std::string, Project>> projects = testProjects();
  std::mt19937 rng(27);
  size_t reported = 0;
  for (auto& [name, project] : projects) {
    graph::AnalysisCache cache;
    graph::Analysis kept;
    std::set<NodeId> changed;
    graph::reanalyze(project, cache, kept, changed);
    graph::Analysis fresh = graph::analyze(project);
    expectSame(kept, fresh, name + " as made");
    EXPECT_EQ(changed, differingNodes({}, fresh)) << name;
    for (int step = 0; step < 60; ++step) {
      if (step % 7 == 3) {
        Project trial = project;
        randomEdit(trial, rng);
        graph::analyze(trial, &cache);
      }
      randomEdit(project, rng);
      changed.clear();
      graph::reanalyze(project, cache, kept, changed);
      graph::Analysis after = graph::analyze(project);
      const std::string at = name + " after edit " + std::to_string(step);
      expectSame(kept, after, at);
      EXPECT_EQ(changed, differingNodes(fresh, after)) << at;
      reported += changed.size();
      fresh = std::move(after);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(reported, 100u);  // the edits changed something to report
}

TEST(GraphAnalysisCache, AnEditOfTheFirstLayerReachesEveryShapeAfterIt) {
  Project p = residual_tower(20, 4);
  graph::AnalysisCache cache;
  graph::analyze(p, &cache);
  // The stem's width changes every block's input: the cached shapes must not survive it.
  Graph& g = p.graph;
  g.at(g.find_by_name("stem")->id).options["out_features"] = 8;
  const graph::Analysis cached = graph::analyze(p, &cache);
  expectSame(cached, graph::analyze(p), "stem 2 -> 8");
  EXPECT_FALSE(cached.problems.empty());  // the blocks' Linear(16, 16) no longer fit
  g.at(g.find_by_name("stem")->id).options["out_features"] = 16;
  const graph::Analysis fixed = graph::analyze(p, &cache);
  expectSame(fixed, graph::analyze(p), "stem back to 16");
  EXPECT_TRUE(fixed.problems.empty());
}

}  // namespace
}  // namespace nns::test

namespace nns::test {
namespace {

// parameter_count (what a collapsed group's box shows) against the built model's modules: every
// top-level node of the test models and the examples, layers, groups and block instances.
TEST(GraphParameterCount, EveryNodeCountsWhatItsBuiltModuleHolds) {
  const std::vector<std::pair<std::string, graph::Project>> projects = testProjects();
  size_t counted = 0;
  for (const auto& [name, project] : projects) {
    const auto model = graph::build_model(project);
    std::unordered_map<std::string, int64_t> memo;
    for (const graph::Node& n : project.graph.nodes) {
      const nn::ModulePtr module = model->node_module(n.id);
      if (!module) continue;
      int64_t expected = 0;
      for (const auto& [key, p] : module->named_parameters()) expected += p.numel();
      const std::optional<int64_t> count = graph::parameter_count(project, n.id, memo);
      ASSERT_TRUE(count.has_value()) << name << ": " << n.name;
      EXPECT_EQ(*count, expected) << name << ": " << n.name;
      ++counted;
    }
  }
  EXPECT_GT(counted, 40u);
}

TEST(GraphParameterCount, OptionsThatDoNotCheckGiveNoCount) {
  graph::Project p = residual_tower(2, 4);
  graph::Graph& g = p.graph;
  std::unordered_map<std::string, int64_t> memo;
  const graph::NodeId block = g.find_by_name("block0")->id;
  // Linear, ReLU, Linear, Linear: three Linear(16, 16).
  EXPECT_EQ(graph::parameter_count(p, block, memo), 3 * (16 * 16 + 16));
  g.at(g.find_by_name("b0_fc0")->id).options["out_features"] = "wide";
  EXPECT_FALSE(graph::parameter_count(p, block, memo).has_value());
  EXPECT_FALSE(graph::parameter_count(p, 9999, memo).has_value());
}

}  // namespace
}  // namespace nns::test
