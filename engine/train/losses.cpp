// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/losses.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "engine/nn/loss.h"
#include "engine/tensor/error.h"

namespace nns::train {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

graph::OptionSpec reduction() {
  return graph::choice_option("reduction", "mean", {"mean", "sum"},
                              "how the batch's losses become one number: their mean or sum");
}

graph::OptionSpec ignore_index() {
  return graph::int_option("ignore_index", -100, "a target class that adds nothing to the loss");
}

using LossEntry = std::pair<std::string, std::vector<graph::OptionSpec>>;

// Each loss: its name in PyTorch's spelling and its option specs, in the order a chooser lists
// them.
const std::vector<LossEntry>& losses() {
  static const std::vector<LossEntry> table = {
      {"CrossEntropyLoss",
       {reduction(),
        graph::float_option("label_smoothing", 0.0,
                            "mixes the target with the uniform distribution", 0, 1),
        ignore_index()}},
      {"NLLLoss", {reduction(), ignore_index()}},
      {"BCEWithLogitsLoss", {reduction()}},
      {"MSELoss", {reduction()}},
      {"L1Loss", {reduction()}},
      {"HuberLoss",
       {reduction(), graph::float_option("delta", 1.0,
                                         "where the loss turns from quadratic to linear", 1e-12)}}};
  return table;
}

const LossEntry& entry(const std::string& name) {
  const std::string key = lower(name);
  for (const LossEntry& item : losses()) {
    if (lower(item.first) == key) return item;
  }
  std::string known;
  for (const LossEntry& item : losses()) known += (known.empty() ? "" : ", ") + item.first;
  throw KeyError("unknown loss '" + name + "'; the losses are " + known);
}

}  // namespace

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const LossEntry& item : losses()) out.push_back(item.first);
    return out;
  }();
  return names;
}

const std::vector<graph::OptionSpec>& loss_option_specs(const std::string& name) {
  return entry(name).second;
}

nn::ModulePtr make_loss(const std::string& name, const graph::Json& options) {
  const auto& [canonical, specs] = entry(name);
  const graph::Json o =
      graph::check_options(canonical, specs, options.is_null() ? graph::Json::object() : options);
  const Reduction r = reduction_from_name(graph::get_string(o, "reduction"));
  if (canonical == "CrossEntropyLoss") {
    nn::CrossEntropyLossOptions c;
    c.reduction = r;
    c.label_smoothing = graph::get_float(o, "label_smoothing");
    c.ignore_index = graph::get_int(o, "ignore_index");
    return std::make_shared<nn::CrossEntropyLoss>(c);
  }
  if (canonical == "NLLLoss") {
    nn::NLLLossOptions c;
    c.reduction = r;
    c.ignore_index = graph::get_int(o, "ignore_index");
    return std::make_shared<nn::NLLLoss>(c);
  }
  if (canonical == "BCEWithLogitsLoss") {
    nn::BCEWithLogitsLossOptions c;
    c.reduction = r;
    return std::make_shared<nn::BCEWithLogitsLoss>(c);
  }
  if (canonical == "MSELoss") return std::make_shared<nn::MSELoss>(nn::MSELossOptions{r});
  if (canonical == "L1Loss") return std::make_shared<nn::L1Loss>(nn::L1LossOptions{r});
  nn::HuberLossOptions c;
  c.reduction = r;
  c.delta = graph::get_float(o, "delta");
  return std::make_shared<nn::HuberLoss>(c);
}

}  // namespace nns::train
