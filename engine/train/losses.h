// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The losses of engine/nn/loss.h by name, with their options as a project file stores them:
//
//   nns::nn::ModulePtr loss = nns::train::make_loss("CrossEntropyLoss", {{"label_smoothing",
//   0.1}});
//
// Names are PyTorch's class names, matched without regard to case. Options: "reduction"
// ("mean" or "sum": a training loss must be one number), CrossEntropyLoss's
// "label_smoothing" and "ignore_index", NLLLoss's "ignore_index", HuberLoss's "delta".
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/nn/module.h"

namespace nns::train {

// In the order a loss chooser lists them.
const std::vector<std::string>& loss_names();
// The loss's options (any case: "mseloss" is MSELoss) as option specs, the schema of node, data
// set and optimizer options too; a KeyError listing the losses for an unknown name.
const std::vector<graph::OptionSpec>& loss_option_specs(const std::string& name);
// KeyError listing the names (or the loss's options) for an unknown one; ValueError for a
// value of the wrong kind or out of range (graph::check_options).
nn::ModulePtr make_loss(const std::string& name, const graph::Json& options);

}  // namespace nns::train
