// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/onnx/onnx.h"

#include "engine/tensor/error.h"

namespace nns::onnx {

void check_opset(int64_t opset, const std::string& where) {
  if (opset < kMinOpset || opset > kMaxOpset)
    throw ValueError(where + ": opset " + std::to_string(opset) +
                     " is not supported (NN Studio reads and writes opsets " +
                     std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset) + ")");
}

}  // namespace nns::onnx
