#pragma once
// The simple layers of torch.nn: Linear (PyTorch's default initialization, options with
// device and dtype, reset_parameters), Identity, Flatten, and the activations ReLU,
// LeakyReLU, Tanh, Sigmoid, Softmax, Dropout. Options are plain structs the module keeps, so
// a property panel can show and edit them and reset_parameters() rebuilds from them.
//
//   auto fc = std::make_shared<nns::nn::Linear>(4, 3);
//   std::cout << *fc;   // Linear(in_features=4, out_features=3, bias=True)
#include <optional>

#include "engine/nn/module.h"

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

}  // namespace nns::nn
