// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Element types, named as in PyTorch (torch.float32 ...). float16 and bfloat16 are storage
// types: they load, save and convert; arithmetic runs in float32 or float64.
#include <cstddef>
#include <cstdint>
#include <string>

namespace nns {

enum class Dtype : uint8_t { Float32, Float64, Float16, BFloat16, Int64, Bool };

inline constexpr Dtype kFloat32 = Dtype::Float32;
inline constexpr Dtype kFloat64 = Dtype::Float64;
inline constexpr Dtype kFloat16 = Dtype::Float16;
inline constexpr Dtype kBFloat16 = Dtype::BFloat16;
inline constexpr Dtype kInt64 = Dtype::Int64;
inline constexpr Dtype kBool = Dtype::Bool;

size_t element_size(Dtype dtype);
// "torch.float32", as PyTorch prints it.
std::string dtype_name(Dtype dtype);
bool is_floating_point(Dtype dtype);
// Types the CPU kernels compute in (float32, float64, int64, bool).
bool is_compute_type(Dtype dtype);
// PyTorch's promotion for two tensor operands: bool < int64 < float16/bfloat16 < float32
// < float64; float16 with bfloat16 gives float32.
Dtype promote_types(Dtype a, Dtype b);

}  // namespace nns
