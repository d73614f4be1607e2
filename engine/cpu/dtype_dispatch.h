// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Calls a generic lambda with a value of the C++ type of a dtype:
//   dispatch_dtype(t.dtype, "op", [&](auto tag) { using T = decltype(tag); ... });
#include <Eigen/Core>

#include "engine/tensor/dtype.h"
#include "engine/tensor/error.h"

namespace nns::cpu {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <class Fn>
decltype(auto) dispatch_all_dtypes(Dtype dtype, Fn&& fn) {
  switch (dtype) {
    case Dtype::Float32:
      return fn(float{});
    case Dtype::Float64:
      return fn(double{});
    case Dtype::Float16:
      return fn(half{});
    case Dtype::BFloat16:
      return fn(bfloat16{});
    case Dtype::Int64:
      return fn(int64_t{});
    case Dtype::Bool:
      return fn(bool{});
  }
  return fn(float{});
}

// float32 and float64 only: the types the CPU computes floating math in.
template <class Fn>
decltype(auto) dispatch_floating(Dtype dtype, const char* op, Fn&& fn) {
  switch (dtype) {
    case Dtype::Float32:
      return fn(float{});
    case Dtype::Float64:
      return fn(double{});
    default:
      throw DtypeError(std::string(op) + ": expected a float32 or float64 tensor, got " +
                       dtype_name(dtype) +
                       (dtype == Dtype::Float16 || dtype == Dtype::BFloat16
                            ? "; float16/bfloat16 are storage types here, convert with "
                              ".to(nns::kFloat32) first"
                            : "; convert with .to(nns::kFloat32) first"));
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
      throw DtypeError(std::string(op) + ": does not support " + dtype_name(dtype) +
                       " tensors; convert with .to(nns::kFloat32) first");
  }
}

template <class To, class From>
inline To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) {
    if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
      return static_cast<float>(x) != 0.0f;
    } else {
      return x != From(0);
    }
  } else if constexpr (std::is_same_v<From, half> || std::is_same_v<From, bfloat16>) {
    return static_cast<To>(static_cast<float>(x));
  } else if constexpr (std::is_same_v<To, half> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(x));
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace nns::cpu
