// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A model brought in from elsewhere as a project with its weights: what both importers return
// (engine/onnx/onnx_import.h from an ONNX file, engine/torch_import/torch_import.h from a
// PyTorch module's trace), and how it is written.
//
//   nns::graph::ImportedProject m = nns::onnx::import_model_file("model.onnx");
//   nns::graph::write_imported(m, "model.nns");   // model.nns + model.safetensors
#include <string>
#include <vector>

#include "engine/graph/project.h"
#include "engine/nn/module.h"

namespace nns::graph {

struct ImportedProject {
  // Not laid out (no layout_direction): the window lays it out when it opens it, as any
  // project without positions. A built-in data set that fits, when one does.
  Project project;
  nn::StateDict weights;  // the built model's state dict: every key, in its order
  // What the user should know: a fixed batch size taken as dynamic, a Dropout kept, ...
  std::vector<std::string> notes;
};

// Writes `project_path` (.nns) and its weights beside it (the same name with .safetensors),
// each atomically, the weights first: a failure leaves neither half-written.
void write_imported(const ImportedProject& imported, const std::string& project_path);
// model.nns -> model.safetensors
std::string weights_path_for(const std::string& project_path);

}  // namespace nns::graph
