// SPDX-License-Identifier: GPL-3.0-or-later
// The indexing family on CUDA: gathers by an int64 index, and their scatter-add backwards,
// which sum repeated indices in a fixed order (no float atomics): the same bits as the CPU's.
#include <cub/device/device_radix_sort.cuh>

#include <limits>
#include <span>
#include <string>
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

// Over `sizes`: operand 0 the output, 1 the indexed tensor with its dim's stride zeroed, 2 the
// index: out = indexed[.. index ..]. An index outside [0, dim_size) reads NaN (0 for an integer
// dtype): the ops check the indices on the host first, but a step replayed as a CUDA graph is
// not checked again, and a NaN makes its loss non-finite, so the session re-runs it eagerly
// and names it.
template <class T>
__global__ void select_kernel(T* out, const T* indexed, const int64_t* index, Strided<3> s,
                              int64_t n, int64_t dim_stride, int64_t dim_size) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[3];
    s.offsets(i, off);
    const int64_t k = index[off[2]];
    if (k >= 0 && k < dim_size) {
      out[off[0]] = indexed[off[1] + k * dim_stride];
    } else if constexpr (std::is_floating_point_v<T>) {
      out[off[0]] = std::numeric_limits<T>::quiet_NaN();
    } else {
      out[off[0]] = T(0);
    }
  }
}

template <class T>
void select_launch(std::span<const int64_t> sizes, const TensorView& out, const TensorView& indexed,
                   int64_t dim, const TensorView& index, std::span<const int64_t> index_strides) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  if (n == 0) return;
  std::vector<int64_t> indexed_strides(indexed.strides.begin(), indexed.strides.end());
  const int64_t dim_stride = indexed_strides.empty() ? 0 : indexed_strides[dim];
  const int64_t dim_size = indexed.sizes.empty() ? 1 : indexed.sizes[dim];
  if (!indexed_strides.empty()) indexed_strides[dim] = 0;
  const Strided<3> s = make_strided<3>(sizes, {out.strides, indexed_strides, index_strides});
  select_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
      static_cast<T*>(out.data), static_cast<const T*>(indexed.data), index.ptr<const int64_t>(), s,
      n, dim_stride, dim_size);
  check_launch("index_select");
}

// ---- scatter-adds, in a fixed order ----------------------------------------------------------
// self[.. index[k] ..] += source[.. k ..], with repeated indices: each element of self sums
// what lands on it itself, in increasing k, the order the CPU adds in, so the bits are the
// CPU's and the same on every run (atomic adds would sum in whatever order the threads come).
// Each source position gets a key, the destination it adds to (an index out of range gets
// one that no destination has: it adds nothing, as the CPU's check would refuse it); a stable
// radix sort (CUB's) groups the positions by key, in increasing order within a key; a thread
// per destination finds its keys by binary search and adds its positions' values.

// The keys of index_add: index[k] itself, for every k along dim.
__global__ void index_add_keys_kernel(const int64_t* index, int64_t index_stride, int64_t count,
                                      int64_t dim_size, uint64_t* keys, int64_t* positions) {
  NNS_GRID_STRIDE_LOOP(k, count) {
    const int64_t v = index[k * index_stride];
    keys[k] = static_cast<uint64_t>(v < 0 || v >= dim_size ? dim_size : v);
    positions[k] = k;
  }
}

// The keys of scatter_add, over the index's positions p: the line of p (its position with the
// dim coordinate left out) and the index value, line * (dim_size + 1) + index[p].
__global__ void scatter_add_keys_kernel(const int64_t* index, Strided<1> s, int64_t count,
                                        int64_t along, int64_t inner, int64_t dim_size,
                                        uint64_t* keys, int64_t* positions) {
  NNS_GRID_STRIDE_LOOP(p, count) {
    int64_t off[1];
    s.offsets(p, off);
    const int64_t v = index[off[0]];
    const uint64_t line = static_cast<uint64_t>((p / (along * inner)) * inner + p % inner);
    keys[p] = line * static_cast<uint64_t>(dim_size + 1) +
              static_cast<uint64_t>(v < 0 || v >= dim_size ? dim_size : v);
    positions[p] = p;
  }
}

// The first of the sorted keys not below key.
__device__ int64_t lower_bound(const uint64_t* keys, int64_t count, uint64_t key) {
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// Over self's sizes: operand 0 self, 1 source with its dim's stride zeroed; an element's place
// along dim is its key.
template <class T>
__global__ void index_add_kernel(T* self, const T* source, Strided<2> s, int64_t n, int64_t inner,
                                 int64_t dim_size, int64_t source_dim_stride, const uint64_t* keys,
                                 const int64_t* positions, int64_t count) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    s.offsets(i, off);
    const uint64_t key = static_cast<uint64_t>((i / inner) % dim_size);
    T sum = self[off[0]];
    for (int64_t j = lower_bound(keys, count, key); j < count && keys[j] == key; ++j)
      sum += source[off[1] + positions[j] * source_dim_stride];
    self[off[0]] = sum;
  }
}

// Sizes of self and of the index (as many dims; the index no larger except along dim).
struct ScatterShape {
  int ndim, dim;
  int64_t self_sizes[kMaxDims];
  int64_t index_sizes[kMaxDims];
};

// Over self's elements (row-major i): the key of i is its line among the index's positions
// and its place along dim; elements the index does not reach keep their value.
template <class T>
__global__ void scatter_add_kernel(T* self, const T* source, Strided<1> self_s, Strided<1> source_s,
                                   ScatterShape shape, int64_t dim_size, int64_t n,
                                   const uint64_t* keys, const int64_t* positions, int64_t count) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t rest = i, line = 0, scale = 1, along = 0;
    bool reached = true;
    for (int d = shape.ndim - 1; d >= 0; --d) {
      const int64_t c = rest % shape.self_sizes[d];
      rest /= shape.self_sizes[d];
      if (d == shape.dim) {
        along = c;
        continue;
      }
      reached = reached && c < shape.index_sizes[d];
      line += c * scale;
      scale *= shape.index_sizes[d];
    }
    if (!reached) continue;
    const uint64_t key = static_cast<uint64_t>(line) * static_cast<uint64_t>(dim_size + 1) +
                         static_cast<uint64_t>(along);
    int64_t off[1];
    self_s.offsets(i, off);
    T sum = self[off[0]];
    for (int64_t j = lower_bound(keys, count, key); j < count && keys[j] == key; ++j) {
      int64_t from[1];
      source_s.offsets(positions[j], from);
      sum += source[from[0]];
    }
    self[off[0]] = sum;
  }
}

// The count (key, position) pairs in keys/positions, sorted by key (keys up to max_key) into
// the second halves of both buffers, stably.
void sort_by_key(uint64_t* keys, int64_t* positions, int64_t count, uint64_t max_key, int device,
                 cudaStream_t st) {
  const int end_bit = max_key == 0 ? 1 : 64 - __builtin_clzll(max_key);
  size_t bytes = 0;
  check(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, keys + count, positions,
                                        positions + count, count, 0, end_bit, st),
        "index_add");
  Scratch temp(bytes > 0 ? bytes : 1, device);
  check(cub::DeviceRadixSort::SortPairs(temp.as<void>(), bytes, keys, keys + count, positions,
                                        positions + count, count, 0, end_bit, st),
        "index_add");
}

int64_t product(std::span<const int64_t> sizes, size_t from) {
  int64_t p = 1;
  for (size_t d = from; d < sizes.size(); ++d) p *= sizes[d];
  return p;
}

void index_select(const TensorView& out, const TensorView& self, int64_t dim,
                  const TensorView& index) {
  std::vector<int64_t> istrides(out.dim(), 0);
  if (out.dim() > 0 && index.dim() > 0) istrides[dim] = index.strides[0];
  dispatch_all_dtypes(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    select_launch<T>(out.sizes, out, self, dim, index, istrides);
  });
}

void gather(const TensorView& out, const TensorView& self, int64_t dim, const TensorView& index) {
  dispatch_all_dtypes(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    select_launch<T>(index.sizes, out, self, dim, index, index.strides);
  });
}

template <class T>
void index_add_typed(const TensorView& self, int64_t dim, const TensorView& index,
                     const TensorView& source) {
  const int64_t n = self.numel();
  const int64_t count = source.dim() > 0 ? source.sizes[dim] : 1;
  if (n == 0 || count == 0 || source.numel() == 0) return;
  const int64_t dim_size = self.dim() > 0 ? self.sizes[dim] : 1;
  const int device = device_of(self.data);
  cudaStream_t st = stream_for(self.data);
  Scratch keys(2 * count * sizeof(uint64_t), device),
      positions(2 * count * sizeof(int64_t), device);
  index_add_keys_kernel<<<blocks_for(count), kThreads, 0, st>>>(
      index.ptr<const int64_t>(), index.dim() > 0 ? index.strides[0] : 0, count, dim_size,
      keys.as<uint64_t>(), positions.as<int64_t>());
  check_launch("index_add");
  sort_by_key(keys.as<uint64_t>(), positions.as<int64_t>(), count, static_cast<uint64_t>(dim_size),
              device, st);
  std::vector<int64_t> source_strides(source.strides.begin(), source.strides.end());
  const int64_t source_dim_stride = source_strides.empty() ? 0 : source_strides[dim];
  if (!source_strides.empty()) source_strides[dim] = 0;
  const Strided<2> s = make_strided<2>(self.sizes, {self.strides, source_strides});
  index_add_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(
      self.ptr<T>(), source.ptr<const T>(), s, n, product(self.sizes, dim + 1), dim_size,
      source_dim_stride, keys.as<uint64_t>() + count, positions.as<int64_t>() + count, count);
  check_launch("index_add");
}

ScatterShape scatter_shape(const TensorView& self, int64_t dim, const TensorView& index) {
  if (self.dim() > kMaxDims)
    throw DeviceError("CUDA kernels take tensors of at most " + std::to_string(kMaxDims) + " dims");
  ScatterShape shape{static_cast<int>(self.dim()), static_cast<int>(dim), {}, {}};
  for (int64_t d = 0; d < self.dim(); ++d) {
    shape.self_sizes[d] = self.sizes[d];
    shape.index_sizes[d] = d < index.dim() ? index.sizes[d] : 1;
  }
  return shape;
}

template <class T>
void scatter_add_typed(const TensorView& self, int64_t dim, const TensorView& index,
                       const TensorView& source) {
  const int64_t n = self.numel(), count = index.numel();
  if (n == 0 || count == 0) return;
  const ScatterShape shape = scatter_shape(self, dim, index);
  const int64_t dim_size = self.dim() > 0 ? self.sizes[dim] : 1;
  const int64_t along = index.dim() > 0 ? index.sizes[dim] : 1;
  const int device = device_of(self.data);
  cudaStream_t st = stream_for(self.data);
  Scratch keys(2 * count * sizeof(uint64_t), device),
      positions(2 * count * sizeof(int64_t), device);
  scatter_add_keys_kernel<<<blocks_for(count), kThreads, 0, st>>>(
      index.ptr<const int64_t>(), make_strided<1>(index.sizes, {index.strides}), count, along,
      product(index.sizes, dim + 1), dim_size, keys.as<uint64_t>(), positions.as<int64_t>());
  check_launch("scatter_add");
  const uint64_t lines = static_cast<uint64_t>(count / along);
  sort_by_key(keys.as<uint64_t>(), positions.as<int64_t>(), count,
              lines * static_cast<uint64_t>(dim_size + 1) - 1, device, st);
  scatter_add_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(
      self.ptr<T>(), source.ptr<const T>(), make_strided<1>(self.sizes, {self.strides}),
      make_strided<1>(index.sizes, {source.strides}), shape, dim_size, n,
      keys.as<uint64_t>() + count, positions.as<int64_t>() + count, count);
  check_launch("scatter_add");
}

void index_add(const TensorView& self, int64_t dim, const TensorView& index,
               const TensorView& source) {
  dispatch_arithmetic(self.dtype, "index_add", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) index_add_typed<T>(self, dim, index, source);
  });
}

void scatter_add(const TensorView& self, int64_t dim, const TensorView& index,
                 const TensorView& source) {
  dispatch_arithmetic(self.dtype, "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) scatter_add_typed<T>(self, dim, index, source);
  });
}

}  // namespace

const IndexingKernels indexing_kernels{&find_invalid_index, &index_select, &index_add, &gather,
                                       &scatter_add};

}  // namespace nns::cuda
