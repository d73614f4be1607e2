// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The simple layers of torch.nn: Linear (PyTorch's default initialization, options with
// device and dtype, reset_parameters), Identity, Flatten, Unflatten, and the activations ReLU,
// LeakyReLU, Tanh, Sigmoid, GELU, SiLU, ELU, PReLU, Softmax, LogSoftmax, Dropout. Options are plain
// structs the module keeps, so a property panel can show and edit them and reset_parameters()
// rebuilds from them.
//
//   auto fc = std::make_shared<nns::nn::Linear>(4, 3);
//   std::cout << *fc;   // Linear(in_features=4, out_features=3, bias=True)
#include <optional>

#include "engine/nn/module.h"
#include "engine/ops/elementwise.h"

namespace nns::nn {

struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

// y = x W^T + b; weight [out_features, in_features], bias [out_features].
class Linear : public Module {
 public:
  explicit Linear(const LinearOptions& options);
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  // kaiming_uniform_(weight, a=sqrt(5)) and bias uniform in +-1/sqrt(in_features), as PyTorch.
  void reset_parameters();
  const LinearOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;
  Tensor bias;  // undefined when options().bias is false

 private:
  LinearOptions options_;
};

class Identity : public Module {
 public:
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input; }
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : start_dim_(start_dim), end_dim_(end_dim) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.flatten(start_dim_, end_dim_); }
  std::string extra_repr() const override;

 private:
  int64_t start_dim_;
  int64_t end_dim_;
};

class ReLU : public Module {
 public:
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.relu(); }
};

class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double negative_slope_;
};

class Tanh : public Module {
 public:
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.tanh(); }
};

class Sigmoid : public Module {
 public:
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.sigmoid(); }
};

// approximate: "none" (the erf form) or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  using Module::forward;
  Tensor forward(const Tensor& input) override { return gelu(input, approximate_); }
  std::string extra_repr() const override;

 private:
  std::string approximate_;
};

class SiLU : public Module {
 public:
  using Module::forward;
  Tensor forward(const Tensor& input) override { return silu(input); }
};

class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha_(alpha) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override { return elu(input, alpha_); }
  std::string extra_repr() const override;

 private:
  double alpha_;
};

struct PReLUOptions {
  // 1 (one slope shared by every channel) or the input's channel count (dim 1).
  int64_t num_parameters = 1;
  double init = 0.25;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

// x > 0 ? x : weight * x with a learned slope per channel (or one shared).
class PReLU : public Module {
 public:
  explicit PReLU(const PReLUOptions& options);
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  // Every slope to options().init.
  void reset_parameters();
  const PReLUOptions& options() const { return options_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override { return prelu(input, weight); }
  std::string extra_repr() const override;

  Tensor weight;  // [num_parameters]

 private:
  PReLUOptions options_;
};

// Without a dim, PyTorch's legacy choice: dim 0 for 0-, 1- and 3-d input, else dim 1.
class Softmax : public Module {
 public:
  explicit Softmax(std::optional<int64_t> dim = std::nullopt) : dim_(dim) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  std::optional<int64_t> dim_;
};

// log(softmax(x)) computed stably; without a dim, Softmax's legacy choice.
class LogSoftmax : public Module {
 public:
  explicit LogSoftmax(std::optional<int64_t> dim = std::nullopt) : dim_(dim) {}
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  std::optional<int64_t> dim_;
};

// Splits dim into sizes (one of them may be -1): [N, 12] -> [N, 3, 4] for Unflatten(1, {3, 4}).
class Unflatten : public Module {
 public:
  Unflatten(int64_t dim, Shape unflattened_size);
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.unflatten(dim_, sizes_); }
  std::string extra_repr() const override;

 private:
  int64_t dim_;
  Shape sizes_;
};

// Zeroes elements with probability p while training; the identity in eval mode.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  double p_;
};

// Python's repr of a float: "0.01", "1.0", "1e-05".
std::string python_float(double value);
// Python's repr of a tuple of ints: "(2, 3)", "(5,)", "()".
std::string python_tuple(const Shape& values);

}  // namespace nns::nn
