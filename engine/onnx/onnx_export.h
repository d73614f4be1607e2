// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A project's model as an ONNX model: in eval mode (Dropout is the identity, BatchNorm uses
// its running statistics), with a dynamic batch dimension "N" on every input and output, the
// weights as initializers named by their state-dict keys ("fc1.weight"), custom blocks and
// groups flattened into the one graph, and the active member of a switch ModuleDict. The
// model passes onnx::checker with full_check (shape inference) before it is written.
//
//   std::string bytes = nns::onnx::export_model(project, &weights, 17);
//   nns::onnx::write_model_file(project, "model.onnx", &weights, 17);
#include <cstdint>
#include <string>

#include "engine/graph/project.h"
#include "engine/nn/module.h"
#include "engine/onnx/onnx.h"

namespace nns::onnx {

// The serialized ModelProto. weights: the state dict to write (checked against the model,
// strict); nullptr for the model's initial weights (the project's seed). A GraphError when
// the project does not build; a ValueError naming the node for a node with no ONNX form
// (a plugin type), and for an opset outside kMinOpset..kMaxOpset.
std::string export_model(const graph::Project& project, const nn::StateDict* weights,
                         int64_t opset = kDefaultOpset);
// Writes export_model's bytes atomically to path.
void write_model_file(const graph::Project& project, const std::string& path,
                      const nn::StateDict* weights, int64_t opset = kDefaultOpset);

}  // namespace nns::onnx
