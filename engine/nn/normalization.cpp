// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/normalization.h"

#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/ops/nn_ops.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

LayerNorm::LayerNorm(const LayerNormOptions& options) : options_(options) {
  if (options.normalized_shape.empty()) {
    throw ValueError("LayerNorm: normalized_shape must have at least one dim, got []");
  }
  for (int64_t s : options.normalized_shape) {
    if (s <= 0) {
      throw ValueError("LayerNorm: normalized_shape must hold positive sizes, got " +
                       shape_str(options.normalized_shape));
    }
  }
  const TensorOptions t = TensorOptions(options.dtype).device(options.device);
  const bool affine = options.elementwise_affine;
  weight = register_parameter("weight",
                              affine ? Parameter(empty(options.normalized_shape, t)) : Tensor());
  bias =
      register_parameter("bias", affine ? Parameter(empty(options.normalized_shape, t)) : Tensor());
  reset_parameters();
}

LayerNorm::LayerNorm(Shape normalized_shape, double eps, bool elementwise_affine)
    : LayerNorm(LayerNormOptions{std::move(normalized_shape), eps, elementwise_affine}) {}

void LayerNorm::reset_parameters() {
  if (!options_.elementwise_affine) return;
  init::ones_(weight);
  init::zeros_(bias);
}

Tensor LayerNorm::forward(const Tensor& input) {
  return layer_norm(input, options_.normalized_shape, weight, bias, options_.eps);
}

std::string LayerNorm::extra_repr() const {
  return python_tuple(options_.normalized_shape) + ", eps=" + python_float(options_.eps) +
         ", elementwise_affine=" + (options_.elementwise_affine ? "True" : "False");
}

}  // namespace nns::nn
