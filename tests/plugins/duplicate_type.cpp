// SPDX-License-Identifier: GPL-3.0-or-later
// A plugin that registers a new type and one whose name a built-in type has: neither is
// registered (a plugin's types go in all or none).
#include "engine/nn/layers.h"
#include "engine/plugin/plugin.h"

namespace {
nns::graph::NodeType identity_type(const char* name) {
  return nns::graph::module_type(
      name, "Test", "an identity", {},
      [](const nns::graph::Json&) { return std::make_shared<nns::nn::Identity>(); },
      nns::graph::same_shape);
}

void register_types(nns::plugin::Registrar& registrar) {
  registrar.add(identity_type("NotShadowed"));
  registrar.add(identity_type("Linear"));
}
}  // namespace

NNS_PLUGIN("duplicate", "0.1.0", "a plugin that reuses a built-in type's name", register_types)
