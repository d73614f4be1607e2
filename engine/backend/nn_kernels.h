// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Kernels of the neural-network functionals (engine/ops/nn_ops.cpp, loss_ops.cpp): convolution,
// pooling, batch and layer normalization, the NLL loss, the LSTM cell. The ops check shapes and
// dtypes and hand the kernels contiguous tensors of one floating dtype; a TensorView whose data is
// null is an absent optional operand (no bias, no affine weight, no gradient wanted).
#include <cstdint>

#include "engine/backend/kernel_types.h"

namespace nns {

// Geometry of one conv2d: input [batch, in_channels, in_h, in_w], weight
// [out_channels, in_channels / groups, kernel_h, kernel_w], output [batch, out_channels,
// out_h, out_w].
struct Conv2dGeometry {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  int64_t groups;
};

// Geometry of one 2-D pooling over planes (batch * channels) of in_h x in_w.
struct Pool2dGeometry {
  int64_t planes, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
  bool count_include_pad;  // avg_pool2d only
};

struct NNKernels {
  // out = conv2d(input, weight) + bias.
  void (*conv2d_forward)(const TensorView& input, const TensorView& weight, const TensorView& bias,
                         const TensorView& out, const Conv2dGeometry& g);
  // The gradients wanted (non-null data) of input, weight and bias from grad_out; each is
  // overwritten. input is read only for grad_weight, weight only for grad_input.
  void (*conv2d_backward)(const TensorView& grad_out, const TensorView& input,
                          const TensorView& weight, const TensorView& grad_input,
                          const TensorView& grad_weight, const TensorView& grad_bias,
                          const Conv2dGeometry& g);
  // out and indices (int64, the position in the in_h x in_w plane, as PyTorch) of each
  // window's maximum; a NaN wins.
  void (*max_pool2d_forward)(const TensorView& input, const TensorView& out,
                             const TensorView& indices, const Pool2dGeometry& g);
  // grad_input (overwritten) gets each grad_out element at its index.
  void (*max_pool2d_backward)(const TensorView& grad_out, const TensorView& indices,
                              const TensorView& grad_input, const Pool2dGeometry& g);
  void (*avg_pool2d_forward)(const TensorView& input, const TensorView& out,
                             const Pool2dGeometry& g);
  void (*avg_pool2d_backward)(const TensorView& grad_out, const TensorView& grad_input,
                              const Pool2dGeometry& g);

  // Batch norm over input [n, channels, spatial] (contiguous). Training statistics: the
  // batch mean and 1/sqrt(biased var + eps) of each channel into save_mean/save_invstd, and,
  // when given, running = momentum * batch + (1 - momentum) * running with the unbiased
  // variance for running_var.
  void (*batch_norm_stats)(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                           double eps, double momentum, const TensorView& save_mean,
                           const TensorView& save_invstd, const TensorView& running_mean,
                           const TensorView& running_var);
  // Eval mode: invstd = 1 / sqrt(var + eps) of the running variance.
  void (*batch_norm_invstd)(const TensorView& var, double eps, const TensorView& invstd);
  // out = (input - mean) * invstd * weight + bias, per channel.
  void (*batch_norm_apply)(const TensorView& input, int64_t n, int64_t channels, int64_t spatial,
                           const TensorView& mean, const TensorView& invstd,
                           const TensorView& weight, const TensorView& bias, const TensorView& out);
  // training: mean/invstd are the batch statistics the output depended on (the full
  // gradient through them); otherwise they are constants (eval mode).
  void (*batch_norm_backward)(const TensorView& grad_out, const TensorView& input, int64_t n,
                              int64_t channels, int64_t spatial, const TensorView& mean,
                              const TensorView& invstd, const TensorView& weight, bool training,
                              const TensorView& grad_input, const TensorView& grad_weight,
                              const TensorView& grad_bias);

  // Layer norm of rows rows of cols elements: out = (x - mean) * rstd * weight + bias, with
  // the per-row mean and rstd saved for backward.
  void (*layer_norm_forward)(const TensorView& input, int64_t rows, int64_t cols, double eps,
                             const TensorView& weight, const TensorView& bias,
                             const TensorView& out, const TensorView& mean, const TensorView& rstd);
  void (*layer_norm_backward)(const TensorView& grad_out, const TensorView& input, int64_t rows,
                              int64_t cols, const TensorView& mean, const TensorView& rstd,
                              const TensorView& weight, const TensorView& grad_input,
                              const TensorView& grad_weight, const TensorView& grad_bias);

  // Adaptive average pooling (out_h x out_w windows that tile the plane, ATen's start/end
  // indices); only planes, in_h, in_w, out_h, out_w of the geometry are used.
  void (*adaptive_avg_pool2d_forward)(const TensorView& input, const TensorView& out,
                                      const Pool2dGeometry& g);
  void (*adaptive_avg_pool2d_backward)(const TensorView& grad_out, const TensorView& grad_input,
                                       const Pool2dGeometry& g);

  // Negative log likelihood over input [n, classes, spatial] (log-probabilities) and the int64
  // target [n, spatial]: loss = -weight[t] * input[i, t, s] for t = target[i, s], 0 where t is
  // ignore_index; weight may be absent (all ones). reduce false: out [n * spatial] gets each
  // loss; else out (one element) gets their sum, divided by the total weight when mean.
  // total_weight (one element) gets the sum of weight[t] over the counted targets. Returns the
  // flat position of the first target outside [0, classes) that is not ignore_index, or -1.
  int64_t (*nll_loss_forward)(const TensorView& input, const TensorView& target,
                              const TensorView& weight, int64_t n, int64_t classes, int64_t spatial,
                              int64_t ignore_index, bool reduce, bool mean, const TensorView& out,
                              const TensorView& total_weight);
  // grad_input [n, classes, spatial] (overwritten): -weight[t] * grad at each counted target
  // (grad per element when not reduce, else the one element, over total_weight when mean),
  // 0 elsewhere.
  void (*nll_loss_backward)(const TensorView& grad, const TensorView& target,
                            const TensorView& weight, int64_t n, int64_t classes, int64_t spatial,
                            int64_t ignore_index, bool reduce, bool mean,
                            const TensorView& total_weight, const TensorView& grad_input);

  // One LSTM step after the gates' pre-activations gates [n, 4 * hidden] (PyTorch's order:
  // input, forget, cell, output): act [n, 4 * hidden] gets sigmoid of the input, forget and
  // output gates and tanh of the cell gate; c = f * c_prev + i * g (c_prev absent: zeros),
  // tanh_c = tanh(c), h = o * tanh_c. The sigmoid and tanh are the elementwise kernels'.
  void (*lstm_cell_forward)(const TensorView& gates, const TensorView& c_prev, int64_t n,
                            int64_t hidden, const TensorView& act, const TensorView& c,
                            const TensorView& tanh_c, const TensorView& h);
  // Its backward: from grad_h and grad_c (either absent: zeros), grad_gates [n, 4 * hidden]
  // w.r.t. the pre-activations and, when wanted, grad_c_prev (both overwritten).
  void (*lstm_cell_backward)(const TensorView& grad_h, const TensorView& grad_c,
                             const TensorView& act, const TensorView& c_prev,
                             const TensorView& tanh_c, int64_t n, int64_t hidden,
                             const TensorView& grad_gates, const TensorView& grad_c_prev);

  // A dropout mask: out (contiguous, floating) gets 1 where a uniform draw in (0, 1] is at
  // most p_keep, else 0. The draws are Philox4x32-10's (curand's, as PyTorch's CUDA dropout),
  // counter-based: the same seed and shape give the same mask, on any run. The seed comes
  // from device memory when device_seed is not nullptr (a CUDA graph's, drawn anew before each
  // replay). nullptr on the CPU, whose masks come from the generator's own stream.
  void (*bernoulli_philox)(const TensorView& out, double p_keep, uint64_t seed,
                           const uint64_t* device_seed);

  static const NNKernels* for_device(DeviceType type);
};

}  // namespace nns
