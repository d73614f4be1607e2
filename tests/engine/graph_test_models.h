// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Graph specs of the models in tests/fixtures/areas/graph.py (the seeds' Net, BigNet and
// DynamicNet, a Sequential `features` model, a residual MLP, a CNN), shared by the graph tests.
#include <string>
#include <vector>

#include "engine/graph/edit.h"
#include "engine/graph/project.h"

namespace nns::test {

using graph::Graph;
using graph::Json;
using graph::NodeId;
using graph::Project;

// Connects each node's "out" to the next one's "in".
inline void chain(Graph& g, const std::vector<NodeId>& ids) {
  for (size_t i = 0; i + 1 < ids.size(); ++i) g.connect({ids[i], "out"}, {ids[i + 1], "in"});
}

// The seeds' MyLinear: (input @ weight) + bias with weight randn(in, out), bias randn(out).
inline graph::BlockDef my_linear_block() {
  graph::BlockDef b;
  b.name = "MyLinear";
  b.arguments = {{"in_features", 4}, {"out_features", 3}};
  Graph& g = b.graph;
  const NodeId in = g.add_node("Input", "in", {{"shape", {4}}});
  const NodeId w = g.add_node("Parameter", "weight",
                              {{"shape", {"$in_features", "$out_features"}}, {"init", "randn"}});
  const NodeId bias =
      g.add_node("Parameter", "bias", {{"shape", {"$out_features"}}, {"init", "randn"}});
  const NodeId mm = g.add_node("MatMul", "matmul");
  const NodeId add = g.add_node("Add", "add");
  const NodeId out = g.add_node("Output", "out");
  g.connect({in, "out"}, {mm, "in0"});
  g.connect({w, "out"}, {mm, "in1"});
  g.connect({mm, "out"}, {add, "in0"});
  g.connect({bias, "out"}, {add, "in1"});
  g.connect({add, "out"}, {out, "in"});
  return b;
}

inline Json my_linear(int64_t in, int64_t out) {
  return {{"in_features", in}, {"out_features", out}};
}

// Net: l1(relu(l0(x))) with MyLinear(4, 3) and MyLinear(3, 1); relu is functional.
inline void add_net_nodes(Graph& g) {
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId l0 = g.add_node("MyLinear", "l0", my_linear(4, 3));
  const NodeId relu = g.add_node("F.relu", "relu");
  const NodeId l1 = g.add_node("MyLinear", "l1", my_linear(3, 1));
  const NodeId y = g.add_node("Output", "y");
  chain(g, {x, l0, relu, l1, y});
}

inline Project net_project() {
  Project p;
  p.name = "Net";
  p.blocks.push_back(my_linear_block());
  add_net_nodes(p.graph);
  return p;
}

// BigNet: net(l1(x)) with l1 = MyLinear(5, 4) and net a Net block.
inline Project bignet_project() {
  Project p;
  p.name = "BigNet";
  p.blocks.push_back(my_linear_block());
  graph::BlockDef net;
  net.name = "Net";
  add_net_nodes(net.graph);
  p.blocks.push_back(net);
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {5}}});
  const NodeId l1 = g.add_node("MyLinear", "l1", my_linear(5, 4));
  const NodeId n = g.add_node("Net", "net");
  const NodeId y = g.add_node("Output", "y");
  g.connect({x, "out"}, {l1, "in"});
  g.connect({l1, "out"}, {n, "x"});
  g.connect({n, "y"}, {y, "in"});
  return p;
}

// DynamicNet(3): a ModuleList of three MyLinear(4, 4), a switch ModuleDict {relu, lrelu},
// and final = MyLinear(4, 1).
inline Project dynamicnet_project(const std::string& act) {
  Project p;
  p.name = "DynamicNet";
  p.blocks.push_back(my_linear_block());
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  std::vector<NodeId> linears;
  for (int i = 0; i < 3; ++i)
    linears.push_back(g.add_node("MyLinear", "linear" + std::to_string(i), my_linear(4, 4)));
  const NodeId relu = g.add_node("ReLU", "relu");
  const NodeId lrelu = g.add_node("LeakyReLU", "lrelu");
  const NodeId final_ = g.add_node("MyLinear", "final", my_linear(4, 1));
  const NodeId y = g.add_node("Output", "y");
  chain(g, {x, linears[0], linears[1], linears[2]});
  graph::group_nodes(g, linears, "ModuleList", "linears");
  const NodeId acts = graph::group_nodes(g, {relu, lrelu}, "ModuleDict", "activations");
  g.at(acts).options = {{"switch", true}, {"active", act}};
  g.connect({linears[2], "out"}, {acts, "in"});
  g.connect({acts, "out"}, {final_, "in"});
  g.connect({final_, "out"}, {y, "in"});
  return p;
}

// Features: head(features(x)) with features = Sequential(Linear(4, 8), ReLU, Linear(8, 8),
// Tanh) and head = Linear(8, 3); the Sequential is made by group_nodes from a chain.
inline Project features_project() {
  Project p;
  p.name = "Features";
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId a = g.add_node("Linear", "fc1", {{"in_features", 4}, {"out_features", 8}});
  const NodeId b = g.add_node("ReLU", "relu");
  const NodeId c = g.add_node("Linear", "fc2", {{"in_features", 8}, {"out_features", 8}});
  const NodeId d = g.add_node("Tanh", "tanh");
  const NodeId head = g.add_node("Linear", "head", {{"in_features", 8}, {"out_features", 3}});
  const NodeId y = g.add_node("Output", "y");
  chain(g, {x, a, b, c, d, head, y});
  graph::group_nodes(g, {a, b, c, d}, "Sequential", "features");
  return p;
}

// ResidualMLP: h = act(fc_in(x)); h = h + fc2(act(fc1(h))); fc_out(act(h)), where the second
// and third act calls are Ref nodes.
inline Project residual_project() {
  Project p;
  p.name = "ResidualMLP";
  Graph& g = p.graph;
  auto linear = [&g](const char* name, int64_t in, int64_t out) {
    return g.add_node("Linear", name, {{"in_features", in}, {"out_features", out}});
  };
  const NodeId x = g.add_node("Input", "x", {{"shape", {4}}});
  const NodeId fc_in = linear("fc_in", 4, 16);
  const NodeId act = g.add_node("ReLU", "act");
  const NodeId fc1 = linear("fc1", 16, 16);
  const NodeId fc2 = linear("fc2", 16, 16);
  const NodeId fc_out = linear("fc_out", 16, 3);
  const NodeId act2 = g.add_node("Ref", "act2", {{"target", act}});
  const NodeId add = g.add_node("Add", "add");
  const NodeId act3 = g.add_node("Ref", "act3", {{"target", act}});
  const NodeId y = g.add_node("Output", "y");
  chain(g, {x, fc_in, act, fc1, act2, fc2});
  g.connect({act, "out"}, {add, "in0"});
  g.connect({fc2, "out"}, {add, "in1"});
  chain(g, {add, act3, fc_out, y});
  return p;
}

// CNN: fc(flatten(pool(relu(bn1(conv1(x)))))) on [N, 1, 8, 8].
inline Project cnn_project() {
  Project p;
  p.name = "CNN";
  Graph& g = p.graph;
  const NodeId x = g.add_node("Input", "x", {{"shape", {1, 8, 8}}});
  const NodeId conv =
      g.add_node("Conv2d", "conv1",
                 {{"in_channels", 1}, {"out_channels", 4}, {"kernel_size", 3}, {"padding", 1}});
  const NodeId bn = g.add_node("BatchNorm2d", "bn1", {{"num_features", 4}});
  const NodeId relu = g.add_node("ReLU", "relu");
  const NodeId pool = g.add_node("MaxPool2d", "pool", {{"kernel_size", 2}});
  const NodeId flat = g.add_node("Flatten", "flatten");
  const NodeId fc = g.add_node("Linear", "fc", {{"in_features", 64}, {"out_features", 10}});
  const NodeId y = g.add_node("Output", "y");
  chain(g, {x, conv, bn, relu, pool, flat, fc, y});
  return p;
}

}  // namespace nns::test
