// SPDX-License-Identifier: GPL-3.0-or-later
// The caching allocator of the CUDA backend, after PyTorch's (c10/cuda/CUDACachingAllocator):
// cudaMalloc and cudaFree synchronize the device and take tens of microseconds, and a
// training step allocates and frees the same few hundred buffers each time. So memory is
// taken from the driver in segments and never given back while the program runs (until
// empty_cache or an out-of-memory retry): requests are rounded up to 512 bytes and served
// from the best-fitting free block, split when the rest is worth keeping, and freed blocks
// merge with their free neighbours of the same segment.
//
// Two pools, as PyTorch's: requests up to 1 MiB from 2 MiB segments (the small pool), larger
// ones from segments of 20 MiB (under 10 MiB) or the request rounded up to 2 MiB. Blocks are
// reused per stream; the backend queues all of a device's work on one compute stream, so a
// freed block can be handed out again at once: any later kernel using it runs after the
// kernels that used it before.
//
// A CUDA graph capture allocates from a private pool of its own (runtime.h): the graph's
// replays write to the blocks its capture was given, so those must never go to another tensor
// while the graph lives, even after the tensor that had them is freed.
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/cuda/runtime.h"

namespace nns::cuda {
namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kSmallSize = size_t{1} << 20;
constexpr size_t kSmallBuffer = size_t{2} << 20;
constexpr size_t kLargeBuffer = size_t{20} << 20;
constexpr size_t kMinLargeAlloc = size_t{10} << 20;
constexpr size_t kRoundLarge = size_t{2} << 20;
constexpr int kMaxDevices = 64;

struct Block {
  char* ptr = nullptr;
  size_t size = 0;
  bool allocated = false;
  bool small = false;
  uint64_t pool = 0;      // the private pool whose segment this is; 0: the common cache
  Block* prev = nullptr;  // neighbours within the segment
  Block* next = nullptr;
};

struct BySize {
  bool operator()(const Block* a, const Block* b) const {
    if (a->size != b->size) return a->size < b->size;
    return a->ptr < b->ptr;
  }
};
using Pool = std::set<Block*, BySize>;

struct FreeBlocks {
  Pool small_free, large_free;
  Pool& of(bool small) { return small ? small_free : large_free; }
};

struct DeviceState {
  Pool small_free, large_free;  // the common cache
  std::unordered_map<uint64_t, FreeBlocks> private_pools;
  std::unordered_map<void*, Block*> active;
  size_t allocated = 0, reserved = 0, peak = 0;
};

struct Allocator {
  std::mutex mutex;
  DeviceState devices[kMaxDevices];
};
Allocator& allocator() {
  static Allocator* a = new Allocator;  // never destroyed: storages free into it until exit
  return *a;
}

size_t round_size(size_t n) {
  return n < kMinBlock ? kMinBlock : (n + kMinBlock - 1) / kMinBlock * kMinBlock;
}

size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// Frees every cached segment no tensor uses (whole free blocks); the caller holds the mutex.
void release_cached(DeviceState& d, int device) {
  for (Pool* pool : {&d.small_free, &d.large_free}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* b = *it;
      if (b->prev == nullptr && b->next == nullptr) {
        set_device(device);
        cudaFree(b->ptr);
        cudaGetLastError();
        d.reserved -= b->size;
        delete b;
        it = pool->erase(it);
      } else {
        ++it;
      }
    }
  }
}

[[noreturn]] void throw_out_of_memory(const DeviceState& d, int device, size_t asked,
                                      cudaError_t status) {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) cudaGetLastError();
  throw DeviceError("CUDA out of memory: tried to allocate " + format_bytes(asked) +
                    " on cuda:" + std::to_string(device) + " (" + cudaGetErrorName(status) + "); " +
                    format_bytes(d.allocated) + " in use by tensors, " +
                    format_bytes(d.reserved - d.allocated) + " cached by NN Studio's allocator, " +
                    format_bytes(free_bytes) + " free of the GPU's " + format_bytes(total_bytes) +
                    ". Train with a smaller batch or model, or on the CPU");
}

}  // namespace

void* cached_allocate(size_t nbytes, int device) {
  if (device < 0 || device >= kMaxDevices)
    throw DeviceError("CUDA device " + std::to_string(device) + " is out of range");
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  DeviceState& d = a.devices[device];
  const size_t size = round_size(nbytes);
  const bool small = size <= kSmallSize;
  const ThreadCapture& capture = thread_capture();
  const uint64_t pool_id = capture.device == device ? capture.pool : 0;
  auto private_pool = pool_id != 0 ? d.private_pools.find(pool_id) : d.private_pools.end();
  if (pool_id != 0 && private_pool == d.private_pools.end())
    throw DeviceError("CUDA allocate: the graph capture's memory pool is gone");
  Pool& pool =
      pool_id != 0 ? private_pool->second.of(small) : (small ? d.small_free : d.large_free);
  Block key;
  key.size = size;
  auto it = pool.lower_bound(&key);
  Block* block = nullptr;
  if (it != pool.end()) {
    block = *it;
    pool.erase(it);
  } else {
    const size_t seg = segment_size(size);
    set_device(device);
    void* p = nullptr;
    cudaError_t status = cudaMalloc(&p, seg);
    if (status == cudaErrorMemoryAllocation && pool_id == 0) {
      cudaGetLastError();
      // Give the cache back to the driver and try once more, as PyTorch does.
      release_cached(d, device);
      status = cudaMalloc(&p, seg);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      if (status == cudaErrorMemoryAllocation) throw_out_of_memory(d, device, nbytes, status);
      check(status, "CUDA allocate");
    }
    block = new Block;
    block->ptr = static_cast<char*>(p);
    block->size = seg;
    block->small = small;
    block->pool = pool_id;
    d.reserved += seg;
  }
  // Split off the rest when it is worth a block of its own: any 512 bytes in the small pool,
  // more than 1 MiB in the large one (smaller rests there would fragment it).
  const size_t rest = block->size - size;
  if ((small && rest >= kMinBlock) || (!small && rest > kSmallSize)) {
    Block* r = new Block;
    r->ptr = block->ptr + size;
    r->size = rest;
    r->small = small;
    r->pool = block->pool;
    r->prev = block;
    r->next = block->next;
    if (block->next) block->next->prev = r;
    block->next = r;
    block->size = size;
    pool.insert(r);
  }
  block->allocated = true;
  d.active.emplace(block->ptr, block);
  d.allocated += block->size;
  if (d.allocated > d.peak) d.peak = d.allocated;
  return block->ptr;
}

void cached_free(void* p, int device) {
  if (p == nullptr || device < 0 || device >= kMaxDevices) return;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  DeviceState& d = a.devices[device];
  auto it = d.active.find(p);
  if (it == d.active.end()) return;  // not ours: nothing to do (never happens)
  Block* block = it->second;
  d.active.erase(it);
  d.allocated -= block->size;
  block->allocated = false;
  // A released private pool's blocks go to the common cache (the whole segment does: its
  // free blocks moved there when the pool was released).
  auto private_pool = block->pool != 0 ? d.private_pools.find(block->pool) : d.private_pools.end();
  if (block->pool != 0 && private_pool == d.private_pools.end()) block->pool = 0;
  Pool& pool = block->pool != 0 ? private_pool->second.of(block->small)
                                : (block->small ? d.small_free : d.large_free);
  // Merge with free neighbours of the same segment.
  if (Block* prev = block->prev; prev != nullptr && !prev->allocated) {
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (Block* next = block->next; next != nullptr && !next->allocated) {
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

void begin_private_pool(int device, uint64_t pool) {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  a.devices[device].private_pools[pool];
}

void release_private_pool(int device, uint64_t pool) {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  DeviceState& d = a.devices[device];
  const auto it = d.private_pools.find(pool);
  if (it == d.private_pools.end()) return;
  // Blocks still in use there (a gradient the graph made) are re-tagged as they are freed.
  for (const auto& [ptr, block] : d.active) {
    if (block->pool == pool) block->pool = 0;
  }
  for (bool small : {true, false}) {
    for (Block* b : it->second.of(small)) {
      b->pool = 0;
      (small ? d.small_free : d.large_free).insert(b);
    }
  }
  d.private_pools.erase(it);
}

void cached_memory_stats(int device, size_t* allocated, size_t* reserved, size_t* peak) {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  const DeviceState& d = a.devices[device];
  *allocated = d.allocated;
  *reserved = d.reserved;
  *peak = d.peak;
}

void cached_empty() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mutex);
  for (int i = 0; i < kMaxDevices; ++i) {
    if (a.devices[i].reserved == 0) continue;
    // Queued kernels may still use a block that was freed after they were queued.
    set_device(i);
    cudaStreamSynchronize(stream(i));
    release_cached(a.devices[i], i);
  }
}

}  // namespace nns::cuda
