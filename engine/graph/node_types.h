// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The node types a graph can hold: every layer of engine/nn, the functional merge and math
// nodes, Input/Output, Parameter/Buffer and Ref. Each type says its ports, its options (with
// kinds, defaults and ranges, so a property panel and a palette can be generated from it), how
// to make its module or apply its function, and how shapes flow through it. Containers
// (Sequential, ModuleList, ModuleDict) and custom blocks are handled by the builder.
//
//   const NodeType& t = node_type("Linear");
//   nns::nn::ModulePtr m = t.make_module(t.default_options());   // Linear(in_features=1, ...)
#include <deque>
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
  // OptionalFloat: a number or null (as RMSNorm's eps, where null is the dtype's epsilon).
  // FloatList: `length` numbers (Adam's betas).
  enum class Kind {
    Int,
    Float,
    Bool,
    String,
    Choice,
    IntList,
    OptionalInt,
    OptionalFloat,
    FloatList
  };
  std::string name;
  Kind kind = Kind::Int;
  Json default_value;
  std::string help;
  std::vector<std::string> choices;  // for Choice
  std::optional<double> min, max;    // for Int/Float (and IntList elements)
  // For IntList: the number of elements (a single integer is then also accepted and stands
  // for all of them, as PyTorch's kernel_size=3 means (3, 3)); 0 for any non-empty length.
  size_t length = 0;
  // Kept in files and checked, but not shown by editors: PyTorch's switches that change
  // nothing here (an optimizer's foreach or differentiable).
  bool hidden = false;
  // For String: the value is a file's path, picked with a file chooser offering these files
  // ("Text files (*.txt);;All files (*)"); empty for plain text.
  std::string file_filter{};
};

// `given` with defaults filled in, each value checked against its spec: a ValueError naming
// `owner` ("Adam"), the option and the allowed values; an unknown option name is a KeyError
// listing the known ones. The one check of node, data set, loss and optimizer options.
Json check_options(const std::string& owner, const std::vector<OptionSpec>& specs,
                   const Json& given);

// A data set's option from the catalog (engine/data/catalog.h) as an OptionSpec: Integer is
// Int, Real is Float, Choice is Choice, with its default, range and description as help. One
// schema then describes node and data set options, and one editor serves both.
OptionSpec option_spec(const data::OptionInfo& option);

// One port of a node type.
struct PortSpec {
  std::string name;  // "in", "in0", "out", ...
  std::string help;
};

// What a node type is to the builder: a module it makes (Linear), a function it applies
// (Add), a container of other nodes (Sequential, ModuleList, ModuleDict), the model's inputs
// and outputs, a Parameter or Buffer tensor of the model, or a Ref (a second call of another
// node's module). A custom block instance has no NodeType (its ports come from the project).
enum class NodeKind { Module, Functional, Container, Input, Output, Parameter, Buffer, Ref };

struct NodeType {
  std::string name;  // "Linear": the PyTorch class (or function) name
  NodeKind kind = NodeKind::Module;
  // The plugin that registered the type and its version (engine/plugin); empty for built-ins.
  std::string plugin;
  std::string plugin_version;
  std::string category;  // palette group: "Linear / Conv", "Activation", "Normalization",
                         // "Dropout", "Pooling", "Recurrent", "Attention", "Reshape", "Merge",
                         // "Math",
                         // "Input / Output", "Parameters"
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
  // The type's PyTorch twin where torch.nn has no such class (a plugin's type, NN Studio's
  // positional encodings), for the PyTorch code export (engine/export): Python source
  // that defines a class named as the type, whose constructor takes the type's options as
  // keyword arguments and whose state_dict() has the module's keys. Empty: a plugin type
  // cannot be exported (the other built-in types are torch.nn's own).
  std::string pytorch_source;

  Json default_options() const;
  // The options with defaults filled in, each checked against its spec: a ValueError naming the
  // option and the allowed values; unknown option names are a KeyError listing the known ones.
  Json checked_options(const Json& options) const;
  // The input port names for these options (variadic nodes: "in0".."in{n-1}").
  std::vector<std::string> input_ports(const Json& options) const;
};

// Every registered type: the built-ins in palette order, then the plugins' types in the order
// they were registered. References stay valid when types are added.
const std::deque<NodeType>& node_types();
// Adds a plugin's types, all or none: a ValueError naming the type and the plugin (or
// "a built-in type") that has its name when a name is taken, twice in `types` included, or
// when a type has no name, no kind's function (a Module without make_module, a Functional
// without apply) or no infer_shapes. Plugins register at start, before any other thread
// reads the registry.
void register_node_types(std::vector<NodeType> types);

// nullptr when unknown.
const NodeType* find_node_type(const std::string& name);
// A KeyError listing close names when unknown.
const NodeType& node_type(const std::string& name);

// The tensor of a Parameter or Buffer node, from its checked options (shape, init); draws from
// the default generator.
Tensor initial_tensor(const Json& options);

// The containers, which are not NodeTypes (the builder makes them from their members).
bool is_container_type(const std::string& type);  // Sequential, ModuleList, ModuleDict

// What kind of node a type name makes: Container for Sequential, ModuleList and ModuleDict, the
// registered type's kind otherwise; std::nullopt for a custom block instance or an unknown type.
// Code asks this instead of comparing names, so that no plugin type passes for a special one.
//
//   if (node_kind(node.type) == NodeKind::Input) ...   // false for nullopt
std::optional<NodeKind> node_kind(const std::string& type);

// A ModuleDict whose option switch is true: it calls its "active" member only, through ports
// "in" and "out" (a plain ModuleDict has no ports).
bool is_switch_dict(const Node& node);

// The port names of a node: from its NodeType, "in"/"out" for a Sequential or a switch
// ModuleDict, none for other groups. std::nullopt for a Ref, a custom block instance or an
// unknown type, whose ports only the whole project knows (analyze() checks them).
struct NodePorts {
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};
std::optional<NodePorts> node_ports(const Node& node);

// ---- Building node types: for the built-in families and for plugins --------------------------

OptionSpec int_option(std::string name, int64_t value, std::string help,
                      std::optional<double> min = std::nullopt);
OptionSpec float_option(std::string name, double value, std::string help,
                        std::optional<double> min = std::nullopt,
                        std::optional<double> max = std::nullopt);
// A number or null (null's meaning is the option's help); min/max bound the number.
OptionSpec optional_float_option(std::string name, std::string help,
                                 std::optional<double> min = std::nullopt);
OptionSpec bool_option(std::string name, bool value, std::string help);
OptionSpec choice_option(std::string name, std::string value, std::vector<std::string> choices,
                         std::string help);
// length: the number of elements, 0 for any non-empty length; min bounds each element.
OptionSpec list_option(std::string name, Json value, std::string help, size_t length,
                       std::optional<double> min);
OptionSpec optional_int_option(std::string name, std::string help);
// `length` numbers, each at least min.
OptionSpec float_list_option(std::string name, std::vector<double> value, std::string help,
                             std::optional<double> min = std::nullopt);

// Reading checked options (NodeType::checked_options has made sure they fit their specs).
int64_t get_int(const Json& options, const char* name);
double get_float(const Json& options, const char* name);
bool get_bool(const Json& options, const char* name);
std::string get_string(const Json& options, const char* name);
std::optional<int64_t> get_optional_int(const Json& options, const char* name);
std::optional<double> get_optional_float(const Json& options, const char* name);
Shape get_list(const Json& options, const char* name);  // a single integer is a list of one

// A module type with one input "in" and one output "out".
NodeType module_type(
    std::string name, std::string category, std::string description,
    std::vector<OptionSpec> options, std::function<nn::ModulePtr(const Json&)> make,
    std::function<std::vector<SymShape>(const Json&, const std::vector<SymShape>&)> infer);
// infer_shapes of a type whose output has its input's shape.
std::vector<SymShape> same_shape(const Json& options, const std::vector<SymShape>& inputs);
// The ShapeError of an input that does not fit: "input 'in' has shape [N, 3], expected ...".
[[noreturn]] void bad_input(const std::string& port, const SymShape& got,
                            const std::string& expected);

}  // namespace nns::graph
