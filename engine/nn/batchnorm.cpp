// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/batchnorm.h"

#include "engine/autograd/grad_mode.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/ops/ops.h"

namespace nns::nn {

BatchNorm::BatchNorm(const BatchNormOptions& options) : options_(options) {
  if (options.num_features <= 0) {
    throw ValueError("BatchNorm: num_features must be positive, got " +
                     std::to_string(options.num_features));
  }
  const TensorOptions t = TensorOptions(options.dtype).device(options.device);
  const Shape shape{options.num_features};
  weight = register_parameter("weight", options.affine ? Parameter(empty(shape, t)) : Tensor());
  bias = register_parameter("bias", options.affine ? Parameter(empty(shape, t)) : Tensor());
  if (options.track_running_stats) {
    running_mean = register_buffer("running_mean", zeros(shape, t));
    running_var = register_buffer("running_var", ones(shape, t));
    num_batches_tracked = register_buffer("num_batches_tracked",
                                          zeros({}, TensorOptions(kInt64).device(options.device)));
  } else {
    register_buffer("running_mean", Tensor());
    register_buffer("running_var", Tensor());
    register_buffer("num_batches_tracked", Tensor());
  }
  reset_parameters();
}

void BatchNorm::reset_running_stats() {
  if (!options_.track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1.0);
  num_batches_tracked.zero_();
}

void BatchNorm::reset_parameters() {
  reset_running_stats();
  if (options_.affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

Tensor BatchNorm::forward(const Tensor& input) {
  check_input_dim(input);
  double factor = options_.momentum.value_or(0.0);
  if (is_training() && options_.track_running_stats) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(scalar_tensor(1, kInt64));
    if (!options_.momentum) factor = 1.0 / num_batches_tracked.item();
  }
  // In eval mode without running statistics, the batch's own statistics are used.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const bool pass_running = !is_training() || options_.track_running_stats;
  return batch_norm(input, pass_running ? running_mean : Tensor(),
                    pass_running ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                    options_.eps);
}

std::string BatchNorm::extra_repr() const {
  return std::to_string(options_.num_features) + ", eps=" + python_float(options_.eps) +
         ", momentum=" + (options_.momentum ? python_float(*options_.momentum) : "None") +
         ", affine=" + (options_.affine ? "True" : "False") +
         ", track_running_stats=" + (options_.track_running_stats ? "True" : "False");
}

void BatchNorm1d::check_input_dim(const Tensor& input) const {
  if (input.dim() != 2 && input.dim() != 3) {
    throw ShapeError("BatchNorm1d: expected 2D or 3D input (got " + std::to_string(input.dim()) +
                     "D input of shape " + shape_str(input.sizes()) +
                     "); pass [N, C] or [N, C, L]");
  }
}

void BatchNorm2d::check_input_dim(const Tensor& input) const {
  if (input.dim() != 4) {
    throw ShapeError("BatchNorm2d: expected 4D input (got " + std::to_string(input.dim()) +
                     "D input of shape " + shape_str(input.sizes()) + "); pass [N, C, H, W]");
  }
}

}  // namespace nns::nn
