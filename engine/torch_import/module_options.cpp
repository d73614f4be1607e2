// SPDX-License-Identifier: GPL-3.0-or-later
// A leaf module's node options from the attributes the tracer read off it (vars(module) and
// its own submodules' under dotted names): PyTorch keeps most constructor arguments as
// attributes of the same name (in_features, kernel_size, eps); the rest are read here.
#include <algorithm>
#include <cctype>

#include "engine/tensor/error.h"
#include "engine/torch_import/module_options.h"

namespace nns::torch_import::detail {
namespace {

// Where a constructor argument lives when it is no attribute of its own name.
std::optional<Json> derived(const std::string& type, const std::string& option,
                            const Json& attributes, const Json& parameters) {
  auto attr = [&](const char* name) -> std::optional<Json> {
    if (attributes.contains(name)) return attributes.at(name);
    return std::nullopt;
  };
  if (option == "bias" && !attributes.contains("bias"))
    return Json(parameters.contains("bias") || parameters.contains("in_proj_bias"));
  if (type == "TransformerEncoderLayer" || type == "TransformerDecoderLayer") {
    if (option == "d_model") return attr("self_attn.embed_dim");
    if (option == "nhead") return attr("self_attn.num_heads");
    if (option == "dim_feedforward") return attr("linear1.out_features");
    if (option == "dropout") return attr("dropout.p");
    if (option == "layer_norm_eps") return attr("norm1.eps");
    if (option == "batch_first") return attr("self_attn.batch_first");
    if (option == "activation") {
      // A function (F.relu, read by name) or a module (nn.GELU(), read by class).
      std::string name;
      if (auto a = attr("activation"); a && a->is_string()) name = a->get<std::string>();
      if (auto c = attr("activation.__class__"); c && c->is_string()) name = c->get<std::string>();
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      if (name.empty()) return std::nullopt;
      return Json(name);
    }
  }
  return std::nullopt;
}

}  // namespace

Json module_options(const graph::NodeType& type, const Json& attributes, const Json& parameters) {
  Json options = Json::object();
  for (const graph::OptionSpec& spec : type.options) {
    std::optional<Json> value = derived(type.name, spec.name, attributes, parameters);
    if (!value && attributes.contains(spec.name)) value = attributes.at(spec.name);
    if (!value) continue;  // PyTorch keeps no such setting: the node type's default
    // Conv1d keeps kernel_size=3 as (3,): one number where the node takes one.
    if (spec.kind == graph::OptionSpec::Kind::Int && value->is_array() && value->size() == 1)
      value = (*value)[0];
    // PyTorch's None for "the default" (MaxPool2d's stride, Softmax's dim) where the node
    // takes no null: its default stands.
    if (value->is_null() && spec.kind != graph::OptionSpec::Kind::OptionalInt &&
        spec.kind != graph::OptionSpec::Kind::OptionalFloat)
      continue;
    options[spec.name] = *value;
  }
  return type.checked_options(options);
}

}  // namespace nns::torch_import::detail
