// SPDX-License-Identifier: GPL-3.0-or-later
// The NLL loss on CUDA: the targets checked first (a bad class is the user's error, named
// with its position), then one block sums the batch in float64.
#include <limits>

#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

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

}  // namespace

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

}  // namespace nns::cuda
