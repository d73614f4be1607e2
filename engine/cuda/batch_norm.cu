// SPDX-License-Identifier: GPL-3.0-or-later
// Batch norm on CUDA: one block per channel, float64 sums as on the CPU.
#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

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

template <class T>
__global__ void bn_invstd_kernel(const T* var, T eps, T* invstd, int64_t n) {
  NNS_GRID_STRIDE_LOOP(i, n) {
    invstd[i] = T(1) / sqrt(var[i] + eps);
  }
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

}  // namespace

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

}  // namespace nns::cuda
