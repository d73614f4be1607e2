// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/tensor/dtype.h"

namespace nns {

size_t element_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return 4;
    case Dtype::Float64:
      return 8;
    case Dtype::Float16:
      return 2;
    case Dtype::BFloat16:
      return 2;
    case Dtype::Int64:
      return 8;
    case Dtype::Bool:
      return 1;
  }
  return 0;
}

std::string dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::Float32:
      return "torch.float32";
    case Dtype::Float64:
      return "torch.float64";
    case Dtype::Float16:
      return "torch.float16";
    case Dtype::BFloat16:
      return "torch.bfloat16";
    case Dtype::Int64:
      return "torch.int64";
    case Dtype::Bool:
      return "torch.bool";
  }
  return "torch.unknown";
}

bool is_floating_point(Dtype dtype) {
  return dtype == Dtype::Float32 || dtype == Dtype::Float64 || dtype == Dtype::Float16 ||
         dtype == Dtype::BFloat16;
}

bool is_compute_type(Dtype dtype) {
  return dtype == Dtype::Float32 || dtype == Dtype::Float64 || dtype == Dtype::Int64 ||
         dtype == Dtype::Bool;
}

namespace {
int promotion_rank(Dtype dtype) {
  switch (dtype) {
    case Dtype::Bool:
      return 0;
    case Dtype::Int64:
      return 1;
    case Dtype::Float16:
      return 2;
    case Dtype::BFloat16:
      return 2;
    case Dtype::Float32:
      return 3;
    case Dtype::Float64:
      return 4;
  }
  return 0;
}
}  // namespace

Dtype promote_types(Dtype a, Dtype b) {
  if (a == b) return a;
  if ((a == Dtype::Float16 && b == Dtype::BFloat16) ||
      (a == Dtype::BFloat16 && b == Dtype::Float16)) {
    return Dtype::Float32;
  }
  return promotion_rank(a) >= promotion_rank(b) ? a : b;
}

}  // namespace nns
