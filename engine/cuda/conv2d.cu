// SPDX-License-Identifier: GPL-3.0-or-later
// conv2d on CUDA as im2col and one cuBLAS product per group for a chunk of images at once;
// the input's gradient by col2im, a gather (each input pixel sums the patches it fed), so
// without atomics. A chunk of `count` images is one matrix product per group (not one per
// image: a launch costs more than a small image's product). Its columns are (image, output
// pixel) pairs, the "channel-major" layout: col [channels * kh * kw, count * plane] holds every
// image's patches side by side, and a gradient or output block [channels, count * plane]
// likewise; small kernels move data between that layout and the tensors' [image, channel,
// pixel] one.
#include <algorithm>

#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

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

// What a convolution's forward and backward share: the device of `on` and its stream, a group's
// channels (cg in, og out), the unfolded patch length k and the output plane, the images a chunk
// takes, and the chunk's scratch for the unfolded input (k x width) and one group's channel-major
// outputs (og x width).
struct Im2colPlan {
  Im2colPlan(const TensorView& on, const Conv2dGeometry& g, size_t element)
      : device(device_of(on.data)),
        st(made_current(device)),
        cg(g.in_channels / g.groups),
        og(g.out_channels / g.groups),
        k(cg * g.kernel_h * g.kernel_w),
        plane(g.out_h * g.out_w),
        chunk(images_per_chunk(k, plane, g.batch, element)),
        col(static_cast<size_t>(k * chunk * plane) * element, device),
        block(static_cast<size_t>(og * chunk * plane) * element, device) {}
  int device;
  cudaStream_t st;
  int64_t cg, og, k, plane, chunk;
  Scratch col, block;

 private:
  static cudaStream_t made_current(int device) {
    set_device(device);
    return stream(device);
  }
};

template <class T>
void conv2d_forward_typed(const TensorView& input, const TensorView& weight, const TensorView& bias,
                          const TensorView& out, const Conv2dGeometry& g) {
  const Im2colPlan plan(out, g, sizeof(T));
  const auto& [device, st, cg, og, k, plane, chunk, col, block] = plan;
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
  const Im2colPlan plan(grad_out, g, sizeof(T));
  const auto& [device, st, cg, og, k, plane, chunk, col, block] = plan;
  const GemmFn<T> gemm = linalg_kernels.gemm<T>();
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

}  // namespace

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

}  // namespace nns::cuda
