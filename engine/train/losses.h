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

#include "engine/graph/spec.h"
#include "engine/nn/module.h"

namespace nns::train {

// In the order a loss chooser lists them.
const std::vector<std::string>& loss_names();
// KeyError listing the names (or the loss's options) for an unknown one; ValueError for a
// value of the wrong kind or out of range.
nn::ModulePtr make_loss(const std::string& name, const graph::Json& options);

}  // namespace nns::train
