// SPDX-License-Identifier: GPL-3.0-or-later
// The indexing family on CUDA: gathers by an int64 index, and their scatter-add backwards
// with atomic adds (repeated indices accumulate; the order of the adds, and so the last bits
// of a float sum, may differ from run to run, as in PyTorch's CUDA index_add).
#include <limits>
#include <vector>

#include "engine/backend/indexing_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

__global__ void find_invalid_kernel(const int64_t* index, Strided<1> s, int64_t n, int64_t size,
                                    unsigned long long* first) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    s.offsets(i, off);
    const int64_t v = index[off[0]];
    if (v < 0 || v >= size) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

int64_t find_invalid_index(const TensorView& index, int64_t size, int64_t* value) {
  const int64_t n = index.numel();
  // Inside a CUDA graph capture nothing can be read back: the kernels guard instead.
  if (n == 0 || thread_capture().stream != nullptr) return -1;
  const int device = device_of(index.data);
  set_device(device);
  cudaStream_t st = stream(device);
  auto* first =
      static_cast<unsigned long long*>(cached_allocate(sizeof(unsigned long long), device));
  unsigned long long host = ~0ull;
  try {
    check(cudaMemcpyAsync(first, &host, sizeof host, cudaMemcpyHostToDevice, st), "index");
    const Strided<1> s = make_strided<1>(index.sizes, {index.strides});
    find_invalid_kernel<<<blocks_for(n), kThreads, 0, st>>>(index.ptr<const int64_t>(), s, n, size,
                                                            first);
    check_launch("index");
    check(cudaMemcpyAsync(&host, first, sizeof host, cudaMemcpyDeviceToHost, st), "index");
    check(cudaStreamSynchronize(st), "index");
    if (host != ~0ull) {
      // The offending value, read back on its own (the error path only).
      int64_t off[1] = {0};
      int64_t linear = static_cast<int64_t>(host);
      for (int d = s.ndim - 1; d >= 0; --d) {
        off[0] += (linear % s.sizes[d]) * s.strides[0][d];
        linear /= s.sizes[d];
      }
      check(cudaMemcpyAsync(value, index.ptr<const int64_t>() + off[0], sizeof(int64_t),
                            cudaMemcpyDeviceToHost, st),
            "index");
      check(cudaStreamSynchronize(st), "index");
    }
  } catch (...) {
    cached_free(first, device);
    throw;
  }
  cached_free(first, device);
  return host == ~0ull ? -1 : static_cast<int64_t>(host);
}

template <class T>
__device__ __forceinline__ void atomic_add(T* target, T v) {
  if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(target), static_cast<unsigned long long>(v));
  } else {
    atomicAdd(target, v);
  }
}

// Over `sizes`: operand 0 the plain tensor, 1 the indexed one with its dim's stride zeroed,
// 2 the index. add: indexed[.. index ..] += plain; else plain = indexed[.. index ..].
// An index outside [0, dim_size) reads NaN (0 for an integer dtype) and adds nothing: the ops
// check the indices on the host first, but a step replayed as a CUDA graph is not checked
// again, and a NaN makes its loss non-finite, so the session re-runs it eagerly and names it.
template <class T, bool kAdd>
__global__ void indexed_kernel(T* plain, T* indexed, const int64_t* index, Strided<3> s, int64_t n,
                               int64_t dim_stride, int64_t dim_size) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const int64_t k = index[off[2]];
    if (k < 0 || k >= dim_size) {
      if constexpr (!kAdd) {
        if constexpr (std::is_floating_point_v<T>) {
          plain[off[0]] = std::numeric_limits<T>::quiet_NaN();
        } else {
          plain[off[0]] = T(0);
        }
      }
      continue;
    }
    T* target = indexed + off[1] + k * dim_stride;
    if constexpr (kAdd) {
      atomic_add(target, plain[off[0]]);
    } else {
      plain[off[0]] = *target;
    }
  }
}

template <bool kAdd, class T>
void indexed_launch(std::span<const int64_t> sizes, const TensorView& plain,
                    std::span<const int64_t> plain_strides, const TensorView& indexed, int64_t dim,
                    const TensorView& index, std::span<const int64_t> index_strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  std::vector<int64_t> indexed_strides(indexed.strides.begin(), indexed.strides.end());
  const int64_t dim_stride = indexed_strides.empty() ? 0 : indexed_strides[dim];
  const int64_t dim_size = indexed.sizes.empty() ? 1 : indexed.sizes[dim];
  if (!indexed_strides.empty()) indexed_strides[dim] = 0;
  const Strided<3> s = make_strided<3>(sizes, {plain_strides, indexed_strides, index_strides});
  indexed_kernel<T, kAdd><<<blocks_for(n), kThreads, 0, stream_for(plain.data)>>>(
      static_cast<T*>(plain.data), static_cast<T*>(indexed.data), index.ptr<const int64_t>(), s, n,
      dim_stride, dim_size);
  check_launch(kAdd ? "index_add" : "index_select");
}

std::vector<int64_t> index_strides_along(const TensorView& index, int64_t ndim, int64_t dim) {
  std::vector<int64_t> strides(ndim, 0);
  if (ndim > 0 && index.dim() > 0) strides[dim] = index.strides[0];
  return strides;
}

void index_select(const TensorView& out, const TensorView& self, int64_t dim,
                  const TensorView& index) {
  const auto istrides = index_strides_along(index, out.dim(), dim);
  dispatch_all(self.dtype, "index_select", [&](auto tag) {
    using T = decltype(tag);
    indexed_launch<false, T>(out.sizes, out, out.strides, self, dim, index, istrides);
  });
}

void index_add(const TensorView& self, int64_t dim, const TensorView& index,
               const TensorView& source) {
  const auto istrides = index_strides_along(index, source.dim(), dim);
  dispatch_compute(self.dtype, "index_add", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      indexed_launch<true, T>(source.sizes, source, source.strides, self, dim, index, istrides);
  });
}

void gather(const TensorView& out, const TensorView& self, int64_t dim, const TensorView& index) {
  dispatch_all(self.dtype, "gather", [&](auto tag) {
    using T = decltype(tag);
    indexed_launch<false, T>(index.sizes, out, out.strides, self, dim, index, index.strides);
  });
}

void scatter_add(const TensorView& self, int64_t dim, const TensorView& index,
                 const TensorView& source) {
  dispatch_compute(self.dtype, "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)
      indexed_launch<true, T>(index.sizes, source, source.strides, self, dim, index, index.strides);
  });
}

}  // namespace

const IndexingKernels indexing_kernels{&find_invalid_index, &index_select, &index_add, &gather,
                                       &scatter_add};

}  // namespace nns::cuda
