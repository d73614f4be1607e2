// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// BatchNorm1d and BatchNorm2d (torch.nn.BatchNorm*d): affine weight and bias as parameters;
// running_mean, running_var and the int64 num_batches_tracked as buffers. Training normalizes
// by the batch statistics and updates the running ones with momentum (or with a cumulative
// average when momentum is unset); eval mode uses the running statistics.
//
//   auto bn = std::make_shared<nns::nn::BatchNorm2d>(3);
//   std::cout << *bn;  // BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True,
//   track_running_stats=True)
#include <optional>

#include "engine/nn/module.h"

namespace nns::nn {

struct BatchNormOptions {
  int64_t num_features = 0;
  double eps = 1e-5;
  // Unset: a cumulative moving average (1 / num_batches_tracked).
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  // The dtype of the parameters and of the floating buffers; num_batches_tracked is int64.
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class BatchNorm : public Module {
 public:
  const BatchNormOptions& options() const { return options_; }
  // Zero mean, unit variance, no batches seen.
  void reset_running_stats();
  // reset_running_stats(), weight to ones and bias to zeros.
  void reset_parameters();
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;                                    // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;  // undefined unless tracked

 protected:
  explicit BatchNorm(const BatchNormOptions& options);
  // Throws ShapeError for an input of the wrong rank.
  virtual void check_input_dim(const Tensor& input) const = 0;

 private:
  BatchNormOptions options_;
};

// Input [N, C] or [N, C, L].
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(const BatchNormOptions& options) : BatchNorm(options) {}
  explicit BatchNorm1d(int64_t num_features) : BatchNorm(BatchNormOptions{num_features}) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

// Input [N, C, H, W].
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(const BatchNormOptions& options) : BatchNorm(options) {}
  explicit BatchNorm2d(int64_t num_features) : BatchNorm(BatchNormOptions{num_features}) {}

 protected:
  void check_input_dim(const Tensor& input) const override;
};

}  // namespace nns::nn
