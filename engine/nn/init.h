// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.nn.init: in-place initializers for parameters, run under NoGradGuard so that they work
// on tensors that require grad. With the same seed they draw the same values as PyTorch.
//
//   nns::manual_seed(0);
//   nns::nn::init::kaiming_uniform_(linear->weight, std::sqrt(5.0));
#include <memory>
#include <string>
#include <utility>

#include "engine/tensor/generator.h"
#include "engine/tensor/tensor.h"

namespace nns::nn::init {

// PyTorch's calculate_gain: "linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu"
// (param is the negative slope, default 0.01), "selu"; others are a ValueError.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
// {fan_in, fan_out} of a weight of at least 2 dims: size(1) and size(0) times the receptive
// field (the product of the dims after the second).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);

Tensor& zeros_(Tensor& tensor);
Tensor& ones_(Tensor& tensor);
Tensor& constant_(Tensor& tensor, double value);
Tensor& uniform_(Tensor& tensor, double a = 0, double b = 1, Generator* generator = nullptr);
Tensor& normal_(Tensor& tensor, double mean = 0, double std = 1, Generator* generator = nullptr);
Tensor& xavier_uniform_(Tensor& tensor, double gain = 1, Generator* generator = nullptr);
Tensor& xavier_normal_(Tensor& tensor, double gain = 1, Generator* generator = nullptr);
// mode "fan_in" or "fan_out"; a is the negative slope of leaky_relu.
Tensor& kaiming_uniform_(Tensor& tensor, double a = 0, const std::string& mode = "fan_in",
                         const std::string& nonlinearity = "leaky_relu",
                         Generator* generator = nullptr);
Tensor& kaiming_normal_(Tensor& tensor, double a = 0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu",
                        Generator* generator = nullptr);
// A (semi-)orthogonal matrix from the QR decomposition of a normal one, times gain; tensors of
// more than 2 dims are seen as [size(0), rest].
Tensor& orthogonal_(Tensor& tensor, double gain = 1, Generator* generator = nullptr);

// While one is alive (on this thread), the initializers above leave tensors untouched and draw
// no random numbers: what skip_init uses.
class SkipInitGuard {
 public:
  SkipInitGuard();
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
  static bool active();

 private:
  bool previous_;
};

}  // namespace nns::nn::init

namespace nns::nn {

// torch.nn.utils.skip_init: makes a module without running its parameter initialization
// (the parameters hold whatever empty() gave), for a custom init afterwards.
//
//   auto m = nns::nn::skip_init<nns::nn::Linear>(5, 3);
//   nns::nn::init::orthogonal_(m->weight);
template <class M, class... Args>
std::shared_ptr<M> skip_init(Args&&... args) {
  init::SkipInitGuard guard;
  return std::make_shared<M>(std::forward<Args>(args)...);
}

}  // namespace nns::nn
