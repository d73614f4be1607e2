// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CPU's side of the dtype dispatch (engine/backend/dtype_dispatch.h): its 16-bit float
// types (Eigen's) and conversions between the six dtypes.
//   dispatch_floating(t.dtype, "op", [&](auto tag) { using T = decltype(tag); ... });
#include <Eigen/Core>

#include <type_traits>
#include <utility>

#include "engine/backend/dtype_dispatch.h"

namespace nns::cpu {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;

template <class Fn>
decltype(auto) dispatch_all_dtypes(Dtype dtype, Fn&& fn) {
  return nns::dispatch_all_dtypes<half, bfloat16>(dtype, std::forward<Fn>(fn));
}

using nns::dispatch_arithmetic;
using nns::dispatch_floating;

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
