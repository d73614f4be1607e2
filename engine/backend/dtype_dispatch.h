// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The dtype dispatch of every backend: calls a generic lambda with a value of the C++ type a
// dtype computes in, and refuses the others with one error text, whichever device runs.
//
//   dispatch_floating(t.dtype, "conv2d", [&](auto tag) { using T = decltype(tag); ... });
//
// Host code only; the CPU (engine/cpu/dtype_dispatch.h) and CUDA (engine/cuda/loops.cuh)
// backends both include it, each with its own 16-bit float types for dispatch_all_dtypes.
#include <cstdint>
#include <string>

#include "engine/tensor/dtype.h"
#include "engine/tensor/error.h"

namespace nns {

// The error of an op given a dtype it does not compute in; `takes` names what it takes.
[[noreturn]] inline void throw_unsupported_dtype(const char* op, Dtype dtype, const char* takes) {
  const bool storage = dtype == Dtype::Float16 || dtype == Dtype::BFloat16;
  throw DtypeError(std::string(op) + ": does not support " + dtype_name(dtype) +
                   " tensors (it takes " + takes + ")" +
                   (storage ? "; float16/bfloat16 are storage types here, convert with "
                              ".to(nns::kFloat32) first"
                            : "; convert with .to(nns::kFloat32) first"));
}

// Every dtype; Half and BFloat16 are the backend's 16-bit float types.
template <class Half, class BFloat16, class Fn>
decltype(auto) dispatch_all_dtypes(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::Float32:
      return fn(float{});
    case Dtype::Float64:
      return fn(double{});
    case Dtype::Float16:
      return fn(Half{});
    case Dtype::BFloat16:
      return fn(BFloat16{});
    case Dtype::Int64:
      return fn(int64_t{});
    case Dtype::Bool:
      return fn(bool{});
  }
  throw DtypeError("unknown dtype " + std::to_string(static_cast<int>(dtype)));
}

// float32 and float64: the types floating math runs in.
template <class Fn>
decltype(auto) dispatch_floating(Dtype dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case Dtype::Float32:
      return fn(float{});
    case Dtype::Float64:
      return fn(double{});
    default:
      throw_unsupported_dtype(op, dtype, "float32 or float64");
  }
}

// float32, float64 and int64 (arithmetic), bool too when allow_bool.
template <class Fn>
decltype(auto) dispatch_arithmetic(Dtype dtype, const char* op, Fn&& fn, bool allow_bool = false) {
  switch (dtype) {
    case Dtype::Float32:
      return fn(float{});
    case Dtype::Float64:
      return fn(double{});
    case Dtype::Int64:
      return fn(int64_t{});
    case Dtype::Bool:
      if (allow_bool) return fn(bool{});
      [[fallthrough]];
    default:
      throw_unsupported_dtype(
          op, dtype, allow_bool ? "float32, float64, int64 or bool" : "float32, float64 or int64");
  }
}

}  // namespace nns
