// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the kernels of engine/cuda/*.cu share: dtype dispatch, conversions between the six
// dtypes, strided offsets of up to N operands over one index space, launch sizes, scratch
// memory.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>

#include "engine/backend/dtype_dispatch.h"
#include "engine/backend/kernel_types.h"
#include "engine/cuda/runtime.h"

namespace nns::cuda {

constexpr int kThreads = 256;
constexpr int kMaxDims = 16;

// Blocks for n elements in a grid-stride loop of kThreads threads: enough to fill the GPU,
// no more (each thread then takes several elements).
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// The device of a kernel's output, made current; its compute stream.
inline cudaStream_t stream_for(const void* p) {
  const int d = device_of(p);
  set_device(d);
  return stream(d);
}

// A device scratch buffer from the caching allocator, freed when it goes out of scope (the
// kernels using it are queued on the same stream, so the block is reused only after them).
class Scratch {
 public:
  Scratch(size_t nbytes, int device) : device_(device), p_(cached_allocate(nbytes, device)) {}
  ~Scratch() { cached_free(p_, device_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  int device_;
  void* p_;
};

// ---- dtypes --------------------------------------------------------------------------------

// Every dtype, float16 and bfloat16 as __half and __nv_bfloat16; dispatch_floating and
// dispatch_arithmetic as the CPU's (engine/backend/dtype_dispatch.h: one error text).
template <class F>
void dispatch_all_dtypes(Dtype dtype, F&& f) {
  nns::dispatch_all_dtypes<__half, __nv_bfloat16>(dtype, std::forward<F>(f));
}

using nns::dispatch_arithmetic;
using nns::dispatch_floating;

// The value v of type From as type To, with PyTorch's rules: to bool is v != 0 (NaN is
// true), float16/bfloat16 go through float32.
template <class To, class From>
__device__ __forceinline__ To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, __half>) {
    return convert<To>(__half2float(v));
  } else if constexpr (std::is_same_v<From, __nv_bfloat16>) {
    return convert<To>(__bfloat162float(v));
  } else if constexpr (std::is_same_v<To, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

// ---- strided offsets -------------------------------------------------------------------------

// N operands over one index space of ndim dims (innermost last): the offsets, in elements, of
// element `linear` (row-major) in each. Dims of size 1 are dropped and dims that are one run
// in every operand merged on the host, so a contiguous tensor has one dim.
template <int N>
struct Strided {
  int ndim = 0;
  int64_t sizes[kMaxDims];
  int64_t strides[N][kMaxDims];

  __device__ __forceinline__ void offsets(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    if (ndim == 1) {
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = linear * strides[k][0];
      return;
    }
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % sizes[d];
      linear /= sizes[d];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

// The strided index space of sizes over the given strides of N operands (each with
// sizes.size() entries; nullptr: all 0, a scalar).
template <int N>
Strided<N> make_strided(std::span<const int64_t> sizes,
                        std::initializer_list<std::span<const int64_t>> operand_strides) {
  Strided<N> s;
  const std::span<const int64_t>* ops = operand_strides.begin();
  int nd = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    // Merge with the previous kept dim when every operand steps through both as one run.
    bool merge = nd > 0;
    for (int k = 0; k < N && merge; ++k) {
      const int64_t st = ops[k].empty() ? 0 : ops[k][d];
      merge = s.strides[k][nd - 1] == st * sizes[d];
    }
    if (merge) {
      s.sizes[nd - 1] *= sizes[d];
      for (int k = 0; k < N; ++k) s.strides[k][nd - 1] = ops[k].empty() ? 0 : ops[k][d];
      continue;
    }
    if (nd == kMaxDims)
      throw DeviceError("CUDA kernels take tensors of at most " + std::to_string(kMaxDims) +
                        " non-trivial dims");
    s.sizes[nd] = sizes[d];
    for (int k = 0; k < N; ++k) s.strides[k][nd] = ops[k].empty() ? 0 : ops[k][d];
    ++nd;
  }
  if (nd == 0) {  // a single element
    s.sizes[0] = 1;
    for (int k = 0; k < N; ++k) s.strides[k][0] = 0;
    nd = 1;
  }
  s.ndim = nd;
  return s;
}

#define NNS_GRID_STRIDE_LOOP(i, n)                                                       \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

}  // namespace nns::cuda
