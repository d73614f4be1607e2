// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Generated projects for the canvas's tests and benchmarks: the transformer pattern at any
// size, `for block in self.layers: x = x + block(x)`, as a ModuleList of Sequential blocks with
// a residual Add after each, between a stem and a head.
//
//   graph::Project p = test::residual_tower(100, 8);   // 1,005 nodes
#include <string>

#include "engine/graph/project.h"

namespace nns::test {

// x -> stem -> layers[0] (+ skip) -> ... -> layers[blocks-1] (+ skip) -> head -> logits.
// Each block is a Sequential of `per_block` members alternating Linear(16, 16) and ReLU (a
// Linear last), so every node has a module or a shape to show. 2 + blocks * (per_block + 2) + 3
// nodes in all.
inline graph::Project residual_tower(int blocks, int per_block) {
  graph::Project p;
  p.name = "Tower";
  graph::Graph& g = p.graph;
  const graph::NodeId x = g.add_node("Input", "x", {{"shape", {2}}});
  const graph::NodeId stem =
      g.add_node("Linear", "stem", {{"in_features", 2}, {"out_features", 16}});
  g.connect({x, "out"}, {stem, "in"});
  const graph::NodeId layers = g.add_node("ModuleList", "layers");
  graph::NodeId h = stem;
  for (int b = 0; b < blocks; ++b) {
    const graph::NodeId block = g.add_node("Sequential", "block" + std::to_string(b));
    g.at(layers).members.push_back(block);
    for (int m = 0; m < per_block; ++m) {
      const bool linear = m % 2 == 0 || m == per_block - 1;
      const std::string name =
          "b" + std::to_string(b) + (linear ? "_fc" : "_act") + std::to_string(m);
      const graph::NodeId member =
          linear ? g.add_node("Linear", name, {{"in_features", 16}, {"out_features", 16}})
                 : g.add_node("ReLU", name);
      g.at(block).members.push_back(member);
    }
    const graph::NodeId add = g.add_node("Add", "add" + std::to_string(b), {{"inputs", 2}});
    g.connect({h, "out"}, {block, "in"});
    g.connect({h, "out"}, {add, "in0"});
    g.connect({block, "out"}, {add, "in1"});
    h = add;
  }
  const graph::NodeId head =
      g.add_node("Linear", "head", {{"in_features", 16}, {"out_features", 3}});
  g.connect({h, "out"}, {head, "in"});
  const graph::NodeId out = g.add_node("Output", "logits");
  g.connect({head, "out"}, {out, "in"});
  return p;
}

}  // namespace nns::test
