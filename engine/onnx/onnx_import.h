// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An ONNX model as a project: its operators become the graph's nodes (Gemm -> Linear, Conv ->
// Conv2d, the ReduceMean/Sub/Pow/.../Add decomposition of layer_norm -> LayerNorm, the Erf
// form of GELU -> GELU, ...), its initializers the model's weights. Module names come from the
// initializer names ("fc1.weight" -> node fc1) or, where a module has none, from the scope in
// the ONNX node's name ("/features/features.2/Relu" -> features.2) or in its metadata (torch
// 2.x's exporter), and dotted names become groups (features.0 is member 0 of the Sequential
// features), so the weights' keys are those of the PyTorch model that torch.onnx.export wrote.
// Attention, as torch 1.13 writes nn.MultiheadAttention or torch 2.x writes
// scaled_dot_product_attention between projections, comes back as a MultiheadAttention.
//
//   nns::graph::ImportedProject m = nns::onnx::import_model_file("model.onnx");
//   nns::graph::write_imported(m, "model.nns");   // model.nns + model.safetensors
//
// A model is checked whole before anything is made: a file that is not ONNX or is truncated,
// an opset outside 13..21, an initializer whose data does not fit its shape, or operators
// NN Studio has no node for (listed with their node names) are a ValueError, and nothing is
// written.
#include <string>
#include <string_view>
#include <vector>

#include "engine/graph/imported_project.h"

namespace nns::onnx {

// `source` names the model in messages ("model.onnx").
graph::ImportedProject import_model(std::string_view bytes, const std::string& source);
graph::ImportedProject import_model_file(const std::string& path);

}  // namespace nns::onnx
