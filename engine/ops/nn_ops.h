// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The functional forms of the layers (torch.nn.functional): convolution, pooling, dropout,
// normalization, embedding. Shapes follow PyTorch: images are [N, C, H, W].
#include <array>

#include <vector>
#include "engine/tensor/generator.h"

#include "engine/tensor/tensor.h"

namespace nns {

using Int2 = std::array<int64_t, 2>;

// input [N, C_in, H, W], weight [C_out, C_in/groups, kH, kW], bias [C_out] or undefined.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              Int2 stride = {1, 1}, Int2 padding = {0, 0}, Int2 dilation = {1, 1},
              int64_t groups = 1);
// input [N, C_in, L] or unbatched [C_in, L], weight [C_out, C_in/groups, kL], bias [C_out] or
// undefined. Runs as a conv2d of height 1 over the same data; the node is
// ConvolutionBackward0 as in PyTorch.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              int64_t stride = 1, int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// stride {0, 0} means stride = kernel_size, as PyTorch's default.
Tensor max_pool2d(const Tensor& input, Int2 kernel_size, Int2 stride = {0, 0},
                  Int2 padding = {0, 0}, Int2 dilation = {1, 1}, bool ceil_mode = false);
Tensor avg_pool2d(const Tensor& input, Int2 kernel_size, Int2 stride = {0, 0},
                  Int2 padding = {0, 0}, bool ceil_mode = false, bool count_include_pad = true);
// input [N, C, H, W] or [C, H, W] to [..., output_size[0], output_size[1]]: the mean of
// windows that tile the plane as in PyTorch (a 1x1 output is mean over the last two dims).
Tensor adaptive_avg_pool2d(const Tensor& input, Int2 output_size);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true,
               Generator* generator = nullptr);
// input [N, C, ...]. In training it normalizes by the batch statistics and updates
// running_mean/running_var in place (if defined) with momentum; in eval it uses them.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum = 0.1,
                  double eps = 1e-5);
// Normalizes over the last normalized_shape.size() dims.
Tensor layer_norm(const Tensor& input, const Shape& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// One LSTM step after the gates' pre-activations gates [N, 4H] (input, forget, cell, output, in
// PyTorch's order) from the cell state c [N, H] (undefined: zeros): {h, c', act} with
// c' = sigmoid(f) * c + sigmoid(i) * tanh(g) and h = sigmoid(o) * tanh(c'); act [N, 4H] holds
// the gates' activations (no gradient), for probes. One autograd node (LstmCellBackward) where
// the separate ops make eight, which was most of a small LSTM step's cost. CPU tensors.
std::vector<Tensor> lstm_cell(const Tensor& gates, const Tensor& c);
// weight [num_embeddings, dim], indices int64 of any shape; padding_idx < 0: none. The row
// at padding_idx gets no gradient.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);

}  // namespace nns
