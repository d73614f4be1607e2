// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Conv1d and Conv2d (torch.nn.Conv1d/Conv2d) over [N, C, L] and [N, C, H, W] input, with
// PyTorch's default initialization (the same values for the same seed).
//
//   auto conv = std::make_shared<nns::nn::Conv2d>(1, 6, nns::Int2{5, 5});
//   std::cout << *conv;  // Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1))
//   auto c1 = std::make_shared<nns::nn::Conv1d>(4, 8, 3);
//   std::cout << *c1;    // Conv1d(4, 8, kernel_size=(3,), stride=(1,))
#include "engine/nn/module.h"
#include "engine/ops/nn_ops.h"

namespace nns::nn {

struct Conv2dOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  Int2 kernel_size = {1, 1};
  Int2 stride = {1, 1};
  Int2 padding = {0, 0};
  Int2 dilation = {1, 1};
  int64_t groups = 1;
  bool bias = true;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class Conv2d : public Module {
 public:
  explicit Conv2d(const Conv2dOptions& options);
  Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride = {1, 1},
         Int2 padding = {0, 0});
  // kaiming_uniform_(weight, a=sqrt(5)); bias uniform in +-1/sqrt(fan_in), as PyTorch.
  void reset_parameters();
  const Conv2dOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;  // [out_channels, in_channels / groups, kH, kW]
  Tensor bias;    // [out_channels], undefined when options().bias is false

 private:
  Conv2dOptions options_;
};

struct Conv1dOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_size = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class Conv1d : public Module {
 public:
  explicit Conv1d(const Conv1dOptions& options);
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
         int64_t padding = 0);
  // As Conv2d's.
  void reset_parameters();
  const Conv1dOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;  // [out_channels, in_channels / groups, kernel_size]
  Tensor bias;    // [out_channels], undefined when options().bias is false

 private:
  Conv1dOptions options_;
};

}  // namespace nns::nn
