// SPDX-License-Identifier: GPL-3.0-or-later
// The neural-network family on CUDA, with the CPU kernels' formulas (engine/cpu/nn.cpp):
// conv2d as im2col and one cuBLAS product per group for a chunk of images at once (col2im for
// the input's gradient, gathering, so without atomics); pooling one thread per output (the
// backwards add atomically: windows overlap); batch and layer norm one block per channel or row
// with float64 sums as on the CPU; the NLL loss; the LSTM cell's pointwise step.
#include <curand_kernel.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "engine/backend/elementwise_kernels.h"
#include "engine/backend/nn_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

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

// The sum of v over the block (kThreads threads); every thread gets it.
__device__ double block_sum(double v) {
  __shared__ double shared[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // shared may still be read by a previous call
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < kThreads / 32; ++w) total += shared[w];
  return total;
}

// Zeroes a contiguous tensor (a gradient that kernels then add into).
void fill_zero(const TensorView& t) {
  check(cudaMemsetAsync(t.data, 0, t.numel() * element_size(t.dtype), stream_for(t.data)), "zero");
}

// ---- conv2d ----------------------------------------------------------------------------------
// A chunk of `count` images is one matrix product per group (not one per image: a launch costs
// more than a small image's product). Its columns are (image, output pixel) pairs, the
// "channel-major" layout: col [channels * kh * kw, count * plane] holds every image's patches
// side by side, and a gradient or output block [channels, count * plane] likewise; small
// kernels move data between that layout and the tensors' [image, channel, pixel] one.

// col[row, j * plane + p] for the images first..first+count of `in` (channels of one group,
// starting at channel c0 of in_channels), row = (c * kh + ki) * kw + kj.
template <class T>
__global__ void im2col_kernel(const T* in, int64_t first, int64_t count, int64_t c0,
                              int64_t channels, Conv2dGeometry g, T* col) {
  const int64_t plane = g.out_h * g.out_w;
  const int64_t width = count * plane;
  const int64_t n = channels * g.kernel_h * g.kernel_w * width;
  NNS_GRID_STRIDE_LOOP(i, n) {
    const int64_t q = i % width, row = i / width;
    const int64_t j = q / plane, p = q % plane;
    const int64_t kj = row % g.kernel_w, ki = (row / g.kernel_w) % g.kernel_h;
    const int64_t c = row / (g.kernel_w * g.kernel_h);
    const int64_t oh = p / g.out_w, ow = p % g.out_w;
    const int64_t ih = oh * g.stride_h - g.pad_h + ki * g.dilation_h;
    const int64_t iw = ow * g.stride_w - g.pad_w + kj * g.dilation_w;
    const T* image = in + ((first + j) * g.in_channels + c0 + c) * g.in_h * g.in_w;
    col[i] = ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w ? image[ih * g.in_w + iw] : T(0);
  }
}

// The input's gradient of images first..first+count (channels c0.. of one group) = the sum of
// col's entries (channel-major, as im2col writes them) that each input pixel fed.
template <class T>
__global__ void col2im_kernel(const T* col, int64_t first, int64_t count, int64_t c0,
                              int64_t channels, Conv2dGeometry g, T* grad_in) {
  const int64_t image_size = channels * g.in_h * g.in_w;
  const int64_t n = count * image_size;
  const int64_t plane = g.out_h * g.out_w;
  const int64_t width = count * plane;
  NNS_GRID_STRIDE_LOOP(i, n) {
    const int64_t j = i / image_size, r = i % image_size;
    const int64_t iw = r % g.in_w, ih = (r / g.in_w) % g.in_h, c = r / (g.in_w * g.in_h);
    T sum = 0;
    for (int64_t ki = 0; ki < g.kernel_h; ++ki) {
      const int64_t h = ih + g.pad_h - ki * g.dilation_h;
      if (h < 0 || h % g.stride_h != 0) continue;
      const int64_t oh = h / g.stride_h;
      if (oh >= g.out_h) continue;
      for (int64_t kj = 0; kj < g.kernel_w; ++kj) {
        const int64_t w = iw + g.pad_w - kj * g.dilation_w;
        if (w < 0 || w % g.stride_w != 0) continue;
        const int64_t ow = w / g.stride_w;
        if (ow >= g.out_w) continue;
        const int64_t row = (c * g.kernel_h + ki) * g.kernel_w + kj;
        sum += col[row * width + j * plane + oh * g.out_w + ow];
      }
    }
    grad_in[((first + j) * g.in_channels + c0 + c) * g.in_h * g.in_w + ih * g.in_w + iw] = sum;
  }
}

// block [og, count * plane] (channel-major) <-> t [image, channel, pixel] for the images
// first..first+count and channels o0..o0+og. to_block: block = t; else t = block (+ bias[o]).
template <class T, bool kToBlock>
__global__ void channel_major_kernel(T* t, T* block, const T* bias, int64_t first, int64_t count,
                                     int64_t o0, int64_t og, int64_t channels, int64_t plane) {
  const int64_t width = count * plane;
  NNS_GRID_STRIDE_LOOP(i, og * width) {
    const int64_t o = i / width, q = i % width;
    const int64_t j = q / plane, p = q % plane;
    T& x = t[((first + j) * channels + o0 + o) * plane + p];
    if constexpr (kToBlock) {
      block[i] = x;
    } else {
      x = bias ? block[i] + bias[o0 + o] : block[i];
    }
  }
}

// grad_bias[c] = the sum of grad_out[n, c, p]: one block per channel.
template <class T>
__global__ void channel_sum_kernel(const T* x, T* out, int64_t n, int64_t channels, int64_t plane) {
  const int64_t c = blockIdx.x;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n * plane; i += blockDim.x)
    sum += static_cast<double>(x[((i / plane) * channels + c) * plane + i % plane]);
  sum = block_sum(sum);
  if (threadIdx.x == 0) out[c] = static_cast<T>(sum);
}

// How many images a chunk holds: all of them while the patches stay within 64 MiB (a 64-image
// batch of 3x224x224 with 3x3 kernels would need 350 MB at once), at least one.
int64_t images_per_chunk(int64_t k, int64_t plane, int64_t batch, size_t element) {
  const int64_t per_image = std::max<int64_t>(k * plane * static_cast<int64_t>(element), 1);
  return std::max<int64_t>(1, std::min<int64_t>(batch, (int64_t{64} << 20) / per_image));
}

template <class T>
void conv2d_forward_typed(const TensorView& input, const TensorView& weight, const TensorView& bias,
                          const TensorView& out, const Conv2dGeometry& g) {
  const int device = device_of(out.data);
  set_device(device);
  cudaStream_t st = stream(device);
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t k = cg * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  const int64_t chunk = images_per_chunk(k, plane, g.batch, sizeof(T));
  Scratch col(static_cast<size_t>(k * chunk * plane) * sizeof(T), device);
  Scratch block(static_cast<size_t>(og * chunk * plane) * sizeof(T), device);
  const GemmFn<T> gemm = linalg_kernels.gemm<T>();
  for (int64_t first = 0; first < g.batch; first += chunk) {
    const int64_t count = std::min(chunk, g.batch - first), width = count * plane;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      im2col_kernel<T><<<blocks_for(k * width), kThreads, 0, st>>>(
          input.ptr<const T>(), first, count, grp * cg, cg, g, col.as<T>());
      check_launch("conv2d");
      // block (og x width) = weight[grp] (og x k) @ col (k x width)
      gemm(false, false, og, width, k, T(1), weight.ptr<const T>() + grp * og * k, k, col.as<T>(),
           width, T(0), block.as<T>(), width);
      channel_major_kernel<T, false><<<blocks_for(og * width), kThreads, 0, st>>>(
          out.ptr<T>(), block.as<T>(), bias.data ? bias.ptr<const T>() : nullptr, first, count,
          grp * og, og, g.out_channels, plane);
      check_launch("conv2d");
    }
  }
}

template <class T>
void conv2d_backward_typed(const TensorView& grad_out, const TensorView& input,
                           const TensorView& weight, const TensorView& grad_input,
                           const TensorView& grad_weight, const TensorView& grad_bias,
                           const Conv2dGeometry& g) {
  const int device = device_of(grad_out.data);
  set_device(device);
  cudaStream_t st = stream(device);
  const int64_t cg = g.in_channels / g.groups, og = g.out_channels / g.groups;
  const int64_t k = cg * g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  const int64_t chunk = images_per_chunk(k, plane, g.batch, sizeof(T));
  const GemmFn<T> gemm = linalg_kernels.gemm<T>();
  Scratch col(static_cast<size_t>(k * chunk * plane) * sizeof(T), device);
  Scratch block(static_cast<size_t>(og * chunk * plane) * sizeof(T), device);
  for (int64_t first = 0; first < g.batch; first += chunk) {
    const int64_t count = std::min(chunk, g.batch - first), width = count * plane;
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      // The chunk's output gradient of the group, channel-major: gy (og x width).
      channel_major_kernel<T, true><<<blocks_for(og * width), kThreads, 0, st>>>(
          const_cast<T*>(grad_out.ptr<const T>()), block.as<T>(), nullptr, first, count, grp * og,
          og, g.out_channels, plane);
      check_launch("conv2d_backward");
      if (grad_weight.data) {
        im2col_kernel<T><<<blocks_for(k * width), kThreads, 0, st>>>(
            input.ptr<const T>(), first, count, grp * cg, cg, g, col.as<T>());
        check_launch("conv2d_backward");
        // grad_weight[grp] (og x k) (+)= gy (og x width) @ col^T (width x k)
        gemm(false, true, og, k, width, T(1), block.as<T>(), width, col.as<T>(), width,
             first == 0 ? T(0) : T(1), grad_weight.ptr<T>() + grp * og * k, k);
      }
      if (grad_input.data) {
        // col (k x width) = weight[grp]^T (k x og) @ gy (og x width), then back to the images.
        gemm(true, false, k, width, og, T(1), weight.ptr<const T>() + grp * og * k, k,
             block.as<T>(), width, T(0), col.as<T>(), width);
        col2im_kernel<T><<<blocks_for(count * cg * g.in_h * g.in_w), kThreads, 0, st>>>(
            col.as<T>(), first, count, grp * cg, cg, g, grad_input.ptr<T>());
        check_launch("conv2d_backward");
      }
    }
  }
  if (grad_weight.data && g.batch == 0) fill_zero(grad_weight);
  if (grad_bias.data) {
    channel_sum_kernel<T><<<static_cast<unsigned>(g.out_channels), kThreads, 0, st>>>(
        grad_out.ptr<const T>(), grad_bias.ptr<T>(), g.batch, g.out_channels, plane);
    check_launch("conv2d_backward");
  }
}

void conv2d_forward(const TensorView& input, const TensorView& weight, const TensorView& bias,
                    const TensorView& out, const Conv2dGeometry& g) {
  if (out.numel() == 0) return;
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

// ---- pooling ---------------------------------------------------------------------------------

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

template <class T>
__global__ void max_pool_backward_kernel(const T* gy, const int64_t* ix, T* gx, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * plane) {
    atomicAdd(gx + (i / plane) * in_plane + ix[i], gy[i]);
  }
}

void max_pool2d_backward(const TensorView& grad_out, const TensorView& indices,
                         const TensorView& grad_input, const Pool2dGeometry& g) {
  fill_zero(grad_input);
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  dispatch_floating(grad_out.dtype, "max_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    max_pool_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(grad_input.data)>>>(
        grad_out.ptr<const T>(), indices.ptr<const int64_t>(), grad_input.ptr<T>(), g);
  });
  check_launch("max_pool2d_backward");
}

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

__device__ __forceinline__ int64_t adaptive_start(int64_t o, int64_t out, int64_t in) {
  return o * in / out;
}
__device__ __forceinline__ int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

// adaptive: ATen's adaptive windows; else avg_pool2d's.
template <class T, bool kAdaptive>
__global__ void avg_pool_kernel(const T* x, T* y, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, oh = (i % plane) / g.out_w, ow = i % g.out_w;
    const T* xp = x + p * in_plane;
    AvgWindow win;
    if constexpr (kAdaptive) {
      win = {adaptive_start(oh, g.out_h, g.in_h), adaptive_end(oh, g.out_h, g.in_h),
             adaptive_start(ow, g.out_w, g.in_w), adaptive_end(ow, g.out_w, g.in_w), 0};
    } else {
      win = avg_window(g, oh, ow);
    }
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

template <class T, bool kAdaptive>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, Pool2dGeometry g) {
  const int64_t plane = g.out_h * g.out_w, in_plane = g.in_h * g.in_w;
  NNS_GRID_STRIDE_LOOP(i, g.planes * plane) {
    const int64_t p = i / plane, oh = (i % plane) / g.out_w, ow = i % g.out_w;
    T* gp = gx + p * in_plane;
    AvgWindow win;
    T delta;
    if constexpr (kAdaptive) {
      win = {adaptive_start(oh, g.out_h, g.in_h), adaptive_end(oh, g.out_h, g.in_h),
             adaptive_start(ow, g.out_w, g.in_w), adaptive_end(ow, g.out_w, g.in_w), 0};
      delta = gy[i] / static_cast<T>(win.h1 - win.h0) / static_cast<T>(win.w1 - win.w0);
    } else {
      win = avg_window(g, oh, ow);
      if (win.h0 >= win.h1 || win.w0 >= win.w1) continue;
      delta = gy[i] / static_cast<T>(win.divisor);
    }
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw) atomicAdd(gp + ih * g.in_w + iw, delta);
  }
}

template <bool kAdaptive>
void avg_pool_forward(const TensorView& input, const TensorView& out, const Pool2dGeometry& g) {
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  dispatch_floating(input.dtype, "avg_pool2d", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_kernel<T, kAdaptive><<<blocks_for(n), kThreads, 0, stream_for(out.data)>>>(
        input.ptr<const T>(), out.ptr<T>(), g);
  });
  check_launch("avg_pool2d");
}

template <bool kAdaptive>
void avg_pool_backward(const TensorView& grad_out, const TensorView& grad_input,
                       const Pool2dGeometry& g) {
  fill_zero(grad_input);
  const int64_t n = g.planes * g.out_h * g.out_w;
  if (n == 0) return;
  dispatch_floating(grad_out.dtype, "avg_pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    avg_pool_backward_kernel<T, kAdaptive>
        <<<blocks_for(n), kThreads, 0, stream_for(grad_input.data)>>>(grad_out.ptr<const T>(),
                                                                      grad_input.ptr<T>(), g);
  });
  check_launch("avg_pool2d_backward");
}

// ---- batch norm ------------------------------------------------------------------------------

// One block per channel: mean and biased variance in float64, as the CPU kernel.
template <class T>
__global__ void bn_stats_kernel(const T* x, int64_t n, int64_t channels, int64_t spatial,
                                double eps, double momentum, T* save_mean, T* save_invstd,
                                T* running_mean, T* running_var) {
  const int64_t c = blockIdx.x;
  const int64_t count = n * spatial;
  double sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    sum += static_cast<double>(x[((i / spatial) * channels + c) * spatial + i % spatial]);
  const double mean = block_sum(sum) / static_cast<double>(count);
  double var_sum = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const double d = static_cast<double>(x[((i / spatial) * channels + c) * spatial + i % spatial] -
                                         static_cast<T>(mean));
    var_sum += d * d;
  }
  var_sum = block_sum(var_sum);
  if (threadIdx.x == 0) {
    save_mean[c] = static_cast<T>(mean);
    save_invstd[c] = static_cast<T>(1 / sqrt(var_sum / static_cast<double>(count) + eps));
    if (running_mean)
      running_mean[c] = static_cast<T>(momentum * mean + (1 - momentum) * running_mean[c]);
    if (running_var)
      running_var[c] = static_cast<T>(momentum * var_sum / static_cast<double>(count - 1) +
                                      (1 - momentum) * running_var[c]);
  }
}

void batch_norm_stats(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      double eps, double momentum, const TensorView& save_mean,
                      const TensorView& save_invstd, const TensorView& running_mean,
                      const TensorView& running_var) {
  if (channels == 0) return;
  dispatch_floating(input.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    bn_stats_kernel<T>
        <<<static_cast<unsigned>(channels), kThreads, 0, stream_for(save_mean.data)>>>(
            input.ptr<const T>(), n, channels, spatial, eps, momentum, save_mean.ptr<T>(),
            save_invstd.ptr<T>(), static_cast<T*>(running_mean.data),
            static_cast<T*>(running_var.data));
  });
  check_launch("batch_norm");
}

template <class T>
__global__ void bn_invstd_kernel(const T* var, T eps, T* invstd, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    invstd[i] = T(1) / sqrt(var[i] + eps);
  }
}

void batch_norm_invstd(const TensorView& var, double eps, const TensorView& invstd) {
  const int64_t n = var.numel();
  if (n == 0) return;
  dispatch_floating(var.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    bn_invstd_kernel<T><<<blocks_for(n), kThreads, 0, stream_for(invstd.data)>>>(
        var.ptr<const T>(), static_cast<T>(eps), invstd.ptr<T>(), n);
  });
  check_launch("batch_norm");
}

template <class T>
__global__ void bn_apply_kernel(const T* x, int64_t total, int64_t channels, int64_t spatial,
                                const T* mean, const T* invstd, const T* weight, const T* bias,
                                T* y) {
  NNS_GRID_STRIDE_LOOP(i, total) {
    const int64_t c = (i / spatial) % channels;
    // out = x * alpha + beta, as ATen folds it.
    const T alpha = invstd[c] * (weight ? weight[c] : T(1));
    const T beta = (bias ? bias[c] : T(0)) - mean[c] * alpha;
    y[i] = x[i] * alpha + beta;
  }
}

void batch_norm_apply(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      const TensorView& mean, const TensorView& invstd, const TensorView& weight,
                      const TensorView& bias, const TensorView& out) {
  const int64_t total = n * channels * spatial;
  if (total == 0) return;
  dispatch_floating(input.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    bn_apply_kernel<T><<<blocks_for(total), kThreads, 0, stream_for(out.data)>>>(
        input.ptr<const T>(), total, channels, spatial, mean.ptr<const T>(), invstd.ptr<const T>(),
        static_cast<const T*>(weight.data), static_cast<const T*>(bias.data), out.ptr<T>());
  });
  check_launch("batch_norm");
}

template <class T>
__global__ void bn_backward_kernel(const T* gy, const T* x, int64_t n, int64_t channels,
                                   int64_t spatial, const T* mean, const T* invstd, const T* weight,
                                   bool training, T* gx, T* gw, T* gb) {
  const int64_t c = blockIdx.x;
  const int64_t count = n * spatial;
  const T m = mean[c];
  const double is = static_cast<double>(invstd[c]);
  const double w = weight ? static_cast<double>(weight[c]) : 1.0;
  double sum_dy = 0, sum_dy_xmu = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t at = ((i / spatial) * channels + c) * spatial + i % spatial;
    sum_dy += static_cast<double>(gy[at]);
    sum_dy_xmu += static_cast<double>(gy[at] * (x[at] - m));
  }
  sum_dy = block_sum(sum_dy);
  sum_dy_xmu = block_sum(sum_dy_xmu);
  if (threadIdx.x == 0) {
    if (gw) gw[c] = static_cast<T>(sum_dy_xmu * is);
    if (gb) gb[c] = static_cast<T>(sum_dy);
  }
  if (!gx) return;
  const T mean_dy = static_cast<T>(training ? sum_dy / static_cast<double>(count) : 0);
  const T k = static_cast<T>(training ? sum_dy_xmu * is * is / static_cast<double>(count) : 0);
  const T scale = static_cast<T>(is * w);
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) {
    const int64_t at = ((i / spatial) * channels + c) * spatial + i % spatial;
    gx[at] = (gy[at] - mean_dy - (x[at] - m) * k) * scale;
  }
}

void batch_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t n,
                         int64_t channels, int64_t spatial, const TensorView& mean,
                         const TensorView& invstd, const TensorView& weight, bool training,
                         const TensorView& grad_input, const TensorView& grad_weight,
                         const TensorView& grad_bias) {
  if (channels == 0) return;
  dispatch_floating(input.dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    bn_backward_kernel<T>
        <<<static_cast<unsigned>(channels), kThreads, 0, stream_for(grad_out.data)>>>(
            grad_out.ptr<const T>(), input.ptr<const T>(), n, channels, spatial,
            mean.ptr<const T>(), invstd.ptr<const T>(), static_cast<const T*>(weight.data),
            training, static_cast<T*>(grad_input.data), static_cast<T*>(grad_weight.data),
            static_cast<T*>(grad_bias.data));
  });
  check_launch("batch_norm_backward");
}

// ---- layer norm ------------------------------------------------------------------------------

template <class T>
__global__ void ln_forward_kernel(const T* x, int64_t rows, int64_t cols, double eps,
                                  const T* weight, const T* bias, T* y, T* mean, T* rstd) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    double sum = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) sum += static_cast<double>(xr[j]);
    const T m = static_cast<T>(block_sum(sum) / static_cast<double>(cols));
    double sq = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const double d = static_cast<double>(xr[j] - m);
      sq += d * d;
    }
    const double var = block_sum(sq) / static_cast<double>(cols);
    const T s = static_cast<T>(1 / sqrt(var + eps));
    if (threadIdx.x == 0) {
      mean[r] = m;
      rstd[r] = s;
    }
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      T v = (xr[j] - m) * s;
      if (weight) v *= weight[j];
      if (bias) v += bias[j];
      y[r * cols + j] = v;
    }
  }
}

void layer_norm_forward(const TensorView& input, int64_t rows, int64_t cols, double eps,
                        const TensorView& weight, const TensorView& bias, const TensorView& out,
                        const TensorView& mean, const TensorView& rstd) {
  if (rows == 0) return;
  const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
  dispatch_floating(input.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    ln_forward_kernel<T><<<blocks, kThreads, 0, stream_for(out.data)>>>(
        input.ptr<const T>(), rows, cols, eps, static_cast<const T*>(weight.data),
        static_cast<const T*>(bias.data), out.ptr<T>(), mean.ptr<T>(), rstd.ptr<T>());
  });
  check_launch("layer_norm");
}

template <class T>
__global__ void ln_backward_input_kernel(const T* gy, const T* x, int64_t rows, int64_t cols,
                                         const T* mean, const T* rstd, const T* weight, T* gx) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T m = mean[r], s = rstd[r];
    double sum_g = 0, sum_g_xhat = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const T g = weight ? gy[r * cols + j] * weight[j] : gy[r * cols + j];
      const T xhat = (x[r * cols + j] - m) * s;
      sum_g += static_cast<double>(g);
      sum_g_xhat += static_cast<double>(g * xhat);
    }
    const T mean_g = static_cast<T>(block_sum(sum_g) / static_cast<double>(cols));
    const T mean_g_xhat = static_cast<T>(block_sum(sum_g_xhat) / static_cast<double>(cols));
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const T g = weight ? gy[r * cols + j] * weight[j] : gy[r * cols + j];
      const T xhat = (x[r * cols + j] - m) * s;
      gx[r * cols + j] = (g - mean_g - xhat * mean_g_xhat) * s;
    }
  }
}

// One thread per column: the parameter gradients sum over rows in float64.
template <class T>
__global__ void ln_backward_params_kernel(const T* gy, const T* x, int64_t rows, int64_t cols,
                                          const T* mean, const T* rstd, T* gw, T* gb) {
  NNS_GRID_STRIDE_LOOP(j, cols) {
    double w = 0, b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T g = gy[r * cols + j];
      w += static_cast<double>(g * ((x[r * cols + j] - mean[r]) * rstd[r]));
      b += static_cast<double>(g);
    }
    if (gw) gw[j] = static_cast<T>(w);
    if (gb) gb[j] = static_cast<T>(b);
  }
}

void layer_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t rows,
                         int64_t cols, const TensorView& mean, const TensorView& rstd,
                         const TensorView& weight, const TensorView& grad_input,
                         const TensorView& grad_weight, const TensorView& grad_bias) {
  if (rows == 0 || cols == 0) {
    if (grad_weight.data) fill_zero(grad_weight);
    if (grad_bias.data) fill_zero(grad_bias);
    return;
  }
  cudaStream_t st = stream_for(grad_out.data);
  dispatch_floating(input.dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    if (grad_input.data) {
      const unsigned blocks = static_cast<unsigned>(rows < 65535 * 8 ? rows : 65535 * 8);
      ln_backward_input_kernel<T><<<blocks, kThreads, 0, st>>>(
          grad_out.ptr<const T>(), input.ptr<const T>(), rows, cols, mean.ptr<const T>(),
          rstd.ptr<const T>(), static_cast<const T*>(weight.data), grad_input.ptr<T>());
    }
    if (grad_weight.data || grad_bias.data) {
      ln_backward_params_kernel<T><<<blocks_for(cols), kThreads, 0, st>>>(
          grad_out.ptr<const T>(), input.ptr<const T>(), rows, cols, mean.ptr<const T>(),
          rstd.ptr<const T>(), static_cast<T*>(grad_weight.data), static_cast<T*>(grad_bias.data));
    }
  });
  check_launch("layer_norm_backward");
}

// ---- NLL loss --------------------------------------------------------------------------------

__global__ void nll_check_kernel(const int64_t* t, int64_t total, int64_t classes,
                                 int64_t ignore_index, unsigned long long* first) {
  NNS_GRID_STRIDE_LOOP(i, total) {
    const int64_t k = t[i];
    if (k != ignore_index && (k < 0 || k >= classes))
      atomicMin(first, static_cast<unsigned long long>(i));
  }
}

template <class T>
__global__ void nll_forward_kernel(const T* x, const int64_t* t, const T* w, int64_t n,
                                   int64_t classes, int64_t spatial, int64_t ignore_index,
                                   bool reduce, bool mean, T* out, T* total_weight) {
  const int64_t total = n * spatial;
  double loss_sum = 0, weight_sum = 0;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    const int64_t i = j / spatial, s = j % spatial;
    const int64_t k = t[j];
    T loss = 0;
    if (k != ignore_index && (k < 0 || k >= classes)) {
      // Checked on the host before, except in a CUDA graph's replay: a NaN loss makes the
      // session re-run the step eagerly, whose check names the target.
      loss = std::numeric_limits<T>::quiet_NaN();
      weight_sum = std::numeric_limits<double>::quiet_NaN();
    } else if (k != ignore_index) {
      const T wk = w ? w[k] : T(1);
      loss = -wk * x[(i * classes + k) * spatial + s];
      weight_sum += static_cast<double>(wk);
    }
    if (reduce) {
      loss_sum += static_cast<double>(loss);
    } else {
      out[j] = loss;
    }
  }
  // Launched as one block when reduce (and for the total weight): the sums are the block's.
  if (gridDim.x == 1) {
    loss_sum = block_sum(loss_sum);
    weight_sum = block_sum(weight_sum);
    if (threadIdx.x == 0) {
      *total_weight = static_cast<T>(weight_sum);
      if (reduce) *out = static_cast<T>(mean ? loss_sum / weight_sum : loss_sum);
    }
  }
}

int64_t nll_loss_forward(const TensorView& input, const TensorView& target,
                         const TensorView& weight, int64_t n, int64_t classes, int64_t spatial,
                         int64_t ignore_index, bool reduce, bool mean, const TensorView& out,
                         const TensorView& total_weight) {
  const int device = device_of(out.data);
  set_device(device);
  cudaStream_t st = stream(device);
  const int64_t total = n * spatial;
  if (total > 0 && thread_capture().stream == nullptr) {
    // The targets are checked first (one read back): a bad class is the user's error, named
    // with its position, not a wrong read on the GPU. (Not inside a CUDA graph capture, which
    // cannot read back: the kernels guard instead.)
    Scratch first(sizeof(unsigned long long), device);
    unsigned long long host = ~0ull;
    check(cudaMemcpyAsync(first.as<unsigned long long>(), &host, sizeof host,
                          cudaMemcpyHostToDevice, st),
          "nll_loss");
    nll_check_kernel<<<blocks_for(total), kThreads, 0, st>>>(
        target.ptr<const int64_t>(), total, classes, ignore_index, first.as<unsigned long long>());
    check_launch("nll_loss");
    check(cudaMemcpyAsync(&host, first.as<unsigned long long>(), sizeof host,
                          cudaMemcpyDeviceToHost, st),
          "nll_loss");
    check(cudaStreamSynchronize(st), "nll_loss");
    if (host != ~0ull) return static_cast<int64_t>(host);
  }
  dispatch_floating(input.dtype, "nll_loss", [&](auto tag) {
    using T = decltype(tag);
    // One block: the batch's targets are few (a block of 256 threads sums thousands quickly);
    // without reduction the per-element losses still need the total weight, so one block too.
    nll_forward_kernel<T><<<1, kThreads, 0, st>>>(
        input.ptr<const T>(), target.ptr<const int64_t>(), static_cast<const T*>(weight.data), n,
        classes, spatial, ignore_index, reduce, mean, out.ptr<T>(), total_weight.ptr<T>());
  });
  check_launch("nll_loss");
  return -1;
}

template <class T>
__global__ void nll_backward_kernel(const T* g, const int64_t* t, const T* w, int64_t n,
                                    int64_t classes, int64_t spatial, int64_t ignore_index,
                                    bool reduce, bool mean, const T* total_weight, T* gx) {
  const T scalar = reduce ? -(mean ? g[0] / total_weight[0] : g[0]) : T(0);
  NNS_GRID_STRIDE_LOOP(j, n * spatial) {
    const int64_t i = j / spatial, s = j % spatial;
    const int64_t k = t[j];
    if (k == ignore_index || k < 0 || k >= classes) continue;
    const T gv = reduce ? scalar : -g[j];
    gx[(i * classes + k) * spatial + s] = w ? w[k] * gv : gv;
  }
}

void nll_loss_backward(const TensorView& grad, const TensorView& target, const TensorView& weight,
                       int64_t n, int64_t classes, int64_t spatial, int64_t ignore_index,
                       bool reduce, bool mean, const TensorView& total_weight,
                       const TensorView& grad_input) {
  fill_zero(grad_input);
  const int64_t total = n * spatial;
  if (total == 0) return;
  dispatch_floating(grad.dtype, "nll_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    nll_backward_kernel<T><<<blocks_for(total), kThreads, 0, stream_for(grad_input.data)>>>(
        grad.ptr<const T>(), target.ptr<const int64_t>(), static_cast<const T*>(weight.data), n,
        classes, spatial, ignore_index, reduce, mean, total_weight.ptr<const T>(),
        grad_input.ptr<T>());
  });
  check_launch("nll_loss_backward");
}

// ---- LSTM cell -------------------------------------------------------------------------------

TensorView column_block(const TensorView& m, int64_t column, const int64_t (&sizes)[2],
                        const int64_t (&strides)[2]) {
  TensorView v = m;
  v.data = static_cast<char*>(m.data) + column * static_cast<int64_t>(element_size(m.dtype));
  v.sizes = sizes;
  v.strides = strides;
  return v;
}

template <class T>
__global__ void lstm_c_kernel(const T* act, const T* c_prev, int64_t n, int64_t hidden, T* c) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, h = j % hidden;
    const T* a = act + r * 4 * hidden;
    const T i = a[h], f = a[hidden + h], g = a[2 * hidden + h];
    // Two products, then their sum, as the separate ops round f * c_prev + i * g.
    c[j] = c_prev ? f * c_prev[j] + i * g : i * g;
  }
}

template <class T>
__global__ void lstm_h_kernel(const T* act, const T* tanh_c, int64_t n, int64_t hidden, T* h) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, k = j % hidden;
    h[j] = act[r * 4 * hidden + 3 * hidden + k] * tanh_c[j];
  }
}

void lstm_cell_forward(const TensorView& gates, const TensorView& c_prev, int64_t n, int64_t hidden,
                       const TensorView& act, const TensorView& c, const TensorView& tanh_c,
                       const TensorView& h) {
  if (n * hidden == 0) return;
  const int64_t width = 4 * hidden;
  elementwise_kernels.unary(UnaryOp::Sigmoid, act, gates, 0, 0);
  const int64_t sizes[2] = {n, hidden};
  const int64_t strides[2] = {width, 1};
  elementwise_kernels.unary(UnaryOp::Tanh, column_block(act, 2 * hidden, sizes, strides),
                            column_block(gates, 2 * hidden, sizes, strides), 0, 0);
  cudaStream_t st = stream_for(c.data);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_c_kernel<T><<<blocks_for(n * hidden), kThreads, 0, st>>>(
        act.ptr<const T>(), static_cast<const T*>(c_prev.data), n, hidden, c.ptr<T>());
  });
  check_launch("lstm_cell");
  elementwise_kernels.unary(UnaryOp::Tanh, tanh_c, c, 0, 0);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_h_kernel<T><<<blocks_for(n * hidden), kThreads, 0, st>>>(
        act.ptr<const T>(), tanh_c.ptr<const T>(), n, hidden, h.ptr<T>());
  });
  check_launch("lstm_cell");
}

template <class T>
__global__ void lstm_backward_kernel(const T* grad_h, const T* grad_c, const T* act,
                                     const T* c_prev, const T* tanh_c, int64_t n, int64_t hidden,
                                     T* gg_all, T* grad_c_prev) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, k = j % hidden;
    const T* a = act + r * 4 * hidden;
    const T i = a[k], f = a[hidden + k], g = a[2 * hidden + k], o = a[3 * hidden + k];
    const T tc = tanh_c[j];
    T* gg = gg_all + r * 4 * hidden;
    T dc = 0;
    if (grad_h) {
      const T gh = grad_h[j];
      dc = gh * o * (T(1) - tc * tc);
      gg[3 * hidden + k] = gh * tc * o * (T(1) - o);
    } else {
      gg[3 * hidden + k] = 0;
    }
    if (grad_c) dc += grad_c[j];
    gg[k] = dc * g * i * (T(1) - i);
    gg[hidden + k] = c_prev ? dc * c_prev[j] * f * (T(1) - f) : T(0);
    gg[2 * hidden + k] = dc * i * (T(1) - g * g);
    if (grad_c_prev) grad_c_prev[j] = dc * f;
  }
}

void lstm_cell_backward(const TensorView& grad_h, const TensorView& grad_c, const TensorView& act,
                        const TensorView& c_prev, const TensorView& tanh_c, int64_t n,
                        int64_t hidden, const TensorView& grad_gates,
                        const TensorView& grad_c_prev) {
  if (n * hidden == 0) return;
  dispatch_floating(act.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    lstm_backward_kernel<T><<<blocks_for(n * hidden), kThreads, 0, stream_for(grad_gates.data)>>>(
        static_cast<const T*>(grad_h.data), static_cast<const T*>(grad_c.data), act.ptr<const T>(),
        static_cast<const T*>(c_prev.data), tanh_c.ptr<const T>(), n, hidden, grad_gates.ptr<T>(),
        static_cast<T*>(grad_c_prev.data));
  });
  check_launch("lstm_cell_backward");
}

// Four elements a draw: curand_uniform4 gives four uniforms of one Philox counter, each thread
// on its own subsequence (as PyTorch's fused dropout).
template <class T>
__global__ void bernoulli_philox_kernel(T* out, int64_t n, float p_keep, uint64_t seed,
                                        const uint64_t* device_seed) {
  const uint64_t key = device_seed != nullptr ? *device_seed : seed;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 4;
  curandStatePhilox4_32_10_t state;
  curand_init(key, static_cast<unsigned long long>(thread), 0, &state);
  for (int64_t base = thread * 4; base < n; base += stride) {
    const float4 r = curand_uniform4(&state);
    const float draws[4] = {r.x, r.y, r.z, r.w};
    for (int j = 0; j < 4 && base + j < n; ++j) out[base + j] = draws[j] <= p_keep ? T(1) : T(0);
  }
}

void bernoulli_philox(const TensorView& out, double p_keep, uint64_t seed,
                      const uint64_t* device_seed) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating(out.dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    bernoulli_philox_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, stream_for(out.data)>>>(
        out.ptr<T>(), n, static_cast<float>(p_keep), seed, device_seed);
  });
  check_launch("dropout");
}

}  // namespace

const NNKernels nn_kernels{
    &conv2d_forward,          &conv2d_backward,          &max_pool2d_forward, &max_pool2d_backward,
    &avg_pool_forward<false>, &avg_pool_backward<false>, &batch_norm_stats,   &batch_norm_invstd,
    &batch_norm_apply,        &batch_norm_backward,      &layer_norm_forward, &layer_norm_backward,
    &avg_pool_forward<true>,  &avg_pool_backward<true>,  &nll_loss_forward,   &nll_loss_backward,
    &lstm_cell_forward,       &lstm_cell_backward,       &bernoulli_philox};

}  // namespace nns::cuda
