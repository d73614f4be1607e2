// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The 2-D poolings of torch.nn: MaxPool2d, AvgPool2d and AdaptiveAvgPool2d over [N, C, H, W]
// (or unbatched [C, H, W]) input. A size of the options prints as one int when both of its
// components are equal, else as a pair: MaxPool2d(2) and MaxPool2d((2, 3)) read as PyTorch
// prints them (an explicit pair of equal sizes, (2, 2), prints as 2).
//
//   auto pool = std::make_shared<nns::nn::MaxPool2d>(nns::Int2{2, 2});
//   std::cout << *pool;  // MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1,
//                        //           ceil_mode=False)
#include "engine/nn/module.h"
#include "engine/ops/nn_ops.h"

namespace nns::nn {

struct MaxPool2dOptions {
  Int2 kernel_size = {1, 1};
  // {0, 0}: the kernel size, as PyTorch's stride=None.
  Int2 stride = {0, 0};
  Int2 padding = {0, 0};
  Int2 dilation = {1, 1};
  bool ceil_mode = false;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options);
  explicit MaxPool2d(Int2 kernel_size, Int2 stride = {0, 0}, Int2 padding = {0, 0});
  const MaxPool2dOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  MaxPool2dOptions options_;
};

struct AvgPool2dOptions {
  Int2 kernel_size = {1, 1};
  // {0, 0}: the kernel size, as PyTorch's stride=None.
  Int2 stride = {0, 0};
  Int2 padding = {0, 0};
  bool ceil_mode = false;
  bool count_include_pad = true;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options);
  explicit AvgPool2d(Int2 kernel_size, Int2 stride = {0, 0}, Int2 padding = {0, 0});
  const AvgPool2dOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  AvgPool2dOptions options_;
};

struct AdaptiveAvgPool2dOptions {
  Int2 output_size = {1, 1};
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options);
  explicit AdaptiveAvgPool2d(Int2 output_size);
  const AdaptiveAvgPool2dOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  AdaptiveAvgPool2dOptions options_;
};

}  // namespace nns::nn
