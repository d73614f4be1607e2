// SPDX-License-Identifier: GPL-3.0-or-later
// A plugin whose register function throws after adding a type: nothing of it is registered.
#include <stdexcept>

#include "engine/nn/layers.h"
#include "engine/plugin/plugin.h"

namespace {
void register_types(nns::plugin::Registrar& registrar) {
  registrar.add(nns::graph::module_type(
      "HalfRegistered", "Test", "never registered: the plugin throws after adding it", {},
      [](const nns::graph::Json&) { return std::make_shared<nns::nn::Identity>(); },
      nns::graph::same_shape));
  throw std::runtime_error("cannot read its table of constants");
}
}  // namespace

NNS_PLUGIN("throws", "0.1.0", "a plugin whose registration throws", register_types)
