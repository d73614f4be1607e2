// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The optimizers' options as option specs (graph::OptionSpec, the schema node, data set and
// loss options use too): what a project's optimizer_options may hold, with PyTorch's names
// and defaults, and what the training dock offers to edit.
//
//   const auto& specs = nns::train::optimizer_option_specs("Adam");   // lr, betas, eps, ...
//   nns::optim::OptionList o = nns::train::optimizer_option_list("Adam", {{"lr", 0.01}});
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/optim/optimizer.h"

namespace nns::train {

// The options of the optimizer `name` (any case: "adamw" is AdamW), in PyTorch's order; a
// KeyError listing the optimizers for an unknown name.
const std::vector<graph::OptionSpec>& optimizer_option_specs(const std::string& name);

// `options` checked against the specs (graph::check_options: an unknown name is a KeyError,
// a bad value a ValueError naming the optimizer and the option), as the optimizer factory's
// list; options left at null (SGD's lr, foreach) are left out, as PyTorch's None.
optim::OptionList optimizer_option_list(const std::string& name, const graph::Json& options);

}  // namespace nns::train
