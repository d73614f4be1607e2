// SPDX-License-Identifier: GPL-3.0-or-later
// The builder: graph specs of PyTorch models (tests/fixtures/areas/graph.py) give the same
// repr, parameter, buffer and state-dict names, and with PyTorch's weights loaded the same
// outputs and gradients; analyze() reports every problem at its node and port.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/graph/builder.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "graph_test_models.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

using graph::build_model;
using graph::GraphError;
using graph::GraphModule;
using graph::Problem;

const Fixtures& fx() {
  return Fixtures::load("graph");
}

template <class T>
std::string names(const nn::NamedList<T>& list) {
  std::string out;
  for (const auto& [name, value] : list) out += (out.empty() ? "" : "\n") + name;
  return out;
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : "\n") + k;
  return out;
}

// Builds the project, checks names and repr against PyTorch's, and loads PyTorch's weights.
std::shared_ptr<GraphModule> build_like_torch(const Project& p, const std::string& name) {
  auto model = build_model(p);
  EXPECT_EQ(model->repr(), fx().string(name + ".repr"));
  EXPECT_EQ(names(model->named_parameters()), fx().string(name + ".named_parameters"));
  EXPECT_EQ(names(model->named_buffers()), fx().string(name + ".named_buffers"));
  EXPECT_EQ(joined(model->state_dict().keys()), fx().string(name + ".state_dict"));
  nn::StateDict sd;
  for (const auto& item : model->state_dict())
    sd.insert(item.key(), fx().tensor(name + ".sd." + item.key()).to_tensor());
  model->load_state_dict(sd);
  return model;
}

Tensor input(const std::string& name) {
  return fx().tensor(name + ".x").to_tensor();
}

TEST(GraphBuilderTest, SeedNetMatchesPyTorch) {
  auto model = build_like_torch(net_project(), "net");
  EXPECT_TRUE(all_close((*model)(input("net")), fx().tensor("net.out")));
}

TEST(GraphBuilderTest, SeedBigNetNestsBlocksAsModules) {
  auto model = build_like_torch(bignet_project(), "bignet");
  EXPECT_EQ(model->get_submodule("net")->repr(), "Net(\n  (l0): MyLinear()\n  (l1): MyLinear()\n)");
  EXPECT_TRUE(all_close((*model)(input("bignet")), fx().tensor("bignet.out")));
}

TEST(GraphBuilderTest, SeedDynamicNetSwitchesByKey) {
  for (const std::string act : {"relu", "lrelu"}) {
    auto model = build_like_torch(dynamicnet_project(act), "dynamicnet");
    EXPECT_TRUE(all_close((*model)(input("dynamicnet")), fx().tensor("dynamicnet.out." + act)))
        << act;
  }
}

TEST(GraphBuilderTest, SequentialFeaturesNamesMembersByIndex) {
  const Project p = features_project();
  auto model = build_like_torch(p, "features");
  EXPECT_EQ(model->state_dict().keys().front(), "features.0.weight");
  EXPECT_TRUE(all_close((*model)(input("features")), fx().tensor("features.out")));
  const NodeId fc2 = p.graph.find_by_name("fc2")->id;
  EXPECT_EQ(model->module_name(fc2), "features.2");
  EXPECT_EQ(model->node_module(fc2), model->get_submodule("features.2"));
  EXPECT_EQ(model->node_module(p.graph.find_by_name("x")->id), nullptr);
}

TEST(GraphBuilderTest, ResidualMlpWithAddAndRefsMatchesOutputsAndGradients) {
  auto model = build_like_torch(residual_project(), "residual");
  Tensor x = input("residual");
  EXPECT_TRUE(all_close((*model)(x), fx().tensor("residual.out")));
  x.requires_grad_(true);
  (*model)(x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), fx().tensor("residual.grad.x")));
  EXPECT_TRUE(all_close(model->get_parameter("fc_in.weight").grad(),
                        fx().tensor("residual.grad.fc_in.weight")));
}

TEST(GraphBuilderTest, RefCallsRunTheTargetsHooksAgain) {
  auto model = build_model(residual_project());
  int calls = 0;
  auto handle = model->get_submodule("act")->register_forward_hook(
      [&calls](nn::Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) {
        ++calls;
        return std::nullopt;
      });
  (*model)(randn({2, 4}));
  EXPECT_EQ(calls, 3);
}

TEST(GraphBuilderTest, CnnWithBatchNormMatchesInEvalAndTrainMode) {
  auto model = build_like_torch(cnn_project(), "cnn");
  model->eval();
  EXPECT_TRUE(all_close((*model)(input("cnn")), fx().tensor("cnn.out.eval"), 1e-5, 1e-6));
  model->train();
  EXPECT_TRUE(all_close((*model)(input("cnn")), fx().tensor("cnn.out.train"), 1e-5, 1e-6));
  EXPECT_TRUE(
      all_close(model->get_buffer("bn1.running_mean"), fx().tensor("cnn.out.train.running_mean")));
}

TEST(GraphBuilderTest, ObserverSeesEveryNodeOutput) {
  const Project p = residual_project();
  auto model = build_model(p);
  std::vector<NodeId> seen;
  model->node_output_observer = [&seen](NodeId id, const std::vector<Tensor>& out) {
    EXPECT_EQ(out.size(), 1u);
    seen.push_back(id);
  };
  (*model)(randn({2, 4}));
  EXPECT_EQ(seen.size(), p.graph.nodes.size() - 1);  // all but the Output node
}

TEST(GraphBuilderTest, MultipleInputsAndOutputsInNodeOrder) {
  Project p;
  Graph& g = p.graph;
  const NodeId b = g.add_node("Input", "b", {{"shape", {3}}});
  const NodeId a = g.add_node("Input", "a", {{"shape", {2}}});
  const NodeId cat = g.add_node("Concat", "cat", {{"inputs", 2}, {"dim", 1}});
  const NodeId sum = g.add_node("Output", "sum");
  const NodeId first = g.add_node("Output", "first");
  g.connect({a, "out"}, {cat, "in0"});
  g.connect({b, "out"}, {cat, "in1"});
  g.connect({cat, "out"}, {sum, "in"});
  g.connect({b, "out"}, {first, "in"});
  auto model = build_model(p);
  const Tensor tb = randn({2, 3}), ta = randn({2, 2});
  const std::vector<Tensor> out = (*model)(std::vector<Tensor>{tb, ta});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sizes(), (Shape{2, 5}));
  EXPECT_TRUE(out[1].is_same(tb));
  EXPECT_THROW((*model)(tb), ValueError);
  try {
    (*model)(std::vector<Tensor>{tb});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 2 input tensor(s), one per Input node, got 1"),
              std::string::npos);
  }
}

Project scale_shift_project() {
  Project p;
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {3}}});
  const NodeId scale = g.add_node("Parameter", "scale", {{"shape", {3}}, {"init", "ones"}});
  const NodeId shift =
      g.add_node("Buffer", "shift", {{"shape", {3}}, {"init", "zeros"}, {"persistent", false}});
  const NodeId mul = g.add_node("Mul", "mul");
  const NodeId add = g.add_node("Add", "add");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {mul, "in0"});
  g.connect({scale, "out"}, {mul, "in1"});
  g.connect({mul, "out"}, {add, "in0"});
  g.connect({shift, "out"}, {add, "in1"});
  g.connect({add, "out"}, {y, "in"});
  return p;
}

TEST(GraphBuilderTest, ParameterAndBufferNodesRegisterOnTheModel) {
  auto model = build_model(scale_shift_project());
  EXPECT_EQ(names(model->named_parameters()), "scale");
  EXPECT_EQ(names(model->named_buffers()), "shift");
  EXPECT_EQ(joined(model->state_dict().keys()), "scale");
  EXPECT_FALSE(model->is_persistent_buffer("shift"));
  // Loading with assign replaces the tensor; forward uses the new one.
  nn::StateDict sd;
  sd.insert("scale", full({3}, 2.0));
  model->load_state_dict(sd, true, true);
  EXPECT_EQ((*model)(ones({1, 3})).to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

// ---- Analysis ---------------------------------------------------------------------------------

bool has_problem(const std::vector<Problem>& problems, NodeId node, const std::string& port,
                 const std::string& text) {
  for (const Problem& p : problems) {
    if (p.node == node && p.port == port && p.message.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string all(const std::vector<Problem>& problems) {
  std::string out;
  for (const Problem& p : problems)
    out += "[" + p.block + ":" + std::to_string(p.node) + "." + p.port + "] " + p.message + "\n";
  return out;
}

TEST(GraphBuilderTest, AnalyzeInfersEveryPortShape) {
  const Project p = cnn_project();
  const graph::Analysis a = graph::analyze(p);
  ASSERT_TRUE(a.ok()) << all(a.problems);
  auto shape = [&](const char* name) {
    return a.output_shapes.at(p.graph.find_by_name(name)->id).at("out");
  };
  EXPECT_EQ(shape("x"), (graph::SymShape{-1, 1, 8, 8}));
  EXPECT_EQ(shape("conv1"), (graph::SymShape{-1, 4, 8, 8}));
  EXPECT_EQ(shape("pool"), (graph::SymShape{-1, 4, 4, 4}));
  EXPECT_EQ(shape("flatten"), (graph::SymShape{-1, 64}));
  EXPECT_EQ(graph::shape_str(shape("fc")), "[N, 10]");
  // Sequential members get their shapes too.
  const Project f = features_project();
  const graph::Analysis af = graph::analyze(f);
  EXPECT_EQ(af.output_shapes.at(f.graph.find_by_name("fc2")->id).at("out"),
            (graph::SymShape{-1, 8}));
}

TEST(GraphBuilderTest, ShapeMismatchNamesNodeAndPort) {
  Project p = features_project();
  p.graph.at(p.graph.find_by_name("head")->id).options["in_features"] = 5;
  const graph::Analysis a = graph::analyze(p);
  const NodeId head = p.graph.find_by_name("head")->id;
  EXPECT_TRUE(has_problem(a.problems, head, "in",
                          "Linear 'head': input 'in' has shape [N, 8], expected [N, *, 5] (last "
                          "dim = in_features)"))
      << all(a.problems);
  try {
    build_model(p);
    FAIL();
  } catch (const GraphError& e) {
    EXPECT_EQ(e.problems.size(), 1u);
    EXPECT_EQ(std::string(e.what()),
              "Features: the graph has 1 problem: Linear 'head': input 'in' has shape [N, 8], "
              "expected [N, *, 5] (last dim = in_features)");
  }
}

TEST(GraphBuilderTest, CollectsEveryProblemAtOnce) {
  Project p;
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId bad_type = g.add_node("Linaer", "fc0");
  const NodeId bad_option = g.add_node("Linear", "fc1", {{"in_features", "four"}});
  const NodeId unknown_option = g.add_node("ReLU", "relu", {{"inplace", true}});
  const NodeId dup = g.add_node("Linear", "fc1", {{"in_features", 4}, {"out_features", 2}});
  const NodeId add = g.add_node("Add", "add");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {dup, "in"});
  g.connect({dup, "out"}, {add, "in0"});
  g.connect({add, "out"}, {y, "in"});
  const graph::Analysis a = graph::analyze(p);
  EXPECT_TRUE(has_problem(a.problems, bad_type, "",
                          "node 'fc0': unknown node type 'Linaer'; did you mean 'Linear'?"))
      << all(a.problems);
  EXPECT_TRUE(has_problem(a.problems, bad_option, "",
                          "Linear 'fc1': Linear option 'in_features': expected an integer >= 0, "
                          "got \"four\""))
      << all(a.problems);
  EXPECT_TRUE(
      has_problem(a.problems, unknown_option, "", "ReLU has no option 'inplace'; it takes none"));
  EXPECT_TRUE(has_problem(a.problems, dup, "", "duplicate attribute name 'fc1'"));
  EXPECT_TRUE(has_problem(a.problems, add, "in1", "Add 'add': input 'in1' is not connected"));
  EXPECT_TRUE(has_problem(a.problems, unknown_option, "in", "input 'in' is not connected"));
  EXPECT_THROW(build_model(p), GraphError);
}

TEST(GraphBuilderTest, CycleIsReportedWithItsPath) {
  Project p;
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId add = g.add_node("Add", "add");
  const NodeId a = g.add_node("ReLU", "a");
  const NodeId b = g.add_node("Tanh", "b");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {add, "in0"});
  chain(g, {add, a, b, y});
  // connect() refuses cycles; a file can still hold one.
  g.edges.push_back({{b, "out"}, {add, "in1"}});
  const graph::Analysis a_ = graph::analyze(p);
  EXPECT_TRUE(has_problem(a_.problems, add, "", "the graph has a cycle: add -> a -> b -> add"))
      << all(a_.problems);
}

TEST(GraphBuilderTest, GroupRules) {
  Project p = dynamicnet_project("gelu");
  const NodeId acts = p.graph.find_by_name("activations")->id;
  graph::Analysis a = graph::analyze(p);
  EXPECT_TRUE(has_problem(a.problems, acts, "",
                          "ModuleDict 'activations': the active key 'gelu' is none of its "
                          "members' (lrelu, relu)"))
      << all(a.problems);

  Project f = features_project();
  Graph& g = f.graph;
  const NodeId relu = g.find_by_name("relu")->id;
  g.edges.push_back({{g.find_by_name("x")->id, "out"}, {relu, "in"}});
  a = graph::analyze(f);
  EXPECT_TRUE(has_problem(a.problems, relu, "",
                          "ReLU 'relu' has an edge, but it is run by its group Sequential "
                          "'features': connect the group's ports instead"))
      << all(a.problems);

  Project q = features_project();
  const NodeId add = q.graph.add_node("Add", "add");
  q.graph.at(q.graph.find_by_name("features")->id).members.push_back(add);
  a = graph::analyze(q);
  EXPECT_TRUE(has_problem(a.problems, add, "",
                          "Add 'add' cannot be a member of Sequential 'features': a group holds "
                          "modules"))
      << all(a.problems);
}

TEST(GraphBuilderTest, BlockArgumentsAndRecursion) {
  Project p = net_project();
  p.graph.at(p.graph.find_by_name("l1")->id).options = {{"in_features", 3}, {"width", 2}};
  graph::Analysis a = graph::analyze(p);
  EXPECT_TRUE(has_problem(a.problems, p.graph.find_by_name("l1")->id, "",
                          "block 'MyLinear' has no argument 'width'; its arguments are: "
                          "in_features, out_features"))
      << all(a.problems);

  // A shape mismatch inside a block is reported at the block's node, with the block named.
  Project q = net_project();
  q.graph.at(q.graph.find_by_name("l1")->id).options = my_linear(2, 1);
  a = graph::analyze(q);
  ASSERT_EQ(a.problems.size(), 1u) << all(a.problems);
  EXPECT_EQ(a.problems[0].block, "MyLinear");
  EXPECT_EQ(a.problems[0].port, "in1");
  EXPECT_NE(a.problems[0].message.find("MatMul 'matmul': input 'in1' has shape [2, 1]"),
            std::string::npos)
      << a.problems[0].message;

  Project r = net_project();
  graph::BlockDef& b = r.blocks[0];
  const NodeId inner = b.graph.add_node("MyLinear", "again", my_linear(4, 3));
  b.graph.connect({b.graph.find_by_name("in")->id, "out"}, {inner, "in"});
  a = graph::analyze(r);
  EXPECT_TRUE(has_problem(a.problems, inner, "",
                          "block 'MyLinear' contains itself (MyLinear -> "
                          "MyLinear); a block cannot hold an instance of "
                          "itself"))
      << all(a.problems);
}

// A rough figure for the forward's own overhead: the residual MLP's forward against calling
// its modules by hand (printed, not asserted; the timing of a shared machine varies).
std::vector<float> values(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

// An edit of the graph keeps what the model learned: nodes are matched by id, entry by entry
// where the shapes agree, into the new model's own tensors.
TEST(GraphBuilderTest, CarryStateKeepsWeightsOfNodesThatStayByIdAcrossRenames) {
  const Project before = features_project();
  auto old_model = build_model(before);
  Project after = before;
  const NodeId group = after.graph.find_by_name("features")->id;
  const NodeId head = after.graph.find_by_name("head")->id;
  after.graph.at(group).name = "body";               // renamed: its members' keys become body.N.*
  after.graph.at(head).options["out_features"] = 5;  // a new shape: starts fresh
  auto new_model = build_model(after);
  std::map<std::string, const void*> storage;
  for (const auto& [name, p] : new_model->named_parameters()) storage[name] = p.data_ptr<float>();
  const Tensor head_before = new_model->state_dict()["head.weight"].clone();

  const graph::CarriedState carried = graph::carry_state(*old_model, *new_model, after.graph);
  const nn::StateDict old_sd = old_model->state_dict();
  const nn::StateDict new_sd = new_model->state_dict();
  for (const char* key : {"0.weight", "0.bias", "2.weight", "2.bias"}) {
    EXPECT_EQ(values(new_sd[std::string("body.") + key]),
              values(old_sd[std::string("features.") + key]))
        << key;
  }
  EXPECT_EQ(values(new_sd["head.weight"]), values(head_before));
  EXPECT_EQ(carried.tensors, 4u);  // the group's entries are its members': counted once
  const NodeId fc1 = after.graph.find_by_name("fc1")->id;
  const NodeId fc2 = after.graph.find_by_name("fc2")->id;
  std::vector<NodeId> kept = carried.kept;
  std::sort(kept.begin(), kept.end());
  EXPECT_EQ(kept, (std::vector<NodeId>{fc1, fc2, group}));
  EXPECT_EQ(carried.fresh, std::vector<NodeId>{head});
  EXPECT_TRUE(carried.mixed.empty());
  // Copied into the model's own tensors: an optimizer made for it still holds them.
  for (const auto& [name, p] : new_model->named_parameters()) {
    EXPECT_EQ(storage.at(name), p.data_ptr<float>()) << name;
  }
}

TEST(GraphBuilderTest, CarryStateKeepsBuffersAndTheEntriesAChangedNodeStillHas) {
  Project before = cnn_project();
  const NodeId fc = before.graph.find_by_name("fc")->id;
  before.graph.at(fc).options["bias"] = false;
  auto old_model = build_model(before);
  (*old_model)(randn({4, 1, 8, 8}));  // running statistics that differ from a fresh model's
  Project after = before;
  after.graph.at(fc).options["bias"] = true;  // a new entry: fc keeps its weight only
  auto new_model = build_model(after);
  const Tensor fresh_bias = new_model->state_dict()["fc.bias"].clone();
  const graph::CarriedState carried = graph::carry_state(*old_model, *new_model, after.graph);
  EXPECT_EQ(values(new_model->get_buffer("bn1.running_mean")),
            values(old_model->get_buffer("bn1.running_mean")));
  EXPECT_NE(values(new_model->get_buffer("bn1.running_mean")), std::vector<float>(4, 0.0f));
  EXPECT_EQ(new_model->get_buffer("bn1.num_batches_tracked").item(), 1);
  EXPECT_EQ(values(new_model->state_dict()["fc.weight"]),
            values(old_model->state_dict()["fc.weight"]));
  EXPECT_EQ(values(new_model->state_dict()["fc.bias"]), values(fresh_bias));
  EXPECT_EQ(carried.kept.size(), 2u);  // conv1, bn1
  EXPECT_EQ(carried.mixed, std::vector<NodeId>{fc});
  EXPECT_TRUE(carried.fresh.empty());
}

// The model's own Parameter nodes carry over by name.
TEST(GraphBuilderTest, CarryStateKeepsTheModelsOwnParameters) {
  const Project p = scale_shift_project();
  auto old_model = build_model(p);
  {
    NoGradGuard no_grad;
    old_model->get_parameter("scale").fill_(3.0);
  }
  auto new_model = build_model(p);
  const graph::CarriedState carried = graph::carry_state(*old_model, *new_model, p.graph);
  EXPECT_EQ(values(new_model->get_parameter("scale")), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(carried.tensors, 1u);  // the buffer is not persistent: not in the state
  EXPECT_EQ(carried.kept, std::vector<NodeId>{p.graph.find_by_name("scale")->id});
}

TEST(GraphBuilderTest, ForwardOverheadFigure) {
  auto model = build_model(residual_project());
  NoGradGuard no_grad;
  const Tensor x = randn({256, 4});
  auto fc_in = model->get_submodule("fc_in"), act = model->get_submodule("act"),
       fc1 = model->get_submodule("fc1"), fc2 = model->get_submodule("fc2"),
       fc_out = model->get_submodule("fc_out");
  auto by_hand = [&] {
    Tensor h = (*act)((*fc_in)(x));
    h = h + (*fc2)((*act)((*fc1)(h)));
    return (*fc_out)((*act)(h));
  };
  auto time = [](auto fn) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) fn();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
               .count() /
           2000;
  };
  time(by_hand);
  const double hand = time(by_hand);
  const double graph = time([&] { return (*model)(x); });
  std::printf("residual MLP forward, batch 256: by hand %.1f us, GraphModule %.1f us\n", hand,
              graph);
  EXPECT_EQ(by_hand().to_vector<float>(), (*model)(x).to_vector<float>());
}

}  // namespace
}  // namespace nns::test
