// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A project: the model's graph spec with its custom blocks, the probes placed on it, and the
// dataset and training settings. It is saved as a versioned JSON file (.nns), documented in
// docs/project-format.md with an example of every node type.
//
//   nns::graph::Project p = nns::graph::load_project("resources/examples/spirals.nns");
//   p.training.optimizer = "Adam";
//   nns::graph::save_project(p, "mine.nns");   // atomic: a crash never leaves half a file
//
// Files of an older version load (and are upgraded in memory); fields this version does not
// know are kept and written back unchanged; a file of a newer major version is refused with a
// message that says which version can open it.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/graph/spec.h"

namespace nns::graph {

constexpr int kProjectFormatVersion = 1;

// A probe: hooks on the module of one node (see engine/train/probes.h).
struct ProbeSpec {
  NodeId node = 0;             // a node of the top-level graph
  bool activations = true;     // forward hook: output statistics and histogram
  bool gradients = true;       // full backward hook: gradients w.r.t. outputs and inputs
  bool parameters = true;      // tensor hooks: parameter gradients, update-to-weight ratio
  int64_t every = 10;          // sample every N steps
  double max_overhead = 0.05;  // skip sampled steps while probes cost more (0: exactly every N)
  Json extra = Json::object();
  bool operator==(const ProbeSpec&) const = default;
};

struct DatasetSettings {
  std::string name = "spirals";   // an entry of nns::data::dataset_catalog(), "csv" or "files"
  Json options = Json::object();  // the generator's options (noise, samples, ...)
  double test_fraction = 0.2;
  int64_t seed = 0;
  std::string csv_path;      // for "csv": relative to the project file
  std::string label_column;  // for "csv"
  // For "files", a user's data source (engine/data/sources.h: an image folder, MNIST or CIFAR
  // files, NumPy): its path, relative to the project file where it can be, and the torchvision
  // transforms its images go through (engine/data/transforms.h), as Python text.
  std::string path;
  std::string transforms;
  Json extra = Json::object();
  bool operator==(const DatasetSettings&) const = default;
};

struct TrainingSettings {
  std::string loss = "CrossEntropyLoss";
  Json loss_options = Json::object();
  std::string optimizer = "SGD";
  Json optimizer_options = Json::object();  // {"lr": 0.1, "momentum": 0.9, ...}
  std::string scheduler;                    // empty: none
  Json scheduler_options = Json::object();
  int64_t batch_size = 32;
  int64_t epochs = 30;
  int64_t seed = 0;           // initial weights and shuffling
  double clip_grad_norm = 0;  // 0: off
  // Where the model trains: "cpu", "cuda" or "cuda:N" (nns::Device::parse). A project that
  // asks for a GPU the machine lacks still opens; training it says why it cannot start.
  std::string device = "cpu";
  // On a GPU, steps replay as CUDA graphs (train::SessionConfig::cuda_graphs).
  bool cuda_graphs = true;
  Json extra = Json::object();
  bool operator==(const TrainingSettings&) const = default;
};

// The plugin that provides a node type (engine/plugin), as a project records it, so that a
// project opened without the plugin can say which one it needs.
struct PluginRef {
  std::string plugin;   // "rmsnorm"
  std::string version;  // "1.0.0"
  bool operator==(const PluginRef&) const = default;
};

struct Project {
  int version = kProjectFormatVersion;
  std::string name = "Net";  // the model's class name (what its repr prints)
  // Which way the canvas's data flows, as its positions were laid out (layout.h): "TB" (top to
  // bottom, inputs on the top of each box) or "LR" (left to right). Empty in a project whose
  // positions no layered layout made (a file from before it, or one made in code): drawn top
  // to bottom, and laid out when the window opens it.
  std::string layout_direction;
  Graph graph;
  std::vector<BlockDef> blocks;
  std::vector<ProbeSpec> probes;
  DatasetSettings dataset;
  TrainingSettings training;
  // Qualified names of the parameters that do not train (requires_grad false), as
  // named_parameters() gives them ("fc1.weight"); kept in the order they were frozen.
  std::vector<std::string> frozen_parameters;
  // The plugin of each plugin type the file's nodes use ("plugin_types"), as the file has it;
  // saving writes plugin_types_of(project).
  std::map<std::string, PluginRef> plugin_types;
  Json extra = Json::object();  // top-level fields of a newer minor version, kept

  const BlockDef* find_block(const std::string& name) const;
  bool operator==(const Project&) const = default;
};

// source names the file in error messages. A ValueError with the JSON path of the bad field
// ("spirals.nns: graph.nodes[3].x: expected a number, got \"ten\"") for anything malformed;
// nothing is half-loaded. Node types and options are not checked here: a project with a bad
// option still opens, and analyze() marks the node (builder.h).
Project parse_project(std::string_view json_text, const std::string& source = "<project>");
Project load_project(const std::string& path);
std::string project_to_json(const Project& project);  // pretty, stable order
void save_project(const Project& project, const std::string& path);

// The plugin of each plugin type the project's nodes (blocks included) use: the registry's
// for a type a loaded plugin provides, the recorded one for a type no loaded plugin provides
// (a project opened without its plugin saves back unchanged). Built-in types have none.
std::map<std::string, PluginRef> plugin_types_of(const Project& project);

Json graph_to_json(const Graph& graph);
Graph graph_from_json(const Json& json, const std::string& where);

}  // namespace nns::graph
