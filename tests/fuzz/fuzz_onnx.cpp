// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the ONNX importer (engine/onnx/onnx_import.h) on arbitrary bytes: the
// protobuf parse, the model's checks, the operator mapping and the build of the project. A bad
// file must be an nns::Error (a ValueError naming what is wrong); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/onnx/onnx_import.h"
#include "engine/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nns::onnx::import_model(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const nns::Error&) {
  }
  return 0;
}
