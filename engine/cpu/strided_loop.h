// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The one N-dimensional strided loop of the CPU backend. Operands share the loop's sizes and
// each has its own strides (0 on broadcast dims). Dims that lie back to back in memory for
// every operand are merged first, so a contiguous or simply broadcast case becomes one long
// inner run.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace nns::cpu {

template <size_t N>
struct StridedOperands {
  std::array<char*, N> data;                        // address of element [0, ...]
  std::array<std::span<const int64_t>, N> strides;  // in elements
  std::array<int64_t, N> element_size;              // in bytes
};

// fn(std::array<char*, N> ptrs, std::array<int64_t, N> byte_strides, int64_t n) handles one
// run of n elements along the innermost (merged) dim.
template <size_t N, class Fn>
void for_each_run(std::span<const int64_t> sizes, const StridedOperands<N>& ops, Fn&& fn) {
  // Byte strides per dim, innermost last, dropping size-1 dims and merging mergeable ones.
  std::vector<int64_t> dim_sizes;
  std::vector<std::array<int64_t, N>> dim_strides;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return;
    if (sizes[d] == 1) continue;
    std::array<int64_t, N> s;
    for (size_t k = 0; k < N; ++k) s[k] = ops.strides[k][d] * ops.element_size[k];
    if (!dim_sizes.empty()) {
      bool mergeable = true;
      for (size_t k = 0; k < N; ++k)
        mergeable = mergeable && dim_strides.back()[k] == s[k] * sizes[d];
      if (mergeable) {
        dim_sizes.back() *= sizes[d];
        dim_strides.back() = s;
        continue;
      }
    }
    dim_sizes.push_back(sizes[d]);
    dim_strides.push_back(s);
  }
  if (dim_sizes.empty()) {
    fn(ops.data, std::array<int64_t, N>{}, int64_t{1});
    return;
  }
  const size_t ndim = dim_sizes.size();
  const int64_t inner = dim_sizes.back();
  const std::array<int64_t, N> inner_strides = dim_strides.back();
  std::vector<int64_t> index(ndim, 0);
  std::array<char*, N> ptrs = ops.data;
  while (true) {
    fn(ptrs, inner_strides, inner);
    // Advance the outer index (all dims but the innermost), odometer style.
    size_t d = ndim - 1;
    while (true) {
      if (d == 0) return;
      --d;
      if (++index[d] < dim_sizes[d]) {
        for (size_t k = 0; k < N; ++k) ptrs[k] += dim_strides[d][k];
        break;
      }
      for (size_t k = 0; k < N; ++k) ptrs[k] -= dim_strides[d][k] * (dim_sizes[d] - 1);
      index[d] = 0;
    }
  }
}

}  // namespace nns::cpu
