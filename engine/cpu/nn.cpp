// SPDX-License-Identifier: GPL-3.0-or-later
// CPU kernels of the neural-network functionals. conv2d is im2col + the backend GEMM, one
// product per group for as many images as fit a 16 MiB col buffer (see conv2d_forward_typed);
// pooling follows ATen's CPU loops so that results and tie-breaking match PyTorch; the
// normalizations run on Eigen arrays and combine their sums in double, as does the NLL loss.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/dtype_dispatch.h"

namespace nns::cpu {

namespace {

// ---- conv2d ---------------------------------------------------------------------------

// The output positions [lo, hi) along one axis whose input position out * stride + offset
// lies in [0, size).
std::pair<int64_t, int64_t> valid_range(int64_t offset, int64_t stride, int64_t size,
                                        int64_t out_size) {
  const int64_t lo = offset < 0 ? (-offset + stride - 1) / stride : 0;
  const int64_t hi = size - offset > 0 ? (size - offset + stride - 1) / stride : 0;
  const int64_t clo = std::min(lo, out_size);
  return {clo, std::clamp(hi, clo, out_size)};
}

// Stride 1, no dilation, and an output as wide as the input (the "same" padding of a 3x3 kernel
// with padding 1): then each kernel tap's col row is the input plane shifted by (di, dj), so
// the row is one contiguous copy, then zeros where the tap fell off an edge. The digits CNN's
// rows are 8 to 16 wide, and a loop per row cost more than its copying.
bool is_shifted_plane(const Conv2dGeometry& g) {
  return g.stride_h == 1 && g.stride_w == 1 && g.dilation_h == 1 && g.dilation_w == 1 &&
         g.out_w == g.in_w;
}

// For a shifted-plane tap (ki, kj): the col row's elements [begin, end) are the plane's own at
// index + shift; its output rows [rows.first, rows.second) and columns [cols.first,
// cols.second) are those inside the input.
struct ShiftedTap {
  int64_t shift, begin, end;
  std::pair<int64_t, int64_t> rows, cols;
};

ShiftedTap shifted_tap(const Conv2dGeometry& g, int64_t ki, int64_t kj) {
  const int64_t di = ki - g.pad_h, dj = kj - g.pad_w;
  ShiftedTap t{di * g.in_w + dj, 0, 0, valid_range(di, 1, g.in_h, g.out_h),
               valid_range(dj, 1, g.in_w, g.out_w)};
  if (t.rows.first < t.rows.second && t.cols.first < t.cols.second) {
    t.begin = t.rows.first * g.out_w + t.cols.first;
    t.end = (t.rows.second - 1) * g.out_w + t.cols.second;
  }
  return t;
}

// The taps of a shifted-plane geometry in (ki, kj) order, worked out once per geometry for the
// calling thread (im2col runs once per image and channel with the same ones).
const std::vector<ShiftedTap>& shifted_taps(const Conv2dGeometry& g) {
  thread_local std::vector<ShiftedTap> taps;
  thread_local std::array<int64_t, 6> key{};
  const std::array<int64_t, 6> now{g.in_h, g.in_w, g.kernel_h, g.kernel_w, g.pad_h, g.pad_w};
  if (taps.empty() || key != now) {
    taps.clear();
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) taps.push_back(shifted_tap(g, ki, kj));
    }
    key = now;
  }
  return taps;
}

// Zeros a shifted-plane tap's col row outside the input: before begin, after end, and the
// columns off the left and right edges of the rows between (which the shifted copy wrapped).
template <class T>
void zero_outside(T* row, const ShiftedTap& t, const Conv2dGeometry& g) {
  std::fill(row, row + t.begin, T(0));
  std::fill(row + t.end, row + g.out_h * g.out_w, T(0));
  for (int64_t oh = t.rows.first; oh < t.rows.second; ++oh) {
    T* r = row + oh * g.out_w;
    for (int64_t ow = 0; ow < t.cols.first; ++ow) r[ow] = T(0);
    for (int64_t ow = t.cols.second; ow < g.out_w; ++ow) r[ow] = T(0);
  }
}

// Calls fn(tap, plane, row) for each of `channels` input planes and each tap of a
// shifted-plane geometry: plane is the input plane's offset, row the tap's col row's (ld apart).
template <class Fn>
void for_each_shifted_tap(const Conv2dGeometry& g, int64_t channels, int64_t ld, Fn&& fn) {
  const int64_t in_plane = g.in_h * g.in_w, taps = g.kernel_h * g.kernel_w;
  const std::vector<ShiftedTap>& tap = shifted_taps(g);
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t k = 0; k < taps; ++k)
      fn(tap[static_cast<size_t>(k)], c * in_plane, (c * taps + k) * ld);
  }
}

// Unfolds `channels` planes of the input into col [channels * kh * kw, ld], columns
// [0, out_h * out_w): row (c, i, j) holds the input element under kernel tap (i, j) for every
// output position. ld > out_h * out_w leaves room for other images' columns beside these.
template <class T>
void im2col(const T* in, int64_t channels, const Conv2dGeometry& geometry, T* col, int64_t ld) {
  // A local copy: stores through col could alias the caller's geometry as far as the compiler
  // knows, and reloading its fields every element keeps these loops from vectorizing.
  const Conv2dGeometry g = geometry;
  if (is_shifted_plane(g)) {
    for_each_shifted_tap(g, channels, ld, [&](const ShiftedTap& t, int64_t plane, int64_t row) {
      const T* src = in + plane + t.shift;
      std::copy(src + t.begin, src + t.end, col + row + t.begin);
      zero_outside(col + row, t, g);
    });
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        T* dst = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t off_w = kj * g.dilation_w - g.pad_w;
        const auto [lo, hi] = valid_range(off_w, g.stride_w, g.in_w, g.out_w);
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          T* row = dst + oh * g.out_w;
          const int64_t ih = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) {
            std::fill(row, row + g.out_w, T(0));
            continue;
          }
          // Plain loops, not std::copy/fill: the rows are short (8 to 16 elements in the digits
          // CNN), and a memmove call per row cost more than the copying.
          const T* src = in + (c * g.in_h + ih) * g.in_w + off_w;
          for (int64_t ow = 0; ow < lo; ++ow) row[ow] = T(0);
          if (g.stride_w == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow * g.stride_w];
          }
          for (int64_t ow = hi; ow < g.out_w; ++ow) row[ow] = T(0);
        }
      }
    }
  }
}

// The adjoint of im2col: adds every col entry into the input element it was read from.
// For a shifted-plane geometry it first zeros col's entries outside the input (see im2col),
// so col is overwritten.
template <class T>
void col2im_add(T* col, int64_t ld, int64_t channels, const Conv2dGeometry& geometry, T* in) {
  const Conv2dGeometry g = geometry;  // as in im2col
  if (is_shifted_plane(g)) {
    for_each_shifted_tap(g, channels, ld, [&](const ShiftedTap& t, int64_t plane, int64_t row) {
      T* src = col + row;
      zero_outside(src, t, g);
      T* dst = in + plane + t.shift;
      for (int64_t i = t.begin; i < t.end; ++i) dst[i] += src[i];
    });
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const T* src = col + ((c * g.kernel_h + ki) * g.kernel_w + kj) * ld;
        const int64_t off_w = kj * g.dilation_w - g.pad_w;
        const auto [lo, hi] = valid_range(off_w, g.stride_w, g.in_w, g.out_w);
        for (int64_t oh = 0; oh < g.out_h; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
          if (ih < 0 || ih >= g.in_h) continue;
          const T* row = src + oh * g.out_w;
          T* dst = in + (c * g.in_h + ih) * g.in_w;
          if (g.stride_w == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow + off_w] += row[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * g.stride_w + off_w] += row[ow];
          }
        }
      }
    }
  }
}

// A thread's reusable work buffer (slot 0 or 1) of at least n elements, contents undefined: a
// convolution's col matrix is rewritten every call, and allocating (and zeroing) it each time
// cost as much as filling it.
template <class T>
T* scratch(int slot, int64_t n) {
  thread_local std::vector<T> buffers[2];
  std::vector<T>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}

// A convolution multiplies a group's weights by the col columns of several images at once:
// per-image products were as small as 8 x 256 x 9 in the digits CNN, where a GEMM's fixed cost
// dominates. Images per product: as many as keep col within kColElements (16 MiB of float).
constexpr int64_t kColElements = int64_t{1} << 22;

int64_t images_per_product(const Conv2dGeometry& g, int64_t depth, int64_t plane) {
  return std::clamp<int64_t>(kColElements / std::max<int64_t>(depth * plane, 1), 1,
                             std::max<int64_t>(g.batch, 1));
}

// im2col of images [n0, n0 + images) of group grp, side by side in col [depth, images * plane].
template <class T>
void im2col_images(const T* x, int64_t n0, int64_t images, int64_t grp, const Conv2dGeometry& g,
                   T* col) {
  const int64_t cin = g.in_channels / g.groups, plane = g.out_h * g.out_w;
  for (int64_t i = 0; i < images; ++i) {
    im2col(x + ((n0 + i) * g.in_channels + grp * cin) * g.in_h * g.in_w, cin, g, col + i * plane,
           images * plane);
  }
}

template <class T>
void conv2d_forward_typed(const TensorView& input, const TensorView& weight, const TensorView& bias,
                          const TensorView& out, const Conv2dGeometry& geometry) {
  const Conv2dGeometry g = geometry;  // as in im2col
  const GemmFn<T> gemm = linalg_kernels.gemm<T>();
  const int64_t cin = g.in_channels / g.groups, cout = g.out_channels / g.groups;
  const int64_t depth = cin * g.kernel_h * g.kernel_w;
  const int64_t plane = g.out_h * g.out_w;
  const int64_t chunk = images_per_product(g, depth, plane);
  const T* x = input.ptr<T>();
  const T* w = weight.ptr<T>();
  const T* b = bias.data ? bias.ptr<T>() : nullptr;
  T* y = out.ptr<T>();
  T* col = scratch<T>(0, depth * chunk * plane);
  T* product = scratch<T>(1, cout * chunk * plane);
  for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
    const int64_t images = std::min(chunk, g.batch - n0), cols = images * plane;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      im2col_images(x, n0, images, grp, g, col);
      // product [cout, images * plane] = weight [cout, depth] @ col [depth, images * plane]
      gemm(false, false, cout, cols, depth, T(1), w + grp * cout * depth,
           std::max<int64_t>(depth, 1), col, cols, T(0), product, cols);
      // Each image's [cout, plane] block goes to its place in the output, plus the bias.
      for (int64_t i = 0; i < images; ++i) {
        for (int64_t co = 0; co < cout; ++co) {
          const T* src = product + co * cols + i * plane;
          T* dst = y + ((n0 + i) * g.out_channels + grp * cout + co) * plane;
          const T bias_co = b ? b[grp * cout + co] : T(0);
          for (int64_t p = 0; p < plane; ++p) dst[p] = src[p] + bias_co;
        }
      }
    }
  }
}

template <class T>
void conv2d_backward_typed(const TensorView& grad_out, const TensorView& input,
                           const TensorView& weight, const TensorView& grad_input,
                           const TensorView& grad_weight, const TensorView& grad_bias,
                           const Conv2dGeometry& geometry) {
  const Conv2dGeometry g = geometry;  // as in im2col
  const GemmFn<T> gemm = linalg_kernels.gemm<T>();
  const int64_t cin = g.in_channels / g.groups, cout = g.out_channels / g.groups;
  const int64_t depth = cin * g.kernel_h * g.kernel_w;
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  const int64_t ld_depth = std::max<int64_t>(depth, 1);
  const int64_t chunk = images_per_product(g, depth, plane);
  const T* gy = grad_out.ptr<T>();
  T* gx = grad_input.data ? grad_input.ptr<T>() : nullptr;
  T* gw = grad_weight.data ? grad_weight.ptr<T>() : nullptr;
  if (gx) std::fill(gx, gx + g.batch * g.in_channels * in_plane, T(0));
  if (gw) std::fill(gw, gw + g.out_channels * depth, T(0));
  if (gw || gx) {
    T* col = scratch<T>(0, depth * chunk * plane);
    T* grad = scratch<T>(1, cout * chunk * plane);
    for (int64_t n0 = 0; n0 < g.batch; n0 += chunk) {
      const int64_t images = std::min(chunk, g.batch - n0), cols = images * plane;
      for (int64_t grp = 0; grp < g.groups; ++grp) {
        // grad [cout, images * plane]: the images' output gradients side by side, as the
        // forward's product had them.
        for (int64_t i = 0; i < images; ++i) {
          for (int64_t co = 0; co < cout; ++co) {
            const T* src = gy + ((n0 + i) * g.out_channels + grp * cout + co) * plane;
            std::copy(src, src + plane, grad + co * cols + i * plane);
          }
        }
        if (gw) {
          // grad_weight (+)= grad @ col^T, summed over the batch.
          im2col_images(input.ptr<T>(), n0, images, grp, g, col);
          gemm(false, true, cout, depth, cols, T(1), grad, cols, col, cols, T(1),
               gw + grp * cout * depth, ld_depth);
        }
        if (gx) {
          // grad of col = weight^T @ grad, folded back onto each image.
          gemm(true, false, depth, cols, cout, T(1), weight.ptr<T>() + grp * cout * depth, ld_depth,
               grad, cols, T(0), col, cols);
          for (int64_t i = 0; i < images; ++i) {
            col2im_add(col + i * plane, cols, cin, g,
                       gx + ((n0 + i) * g.in_channels + grp * cin) * in_plane);
          }
        }
      }
    }
  }
  if (grad_bias.data) {
    // In double, in kLanes running sums: one sum's chain of dependent adds was latency-bound
    // (about a tenth of the digits CNN's step).
    constexpr int64_t kLanes = 8;
    T* gb = grad_bias.ptr<T>();
    for (int64_t co = 0; co < g.out_channels; ++co) {
      double lanes[kLanes] = {};
      double tail = 0;
      for (int64_t n = 0; n < g.batch; ++n) {
        const T* row = gy + (n * g.out_channels + co) * plane;
        int64_t i = 0;
        for (; i + kLanes <= plane; i += kLanes) {
          for (int64_t l = 0; l < kLanes; ++l) lanes[l] += row[i + l];
        }
        for (; i < plane; ++i) tail += row[i];
      }
      for (const double lane : lanes) tail += lane;
      gb[co] = static_cast<T>(tail);
    }
  }
}

void conv2d_forward(const TensorView& input, const TensorView& weight, const TensorView& bias,
                    const TensorView& out, const Conv2dGeometry& g) {
  dispatch_floating(input.dtype, "conv2d", [&](auto tag) {
    conv2d_forward_typed<decltype(tag)>(input, weight, bias, out, g);
  });
}

void conv2d_backward(const TensorView& grad_out, const TensorView& input, const TensorView& weight,
                     const TensorView& grad_input, const TensorView& grad_weight,
                     const TensorView& grad_bias, const Conv2dGeometry& g) {
  dispatch_floating(grad_out.dtype, "conv2d_backward", [&](auto tag) {
    conv2d_backward_typed<decltype(tag)>(grad_out, input, weight, grad_input, grad_weight,
                                         grad_bias, g);
  });
}

// ---- pooling ----------------------------------------------------------------------------

// ATen's comparison: the first maximum wins a tie, and a NaN wins over everything (the last).
template <class T>
bool takes_max(T v, T best) {
  return v > best || std::isnan(v);
}

// MaxPool2d(2)'s windows: 2x2, stride 2, inside the input. Written so that the compiler
// vectorizes it (selects, not branches, and no short-circuit ||): the general loop below ran at
// about 50 cycles a window, most of them mispredicted branches, and took a third of the digits
// CNN's step (perf, bench_train --model cnn); this runs at 17 us for the CNN's first pooling
// (64 x 8 planes of 16 x 16) against 610 us.
template <class T>
__attribute__((always_inline)) inline void max_pool2d_2x2_loop(const T* x, T* y, int64_t* ix,
                                                               const Pool2dGeometry& g) {
  // Locals: the stores through y and ix could alias g as far as the compiler knows.
  const int64_t planes = g.planes, in_w = g.in_w, out_h = g.out_h, out_w = g.out_w;
  const int64_t in_plane = g.in_h * in_w, plane = out_h * out_w;
  for (int64_t p = 0; p < planes; ++p, x += in_plane, y += plane, ix += plane) {
    for (int64_t oh = 0; oh < out_h; ++oh) {
      const T* r0 = x + 2 * oh * in_w;
      const T* r1 = r0 + in_w;
      T* y_row = y + oh * out_w;
      int64_t* ix_row = ix + oh * out_w;
      for (int64_t ow = 0; ow < out_w; ++ow) {
        const int64_t first = 2 * oh * in_w + 2 * ow;
        const T b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        T v = r0[2 * ow];
        int64_t best = first;
        bool take = (b > v) | (b != b);  // takes_max, without a branch
        v = take ? b : v;
        best = take ? first + 1 : best;
        take = (c > v) | (c != c);
        v = take ? c : v;
        best = take ? first + in_w : best;
        take = (d > v) | (d != d);
        v = take ? d : v;
        best = take ? first + in_w + 1 : best;
        y_row[ow] = v;
        ix_row[ow] = best;
      }
    }
  }
}

// The loop above compiled for AVX-512 and AVX2, chosen at run time, so that a portable build
// (the package's) vectorizes it too. Not target_clones: its ifunc resolver runs while the
// library is being relocated, before ThreadSanitizer is set up, so in a tsan build it crashes.
template <class T>
__attribute__((target("avx512f"))) void max_pool2d_2x2_avx512(const T* x, T* y, int64_t* ix,
                                                              const Pool2dGeometry& g) {
  max_pool2d_2x2_loop(x, y, ix, g);
}
template <class T>
__attribute__((target("avx2"))) void max_pool2d_2x2_avx2(const T* x, T* y, int64_t* ix,
                                                         const Pool2dGeometry& g) {
  max_pool2d_2x2_loop(x, y, ix, g);
}
template <class T>
void max_pool2d_2x2(const T* x, T* y, int64_t* ix, const Pool2dGeometry& g) {
  if (__builtin_cpu_supports("avx512f")) return max_pool2d_2x2_avx512(x, y, ix, g);
  if (__builtin_cpu_supports("avx2")) return max_pool2d_2x2_avx2(x, y, ix, g);
  max_pool2d_2x2_loop(x, y, ix, g);
}

// max_pool2d over windows that never leave the input (no padding, no dilation, no ceil-mode
// window past the edge): no clipping. False when the windows need it.
template <class T>
bool max_pool2d_unclipped(const T* x, T* y, int64_t* ix, const Pool2dGeometry& g) {
  if (g.pad_h || g.pad_w || g.dilation_h != 1 || g.dilation_w != 1 ||
      (g.out_h - 1) * g.stride_h + g.kernel_h > g.in_h ||
      (g.out_w - 1) * g.stride_w + g.kernel_w > g.in_w) {
    return false;
  }
  if (g.kernel_h == 2 && g.kernel_w == 2 && g.stride_h == 2 && g.stride_w == 2) {
    max_pool2d_2x2(x, y, ix, g);
    return true;
  }
  const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
  for (int64_t p = 0; p < g.planes; ++p, x += in_plane, y += plane, ix += plane) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t first = oh * g.stride_h * g.in_w + ow * g.stride_w;
        int64_t best = first;
        T best_value = x[first];
        for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
          for (int64_t kj = ki == 0 ? 1 : 0; kj < g.kernel_w; ++kj) {
            const int64_t i = first + ki * g.in_w + kj;
            if (takes_max(x[i], best_value)) best_value = x[best = i];
          }
        }
        y[oh * g.out_w + ow] = best_value;
        ix[oh * g.out_w + ow] = best;
      }
    }
  }
  return true;
}

void max_pool2d_forward(const TensorView& input, const TensorView& out, const TensorView& indices,
                        const Pool2dGeometry& g) {
  dispatch_floating(input.dtype, "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    if (max_pool2d_unclipped(input.ptr<T>(), out.ptr<T>(), indices.ptr<int64_t>(), g)) return;
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* x = input.ptr<T>() + p * in_plane;
      T* y = out.ptr<T>() + p * plane;
      int64_t* ix = indices.ptr<int64_t>() + p * plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        int64_t h0 = oh * g.stride_h - g.pad_h;
        const int64_t h1 = std::min(h0 + (g.kernel_h - 1) * g.dilation_h + 1, g.in_h);
        while (h0 < 0) h0 += g.dilation_h;
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          int64_t w0 = ow * g.stride_w - g.pad_w;
          const int64_t w1 = std::min(w0 + (g.kernel_w - 1) * g.dilation_w + 1, g.in_w);
          while (w0 < 0) w0 += g.dilation_w;
          int64_t best = h0 * g.in_w + w0;
          T best_value = -std::numeric_limits<T>::infinity();
          for (int64_t ih = h0; ih < h1; ih += g.dilation_h) {
            for (int64_t iw = w0; iw < w1; iw += g.dilation_w) {
              const int64_t i = ih * g.in_w + iw;
              const T v = x[i];
              if (takes_max(v, best_value)) {
                best_value = v;
                best = i;
              }
            }
          }
          y[oh * g.out_w + ow] = best_value;
          ix[oh * g.out_w + ow] = best;
        }
      }
    }
  });
}

void max_pool2d_backward(const TensorView& grad_out, const TensorView& indices,
                         const TensorView& grad_input, const Pool2dGeometry& g) {
  dispatch_floating(grad_out.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    T* gx = grad_input.ptr<T>();
    std::fill(gx, gx + g.planes * in_plane, T(0));
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* gy = grad_out.ptr<T>() + p * plane;
      const int64_t* ix = indices.ptr<int64_t>() + p * plane;
      T* gx_p = gx + p * in_plane;
      for (int64_t i = 0; i < plane; ++i) gx_p[ix[i]] += gy[i];
    }
  });
}

// ATen's avg_pool2d window: clipped to the padded input for the divisor (count_include_pad),
// to the input for the sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};

AvgWindow avg_window(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  int64_t h1 = std::min(h0 + g.kernel_h, g.in_h + g.pad_h);
  int64_t w1 = std::min(w0 + g.kernel_w, g.in_w + g.pad_w);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.in_h);
  w1 = std::min(w1, g.in_w);
  return {h0, h1, w0, w1, g.count_include_pad ? padded_size : (h1 - h0) * (w1 - w0)};
}

void avg_pool2d_forward(const TensorView& input, const TensorView& out, const Pool2dGeometry& g) {
  dispatch_floating(input.dtype, "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* x = input.ptr<T>() + p * in_plane;
      T* y = out.ptr<T>() + p * plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const AvgWindow win = avg_window(g, oh, ow);
          T sum = 0;
          for (int64_t ih = win.h0; ih < win.h1; ++ih) {
            for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += x[ih * g.in_w + iw];
          }
          y[oh * g.out_w + ow] =
              win.h0 >= win.h1 || win.w0 >= win.w1 ? T(0) : sum / static_cast<T>(win.divisor);
        }
      }
    }
  });
}

void avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                         const Pool2dGeometry& g) {
  dispatch_floating(grad_out.dtype, "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    T* gx = grad_input.ptr<T>();
    std::fill(gx, gx + g.planes * in_plane, T(0));
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* gy = grad_out.ptr<T>() + p * plane;
      T* gx_p = gx + p * in_plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const AvgWindow win = avg_window(g, oh, ow);
          if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
          const T delta = gy[oh * g.out_w + ow] / static_cast<T>(win.divisor);
          for (int64_t ih = win.h0; ih < win.h1; ++ih) {
            for (int64_t iw = win.w0; iw < win.w1; ++iw) gx_p[ih * g.in_w + iw] += delta;
          }
        }
      }
    }
  });
}

// ---- batch norm -------------------------------------------------------------------------
// Rows of `spatial` elements are summed as vectorized Eigen arrays in T; the sums of rows and
// the per-channel scalars are double.

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

void batch_norm_stats(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      double eps, double momentum, const TensorView& save_mean,
                      const TensorView& save_invstd, const TensorView& running_mean,
                      const TensorView& running_var) {
  dispatch_floating(input.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.ptr<T>();
    const double count = static_cast<double>(n * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        sum += ConstArrayMap<T>(x + (i * channels + c) * spatial, spatial).sum();
      }
      const double mean = sum / count;
      double var_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        ConstArrayMap<T> row(x + (i * channels + c) * spatial, spatial);
        var_sum += (row - static_cast<T>(mean)).square().sum();
      }
      save_mean.ptr<T>()[c] = static_cast<T>(mean);
      save_invstd.ptr<T>()[c] = static_cast<T>(1 / std::sqrt(var_sum / count + eps));
      if (running_mean.data) {
        T& r = running_mean.ptr<T>()[c];
        r = static_cast<T>(momentum * mean + (1 - momentum) * r);
      }
      if (running_var.data) {
        T& r = running_var.ptr<T>()[c];
        r = static_cast<T>(momentum * var_sum / (count - 1) + (1 - momentum) * r);
      }
    }
  });
}

void batch_norm_invstd(const TensorView& var, double eps, const TensorView& invstd) {
  dispatch_floating(var.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    ArrayMap<T>(invstd.ptr<T>(), var.numel()) =
        (ConstArrayMap<T>(var.ptr<T>(), var.numel()) + static_cast<T>(eps)).rsqrt();
  });
}

void batch_norm_apply(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      const TensorView& mean, const TensorView& invstd, const TensorView& weight,
                      const TensorView& bias, const TensorView& out) {
  dispatch_floating(input.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t c = 0; c < channels; ++c) {
      // out = x * alpha + beta, as ATen folds it.
      const T alpha = invstd.ptr<T>()[c] * (weight.data ? weight.ptr<T>()[c] : T(1));
      const T beta = (bias.data ? bias.ptr<T>()[c] : T(0)) - mean.ptr<T>()[c] * alpha;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = (i * channels + c) * spatial;
        ArrayMap<T>(out.ptr<T>() + at, spatial) =
            ConstArrayMap<T>(input.ptr<T>() + at, spatial) * alpha + beta;
      }
    }
  });
}

void batch_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t n,
                         int64_t channels, int64_t spatial, const TensorView& mean,
                         const TensorView& invstd, const TensorView& weight, bool training,
                         const TensorView& grad_input, const TensorView& grad_weight,
                         const TensorView& grad_bias) {
  dispatch_floating(input.dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const double count = static_cast<double>(n * spatial);
    for (int64_t c = 0; c < channels; ++c) {
      const T m = mean.ptr<T>()[c];
      const double is = invstd.ptr<T>()[c];
      const double w = weight.data ? static_cast<double>(weight.ptr<T>()[c]) : 1.0;
      double sum_dy = 0, sum_dy_xmu = 0;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = (i * channels + c) * spatial;
        ConstArrayMap<T> gy(grad_out.ptr<T>() + at, spatial);
        sum_dy += gy.sum();
        sum_dy_xmu += (gy * (ConstArrayMap<T>(input.ptr<T>() + at, spatial) - m)).sum();
      }
      if (grad_weight.data) grad_weight.ptr<T>()[c] = static_cast<T>(sum_dy_xmu * is);
      if (grad_bias.data) grad_bias.ptr<T>()[c] = static_cast<T>(sum_dy);
      if (!grad_input.data) continue;
      // grad_input = (dy - mean(dy) - (x - mean) * k) * invstd * weight; in training the
      // statistics depend on the input, which the two subtracted terms account for.
      const T mean_dy = static_cast<T>(training ? sum_dy / count : 0);
      const T k = static_cast<T>(training ? sum_dy_xmu * is * is / count : 0);
      const T scale = static_cast<T>(is * w);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t at = (i * channels + c) * spatial;
        ConstArrayMap<T> gy(grad_out.ptr<T>() + at, spatial);
        ConstArrayMap<T> x(input.ptr<T>() + at, spatial);
        ArrayMap<T>(grad_input.ptr<T>() + at, spatial) = (gy - mean_dy - (x - m) * k) * scale;
      }
    }
  });
}

// ---- layer norm -------------------------------------------------------------------------

void layer_norm_forward(const TensorView& input, int64_t rows, int64_t cols, double eps,
                        const TensorView& weight, const TensorView& bias, const TensorView& out,
                        const TensorView& mean, const TensorView& rstd) {
  dispatch_floating(input.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < rows; ++r) {
      ConstArrayMap<T> x(input.ptr<T>() + r * cols, cols);
      ArrayMap<T> y(out.ptr<T>() + r * cols, cols);
      const T m = static_cast<T>(static_cast<double>(x.sum()) / static_cast<double>(cols));
      const double var = static_cast<double>((x - m).square().sum()) / static_cast<double>(cols);
      const T s = static_cast<T>(1 / std::sqrt(var + eps));
      mean.ptr<T>()[r] = m;
      rstd.ptr<T>()[r] = s;
      y = (x - m) * s;
      if (weight.data) y *= ConstArrayMap<T>(weight.ptr<T>(), cols);
      if (bias.data) y += ConstArrayMap<T>(bias.ptr<T>(), cols);
    }
  });
}

void layer_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t rows,
                         int64_t cols, const TensorView& mean, const TensorView& rstd,
                         const TensorView& weight, const TensorView& grad_input,
                         const TensorView& grad_weight, const TensorView& grad_bias) {
  dispatch_floating(input.dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
    // The parameter gradients sum over rows: accumulate in double.
    Eigen::ArrayXd gw = Eigen::ArrayXd::Zero(grad_weight.data ? cols : 0);
    Eigen::ArrayXd gb = Eigen::ArrayXd::Zero(grad_bias.data ? cols : 0);
    Array xhat(cols), g(cols);
    for (int64_t r = 0; r < rows; ++r) {
      ConstArrayMap<T> x(input.ptr<T>() + r * cols, cols);
      ConstArrayMap<T> gy(grad_out.ptr<T>() + r * cols, cols);
      const T s = rstd.ptr<T>()[r];
      xhat = (x - mean.ptr<T>()[r]) * s;
      if (grad_weight.data) gw += (gy * xhat).template cast<double>();
      if (grad_bias.data) gb += gy.template cast<double>();
      if (!grad_input.data) continue;
      // d/dx of xhat = (x - mean) * rstd against g = grad * weight.
      g = gy;
      if (weight.data) g *= ConstArrayMap<T>(weight.ptr<T>(), cols);
      const T mean_g = static_cast<T>(static_cast<double>(g.sum()) / static_cast<double>(cols));
      const T mean_g_xhat =
          static_cast<T>(static_cast<double>((g * xhat).sum()) / static_cast<double>(cols));
      ArrayMap<T>(grad_input.ptr<T>() + r * cols, cols) = (g - mean_g - xhat * mean_g_xhat) * s;
    }
    if (grad_weight.data) ArrayMap<T>(grad_weight.ptr<T>(), cols) = gw.template cast<T>();
    if (grad_bias.data) ArrayMap<T>(grad_bias.ptr<T>(), cols) = gb.template cast<T>();
  });
}

// ---- adaptive average pooling -------------------------------------------------------------
// ATen's windows: [floor(o * in / out), ceil((o + 1) * in / out)), and its sum / kh / kw.

int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return o * in / out;
}

int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

void adaptive_avg_pool2d_forward(const TensorView& input, const TensorView& out,
                                 const Pool2dGeometry& g) {
  dispatch_floating(input.dtype, "adaptive_avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* x = input.ptr<T>() + p * in_plane;
      T* y = out.ptr<T>() + p * plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t h0 = adaptive_start(oh, g.out_h, g.in_h);
        const int64_t h1 = adaptive_end(oh, g.out_h, g.in_h);
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t w0 = adaptive_start(ow, g.out_w, g.in_w);
          const int64_t w1 = adaptive_end(ow, g.out_w, g.in_w);
          T sum = 0;
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) sum += x[ih * g.in_w + iw];
          }
          y[oh * g.out_w + ow] = sum / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0);
        }
      }
    }
  });
}

void adaptive_avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                                  const Pool2dGeometry& g) {
  dispatch_floating(grad_out.dtype, "adaptive_avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t in_plane = g.in_h * g.in_w, plane = g.out_h * g.out_w;
    T* gx = grad_input.ptr<T>();
    std::fill(gx, gx + g.planes * in_plane, T(0));
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* gy = grad_out.ptr<T>() + p * plane;
      T* gx_p = gx + p * in_plane;
      for (int64_t oh = 0; oh < g.out_h; ++oh) {
        const int64_t h0 = adaptive_start(oh, g.out_h, g.in_h);
        const int64_t h1 = adaptive_end(oh, g.out_h, g.in_h);
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          const int64_t w0 = adaptive_start(ow, g.out_w, g.in_w);
          const int64_t w1 = adaptive_end(ow, g.out_w, g.in_w);
          const T delta = gy[oh * g.out_w + ow] / static_cast<T>(h1 - h0) / static_cast<T>(w1 - w0);
          for (int64_t ih = h0; ih < h1; ++ih) {
            for (int64_t iw = w0; iw < w1; ++iw) gx_p[ih * g.in_w + iw] += delta;
          }
        }
      }
    }
  });
}

// ---- NLL loss ---------------------------------------------------------------------------

int64_t nll_loss_forward(const TensorView& input, const TensorView& target,
                         const TensorView& weight, int64_t n, int64_t classes, int64_t spatial,
                         int64_t ignore_index, bool reduce, bool mean, const TensorView& out,
                         const TensorView& total_weight) {
  const int64_t* t = target.ptr<const int64_t>();
  for (int64_t i = 0; i < n * spatial; ++i) {
    if (t[i] != ignore_index && (t[i] < 0 || t[i] >= classes)) return i;
  }
  dispatch_floating(input.dtype, "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    const T* x = input.ptr<const T>();
    const T* w = weight.data ? weight.ptr<const T>() : nullptr;
    double loss_sum = 0, weight_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t k = t[i * spatial + s];
        T loss = 0;
        if (k != ignore_index) {
          const T wk = w ? w[k] : T(1);
          loss = -wk * x[(i * classes + k) * spatial + s];
          weight_sum += wk;
        }
        if (reduce) {
          loss_sum += loss;
        } else {
          out.ptr<T>()[i * spatial + s] = loss;
        }
      }
    }
    total_weight.ptr<T>()[0] = static_cast<T>(weight_sum);
    if (reduce) *out.ptr<T>() = static_cast<T>(mean ? loss_sum / weight_sum : loss_sum);
  });
  return -1;
}

void nll_loss_backward(const TensorView& grad, const TensorView& target, const TensorView& weight,
                       int64_t n, int64_t classes, int64_t spatial, int64_t ignore_index,
                       bool reduce, bool mean, const TensorView& total_weight,
                       const TensorView& grad_input) {
  dispatch_floating(grad.dtype, "nll_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    const int64_t* t = target.ptr<const int64_t>();
    const T* g = grad.ptr<const T>();
    const T* w = weight.data ? weight.ptr<const T>() : nullptr;
    T* gx = grad_input.ptr<T>();
    std::fill(gx, gx + n * classes * spatial, T(0));
    // As ATen: -(grad / total_weight) for the mean, then times the class weight.
    const T scalar = reduce ? -(mean ? g[0] / total_weight.ptr<const T>()[0] : g[0]) : T(0);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t k = t[i * spatial + s];
        if (k == ignore_index) continue;
        const T gv = reduce ? scalar : -g[i * spatial + s];
        gx[(i * classes + k) * spatial + s] = w ? w[k] * gv : gv;
      }
    }
  });
}

void lstm_cell_forward(const TensorView& gates, const TensorView& c_prev, int64_t n, int64_t hidden,
                       const TensorView& act, const TensorView& c, const TensorView& tanh_c,
                       const TensorView& h) {
  const int64_t width = 4 * hidden;
  // The gates through the same sigmoid and tanh as the elementwise ops (the cell gate's sigmoid
  // is then overwritten by its tanh), so the fused step computes what the separate ops would.
  elementwise_kernels.unary(UnaryOp::Sigmoid, act, gates, 0, 0);
  const int64_t sizes[2] = {n, hidden};
  const int64_t strides[2] = {width, 1};
  elementwise_kernels.unary(UnaryOp::Tanh, column_block(act, 2 * hidden, sizes, strides),
                            column_block(gates, 2 * hidden, sizes, strides), 0, 0);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < n; ++r) {
      const T* a = act.ptr<T>() + r * width;
      ConstArrayMap<T> i(a, hidden), f(a + hidden, hidden), g(a + 2 * hidden, hidden);
      ArrayMap<T> cr(c.ptr<T>() + r * hidden, hidden);
      if (c_prev.data) {
        // Two products, then their sum, as the separate ops round f * c_prev + i * g.
        cr = f * ConstArrayMap<T>(c_prev.ptr<T>() + r * hidden, hidden);
        cr += i * g;
      } else {
        cr = i * g;
      }
    }
  });
  elementwise_kernels.unary(UnaryOp::Tanh, tanh_c, c, 0, 0);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    for (int64_t r = 0; r < n; ++r) {
      ArrayMap<T>(h.ptr<T>() + r * hidden, hidden) =
          ConstArrayMap<T>(act.ptr<T>() + r * width + 3 * hidden, hidden) *
          ConstArrayMap<T>(tanh_c.ptr<T>() + r * hidden, hidden);
    }
  });
}

void lstm_cell_backward(const TensorView& grad_h, const TensorView& grad_c, const TensorView& act,
                        const TensorView& c_prev, const TensorView& tanh_c, int64_t n,
                        int64_t hidden, const TensorView& grad_gates,
                        const TensorView& grad_c_prev) {
  const int64_t width = 4 * hidden;
  dispatch_floating(act.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    std::vector<T> dc_buffer(static_cast<size_t>(hidden));
    ArrayMap<T> dc(dc_buffer.data(), hidden);
    for (int64_t r = 0; r < n; ++r) {
      const T* a = act.ptr<T>() + r * width;
      ConstArrayMap<T> i(a, hidden), f(a + hidden, hidden), g(a + 2 * hidden, hidden),
          o(a + 3 * hidden, hidden), tc(tanh_c.ptr<T>() + r * hidden, hidden);
      T* gg = grad_gates.ptr<T>() + r * width;
      // dL/dc: through h = o * tanh(c), plus what flows in from the next step's c.
      dc.setZero();
      if (grad_h.data) {
        ConstArrayMap<T> gh(grad_h.ptr<T>() + r * hidden, hidden);
        dc = gh * o * (T(1) - tc * tc);
        ArrayMap<T>(gg + 3 * hidden, hidden) = gh * tc * o * (T(1) - o);
      } else {
        ArrayMap<T>(gg + 3 * hidden, hidden).setZero();
      }
      if (grad_c.data) dc += ConstArrayMap<T>(grad_c.ptr<T>() + r * hidden, hidden);
      ArrayMap<T>(gg, hidden) = dc * g * i * (T(1) - i);
      if (c_prev.data) {
        ArrayMap<T>(gg + hidden, hidden) =
            dc * ConstArrayMap<T>(c_prev.ptr<T>() + r * hidden, hidden) * f * (T(1) - f);
      } else {
        ArrayMap<T>(gg + hidden, hidden).setZero();
      }
      ArrayMap<T>(gg + 2 * hidden, hidden) = dc * i * (T(1) - g * g);
      if (grad_c_prev.data) ArrayMap<T>(grad_c_prev.ptr<T>() + r * hidden, hidden) = dc * f;
    }
  });
}

}  // namespace

const NNKernels nn_kernels{&conv2d_forward,
                           &conv2d_backward,
                           &max_pool2d_forward,
                           &max_pool2d_backward,
                           &avg_pool2d_forward,
                           &avg_pool2d_backward,
                           &batch_norm_stats,
                           &batch_norm_invstd,
                           &batch_norm_apply,
                           &batch_norm_backward,
                           &layer_norm_forward,
                           &layer_norm_backward,
                           &adaptive_avg_pool2d_forward,
                           &adaptive_avg_pool2d_backward,
                           &nll_loss_forward,
                           &nll_loss_backward,
                           &lstm_cell_forward,
                           &lstm_cell_backward,
                           nullptr};  // bernoulli_philox: the CPU's masks come from its generator

}  // namespace nns::cpu
