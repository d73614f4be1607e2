// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/node_types.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "engine/data/catalog.h"
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"

namespace nns::graph {
namespace {

using Kind = OptionSpec::Kind;

}  // namespace

// ---- Option specs ---------------------------------------------------------------------------

OptionSpec int_option(std::string name, int64_t value, std::string help,
                      std::optional<double> min) {
  return {std::move(name), Kind::Int, value, std::move(help), {}, min, std::nullopt};
}
OptionSpec float_option(std::string name, double value, std::string help, std::optional<double> min,
                        std::optional<double> max) {
  return {std::move(name), Kind::Float, value, std::move(help), {}, min, max};
}
OptionSpec optional_float_option(std::string name, std::string help, std::optional<double> min) {
  return {std::move(name), Kind::OptionalFloat, nullptr, std::move(help), {}, min, std::nullopt};
}
OptionSpec bool_option(std::string name, bool value, std::string help) {
  return {std::move(name), Kind::Bool, value, std::move(help), {}, std::nullopt, std::nullopt};
}
OptionSpec choice_option(std::string name, std::string value, std::vector<std::string> choices,
                         std::string help) {
  return {std::move(name),    Kind::Choice, value,       std::move(help),
          std::move(choices), std::nullopt, std::nullopt};
}
OptionSpec list_option(std::string name, Json value, std::string help, size_t length,
                       std::optional<double> min) {
  OptionSpec spec{std::move(name), Kind::IntList, std::move(value), std::move(help), {}, min,
                  std::nullopt};
  spec.length = length;
  return spec;
}
OptionSpec float_list_option(std::string name, std::vector<double> value, std::string help,
                             std::optional<double> min) {
  OptionSpec spec{std::move(name), Kind::FloatList, value, std::move(help), {}, min, std::nullopt};
  spec.length = value.size();
  return spec;
}
OptionSpec optional_int_option(std::string name, std::string help) {
  return {std::move(name), Kind::OptionalInt, nullptr, std::move(help), {},
          std::nullopt,    std::nullopt};
}

namespace {

// How an option value is described in errors: the JSON text.
std::string json_text(const Json& value) {
  return value.dump();
}

std::string kind_text(const OptionSpec& spec) {
  switch (spec.kind) {
    case Kind::Int:
      return "an integer";
    case Kind::Float:
      return "a number";
    case Kind::Bool:
      return "true or false";
    case Kind::String:
      return "a string";
    case Kind::Choice: {
      std::string out = "one of";
      for (const std::string& c : spec.choices) out += " \"" + c + "\"";
      return out;
    }
    case Kind::IntList:
      return spec.length ? "an integer or a list of " + std::to_string(spec.length) + " integers"
                         : "a non-empty list of integers";
    case Kind::OptionalInt:
      return "an integer or null";
    case Kind::OptionalFloat:
      return "a number or null";
    case Kind::FloatList:
      return "a list of " + std::to_string(spec.length) + " numbers";
  }
  return "";
}

std::string range_text(const OptionSpec& spec) {
  if (spec.min && spec.max)
    return " between " + nn::python_float(*spec.min) + " and " + nn::python_float(*spec.max);
  if (spec.min) return " >= " + std::to_string(static_cast<int64_t>(*spec.min));
  return "";
}

bool in_range(const OptionSpec& spec, double v) {
  return (!spec.min || v >= *spec.min) && (!spec.max || v <= *spec.max);
}

// Whether value fits spec (kind and range). null fits an option whose default is null (an
// optional one: a pooling's stride=None).
bool fits(const OptionSpec& spec, const Json& value) {
  if (value.is_null() && spec.default_value.is_null()) return true;
  switch (spec.kind) {
    case Kind::Int:
      return value.is_number_integer() && in_range(spec, value.get<double>());
    case Kind::Float:
      return value.is_number() && std::isfinite(value.get<double>()) &&
             in_range(spec, value.get<double>());
    case Kind::Bool:
      return value.is_boolean();
    case Kind::String:
      return value.is_string();
    case Kind::Choice:
      return value.is_string() && std::find(spec.choices.begin(), spec.choices.end(),
                                            value.get<std::string>()) != spec.choices.end();
    case Kind::IntList: {
      if (spec.length && value.is_number_integer()) return in_range(spec, value.get<double>());
      if (!value.is_array() || value.empty()) return false;
      if (spec.length && value.size() != spec.length) return false;
      return std::all_of(value.begin(), value.end(), [&spec](const Json& v) {
        return v.is_number_integer() && in_range(spec, v.get<double>());
      });
    }
    case Kind::FloatList:
      return value.is_array() && value.size() == spec.length &&
             std::all_of(value.begin(), value.end(), [&spec](const Json& v) {
               return v.is_number() && std::isfinite(v.get<double>()) &&
                      in_range(spec, v.get<double>());
             });
    case Kind::OptionalInt:
      return value.is_null() || value.is_number_integer();
    case Kind::OptionalFloat:
      return value.is_null() || (value.is_number() && std::isfinite(value.get<double>()) &&
                                 in_range(spec, value.get<double>()));
  }
  return false;
}

}  // namespace

// ---- Reading checked options ------------------------------------------------------------------

int64_t get_int(const Json& o, const char* name) {
  return o.at(name).get<int64_t>();
}
double get_float(const Json& o, const char* name) {
  return o.at(name).get<double>();
}
bool get_bool(const Json& o, const char* name) {
  return o.at(name).get<bool>();
}
std::string get_string(const Json& o, const char* name) {
  return o.at(name).get<std::string>();
}
std::optional<int64_t> get_optional_int(const Json& o, const char* name) {
  const Json& v = o.at(name);
  return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
}
std::optional<double> get_optional_float(const Json& o, const char* name) {
  const Json& v = o.at(name);
  return v.is_null() ? std::nullopt : std::optional<double>(v.get<double>());
}
Shape get_list(const Json& o, const char* name) {
  const Json& v = o.at(name);
  if (v.is_number_integer()) return {v.get<int64_t>()};
  return v.get<Shape>();
}

void bad_input(const std::string& port, const SymShape& got, const std::string& expected) {
  throw ShapeError("input '" + port + "' has shape " + shape_str(got) + ", expected " + expected);
}

std::vector<SymShape> same_shape(const Json&, const std::vector<SymShape>& in) {
  return {in.at(0)};
}

std::vector<PortSpec> in_port() {
  return {{"in", "the input tensor"}};
}
std::vector<PortSpec> out_port() {
  return {{"out", "the output tensor"}};
}

NodeType module_type(std::string name, std::string category, std::string description,
                     std::vector<OptionSpec> options,
                     std::function<nn::ModulePtr(const Json&)> make,
                     std::function<Shapes(const Json&, const Shapes&)> infer) {
  NodeType t;
  t.name = std::move(name);
  t.category = std::move(category);
  t.description = std::move(description);
  t.options = std::move(options);
  t.inputs = in_port();
  t.outputs = out_port();
  t.make_module = std::move(make);
  t.infer_shapes = std::move(infer);
  return t;
}

namespace {

// The built-ins in palette order: the families of engine/graph/types.
std::vector<NodeType> make_registry() {
  std::vector<NodeType> types;
  for (std::vector<NodeType> (*family)() :
       {linear_conv_types, activation_types, normalization_types, dropout_types, pooling_types,
        recurrent_types, attention_types, reshape_types, functional_types,
        activation_function_types, tensor_function_types, io_params_types}) {
    std::vector<NodeType> more = family();
    types.insert(types.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  return types;
}

// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(a[i - 1]) == std::tolower(b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

Tensor initial_tensor(const Json& options) {
  const Shape shape = get_list(options, "shape");
  const std::string init = get_string(options, "init");
  NoGradGuard no_grad;
  if (init == "ones") return ones(shape);
  if (init == "randn") return randn(shape);
  if (init == "rand") return rand(shape);
  Tensor t = zeros(shape);
  if (init == "zeros") return t;
  if (init == "uniform") return nn::init::uniform_(t, -1, 1);
  if (shape.size() < 2)
    throw ValueError("init '" + init +
                     "' needs a shape of at least 2 dims (fan in and fan out), got " +
                     shape_str(shape));
  if (init == "kaiming_uniform") return nn::init::kaiming_uniform_(t, std::sqrt(5.0));
  if (init == "xavier_uniform") return nn::init::xavier_uniform_(t);
  return nn::init::xavier_normal_(t);
}

std::string shape_str(const SymShape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i] == -1 ? "N" : std::to_string(shape[i]);
  }
  return out + "]";
}

OptionSpec option_spec(const data::OptionInfo& option) {
  OptionSpec spec;
  spec.name = option.name;
  spec.help = option.description;
  switch (option.type) {
    case data::OptionType::Integer:
      spec.kind = Kind::Int;
      spec.default_value = static_cast<int64_t>(option.default_value);
      break;
    case data::OptionType::Real:
      spec.kind = Kind::Float;
      spec.default_value = option.default_value;
      break;
    case data::OptionType::Choice:
      spec.kind = Kind::Choice;
      spec.default_value = option.default_choice;
      spec.choices = option.choices;
      return spec;
    case data::OptionType::File:
      spec.kind = Kind::String;
      spec.default_value = option.default_choice;
      spec.file_filter = option.file_filter;
      return spec;
  }
  spec.min = option.min;
  spec.max = option.max;
  return spec;
}

Json NodeType::default_options() const {
  Json out = Json::object();
  for (const OptionSpec& o : options) out[o.name] = o.default_value;
  return out;
}

Json check_options(const std::string& owner, const std::vector<OptionSpec>& specs,
                   const Json& given) {
  if (!given.is_object())
    throw ValueError(owner + ": options must be a JSON object, got " + json_text(given));
  for (const auto& [key, value] : given.items()) {
    const bool known = std::any_of(specs.begin(), specs.end(),
                                   [&k = key](const OptionSpec& o) { return o.name == k; });
    if (known) continue;
    std::string list;
    for (const OptionSpec& o : specs) list += (list.empty() ? "" : ", ") + o.name;
    throw KeyError(owner + " has no option '" + key + "'" +
                   (list.empty() ? std::string("; it takes none") : "; its options are: " + list));
  }
  Json out = Json::object();
  for (const OptionSpec& spec : specs) {
    const Json& value = given.contains(spec.name) ? given.at(spec.name) : spec.default_value;
    if (!fits(spec, value))
      throw ValueError(owner + " option '" + spec.name + "': expected " + kind_text(spec) +
                       range_text(spec) + ", got " + json_text(value));
    out[spec.name] = value;
  }
  return out;
}

Json NodeType::checked_options(const Json& given) const {
  return check_options(name, options, given);
}

std::vector<std::string> NodeType::input_ports(const Json& options) const {
  if (!variadic) {
    std::vector<std::string> out;
    for (const PortSpec& p : inputs) out.push_back(p.name);
    return out;
  }
  const Json* n = options.is_object() && options.contains("inputs") ? &options["inputs"] : nullptr;
  const int64_t count = n && n->is_number_integer() ? std::max<int64_t>(n->get<int64_t>(), 2) : 2;
  std::vector<std::string> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(variadic_port(static_cast<size_t>(i)));
  return out;
}

namespace {

std::deque<NodeType>& registry() {
  static std::deque<NodeType> types = [] {
    std::vector<NodeType> built_in = make_registry();
    return std::deque<NodeType>(std::make_move_iterator(built_in.begin()),
                                std::make_move_iterator(built_in.end()));
  }();
  return types;
}

std::string owner_text(const NodeType& t) {
  return t.plugin.empty() ? std::string("a built-in type") : "plugin '" + t.plugin + "'";
}

}  // namespace

const std::deque<NodeType>& node_types() {
  return registry();
}

void register_node_types(std::vector<NodeType> types) {
  for (size_t i = 0; i < types.size(); ++i) {
    const NodeType& t = types[i];
    const std::string who = t.plugin.empty() ? std::string("") : "plugin '" + t.plugin + "': ";
    if (t.name.empty()) throw ValueError(who + "a node type has no name");
    if (const NodeType* taken = find_node_type(t.name); taken || is_container_type(t.name))
      throw ValueError(who + "node type '" + t.name + "' is already registered by " +
                       (taken ? owner_text(*taken) : std::string("a built-in type")));
    for (size_t j = 0; j < i; ++j) {
      if (types[j].name == t.name)
        throw ValueError(who + "node type '" + t.name + "' is registered twice");
    }
    if (t.kind == NodeKind::Module && !t.make_module)
      throw ValueError(who + "module type '" + t.name + "' has no make_module");
    if (t.kind == NodeKind::Functional && !t.apply)
      throw ValueError(who + "functional type '" + t.name + "' has no apply");
    if (t.kind != NodeKind::Module && t.kind != NodeKind::Functional)
      throw ValueError(who + "node type '" + t.name +
                       "' must be a module or a functional type; the other kinds are built in");
    if (!t.infer_shapes) throw ValueError(who + "node type '" + t.name + "' has no infer_shapes");
  }
  for (NodeType& t : types) registry().push_back(std::move(t));
}

const NodeType* find_node_type(const std::string& name) {
  const std::deque<NodeType>& types = node_types();
  auto it = std::find_if(types.begin(), types.end(),
                         [&name](const NodeType& t) { return t.name == name; });
  return it == types.end() ? nullptr : &*it;
}

const NodeType& node_type(const std::string& name) {
  if (const NodeType* t = find_node_type(name)) return *t;
  std::vector<std::pair<size_t, std::string>> close;
  for (const NodeType& t : node_types()) {
    const size_t d = edit_distance(name, t.name);
    if (d <= std::max<size_t>(2, name.size() / 3)) close.emplace_back(d, t.name);
  }
  std::sort(close.begin(), close.end());
  std::string hint;
  for (size_t i = 0; i < close.size() && i < 3; ++i)
    hint += (i ? ", " : "") + std::string("'") + close[i].second + "'";
  throw KeyError("unknown node type '" + name + "'" +
                 (hint.empty() ? std::string("") : "; did you mean " + hint + "?"));
}

bool is_container_type(const std::string& type) {
  return type == "Sequential" || type == "ModuleList" || type == "ModuleDict";
}

std::optional<NodeKind> node_kind(const std::string& type) {
  if (is_container_type(type)) return NodeKind::Container;
  if (const NodeType* t = find_node_type(type)) return t->kind;
  return std::nullopt;
}

bool is_switch_dict(const Node& node) {
  const Json& o = node.options;
  return node.type == "ModuleDict" && o.is_object() && o.contains("switch") && o["switch"] == true;
}

std::optional<NodePorts> node_ports(const Node& node) {
  if (node.type == "Sequential" || is_switch_dict(node)) return NodePorts{{"in"}, {"out"}};
  if (is_container_type(node.type)) return NodePorts{};  // ModuleList, a plain ModuleDict
  const NodeType* t = find_node_type(node.type);
  if (!t || t->kind == NodeKind::Ref) return std::nullopt;
  NodePorts ports;
  ports.inputs = t->input_ports(node.options);
  for (const PortSpec& p : t->outputs) ports.outputs.push_back(p.name);
  return ports;
}

}  // namespace nns::graph
