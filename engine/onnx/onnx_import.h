// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An ONNX model as a project: its operators become the graph's nodes (Gemm -> Linear, Conv ->
// Conv2d, the ReduceMean/Sub/Pow/.../Add decomposition of layer_norm -> LayerNorm, the Erf
// form of GELU -> GELU, ...), its initializers the model's weights. Module names come from the
// initializer names ("fc1.weight" -> node fc1) or, where a module has none, from the scope in
// the ONNX node's name ("/features/features.2/Relu" -> features.2), and dotted names become
// groups (features.0 is member 0 of the Sequential features), so the weights' keys are those
// of the PyTorch model that torch.onnx.export wrote.
//
//   nns::onnx::Imported m = nns::onnx::import_model_file("model.onnx");
//   nns::onnx::write_imported(m, "model.nns");   // model.nns + model.safetensors
//
// A model is checked whole before anything is made: a file that is not ONNX or is truncated,
// an opset outside 13..17, an initializer whose data does not fit its shape, or operators
// NN Studio has no node for (listed with their node names) are a ValueError, and nothing is
// written.
#include <string>
#include <string_view>
#include <vector>

#include "engine/graph/project.h"
#include "engine/nn/module.h"

namespace nns::onnx {

struct Imported {
  // Not laid out (no layout_direction): the window lays it out when it opens it, as any
  // project without positions. A built-in data set that fits, when one does.
  graph::Project project;
  nn::StateDict weights;  // the built model's state dict: every key, in its order
  // What the user should know: a fixed batch size taken as dynamic, a Dropout kept, ...
  std::vector<std::string> notes;
};

// `source` names the model in messages ("model.onnx").
Imported import_model(std::string_view bytes, const std::string& source);
Imported import_model_file(const std::string& path);

// Writes `project_path` (.nns) and its weights beside it (the same name with .safetensors),
// each atomically, the weights first: a failure leaves neither half-written.
void write_imported(const Imported& imported, const std::string& project_path);
// model.nns -> model.safetensors
std::string weights_path_for(const std::string& project_path);

}  // namespace nns::onnx
