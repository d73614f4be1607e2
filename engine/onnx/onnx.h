// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ONNX models in and out (https://onnx.ai): what the importer (onnx_import.h) and the exporter
// (onnx_export.h) share. The files are read and written with Debian's libonnx: the classes
// protoc made from onnx.proto, and its checker. Nothing here includes its headers, so the rest
// of the engine and the programs do not depend on them.
#include <cstdint>
#include <string>

namespace nns::onnx {

// The opsets of the default ("ai.onnx") domain that import and export support: 13 (the first
// with Softmax over one axis and Squeeze/Unsqueeze axes as inputs) to 17 (the first with
// LayerNormalization; torch 1.13 writes up to 17).
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;
constexpr int64_t kDefaultOpset = 17;

// "opset 12 is not supported (NN Studio reads and writes opsets 13 to 17)" when out of range.
void check_opset(int64_t opset, const std::string& where);

}  // namespace nns::onnx
