// SPDX-License-Identifier: GPL-3.0-or-later
// The graph spec and its edits: add/insert/remove/connect/disconnect with their checks, the
// node type registry, and the multi-node edits of edit.h (group, ungroup, make_block,
// inline_block, paste).
#include <gtest/gtest.h>

#include "engine/graph/builder.h"
#include "engine/graph/id_index.h"
#include "engine/graph/node_types.h"
#include "engine/ops/ops.h"
#include "graph_test_models.h"

namespace nns::test {
namespace {

using graph::Edge;
using graph::Node;
using graph::PortRef;

template <class E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

// Ids as a graph has them (counting up, with gaps where nodes were removed) go through the table;
// spread-out or negative ones through the hash map; both find the same places.
TEST(GraphSpecTest, IdIndexFindsEachNodesPlaceHoweverTheIdsAreSpread) {
  auto node = [](graph::NodeId id) {
    Node n;
    n.id = id;
    return n;
  };
  for (const std::vector<graph::NodeId>& ids :
       {std::vector<graph::NodeId>{1, 2, 3, 7, 5}, std::vector<graph::NodeId>{3, 1000000000, 12},
        std::vector<graph::NodeId>{-4, 0, 9}}) {
    std::vector<Node> nodes;
    for (graph::NodeId id : ids) nodes.push_back(node(id));
    graph::IdIndex index;
    index.build(nodes);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(index.at(ids[i]), i) << ids[i];
    EXPECT_FALSE(index.find(4));
    EXPECT_FALSE(index.find(-1));
    EXPECT_FALSE(index.find(2000000000));
    EXPECT_THROW(index.at(4), std::out_of_range);
  }
  // A repeated id is found at its last place, as assigning a map by id in order would.
  std::vector<Node> twice{node(5), node(6), node(5)};
  graph::IdIndex index;
  index.build(twice);
  EXPECT_EQ(index.at(5), 2u);
  EXPECT_EQ(index.at(6), 1u);
}

TEST(GraphSpecTest, AddInsertRemove) {
  Graph g;
  const NodeId a = g.add_node("Linear", "fc1", {{"in_features", 2}, {"out_features", 3}}, 10, 20);
  const NodeId b = g.add_node("ReLU", "relu");
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(g.at(a).x, 10);
  Node n;
  n.id = 7;
  n.type = "Tanh";
  n.name = "tanh";
  g.insert_node(n);
  EXPECT_EQ(g.next_id, 8);
  EXPECT_EQ(error_of<ValueError>([&] { g.insert_node(n); }),
            "Graph.insert_node: id 7 of 'tanh' is already taken by 'tanh' (Tanh, id 7)");
  g.connect({a, "out"}, {b, "in"});
  g.connect({b, "out"}, {7, "in"});
  g.remove_node(b);
  EXPECT_TRUE(g.edges.empty());
  EXPECT_EQ(g.find(b), nullptr);
  EXPECT_EQ(error_of<KeyError>([&] { g.at(b); }), "the graph has no node with id 2");
  // Ids are never reused.
  EXPECT_EQ(g.add_node("ReLU", "relu"), 8);
}

TEST(GraphSpecTest, ConnectChecksPortsAndFreeInputs) {
  Graph g;
  const NodeId x = g.add_node("Input", "x");
  const NodeId fc = g.add_node("Linear", "fc");
  const NodeId add = g.add_node("Add", "add", {{"inputs", 3}});
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({x, "out"}, {fc, "input"});
            }),
            "node 'fc' (Linear, id 2) has no input port 'input'; its inputs are: in");
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({fc, "in"}, {add, "in0"});
            }),
            "node 'fc' (Linear, id 2) has no output port 'in'; its outputs are: out");
  g.connect({x, "out"}, {add, "in2"});
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({fc, "out"}, {add, "in2"});
            }),
            "input port 'in2' of node 'add' (Add, id 3) is already fed by 'x.out'; disconnect it "
            "first");
  g.disconnect({add, "in2"});
  EXPECT_TRUE(g.edges.empty());
  // An output feeds any number of inputs.
  g.connect({x, "out"}, {fc, "in"});
  g.connect({x, "out"}, {add, "in0"});
  EXPECT_EQ(g.edges.size(), 2u);
  EXPECT_EQ(g.edge_into({add, "in0"})->from, (PortRef{x, "out"}));
}

TEST(GraphSpecTest, ConnectRefusesCyclesNamingThePath) {
  Graph g;
  const NodeId a = g.add_node("ReLU", "a");
  const NodeId b = g.add_node("Tanh", "b");
  const NodeId c = g.add_node("Sigmoid", "c");
  chain(g, {a, b, c});
  const std::vector<Edge> before = g.edges;
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({c, "out"}, {a, "in"});
            }),
            "connecting 'c.out' to 'a.in' would form a cycle: c -> a -> b -> c");
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({a, "out"}, {a, "in"});
            }),
            "connecting 'a.out' to 'a.in' would form a cycle: a -> a");
  EXPECT_EQ(g.edges, before);
}

TEST(GraphSpecTest, SequentialMembersAreNotWiredThemselves) {
  Project p = features_project();
  Graph& g = p.graph;
  EXPECT_EQ(error_of<ValueError>([&] {
              g.connect({g.find_by_name("x")->id, "out"}, {g.find_by_name("tanh")->id, "in"});
            }),
            "node 'tanh' (Tanh, id 5) is a member of Sequential 'features', which chains its "
            "members itself; connect the group's ports instead");
}

TEST(GraphSpecTest, NodeTypeRegistry) {
  const graph::NodeType& linear = graph::node_type("Linear");
  EXPECT_EQ(linear.category, "Linear / Conv");
  EXPECT_EQ(linear.default_options().dump(), R"({"in_features":1,"out_features":1,"bias":true})");
  EXPECT_EQ(
      linear.make_module(linear.checked_options({{"in_features", 4}, {"out_features", 3}}))->repr(),
      "Linear(in_features=4, out_features=3, bias=True)");
  EXPECT_EQ(error_of<KeyError>([] { graph::node_type("Conv"); }),
            "unknown node type 'Conv'; did you mean 'Conv1d', 'Conv2d'?");
  EXPECT_EQ(error_of<KeyError>([&] {
              linear.checked_options({{"bais", false}});
            }),
            "Linear has no option 'bais'; its options are: in_features, out_features, bias");
  EXPECT_EQ(error_of<ValueError>([] {
              graph::node_type("Dropout").checked_options({{"p", 1.5}});
            }),
            "Dropout option 'p': expected a number between 0.0 and 1.0, got 1.5");
  EXPECT_EQ(error_of<ValueError>([] {
              graph::node_type("Conv2d").checked_options({{"kernel_size", {3, 3, 3}}});
            }),
            "Conv2d option 'kernel_size': expected an integer or a list of 2 integers >= 1, got "
            "[3,3,3]");
  EXPECT_EQ(graph::node_type("Concat").input_ports({{"inputs", 3}}),
            (std::vector<std::string>{"in0", "in1", "in2"}));
  // Every layer of engine/nn has a node type whose default options make a module.
  for (const char* name : {"Linear",      "Conv1d",     "Conv2d",
                           "Embedding",   "ReLU",       "LeakyReLU",
                           "Tanh",        "Sigmoid",    "GELU",
                           "SiLU",        "ELU",        "PReLU",
                           "Softmax",     "LogSoftmax", "BatchNorm1d",
                           "BatchNorm2d", "LayerNorm",  "Dropout",
                           "MaxPool2d",   "AvgPool2d",  "AdaptiveAvgPool2d",
                           "Flatten",     "Unflatten",  "Identity"}) {
    const graph::NodeType& t = graph::node_type(name);
    ASSERT_TRUE(t.make_module) << name;
    EXPECT_NE(t.make_module(t.checked_options(Json::object())), nullptr) << name;
  }
  for (const char* name : {"Add", "Mul", "Concat", "MatMul", "F.relu"})
    EXPECT_TRUE(graph::node_type(name).apply) << name;
  EXPECT_TRUE(graph::is_container_type("ModuleDict"));
  EXPECT_FALSE(graph::is_container_type("Linear"));
}

TEST(GraphSpecTest, BuiltInTypesComeInPaletteOrder) {
  // Plugins' types follow the built-ins (a test that loaded one may run first).
  std::vector<std::string> names;
  for (const graph::NodeType& t : graph::node_types()) {
    if (t.plugin.empty()) names.push_back(t.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"Linear",
                                             "Conv2d",
                                             "Conv1d",
                                             "Embedding",
                                             "ReLU",
                                             "LeakyReLU",
                                             "Tanh",
                                             "Sigmoid",
                                             "GELU",
                                             "SiLU",
                                             "ELU",
                                             "PReLU",
                                             "Softmax",
                                             "LogSoftmax",
                                             "BatchNorm1d",
                                             "BatchNorm2d",
                                             "LayerNorm",
                                             "Dropout",
                                             "MaxPool2d",
                                             "AvgPool2d",
                                             "AdaptiveAvgPool2d",
                                             "RNN",
                                             "LSTM",
                                             "GRU",
                                             "MultiheadAttention",
                                             "TransformerEncoderLayer",
                                             "TransformerDecoderLayer",
                                             "PositionalEncoding",
                                             "LearnedPositionalEncoding",
                                             "Flatten",
                                             "Unflatten",
                                             "Identity",
                                             "Add",
                                             "Mul",
                                             "Concat",
                                             "MatMul",
                                             "F.relu",
                                             "F.hardtanh",
                                             "F.hardsigmoid",
                                             "F.hardswish",
                                             "torch.sigmoid",
                                             "torch.tanh",
                                             "F.silu",
                                             "F.gelu",
                                             "Sub",
                                             "Div",
                                             "Constant",
                                             "torch.flatten",
                                             "Reshape",
                                             "Mean",
                                             "Transpose",
                                             "Permute",
                                             "Select",
                                             "Narrow",
                                             "Expand",
                                             "F.adaptive_avg_pool2d",
                                             "Input",
                                             "Output",
                                             "Parameter",
                                             "Buffer",
                                             "Ref"}));
}

TEST(GraphSpecTest, NodeKindOfATypeName) {
  using graph::NodeKind;
  EXPECT_EQ(graph::node_kind("Linear"), NodeKind::Module);
  EXPECT_EQ(graph::node_kind("Add"), NodeKind::Functional);
  EXPECT_EQ(graph::node_kind("F.relu"), NodeKind::Functional);
  for (const char* name : {"Sequential", "ModuleList", "ModuleDict"})
    EXPECT_EQ(graph::node_kind(name), NodeKind::Container) << name;
  EXPECT_EQ(graph::node_kind("Input"), NodeKind::Input);
  EXPECT_EQ(graph::node_kind("Output"), NodeKind::Output);
  EXPECT_EQ(graph::node_kind("Parameter"), NodeKind::Parameter);
  EXPECT_EQ(graph::node_kind("Buffer"), NodeKind::Buffer);
  EXPECT_EQ(graph::node_kind("Ref"), NodeKind::Ref);
  // A custom block's name, or a type nobody registered.
  EXPECT_EQ(graph::node_kind("ResidualBlock"), std::nullopt);
  EXPECT_EQ(graph::node_kind("input"), std::nullopt);
}

TEST(GraphSpecTest, SwitchDictIsAModuleDictWithSwitchOn) {
  Node dict;
  dict.type = "ModuleDict";
  EXPECT_FALSE(graph::is_switch_dict(dict));
  dict.options = {{"switch", false}, {"active", "a"}};
  EXPECT_FALSE(graph::is_switch_dict(dict));
  dict.options["switch"] = true;
  EXPECT_TRUE(graph::is_switch_dict(dict));
  Node list = dict;
  list.type = "ModuleList";
  EXPECT_FALSE(graph::is_switch_dict(list));
}

TEST(GraphSpecTest, ShapeInferenceOfEachKind) {
  auto infer = [](const char* type, const Json& options, std::vector<graph::SymShape> in) {
    const graph::NodeType& t = graph::node_type(type);
    return graph::shape_str(t.infer_shapes(t.checked_options(options), in).at(0));
  };
  EXPECT_EQ(
      infer("Conv1d", {{"in_channels", 2}, {"out_channels", 5}, {"kernel_size", 3}}, {{-1, 2, 10}}),
      "[N, 5, 8]");
  EXPECT_EQ(infer("MaxPool2d", {{"kernel_size", 2}, {"ceil_mode", true}}, {{-1, 3, 5, 5}}),
            "[N, 3, 3, 3]");
  EXPECT_EQ(
      infer("AvgPool2d", {{"kernel_size", 3}, {"stride", 2}, {"padding", 1}}, {{-1, 3, 8, 8}}),
      "[N, 3, 4, 4]");
  EXPECT_EQ(infer("AdaptiveAvgPool2d", {{"output_size", {2, 1}}}, {{-1, 3, 7, 7}}), "[N, 3, 2, 1]");
  EXPECT_EQ(infer("Embedding", {{"num_embeddings", 10}, {"embedding_dim", 4}}, {{-1, 7}}),
            "[N, 7, 4]");
  EXPECT_EQ(infer("Unflatten", {{"dim", 1}, {"unflattened_size", {2, -1}}}, {{-1, 12}}),
            "[N, 2, 6]");
  EXPECT_EQ(infer("Flatten", {{"start_dim", 0}}, {{-1, 3, 4}}), "[N]");
  EXPECT_EQ(infer("LayerNorm", {{"normalized_shape", {4}}}, {{-1, 3, 4}}), "[N, 3, 4]");
  EXPECT_EQ(infer("Concat", {{"inputs", 3}, {"dim", 1}}, {{-1, 2}, {-1, 3}, {-1, 4}}), "[N, 9]");
  EXPECT_EQ(infer("Add", Json::object(), {{-1, 3}, {3}}), "[N, 3]");
  EXPECT_EQ(infer("MatMul", Json::object(), {{-1, 4}, {4, 3}}), "[N, 3]");
  EXPECT_EQ(infer("Input", {{"shape", {1, 8, 8}}}, {}), "[N, 1, 8, 8]");

  auto error = [](const char* type, const Json& options, std::vector<graph::SymShape> in) {
    const graph::NodeType& t = graph::node_type(type);
    return error_of<ShapeError>([&] { t.infer_shapes(t.checked_options(options), in); });
  };
  EXPECT_EQ(error("Conv2d", {{"in_channels", 3}}, {{-1, 1, 8, 8}}),
            "input 'in' has shape [N, 1, 8, 8], expected [N, 3, H, W] (dim 1 = in_channels)");
  EXPECT_EQ(error("Concat", {{"dim", 1}}, {{-1, 2, 5}, {-1, 3, 4}}),
            "input 'in1' has shape [N, 3, 4], expected [N, *, 5] (sizes equal to in0's except "
            "along dim 1)");
  EXPECT_EQ(error("Add", Json::object(), {{-1, 3}, {-1, 4}}),
            "input 'in1' has shape [N, 4], which does not broadcast with [N, 3] (dim 1: 4 vs 3)");
  EXPECT_EQ(error("MatMul", Json::object(), {{-1, 4}, {3, 2}}),
            "input 'in1' has shape [3, 2], expected [4, *] (its rows must match the 4 columns of "
            "in0 [N, 4])");
  EXPECT_EQ(error("BatchNorm1d", {{"num_features", 3}}, {{-1, 4}}),
            "input 'in' has shape [N, 4], expected [N, C] or [N, C, L] with C = num_features = 3");
  EXPECT_EQ(error("Softmax", {{"dim", 2}}, {{-1, 4}}),
            "option dim=2 is out of range for input 'in' of shape [N, 4] (2 dims)");
}

TEST(GraphEditTest, GroupSequentialRewiresTheChain) {
  Project p = features_project();
  const Graph& g = p.graph;
  const NodeId features = g.find_by_name("features")->id;
  // The group sits where its first member was: the second node, after the Input.
  EXPECT_EQ(g.nodes[1].id, features);
  EXPECT_EQ(g.at(features).members.size(), 4u);
  EXPECT_EQ(g.edges.size(), 3u);  // x -> features -> head -> y
  EXPECT_EQ(g.edge_into({features, "in"})->from.node, g.find_by_name("x")->id);
  EXPECT_EQ(g.edge_into({g.find_by_name("head")->id, "in"})->from, (PortRef{features, "out"}));
}

TEST(GraphEditTest, GroupRefusesWhatIsNoChain) {
  Project p = residual_project();
  Graph& g = p.graph;
  auto id = [&g](const char* name) { return g.find_by_name(name)->id; };
  const Graph before = g;
  EXPECT_EQ(error_of<ValueError>([&] {
              graph::group_nodes(g, {id("fc_in"), id("act"), id("fc1")}, "Sequential", "s");
            }),
            "group as Sequential 's': node 'act' (ReLU) inside the chain also feeds 'add' outside "
            "it");
  EXPECT_EQ(error_of<ValueError>([&] {
              graph::group_nodes(g, {id("fc_in"), id("fc1")}, "Sequential", "s");
            }),
            "group as Sequential 's': the nodes do not form a chain (2 of them are not fed by "
            "another selected node; a chain has one head)");
  EXPECT_EQ(error_of<ValueError>([&] {
              graph::group_nodes(g, {id("add"), id("act3")}, "Sequential", "s");
            }),
            "group as Sequential 's': node 'add' (Add) does not take one input and give one "
            "output");
  EXPECT_EQ(error_of<ValueError>([&] { graph::group_nodes(g, {id("fc1")}, "Stack", "s"); }),
            "group as Stack 's': a group is a Sequential, ModuleList or ModuleDict, not 'Stack'");
  EXPECT_EQ(g, before);
}

TEST(GraphEditTest, UngroupRestoresTheChain) {
  Project p = features_project();
  Project original = p;
  const NodeId features = p.graph.find_by_name("features")->id;
  graph::ungroup(p.graph, features);
  EXPECT_EQ(p.graph.find(features), nullptr);
  auto model = graph::build_model(p);
  EXPECT_EQ(model->state_dict().keys().front(), "fc1.weight");
  // Same nodes in the same order, same chain as before grouping.
  Graph chain_graph;
  {
    Graph& g = chain_graph;
    const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
    const NodeId a = g.add_node("Linear", "fc1", {{"in_features", 4}, {"out_features", 8}});
    const NodeId b = g.add_node("ReLU", "relu");
    const NodeId c = g.add_node("Linear", "fc2", {{"in_features", 8}, {"out_features", 8}});
    const NodeId d = g.add_node("Tanh", "tanh");
    const NodeId head = g.add_node("Linear", "head", {{"in_features", 8}, {"out_features", 3}});
    const NodeId y = g.add_node("Output", "y");
    chain(g, {x, a, b, c, d, head, y});
  }
  EXPECT_EQ(p.graph.nodes, chain_graph.nodes);
  std::vector<Edge> got = p.graph.edges, want = chain_graph.edges;
  auto by_target = [](const Edge& l, const Edge& r) { return l.to.node < r.to.node; };
  std::sort(got.begin(), got.end(), by_target);
  std::sort(want.begin(), want.end(), by_target);
  EXPECT_EQ(got, want);
}

TEST(GraphEditTest, ModuleDictGroupNeedsDistinctKeys) {
  Graph g;
  const NodeId a = g.add_node("ReLU", "act");
  const NodeId b = g.add_node("Tanh", "act");
  EXPECT_EQ(error_of<ValueError>([&] {
              graph::group_nodes(g, {a, b}, "ModuleDict", "acts");
            }),
            "group as ModuleDict 'acts': two nodes are named 'act', and a ModuleDict's keys are "
            "its members' names; rename one");
  EXPECT_EQ(error_of<ValueError>([&] {
              graph::group_nodes(g, {a, a}, "ModuleList", "l");
            }),
            "group as ModuleList 'l': node 1 is selected twice");
}

TEST(GraphEditTest, MakeBlockAndInlineBlockRoundTrip) {
  // The seeds' MyLinear drawn inline (two Parameters, MatMul, Add), then made a block.
  Project p;
  p.name = "Net";
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId w = g.add_node("Parameter", "weight", {{"shape", {4, 3}}});
  const NodeId b = g.add_node("Parameter", "bias", {{"shape", {3}}});
  const NodeId mm = g.add_node("MatMul", "matmul");
  const NodeId add = g.add_node("Add", "add");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {mm, "in0"});
  g.connect({w, "out"}, {mm, "in1"});
  g.connect({mm, "out"}, {add, "in0"});
  g.connect({b, "out"}, {add, "in1"});
  g.connect({add, "out"}, {y, "in"});
  p.probes.push_back({mm});
  manual_seed(0);
  const Tensor in = randn({2, 4});
  auto flat = graph::build_model(p);
  const Tensor want = (*flat)(in);
  const nn::StateDict weights = flat->state_dict();

  EXPECT_EQ(error_of<ValueError>([&] { graph::make_block(p, g, {w}, "linear"); }),
            "make block 'linear': a block's name is a class name: a capital letter, then letters, "
            "digits or '_'");
  const NodeId inst = graph::make_block(p, g, {w, b, mm, add}, "MyLinear");
  EXPECT_TRUE(p.probes.empty());
  ASSERT_EQ(p.blocks.size(), 1u);
  EXPECT_EQ(g.at(inst).name, "my_linear");
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.edge_into({inst, "in"})->from, (PortRef{x, "out"}));
  EXPECT_EQ(g.edge_into({y, "in"})->from, (PortRef{inst, "out"}));
  auto blocked = graph::build_model(p);
  EXPECT_EQ(blocked->repr(), "Net(\n  (my_linear): MyLinear()\n)");
  nn::StateDict renamed;
  for (const auto& item : weights) renamed.insert("my_linear." + item.key(), item.value());
  blocked->load_state_dict(renamed);
  EXPECT_EQ((*blocked)(in).to_vector<float>(), want.to_vector<float>());

  const std::vector<NodeId> ids = graph::inline_block(p, g, inst);
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(g.find(inst), nullptr);
  auto inlined = graph::build_model(p);
  EXPECT_EQ(inlined->repr(), "Net()");
  inlined->load_state_dict(weights);
  EXPECT_EQ((*inlined)(in).to_vector<float>(), want.to_vector<float>());
}

TEST(GraphEditTest, InlineBlockSubstitutesArguments) {
  Project p = net_project();
  const NodeId l0 = p.graph.find_by_name("l0")->id;
  graph::inline_block(p, p.graph, l0);
  const Node* weight = p.graph.find_by_name("weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->options["shape"].dump(), "[4,3]");
  auto model = graph::build_model(p);
  EXPECT_EQ(model->repr(), "Net(\n  (l1): MyLinear()\n)");
  EXPECT_EQ(model->named_parameters().front().first, "weight");
}

TEST(GraphEditTest, PasteGivesFreshIdsAndUniqueNames) {
  Project p = residual_project();
  Graph& g = p.graph;
  const Node act = *g.find_by_name("act");
  const Node fc1 = *g.find_by_name("fc1");
  const Node act2 = *g.find_by_name("act2");
  const std::vector<Edge> edges = g.edges;
  const NodeId next = g.next_id;
  const std::vector<NodeId> ids = graph::paste_nodes(g, {act, fc1, act2}, edges, 50, 0);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[0], next);
  EXPECT_EQ(g.at(ids[0]).name, "act1");
  EXPECT_EQ(g.at(ids[1]).name, "fc3");                // fc1 and fc2 are taken
  EXPECT_EQ(g.at(ids[2]).name, "act4");               // act2 and act3 are taken
  EXPECT_EQ(g.at(ids[2]).options["target"], ids[0]);  // the copied Ref calls the copy
  EXPECT_EQ(g.at(ids[0]).x, act.x + 50);
  // act -> fc1 -> act2 came along; the edges to nodes not copied did not.
  EXPECT_EQ(g.edge_into({ids[1], "in"})->from, (PortRef{ids[0], "out"}));
  EXPECT_EQ(g.edge_into({ids[0], "in"}), nullptr);
  EXPECT_EQ(graph::unique_name(g, "fc_out"), "fc_out1");
}

}  // namespace
}  // namespace nns::test
