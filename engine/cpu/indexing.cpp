// SPDX-License-Identifier: GPL-3.0-or-later
// CPU indexing kernels. Each is one strided loop (for_each_run) over the shape of the
// indexed side, with three operands: the plain side, the indexed side restrided so that its
// indexed dim has stride 0, and the index; the indexed element is then found by adding
// index * (the indexed dim's stride). Repeated indices accumulate in order.
#include <algorithm>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"
#include "engine/cpu/strided_loop.h"

namespace nns::cpu {

namespace {

int64_t find_invalid_index(const TensorView& index, int64_t size, int64_t* value) {
  int64_t position = 0;
  int64_t found = -1;
  StridedOperands<1> ops{{static_cast<char*>(index.data)}, {index.strides}, {sizeof(int64_t)}};
  for_each_run(index.sizes, ops, [&](std::array<char*, 1> p, std::array<int64_t, 1> s, int64_t n) {
    if (found >= 0) return;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = *reinterpret_cast<const int64_t*>(p[0] + i * s[0]);
      if (v < 0 || v >= size) {
        found = position + i;
        *value = v;
        return;
      }
    }
    position += n;
  });
  return found;
}

// fn(indexed element, plain element) over `sizes`: the plain operand has its own strides, the
// indexed one its strides with `dim`'s set to 0 plus index * dim_stride.
template <class T, class Fn>
void indexed_loop(std::span<const int64_t> sizes, const TensorView& plain,
                  std::span<const int64_t> plain_strides, const TensorView& indexed, int64_t dim,
                  const TensorView& index, std::span<const int64_t> index_strides, Fn&& fn) {
  Shape indexed_strides(indexed.strides.begin(), indexed.strides.end());
  const int64_t dim_stride = indexed_strides.empty() ? 0 : indexed_strides[dim];
  if (!indexed_strides.empty()) indexed_strides[dim] = 0;
  StridedOperands<3> ops{{static_cast<char*>(plain.data), static_cast<char*>(indexed.data),
                          static_cast<char*>(index.data)},
                         {plain_strides, indexed_strides, index_strides},
                         {sizeof(T), sizeof(T), sizeof(int64_t)}};
  for_each_run(sizes, ops, [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ix = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
      T& target = *(reinterpret_cast<T*>(p[1] + i * s[1]) + ix * dim_stride);
      fn(target, *reinterpret_cast<T*>(p[0] + i * s[0]));
    }
  });
}

// A 1-D index read along `dim` of an operand of `ndim` dims.
Shape index_strides_along(const TensorView& index, int64_t ndim, int64_t dim) {
  Shape strides(ndim, 0);
  if (ndim > 0 && index.dim() > 0) strides[dim] = index.strides[0];
  return strides;
}

void index_select(const TensorView& out, const TensorView& self, int64_t dim,
                  const TensorView& index) {
  dispatch_all_dtypes(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    const int64_t n = index.numel();
    // Rows of a contiguous table (embedding lookups): one memcpy per index.
    if (dim == 0 && self.is_contiguous() && out.is_contiguous() && index.dim() <= 1) {
      const int64_t row = out.numel() / std::max<int64_t>(n, 1);
      const int64_t step = index.dim() == 1 ? index.strides[0] : 0;
      const T* src = self.ptr<T>();
      T* dst = out.ptr<T>();
      for (int64_t i = 0; i < n; ++i) {
        const int64_t ix = index.ptr<int64_t>()[i * step];
        std::copy(src + ix * row, src + (ix + 1) * row, dst + i * row);
      }
      return;
    }
    Shape istrides = index_strides_along(index, out.dim(), dim);
    indexed_loop<T>(out.sizes, out, out.strides, self, dim, index, istrides,
                    [](T& from, T& to) { to = from; });
  });
}

void index_add(const TensorView& self, int64_t dim, const TensorView& index,
               const TensorView& source) {
  dispatch_arithmetic(self.dtype, "index_add", [&](auto tag) {
    using T = decltype(tag);
    Shape istrides = index_strides_along(index, source.dim(), dim);
    indexed_loop<T>(source.sizes, source, source.strides, self, dim, index, istrides,
                    [](T& to, T& from) { to += from; });
  });
}

void gather(const TensorView& out, const TensorView& self, int64_t dim, const TensorView& index) {
  dispatch_all_dtypes(self.dtype, [&](auto tag) {
    using T = decltype(tag);
    indexed_loop<T>(index.sizes, out, out.strides, self, dim, index, index.strides,
                    [](T& from, T& to) { to = from; });
  });
}

void scatter_add(const TensorView& self, int64_t dim, const TensorView& index,
                 const TensorView& source) {
  dispatch_arithmetic(self.dtype, "scatter_add", [&](auto tag) {
    using T = decltype(tag);
    indexed_loop<T>(index.sizes, source, source.strides, self, dim, index, index.strides,
                    [](T& to, T& from) { to += from; });
  });
}

}  // namespace

const IndexingKernels indexing_kernels{&find_invalid_index, &index_select, &index_add, &gather,
                                       &scatter_add};

}  // namespace nns::cpu
