// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/onnx/onnx.h"

#include "engine/tensor/error.h"

namespace nns::onnx {
namespace {

void check_range(int64_t opset, const std::string& where, const char* verb, int64_t max) {
  if (opset < kMinOpset || opset > max)
    throw ValueError(where + ": opset " + std::to_string(opset) + " is not supported (NN Studio " +
                     verb + " opsets " + std::to_string(kMinOpset) + " to " + std::to_string(max) +
                     ")");
}

}  // namespace

void check_opset(int64_t opset, const std::string& where) {
  check_range(opset, where, "writes", kMaxOpset);
}

void check_import_opset(int64_t opset, const std::string& where) {
  check_range(opset, where, "reads", kMaxImportOpset);
}

}  // namespace nns::onnx
