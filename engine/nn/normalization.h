// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// LayerNorm (torch.nn.LayerNorm): normalizes over the last normalized_shape.size() dims,
// with an elementwise affine weight (ones) and bias (zeros) when elementwise_affine.
//
//   auto ln = std::make_shared<nns::nn::LayerNorm>(nns::Shape{16});
//   std::cout << *ln;  // LayerNorm((16,), eps=1e-05, elementwise_affine=True)
#include "engine/nn/module.h"

namespace nns::nn {

struct LayerNormOptions {
  Shape normalized_shape;
  double eps = 1e-5;
  bool elementwise_affine = true;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class LayerNorm : public Module {
 public:
  explicit LayerNorm(const LayerNormOptions& options);
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  // weight to ones and bias to zeros, as PyTorch.
  void reset_parameters();
  const LayerNormOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight, bias;  // normalized_shape; undefined unless elementwise_affine

 private:
  LayerNormOptions options_;
};

}  // namespace nns::nn
