// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ONNX models in and out (https://onnx.ai): what the importer (onnx_import.h) and the exporter
// (onnx_export.h) share. The files are read and written with Debian's libonnx: the classes
// protoc made from onnx.proto, and its checker. Nothing here includes its headers, so the rest
// of the engine and the programs do not depend on them.
#include <cstdint>
#include <string>

namespace nns::onnx {

// The opsets of the default ("ai.onnx") domain. 13 is the first with Softmax over one axis and
// Squeeze/Unsqueeze axes as inputs; 17 the first with LayerNormalization (torch 1.13 writes up
// to 17); 18 moves the reductions' axes to an input (torch 2.x's default exporter writes 18
// and later); 20 adds Gelu. The import reads 13 to 21, the export writes 13 to 18.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 18;        // the newest the export writes
constexpr int64_t kMaxImportOpset = 21;  // the newest the import reads
constexpr int64_t kDefaultOpset = 17;

// "opset 19 is not supported (NN Studio writes opsets 13 to 18)" when out of the export's range.
void check_opset(int64_t opset, const std::string& where);
// "opset 22 is not supported (NN Studio reads opsets 13 to 21)" when out of the import's range.
void check_import_opset(int64_t opset, const std::string& where);

}  // namespace nns::onnx
