// SPDX-License-Identifier: GPL-3.0-or-later
// CPU memory and layout kernels: aligned allocation, strided copy with dtype conversion, fill.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/cpu/strided_loop.h"

namespace nns::cpu {

namespace {

constexpr size_t kAlignment = 64;

#ifdef __GLIBC__
// A training step frees and re-allocates the same tensor sizes every step. With glibc's
// defaults, blocks above 128 KiB are mmap'ed and unmapped each time and free memory at the top
// of the heap goes back to the system, so every step pays page faults (the kernel zeroing
// pages) for memory it just gave back: up to a tenth of a small model's step. Keeping blocks
// below 64 MiB on the heap and up to 256 MiB of free memory mapped avoids that.
void tune_malloc() {
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
#else
void tune_malloc() {}
#endif

// Freed blocks kept for reuse, by size. A training step allocates the same sizes every step
// (activations, gradients, saved tensors), and glibc's malloc/free of 16-256 KiB blocks, with
// the consolidation of its fast bins that such requests trigger, cost about 8% of the small
// benchmark model's step (perf, bench_train --model small); a hit here is a lock and a pop.
// Each block carries its size in a header of one alignment unit before the caller's pointer,
// since deallocate is not told the size. Blocks above kMaxCachedBlock go straight back to
// malloc (large models allocate few of them per step), and at most kMaxCachedBytes are held.
class BlockCache {
 public:
  static constexpr size_t kMaxCachedBlock = size_t{16} << 20;
  static constexpr size_t kMaxCachedBytes = size_t{128} << 20;

  // A cached block of exactly `size` bytes (header included), or nullptr.
  void* take(size_t size) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    return block;
  }

  // Keeps the block for reuse; false when it is too large or the cache is full.
  bool give(void* block, size_t size) {
    if (size > kMaxCachedBlock) return false;
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + size > kMaxCachedBytes) return false;
    free_[size].push_back(block);
    cached_bytes_ += size;
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_bytes_ = 0;
};

// Never destroyed: tensors in static storage may be freed after any other static object.
BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;
  return *cache;
}

void* allocate(size_t nbytes, int) {
  [[maybe_unused]] static const bool tuned = (tune_malloc(), true);
  // aligned_alloc needs a multiple of the alignment; never ask for 0 bytes. One more
  // alignment unit holds the block's size.
  const size_t size = (nbytes + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  void* block = block_cache().take(size);
  if (block == nullptr) block = std::aligned_alloc(kAlignment, size);
  if (block == nullptr) {
    throw Error("Storage::allocate: out of memory allocating " + std::to_string(nbytes) +
                " bytes on the CPU");
  }
  *static_cast<size_t*>(block) = size;
  return static_cast<char*>(block) + kAlignment;
}

void deallocate(void* data, int) {
  if (data == nullptr) return;
  void* block = static_cast<char*>(data) - kAlignment;
  if (!block_cache().give(block, *static_cast<const size_t*>(block))) std::free(block);
}

void copy_bytes(void* dst, const void* src, size_t nbytes) {
  if (nbytes) std::memcpy(dst, src, nbytes);
}

template <class D, class S>
void copy_typed(const TensorView& dst, const TensorView& src) {
  StridedOperands<2> ops{{static_cast<char*>(dst.data), static_cast<char*>(src.data)},
                         {dst.strides, src.strides},
                         {sizeof(D), sizeof(S)}};
  for_each_run(dst.sizes, ops, [](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t n) {
    if constexpr (std::is_same_v<D, S>) {
      if (s[0] == sizeof(D) && s[1] == sizeof(S)) {
        std::memcpy(p[0], p[1], n * sizeof(D));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<D*>(p[0] + i * s[0]) =
          convert<D>(*reinterpret_cast<const S*>(p[1] + i * s[1]));
    }
  });
}

void copy(const TensorView& dst, const TensorView& src) {
  dispatch_all_dtypes(dst.dtype, [&](auto d) {
    dispatch_all_dtypes(src.dtype, [&](auto s) { copy_typed<decltype(d), decltype(s)>(dst, src); });
  });
}

void fill(const TensorView& dst, double value) {
  dispatch_all_dtypes(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = convert<T>(value);
    StridedOperands<1> ops{{static_cast<char*>(dst.data)}, {dst.strides}, {sizeof(T)}};
    for_each_run(dst.sizes, ops, [v](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

}  // namespace

const AllocatorKernels allocator_kernels{&allocate, &deallocate, &copy_bytes};
const CopyKernels copy_kernels{&copy, &fill};

}  // namespace nns::cpu
