// SPDX-License-Identifier: GPL-3.0-or-later
// Layer norm on CUDA: one block per row for the statistics and the input's gradient, one
// thread per column for the parameters' gradients; float64 sums as on the CPU.
#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

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

}  // namespace

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

}  // namespace nns::cuda
