// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/loss.h"

#include "engine/nn/layers.h"

namespace nns::nn {

Tensor Loss::operator()(const Tensor& input, const Tensor& target) {
  return (*this)(std::vector<Tensor>{input, target})[0];
}

std::vector<Tensor> Loss::forward(const std::vector<Tensor>& inputs) {
  if (inputs.size() != 2) {
    throw ValueError(name() + ".forward: got " + std::to_string(inputs.size()) +
                     " inputs, but a loss takes two: {input, target}");
  }
  return {forward(inputs[0], inputs[1])};
}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, options_.reduction);
}

Tensor L1Loss::forward(const Tensor& input, const Tensor& target) {
  return l1_loss(input, target, options_.reduction);
}

HuberLoss::HuberLoss(const HuberLossOptions& options) : options_(options) {
  if (!(options.delta > 0)) {
    throw ValueError("HuberLoss: delta must be positive, got " + python_float(options.delta));
  }
}

Tensor HuberLoss::forward(const Tensor& input, const Tensor& target) {
  return huber_loss(input, target, options_.reduction, options_.delta);
}

CrossEntropyLoss::CrossEntropyLoss(const CrossEntropyLossOptions& options) : options_(options) {
  if (!(options.label_smoothing >= 0 && options.label_smoothing <= 1)) {
    throw ValueError("CrossEntropyLoss: label_smoothing must be between 0.0 and 1.0, got " +
                     python_float(options.label_smoothing));
  }
  weight = register_buffer("weight", options.weight);
}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, weight, options_.ignore_index, options_.reduction,
                       options_.label_smoothing);
}

NLLLoss::NLLLoss(const NLLLossOptions& options) : options_(options) {
  weight = register_buffer("weight", options.weight);
}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, weight, options_.ignore_index, options_.reduction);
}

BCEWithLogitsLoss::BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options) : options_(options) {
  weight = register_buffer("weight", options.weight);
  pos_weight = register_buffer("pos_weight", options.pos_weight);
}

Tensor BCEWithLogitsLoss::forward(const Tensor& input, const Tensor& target) {
  return binary_cross_entropy_with_logits(input, target, weight, options_.reduction, pos_weight);
}

}  // namespace nns::nn
