#pragma once
// The node types a graph can hold: every layer of engine/nn, the functional merge and math
// nodes, Input/Output, Parameter/Buffer and Ref. Each type says its ports, its options (with
// kinds, defaults and ranges, so a property panel and a palette can be generated from it), how
// to make its module or apply its function, and how shapes flow through it. Containers
// (Sequential, ModuleList, ModuleDict) and custom blocks are handled by the builder.
//
//   const NodeType& t = node_type("Linear");
//   nns::nn::ModulePtr m = t.make_module(t.default_options());   // Linear(in_features=1, ...)
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/spec.h"
#include "engine/nn/module.h"

namespace nns::data {
struct OptionInfo;
}

namespace nns::graph {

// A shape with a symbolic batch size: -1 marks the batch dimension ("N"), other entries are
// sizes. "[N, 64]" prints it.
using SymShape = std::vector<int64_t>;
std::string shape_str(const SymShape& shape);

struct OptionSpec {
  enum class Kind { Int, Float, Bool, String, Choice, IntList, OptionalInt };
  std::string name;
  Kind kind = Kind::Int;
  Json default_value;
  std::string help;
  std::vector<std::string> choices;  // for Choice
  std::optional<double> min, max;    // for Int/Float (and IntList elements)
  // For IntList: the number of elements (a single integer is then also accepted and stands
  // for all of them, as PyTorch's kernel_size=3 means (3, 3)); 0 for any non-empty length.
  size_t length = 0;
};

// A data set's option from the catalog (engine/data/catalog.h) as an OptionSpec: Integer is
// Int, Real is Float, Choice is Choice, with its default, range and description as help. One
// schema then describes node and data set options, and one editor serves both.
OptionSpec option_spec(const data::OptionInfo& option);

// One port of a node type.
struct PortSpec {
  std::string name;  // "in", "in0", "out", ...
  std::string help;
};

struct NodeType {
  std::string name;      // "Linear": the PyTorch class (or function) name
  std::string category;  // palette group: "Linear / Conv", "Activation", "Normalization",
                         // "Dropout", "Pooling", "Reshape", "Merge", "Math", "Input / Output",
                         // "Parameters"
  std::string description;
  std::vector<OptionSpec> options;
  std::vector<PortSpec> inputs;
  std::vector<PortSpec> outputs;
  // True for merge nodes with any number (>= 2) of inputs "in0", "in1", ...; the option
  // "inputs" says how many.
  bool variadic = false;
  // Set for module nodes: the module for checked options.
  std::function<nn::ModulePtr(const Json& options)> make_module;
  // Set for functional nodes: outputs from inputs.
  std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const Json& options)> apply;
  // Output shapes from input shapes; a ShapeError whose message names the input port and the
  // expected shape when they do not fit.
  std::function<std::vector<SymShape>(const Json& options, const std::vector<SymShape>& inputs)>
      infer_shapes;

  Json default_options() const;
  // The options with defaults filled in, each checked against its spec: a ValueError naming the
  // option and the allowed values; unknown option names are a KeyError listing the known ones.
  Json checked_options(const Json& options) const;
  // The input port names for these options (variadic nodes: "in0".."in{n-1}").
  std::vector<std::string> input_ports(const Json& options) const;
};

// Every built-in type, in palette order.
const std::vector<NodeType>& node_types();
// nullptr when unknown.
const NodeType* find_node_type(const std::string& name);
// A KeyError listing close names when unknown.
const NodeType& node_type(const std::string& name);

// The tensor of a Parameter or Buffer node, from its checked options (shape, init); draws from
// the default generator.
Tensor initial_tensor(const Json& options);

// The containers, which are not NodeTypes (the builder makes them from their members).
bool is_container_type(const std::string& type);  // Sequential, ModuleList, ModuleDict

// The port names of a node: from its NodeType, "in"/"out" for a Sequential or a switch
// ModuleDict, none for other groups. std::nullopt for a Ref, a custom block instance or an
// unknown type, whose ports only the whole project knows (analyze() checks them).
struct NodePorts {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};
std::optional<NodePorts> node_ports(const Node& node);

}  // namespace nns::graph
