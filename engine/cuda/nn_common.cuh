// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The neural-network family on CUDA, one file per op family, with the CPU kernels' formulas
// (engine/cpu/nn.cpp): conv2d.cu, pooling.cu, batch_norm.cu, layer_norm.cu, nll_loss.cu,
// lstm_cell.cu, dropout.cu; nn.cu gathers their launchers into the backend's table. This
// header: what they share (a block's float64 sum, zeroing) and the launchers' declarations.
// Every sum is in a fixed order (no float atomics): the same inputs give the same bits.
#include "engine/backend/nn_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {

// The sum of v over the block (kThreads threads); every thread gets it.
__device__ inline double block_sum(double v) {
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

// Zeroes a contiguous tensor.
inline void fill_zero(const TensorView& t) {
  check(cudaMemsetAsync(t.data, 0, t.numel() * element_size(t.dtype), stream_for(t.data)), "zero");
}

// conv2d.cu
void conv2d_forward(const TensorView& input, const TensorView& weight, const TensorView& bias,
                    const TensorView& out, const Conv2dGeometry& g);
void conv2d_backward(const TensorView& grad_out, const TensorView& input, const TensorView& weight,
                     const TensorView& grad_input, const TensorView& grad_weight,
                     const TensorView& grad_bias, const Conv2dGeometry& g);

// pooling.cu
void max_pool2d_forward(const TensorView& input, const TensorView& out, const TensorView& indices,
                        const Pool2dGeometry& g);
void max_pool2d_backward(const TensorView& grad_out, const TensorView& indices,
                         const TensorView& grad_input, const Pool2dGeometry& g);
void avg_pool2d_forward(const TensorView& input, const TensorView& out, const Pool2dGeometry& g);
void avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                         const Pool2dGeometry& g);
void adaptive_avg_pool2d_forward(const TensorView& input, const TensorView& out,
                                 const Pool2dGeometry& g);
void adaptive_avg_pool2d_backward(const TensorView& grad_out, const TensorView& grad_input,
                                  const Pool2dGeometry& g);

// batch_norm.cu
void batch_norm_stats(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      double eps, double momentum, const TensorView& save_mean,
                      const TensorView& save_invstd, const TensorView& running_mean,
                      const TensorView& running_var);
void batch_norm_invstd(const TensorView& var, double eps, const TensorView& invstd);
void batch_norm_apply(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                      const TensorView& mean, const TensorView& invstd, const TensorView& weight,
                      const TensorView& bias, const TensorView& out);
void batch_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t n,
                         int64_t channels, int64_t spatial, const TensorView& mean,
                         const TensorView& invstd, const TensorView& weight, bool training,
                         const TensorView& grad_input, const TensorView& grad_weight,
                         const TensorView& grad_bias);

// layer_norm.cu
void layer_norm_forward(const TensorView& input, int64_t rows, int64_t cols, double eps,
                        const TensorView& weight, const TensorView& bias, const TensorView& out,
                        const TensorView& mean, const TensorView& rstd);
void layer_norm_backward(const TensorView& grad_out, const TensorView& input, int64_t rows,
                         int64_t cols, const TensorView& mean, const TensorView& rstd,
                         const TensorView& weight, const TensorView& grad_input,
                         const TensorView& grad_weight, const TensorView& grad_bias);

// nll_loss.cu
int64_t nll_loss_forward(const TensorView& input, const TensorView& target,
                         const TensorView& weight, int64_t n, int64_t classes, int64_t spatial,
                         int64_t ignore_index, bool reduce, bool mean, const TensorView& out,
                         const TensorView& total_weight);
void nll_loss_backward(const TensorView& grad, const TensorView& target, const TensorView& weight,
                       int64_t n, int64_t classes, int64_t spatial, int64_t ignore_index,
                       bool reduce, bool mean, const TensorView& total_weight,
                       const TensorView& grad_input);

// lstm_cell.cu
void lstm_cell_forward(const TensorView& gates, const TensorView& c_prev, int64_t n, int64_t hidden,
                       const TensorView& act, const TensorView& c, const TensorView& tanh_c,
                       const TensorView& h);
void lstm_cell_backward(const TensorView& grad_h, const TensorView& grad_c, const TensorView& act,
                        const TensorView& c_prev, const TensorView& tanh_c, int64_t n,
                        int64_t hidden, const TensorView& grad_gates,
                        const TensorView& grad_c_prev);

// dropout.cu
void bernoulli_philox(const TensorView& out, double p_keep, uint64_t seed,
                      const uint64_t* device_seed);

}  // namespace nns::cuda
