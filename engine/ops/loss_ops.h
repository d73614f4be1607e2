// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The loss functions of torch.nn.functional: mse_loss, l1_loss, huber_loss, nll_loss,
// cross_entropy (class indices, optional label smoothing) and
// binary_cross_entropy_with_logits, each with PyTorch's reduction and the node PyTorch 1.13
// records (MseLossBackward0, NllLossBackward0, ...). The modules are in engine/nn/loss.h.
//
//   Tensor loss = nns::cross_entropy(logits, labels);          // logits [N, C], labels int64 [N]
//   Tensor per_sample = nns::mse_loss(pred, y, nns::Reduction::None);
//
// Unlike PyTorch (which broadcasts with a warning), the regression losses and
// binary_cross_entropy_with_logits want target of the input's shape and dtype: a [N, 1]
// prediction against a [N] target is a ShapeError rather than a silent [N, N] loss.
#include <string>

#include "engine/tensor/tensor.h"

namespace nns {

// How the per-element losses are combined: kept as they are, averaged, or summed.
enum class Reduction { None, Mean, Sum };

// "none", "mean", "sum" (PyTorch's strings), and back; another name is a ValueError.
std::string reduction_name(Reduction reduction);
Reduction reduction_from_name(const std::string& name);

// (input - target)^2.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// |input - target|, composed as PyTorch does (the node is AbsBackward0 / MeanBackward0 / ...).
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// 0.5 * d^2 where |d| < delta, else delta * (|d| - 0.5 * delta), d = input - target; delta > 0.
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// input: log-probabilities [C], [N, C] or [N, C, d1, ...]; target: int64 class indices [],
// [N] or [N, d1, ...] in [0, C) or equal to ignore_index (which contributes nothing); weight:
// optional [C] class weights. The mean divides by the summed weights of the counted targets.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);
// nll_loss(log_softmax(input, class dim), ...): input holds unnormalized scores (logits).
// label_smoothing in [0, 1] mixes in the uniform distribution over the C classes.
Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0);
// -[pos_weight * target * log(sigmoid(input)) + (1 - target) * log(1 - sigmoid(input))],
// computed stably from the logits; weight and pos_weight broadcast against the input
// (pos_weight [C] weighs the positives of each class of an [N, C] input).
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        Reduction reduction = Reduction::Mean,
                                        const Tensor& pos_weight = Tensor());

}  // namespace nns
