// SPDX-License-Identifier: GPL-3.0-or-later
// 2-D pooling on CUDA, ATen's windows: forward one thread per output; backward one thread per
// input element, which gathers the gradients of the windows that hold it (windows overlap) in
// increasing output order, the order the CPU adds them in: the same bits as the CPU, run after
// run, where adding into the input atomically would change them with the order of the adds.
#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

template <class T>
__global__ void max_pool_kernel(const T* x, T* y, int64_t* ix, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, oh = (i % plane) / g.out_w, ow = i % g.out_w;
    const T* xp = x + p * in_plane;
    int64_t h0 = oh * g.stride_h - g.pad_h;
    const int64_t h1 = min(h0 + (g.kernel_h - 1) * g.dilation_h + 1, g.in_h);
    while (h0 < 0) h0 += g.dilation_h;
    int64_t w0 = ow * g.stride_w - g.pad_w;
    const int64_t w1 = min(w0 + (g.kernel_w - 1) * g.dilation_w + 1, g.in_w);
    while (w0 < 0) w0 += g.dilation_w;
    int64_t best = h0 * g.in_w + w0;
    T best_value = -INFINITY;
    for (int64_t ih = h0; ih < h1; ih += g.dilation_h) {
      for (int64_t iw = w0; iw < w1; iw += g.dilation_w) {
        const int64_t j = ih * g.in_w + iw;
        const T v = xp[j];
        if (v > best_value || v != v) {
          best_value = v;
          best = j;
        }
      }
    }
    y[i] = best_value;
    ix[i] = best;
  }
}

// The output row (or column) whose window's tap k lies on input row i, or -1: i = o * stride -
// pad + k * dilation.
__device__ __forceinline__ int64_t window_of_tap(int64_t i, int64_t k, int64_t stride, int64_t pad,
                                                 int64_t dilation, int64_t out) {
  const int64_t h = i + pad - k * dilation;
  if (h < 0 || h % stride != 0 || h / stride >= out) return -1;
  return h / stride;
}

// grad_input[i] = the sum of grad_out over the windows whose maximum is input element i. A
// window holding i has i at one of its taps (ki, kj); the taps from last to first give the
// windows in increasing order.
template <class T>
__global__ void max_pool_backward_kernel(const T* gy, const int64_t* ix, T* gx, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * in_plane) {
    const int64_t p = i / in_plane, j = i % in_plane, ih = j / g.in_w, iw = j % g.in_w;
    const T* gyp = gy + p * plane;
    const int64_t* ixp = ix + p * plane;
    T sum = 0;
    for (int64_t ki = g.kernel_h - 1; ki >= 0; --ki) {
      const int64_t oh = window_of_tap(ih, ki, g.stride_h, g.pad_h, g.dilation_h, g.out_h);
      if (oh < 0) continue;
      for (int64_t kj = g.kernel_w - 1; kj >= 0; --kj) {
        const int64_t ow = window_of_tap(iw, kj, g.stride_w, g.pad_w, g.dilation_w, g.out_w);
        if (ow < 0) continue;
        const int64_t o = oh * g.out_w + ow;
        if (ixp[o] == j) sum += gyp[o];
      }
    }
    gx[i] = sum;
  }
}

// ATen's avg_pool2d window: clipped to the padded input for the divisor (count_include_pad),
// to the input for the sum.
struct AvgWindow {
  int64_t h0, h1, w0, w1, divisor;
};
__device__ AvgWindow avg_window(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
  int64_t h1 = min(h0 + g.kernel_h, g.in_h + g.pad_h);
  int64_t w1 = min(w0 + g.kernel_w, g.in_w + g.pad_w);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = max(h0, int64_t{0});
  w0 = max(w0, int64_t{0});
  h1 = min(h1, g.in_h);
  w1 = min(w1, g.in_w);
  return {h0, h1, w0, w1, g.count_include_pad ? padded_size : (h1 - h0) * (w1 - w0)};
}

// ATen's adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)).
__device__ __forceinline__ int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return o * in / out;
}
__device__ __forceinline__ int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

__device__ AvgWindow adaptive_window(const Pool2dGeometry& g, int64_t oh, int64_t ow) {
  return {adaptive_start(oh, g.out_h, g.in_h), adaptive_end(oh, g.out_h, g.in_h),
          adaptive_start(ow, g.out_w, g.in_w), adaptive_end(ow, g.out_w, g.in_w), 0};
}

// The first and one past the last output row (or column) whose window may hold input row i.
struct OutputRange {
  int64_t begin, end;
};
__device__ OutputRange avg_outputs(int64_t i, int64_t kernel, int64_t stride, int64_t pad,
                                   int64_t out) {
  // o * stride - pad <= i < o * stride - pad + kernel
  const int64_t low = i + pad - kernel + 1;
  return {low <= 0 ? 0 : (low + stride - 1) / stride, min((i + pad) / stride + 1, out)};
}
// The adaptive windows holding row i are those of the outputs i's own window maps to.
__device__ OutputRange adaptive_outputs(int64_t i, int64_t in, int64_t out) {
  return {adaptive_start(i, in, out), min(adaptive_end(i, in, out), out)};
}

// adaptive: ATen's adaptive windows; else avg_pool2d's.
template <class T, bool kAdaptive>
__global__ void avg_pool_kernel(const T* x, T* y, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, oh = (i % plane) / g.out_w, ow = i % g.out_w;
    const T* xp = x + p * in_plane;
    const AvgWindow win = kAdaptive ? adaptive_window(g, oh, ow) : avg_window(g, oh, ow);
    T sum = 0;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += xp[ih * g.in_w + iw];
    if constexpr (kAdaptive) {
      y[i] = sum / static_cast<T>(win.h1 - win.h0) / static_cast<T>(win.w1 - win.w0);
    } else {
      y[i] = win.h0 >= win.h1 || win.w0 >= win.w1 ? T(0) : sum / static_cast<T>(win.divisor);
    }
  }
}

// grad_input[i] = the sum of each window's share of its gradient over the windows that hold
// input element i, in increasing output order.
template <class T, bool kAdaptive>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * in_plane) {
    const int64_t p = i / in_plane, ih = (i % in_plane) / g.in_w, iw = i % g.in_w;
    const T* gyp = gy + p * plane;
    const OutputRange rows = kAdaptive ? adaptive_outputs(ih, g.in_h, g.out_h)
                                       : avg_outputs(ih, g.kernel_h, g.stride_h, g.pad_h, g.out_h);
    const OutputRange cols = kAdaptive ? adaptive_outputs(iw, g.in_w, g.out_w)
                                       : avg_outputs(iw, g.kernel_w, g.stride_w, g.pad_w, g.out_w);
    T sum = 0;
    for (int64_t oh = rows.begin; oh < rows.end; ++oh) {
      for (int64_t ow = cols.begin; ow < cols.end; ++ow) {
        const AvgWindow win = kAdaptive ? adaptive_window(g, oh, ow) : avg_window(g, oh, ow);
        if (ih < win.h0 || ih >= win.h1 || iw < win.w0 || iw >= win.w1) continue;
        const T share = kAdaptive ? gyp[oh * g.out_w + ow] / static_cast<T>(win.h1 - win.h0) /
                                        static_cast<T>(win.w1 - win.w0)
                                  : gyp[oh * g.out_w + ow] / static_cast<T>(win.divisor);
        sum += share;
      }
    }
    gx[i] = sum;
  }
}

template <bool kAdaptive>
void avg_pool_forward(const TensorView& input, const TensorView& out, const Pool2dGeometry& g) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  dispatch_floating(input.dtype, kAdaptive ? "adaptive_avg_pool2d" : "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T, kAdaptive><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
        input.ptr<const T>(), out.ptr<T>(), g);
  });
  check_launch("avg_pool2d");
}

template <bool kAdaptive>
void avg_pool_backward(const TensorView& grad_out, const TensorView& grad_input,
                       const Pool2dGeometry& g) {
  const int64_t n = g.planes * g.in_h * g.in_w;
  if (n == 0) return;
  if (g.out_h * g.out_w == 0) return fill_zero(grad_input);
  dispatch_floating(grad_out.dtype,
                    kAdaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward",
                    [&](auto tag) {
                      using T = decltype(tag);
                      avg_pool_backward_kernel<T, kAdaptive>
                          <<<blocks_for(n), kThreads, 0, stream_for(grad_input.data)>>>(
                              grad_out.ptr<const T>(), grad_input.ptr<T>(), g);
                    });
  check_launch("avg_pool2d_backward");
}

}  // namespace

void max_pool2d_forward(const TensorView& input, const TensorView& out, const TensorView& indices,
                        const Pool2dGeometry& g) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  dispatch_floating(input.dtype, "max_pool2d", [&](auto tag) {
    using T = decltype(tag);
    max_pool_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
        input.ptr<const T>(), out.ptr<T>(), indices.ptr<int64_t>(), g);
  });
  check_launch("max_pool2d");
}

void max_pool2d_backward(const TensorView& grad_out, const TensorView& indices,
                         const TensorView& grad_input, const Pool2dGeometry& g) {
  const int64_t n = g.planes * g.in_h * g.in_w;
  if (n == 0) return;
  if (g.out_h * g.out_w == 0) return fill_zero(grad_input);
  dispatch_floating(grad_out.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    max_pool_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(grad_input.data)>>>(
        grad_out.ptr<const T>(), indices.ptr<const int64_t>(), grad_input.ptr<T>(), g);
  });
  check_launch("max_pool2d_backward");
}

void avg_pool2d_forward(const TensorView& input, const TensorView& out, const Pool2dGeometry& g) {
  avg_pool_forward<false>(input, out, g);
}

void avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                         const Pool2dGeometry& g) {
  avg_pool_backward<false>(grad_out, grad_input, g);
}

void adaptive_avg_pool2d_forward(const TensorView& input, const TensorView& out,
                                 const Pool2dGeometry& g) {
  avg_pool_forward<true>(input, out, g);
}

void adaptive_avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                                  const Pool2dGeometry& g) {
  avg_pool_backward<true>(grad_out, grad_input, g);
}

}  // namespace nns::cuda
