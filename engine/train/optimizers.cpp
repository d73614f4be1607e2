// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/optimizers.h"

#include <map>

#include "engine/optim/factory.h"

namespace nns::train {
namespace {

using graph::OptionSpec;

// PyTorch's switches that change nothing in this engine (only false, or None, is accepted):
// kept in files, checked, and hidden from the editors.
OptionSpec hidden(OptionSpec spec) {
  spec.hidden = true;
  return spec;
}

OptionSpec foreach_option() {
  OptionSpec spec = graph::optional_int_option("foreach", "PyTorch's foreach implementation");
  spec.kind = OptionSpec::Kind::Bool;  // true, false or null (None), as PyTorch
  return hidden(spec);
}

OptionSpec false_only(const char* name) {
  return hidden(graph::bool_option(name, false, "accepted as PyTorch's; only false here"));
}

OptionSpec weight_decay(double value) {
  return graph::float_option("weight_decay", value, "L2 penalty (AdamW: decoupled decay)", 0);
}

OptionSpec maximize() {
  return graph::bool_option("maximize", false, "maximize the objective instead of minimizing");
}

std::vector<OptionSpec> adam_specs(bool adamw) {
  std::vector<OptionSpec> specs = {
      graph::float_option("lr", 1e-3, "learning rate", 0),
      graph::float_list_option("betas", {0.9, 0.999},
                               "decay rates of the gradient's running mean and square", 0),
      graph::float_option("eps", 1e-8, "added to the denominator for stability", 0),
      weight_decay(adamw ? 1e-2 : 0),
      graph::bool_option("amsgrad", false, "use the maximum of the past squared gradients"),
      maximize(),
      foreach_option(),
      false_only("capturable")};
  if (!adamw) {
    specs.push_back(false_only("differentiable"));
    specs.push_back(false_only("fused"));
  }
  return specs;
}

const std::map<std::string, std::vector<OptionSpec>>& all_specs() {
  static const std::map<std::string, std::vector<OptionSpec>> specs = {
      {"SGD",
       {graph::optional_float_option("lr", "learning rate (PyTorch's SGD has no default)", 0),
        graph::float_option("momentum", 0, "momentum factor", 0),
        graph::float_option("dampening", 0, "dampening for momentum", 0), weight_decay(0),
        graph::bool_option("nesterov", false, "Nesterov momentum (needs momentum > 0)"), maximize(),
        foreach_option(), false_only("differentiable")}},
      {"Adam", adam_specs(false)},
      {"AdamW", adam_specs(true)},
      {"RMSprop",
       {graph::float_option("lr", 1e-2, "learning rate", 0),
        graph::float_option("momentum", 0, "momentum factor", 0),
        graph::float_option("alpha", 0.99, "smoothing constant of the squared gradients", 0),
        graph::float_option("eps", 1e-8, "added to the denominator for stability", 0),
        graph::bool_option("centered", false, "normalize by the gradient's estimated variance"),
        weight_decay(0), foreach_option(), maximize(), false_only("differentiable")}}};
  return specs;
}

}  // namespace

namespace {

// The optimizer's entry: its name in PyTorch's spelling and its specs.
const std::pair<const std::string, std::vector<OptionSpec>>& entry(const std::string& name) {
  return *all_specs().find(optim::canonical_optimizer_name(name));
}

}  // namespace

const std::vector<OptionSpec>& optimizer_option_specs(const std::string& name) {
  return entry(name).second;
}

optim::OptionList optimizer_option_list(const std::string& name, const graph::Json& options) {
  const auto& [canonical, specs] = entry(name);
  const graph::Json checked =
      graph::check_options(canonical, specs, options.is_null() ? graph::Json::object() : options);
  optim::OptionList out;
  for (const OptionSpec& spec : specs) {
    const graph::Json& v = checked.at(spec.name);
    if (v.is_null()) continue;
    if (v.is_boolean()) {
      out.emplace_back(spec.name, v.get<bool>());
    } else if (v.is_array()) {
      out.emplace_back(spec.name, v.get<std::vector<double>>());
    } else {
      out.emplace_back(spec.name, v.get<double>());
    }
  }
  return out;
}

}  // namespace nns::train
