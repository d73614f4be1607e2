// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/onnx/tensor_proto.h"

#include <cstring>
#include <limits>
#include <vector>

#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::onnx {

::onnx::TensorProto to_tensor_proto(const Tensor& tensor, const std::string& name) {
  const Tensor t = tensor.to(kCPU).contiguous();
  ::onnx::TensorProto proto;
  proto.set_name(name);
  for (int64_t d : t.shape()) proto.add_dims(d);
  if (t.dtype() == kInt64) {
    proto.set_data_type(::onnx::TensorProto::INT64);
    proto.set_raw_data(t.data_ptr<int64_t>(), static_cast<size_t>(t.numel()) * sizeof(int64_t));
  } else {
    const Tensor f = t.to(kFloat32).contiguous();
    proto.set_data_type(::onnx::TensorProto::FLOAT);
    proto.set_raw_data(f.data_ptr<float>(), static_cast<size_t>(f.numel()) * sizeof(float));
  }
  return proto;
}

namespace {

// Elements of `proto`'s dims, or a ValueError; a bound keeps a hostile file from asking for
// more memory than any real model has.
int64_t element_count(const ::onnx::TensorProto& proto, const std::string& what) {
  constexpr int64_t kMaxElements = int64_t{1} << 32;
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) throw ValueError(what + " has a negative dimension (" + std::to_string(d) + ")");
    if (d != 0 && n > kMaxElements / d) throw ValueError(what + " has more than 2^32 elements");
    n *= d;
  }
  return n;
}

template <typename T>
std::vector<T> raw_values(const std::string& raw, int64_t n, const std::string& what) {
  if (raw.size() != static_cast<size_t>(n) * sizeof(T))
    throw ValueError(what + " has " + std::to_string(raw.size()) +
                     " bytes of data; its shape needs " +
                     std::to_string(static_cast<size_t>(n) * sizeof(T)));
  std::vector<T> out(static_cast<size_t>(n));
  if (n > 0) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

template <typename T, typename Field>
std::vector<T> field_values(const Field& field, int64_t n, const std::string& what) {
  if (field.size() != n)
    throw ValueError(what + " has " + std::to_string(field.size()) + " values; its shape needs " +
                     std::to_string(n));
  return std::vector<T>(field.begin(), field.end());
}

}  // namespace

Tensor from_tensor_proto(const ::onnx::TensorProto& proto, const std::string& where) {
  const std::string what = where + ": tensor '" + proto.name() + "'";
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    throw ValueError(what + " keeps its data in an external file, which NN Studio does not read");
  const int64_t n = element_count(proto, what);
  const Shape shape(proto.dims().begin(), proto.dims().end());
  const bool raw = proto.has_raw_data();
  switch (proto.data_type()) {
    case ::onnx::TensorProto::FLOAT:
      return from_vector(raw ? raw_values<float>(proto.raw_data(), n, what)
                             : field_values<float>(proto.float_data(), n, what),
                         shape);
    case ::onnx::TensorProto::DOUBLE: {
      const std::vector<double> v = raw ? raw_values<double>(proto.raw_data(), n, what)
                                        : field_values<double>(proto.double_data(), n, what);
      return from_vector(std::vector<float>(v.begin(), v.end()), shape);
    }
    case ::onnx::TensorProto::INT64:
      return from_vector(raw ? raw_values<int64_t>(proto.raw_data(), n, what)
                             : field_values<int64_t>(proto.int64_data(), n, what),
                         shape);
    case ::onnx::TensorProto::INT32: {
      const std::vector<int32_t> v = raw ? raw_values<int32_t>(proto.raw_data(), n, what)
                                         : field_values<int32_t>(proto.int32_data(), n, what);
      return from_vector(std::vector<int64_t>(v.begin(), v.end()), shape);
    }
    default:
      throw ValueError(what + " has data type " +
                       ::onnx::TensorProto::DataType_Name(
                           static_cast<::onnx::TensorProto::DataType>(proto.data_type())) +
                       "; NN Studio reads float32, float64, int32 and int64 tensors");
  }
}

}  // namespace nns::onnx
