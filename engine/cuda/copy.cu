// SPDX-License-Identifier: GPL-3.0-or-later
// The allocator and layout tables of the CUDA backend: memory through the caching allocator,
// strided copies with dtype conversion, fill.
#include "engine/backend/dispatch.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

void* allocate(size_t nbytes, int device_index) {
  return cached_allocate(nbytes, device_index);
}

void deallocate(void* data, int device_index) {
  cached_free(data, device_index);
}

void copy_bytes(void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream_for(dst)), "copy");
}

template <class TD, class TS>
__global__ void copy_kernel(TD* dst, const TS* src, Strided<2> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[2];
    s.offsets(i, off);
    dst[off[0]] = convert<TD>(src[off[1]]);
  }
}

void copy(const TensorView& dst, const TensorView& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t st = stream_for(dst.data);
  if (dst.dtype == src.dtype && dst.is_contiguous() && src.is_contiguous()) {
    check(cudaMemcpyAsync(dst.data, src.data, n * element_size(dst.dtype), cudaMemcpyDeviceToDevice,
                          st),
          "copy");
    return;
  }
  const Strided<2> s = make_strided<2>(dst.sizes, {dst.strides, src.strides});
  dispatch_all_dtypes(dst.dtype, [&](auto td) {
    using TD = decltype(td);
    dispatch_all_dtypes(src.dtype, [&](auto ts) {
      using TS = decltype(ts);
      copy_kernel<TD, TS>
          <<<blocks_for(n), kThreads, 0, st>>>(dst.ptr<TD>(), src.ptr<const TS>(), s, n);
    });
  });
  check_launch("copy");
}

template <class T>
__global__ void fill_kernel(T* dst, T value, Strided<1> s, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    int64_t off[1];
    s.offsets(i, off);
    dst[off[0]] = value;
  }
}

void fill(const TensorView& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  cudaStream_t st = stream_for(dst.data);
  if (value == 0 && dst.is_contiguous()) {
    // All-zero bits are 0 in every dtype (and +0.0 for the floating ones).
    check(cudaMemsetAsync(dst.data, 0, n * element_size(dst.dtype), st), "fill");
    return;
  }
  const Strided<1> s = make_strided<1>(dst.sizes, {dst.strides});
  dispatch_all_dtypes(dst.dtype, [&](auto tag) {
    using T = decltype(tag);
    T v;
    if constexpr (std::is_same_v<T, __half>) {
      v = __double2half(value);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      v = __double2bfloat16(value);
    } else if constexpr (std::is_same_v<T, bool>) {
      v = value != 0;
    } else {
      v = static_cast<T>(value);
    }
    fill_kernel<T><<<blocks_for(n), kThreads, 0, st>>>(dst.ptr<T>(), v, s, n);
  });
  check_launch("fill");
}

}  // namespace

const AllocatorKernels allocator_kernels{&allocate, &deallocate, &copy_bytes};
const CopyKernels copy_kernels{&copy, &fill};

}  // namespace nns::cuda
