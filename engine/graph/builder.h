// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// From a graph spec to modules. build_model() checks the whole graph (types, options, ports,
// cycles, groups, shapes) and makes a GraphModule: a Module whose children are the nodes'
// modules, registered under PyTorch's names, and whose forward runs the nodes in topological
// order. Every problem found is reported with the node and port it belongs to, so the canvas
// can mark it; build_model throws a GraphError carrying all of them.
//
//   nns::graph::Project p = nns::graph::load_project("spirals.nns");
//   auto model = nns::graph::build_model(p);          // GraphModule "Net"
//   nns::Tensor logits = (*model)(nns::randn({8, 2}));
//   model->state_dict();                               // "features.0.weight", ...
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/project.h"
#include "engine/nn/module.h"
#include "engine/tensor/error.h"

namespace nns::graph {

// One problem in a graph: where (node, and port if it is about a port), and what.
struct Problem {
  NodeId node = 0;   // 0: the graph as a whole
  std::string port;  // empty: the node as a whole
  std::string message;
  std::string block;  // the custom block whose graph holds the node; empty: the top level
};

class GraphError : public Error {
 public:
  GraphError(const std::string& message, std::vector<Problem> problems)
      : Error(message), problems(std::move(problems)) {}
  std::vector<Problem> problems;
};

// What the canvas shows without building: every port's shape and every problem.
struct Analysis {
  std::map<NodeId, std::map<std::string, SymShape>> output_shapes;  // node -> port -> shape
  std::vector<Problem> problems;
  bool ok() const { return problems.empty(); }
};
// What one analysis of a project's top-level graph learned about each node, for the next
// analysis after an edit: a node whose type and options are as they were is not checked again,
// and a layer whose input shapes are as they were is not inferred again (what was found then,
// problems included, is taken as it is). Custom block instances, Refs and unknown types are
// always worked out, since they depend on more than the node. It makes an edit of a
// 10,000-node graph a few milliseconds to analyse; the window's document keeps one. Not for two
// threads at once.
class AnalysisCache {
 public:
  AnalysisCache();
  ~AnalysisCache();
  AnalysisCache(const AnalysisCache&) = delete;
  AnalysisCache& operator=(const AnalysisCache&) = delete;
  void clear();
  struct Entry;  // one node's (builder.cpp)

 private:
  friend class Builder;
  friend Analysis analyze(const Project& project, AnalysisCache* cache);
  friend void reanalyze(const Project& project, AnalysisCache& cache, Analysis& last,
                        std::set<NodeId>& changed);
  std::unordered_map<NodeId, std::unique_ptr<Entry>> entries_;
  uint64_t generation_ = 0;  // an analysis' number: each entry has the last that used it
  size_t seen_ = 0;          // how many entries the current analysis used
  void next_generation() {
    ++generation_;
    seen_ = 0;
  }
};

// Never throws for a bad graph: problems are collected. With a cache, the same answer sooner.
Analysis analyze(const Project& project, AnalysisCache* cache = nullptr);
// analyze() into `last`, the analysis of the project before an edit: only the shapes that
// differ are written (a 10,000-node graph's map is not made again for each edit), and the
// top-level nodes whose shapes or problems differ from last's are added to `changed` (the
// canvas redraws those).
void reanalyze(const Project& project, AnalysisCache& cache, Analysis& last,
               std::set<NodeId>& changed);

// How many parameter values the module of a top-level node holds (a layer's, a custom block
// instance's, a group's with all its members'), without building the model: each distinct
// layer or block instance (type and options) is made once and its count kept in `memo`, which
// the caller clears when the project's blocks change. A 10,000-node model's groups are counted
// in a few milliseconds where building it takes a hundred. nullopt when a module in it cannot
// be made (options that do not check, an unknown type, a block that holds itself).
std::optional<int64_t> parameter_count(const Project& project, NodeId node,
                                       std::unordered_map<std::string, int64_t>& memo);

// The ports a node of the project's top-level graph shows and takes wires at, the one answer
// for the canvas, the layout and the analysis: node_ports() for a layer or group, a custom
// block instance's Input and Output nodes' names (block_ports), a Ref's target's ports, and the
// type's declared ports while its options do not check (so the node stays wired while the user
// fixes them). None for an unknown type.
NodePorts project_node_ports(const Project& project, const Node& node);
NodePorts block_ports(const BlockDef& block);

// The model of a project (or of a block, for a block instance). forward takes the Input
// nodes' tensors in node order and returns the Output nodes' tensors in node order.
class GraphModule : public nn::Module {
 public:
  ~GraphModule() override;  // out of line: Step is complete only in builder.cpp
  using Module::forward;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;
  Tensor forward(const Tensor& input) override;

  // The module made for a node of this graph (nullptr for functional nodes and Input/Output);
  // and its qualified name in named_modules() ("features.0").
  nn::ModulePtr node_module(NodeId node) const;
  std::string module_name(NodeId node) const;
  // Runs fn on every node's output during forward (for probes on functional nodes and for
  // NaN checks); empty to stop.
  std::function<void(NodeId, const std::vector<Tensor>&)> node_output_observer;

 private:
  friend class Builder;
  // Out of line like the destructor: both need the complete Step.
  explicit GraphModule(std::string class_name);
  struct Step;  // one node, group or block instance to run
  std::vector<Step> steps_;
  std::map<NodeId, std::pair<nn::ModulePtr, std::string>> node_modules_;
  std::vector<NodeId> inputs_, outputs_;
  size_t slot_count_ = 0;  // one per output port of a running node
};

std::shared_ptr<GraphModule> build_model(const Project& project);
// What build_model checks, without making a module: throws its GraphError for a graph that
// does not build (a session checks before it draws weights, and builds once).
void check_model(const Project& project);

// The model with the weights a training run of the project starts from (TrainingSession's
// reset): drawn from the default generator after manual_seed(project.training.seed). Every
// command that shows or writes "the project's initial weights" uses these, so that an ONNX
// export, a forward pass and step 0 of training agree. Reseeds the default generator.
std::shared_ptr<GraphModule> build_initial_model(const Project& project);

// The nodes of `graph` (the project's own, or one of its blocks' graphs) that forward runs, in
// the order it runs them: topological, ties in node order. Group members that their group runs
// (a Sequential's) and portless groups are not among them. For a graph that builds.
std::vector<NodeId> forward_order(const Project& project, const Graph& graph);

// The options a node of `graph` runs with, as the builder resolves them: each block argument
// ("$hidden") replaced by its value in `arguments` (the resolved options of the block instance
// whose graph holds the node; an empty object at the top level), then for a layer or function
// its options checked with the defaults filled in, and for a block instance the block's
// arguments with the instance's values. For a node of a project that builds.
Json resolved_options(const Project& project, const Node& node, const Json& arguments);

// What carry_state() copied, by node of the new graph that has a module.
struct CarriedState {
  std::vector<NodeId> kept;   // every state entry came from the old model
  std::vector<NodeId> mixed;  // some did; others (a new shape, a new entry) are as built
  std::vector<NodeId> fresh;  // none did: a new node, or one whose every entry changed shape
  size_t tensors = 0;         // entries copied
};

// Copies into `to` the state (parameters and persistent buffers) that `from` has for the
// same node, entry by entry where the name, shape and dtype agree, so that what a model
// learned survives an edit of its graph: nodes are matched by id (a renamed node keeps its
// weights; a widened layer starts fresh), and the model's own Parameter and Buffer nodes by
// name. `graph` is the graph `to` was built from. Both models must be idle (no step running);
// `from` is only read.
CarriedState carry_state(GraphModule& from, GraphModule& to, const Graph& graph);

}  // namespace nns::graph
