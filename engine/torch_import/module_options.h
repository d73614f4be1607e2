// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Internal to the PyTorch import: a leaf module's node options (module_options.cpp).
#include "engine/graph/node_types.h"

namespace nns::torch_import::detail {

using graph::Json;

// The checked options of a node of `type` for a module with these attributes and parameters
// (as the tracer wrote them); a ValueError or KeyError when they do not fit.
Json module_options(const graph::NodeType& type, const Json& attributes, const Json& parameters);

}  // namespace nns::torch_import::detail
