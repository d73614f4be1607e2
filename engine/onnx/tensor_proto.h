// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Tensors to and from onnx::TensorProto, for the importer and the exporter only (this header
// includes libonnx's generated classes).
#include <onnx/onnx_pb.h>

#include <string>

#include "engine/tensor/tensor.h"

namespace nns::onnx {

// A float32 or int64 tensor as an initializer named `name` (raw_data, little-endian).
::onnx::TensorProto to_tensor_proto(const Tensor& tensor, const std::string& name);

// An initializer's or Constant's tensor: float32/float64 (as float32) or int64/int32 (as
// int64), from raw_data or the typed fields. A ValueError naming `where` and the tensor when
// the data does not fit its dims, the dims are negative or too large, the type is another one,
// or the data is external.
Tensor from_tensor_proto(const ::onnx::TensorProto& proto, const std::string& where);

}  // namespace nns::onnx
