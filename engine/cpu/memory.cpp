// CPU memory and layout kernels: aligned allocation, strided copy with dtype conversion, fill.
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/cpu/strided_loop.h"

namespace nns::cpu {

namespace {

constexpr size_t kAlignment = 64;

void* allocate(size_t nbytes, int) {
  // aligned_alloc needs a multiple of the alignment; never ask for 0 bytes.
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) {
    throw Error("Storage::allocate: out of memory allocating " + std::to_string(nbytes) +
                " bytes on the CPU");
  }
  return p;
}

void deallocate(void* data, int) {
  std::free(data);
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
