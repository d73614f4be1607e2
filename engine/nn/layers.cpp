// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/layers.h"

#include <charconv>
#include <cmath>

#include "engine/nn/init.h"
#include "engine/ops/ops.h"

namespace nns::nn {

std::string python_float(double value) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  std::string out(buf, result.ptr);
  if (out.find_first_of(".eni") == std::string::npos) out += ".0";
  return out;
}

std::string python_tuple(const Shape& values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

Linear::Linear(const LinearOptions& options) : options_(options) {
  if (options.in_features < 0 || options.out_features < 0) {
    throw ValueError("Linear: in_features and out_features must be >= 0, got " +
                     std::to_string(options.in_features) + " and " +
                     std::to_string(options.out_features));
  }
  const TensorOptions t = TensorOptions(options.dtype).device(options.device);
  weight = register_parameter("weight",
                              Parameter(empty({options.out_features, options.in_features}, t)));
  bias = register_parameter("bias",
                            options.bias ? Parameter(empty({options.out_features}, t)) : Tensor());
  reset_parameters();
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : Linear(LinearOptions{in_features, out_features, bias}) {}

void Linear::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& input) {
  return linear(input, weight, bias);
}

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(options_.in_features) +
         ", out_features=" + std::to_string(options_.out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

std::string Flatten::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim_) + ", end_dim=" + std::to_string(end_dim_);
}

Tensor LeakyReLU::forward(const Tensor& input) {
  return leaky_relu(input, negative_slope_);
}

std::string LeakyReLU::extra_repr() const {
  return "negative_slope=" + python_float(negative_slope_);
}

namespace {
// PyTorch's _get_softmax_dim for a module made without a dim.
int64_t legacy_softmax_dim(const std::optional<int64_t>& dim, int64_t ndim) {
  return dim ? *dim : (ndim == 0 || ndim == 1 || ndim == 3 ? 0 : 1);
}
}  // namespace

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  if (approximate_ != "none" && approximate_ != "tanh") {
    throw ValueError("GELU: approximate must be \"none\" or \"tanh\", got \"" + approximate_ +
                     "\"");
  }
}

std::string GELU::extra_repr() const {
  return "approximate='" + approximate_ + "'";
}

std::string ELU::extra_repr() const {
  return "alpha=" + python_float(alpha_);
}

PReLU::PReLU(const PReLUOptions& options) : options_(options) {
  if (options.num_parameters <= 0) {
    throw ValueError("PReLU: num_parameters must be positive, got " +
                     std::to_string(options.num_parameters));
  }
  weight = register_parameter(
      "weight", Parameter(empty({options.num_parameters},
                                TensorOptions(options.dtype).device(options.device))));
  reset_parameters();
}

PReLU::PReLU(int64_t num_parameters, double init) : PReLU(PReLUOptions{num_parameters, init}) {}

void PReLU::reset_parameters() {
  init::constant_(weight, options_.init);
}

std::string PReLU::extra_repr() const {
  return "num_parameters=" + std::to_string(options_.num_parameters);
}

Tensor Softmax::forward(const Tensor& input) {
  return input.softmax(legacy_softmax_dim(dim_, input.dim()));
}

std::string Softmax::extra_repr() const {
  return "dim=" + (dim_ ? std::to_string(*dim_) : std::string("None"));
}

Tensor LogSoftmax::forward(const Tensor& input) {
  return input.log_softmax(legacy_softmax_dim(dim_, input.dim()));
}

std::string LogSoftmax::extra_repr() const {
  return "dim=" + (dim_ ? std::to_string(*dim_) : std::string("None"));
}

Unflatten::Unflatten(int64_t dim, Shape unflattened_size)
    : dim_(dim), sizes_(std::move(unflattened_size)) {
  if (sizes_.empty()) {
    throw ValueError("Unflatten: unflattened_size must have at least one size, got []");
  }
}

std::string Unflatten::extra_repr() const {
  return "dim=" + std::to_string(dim_) + ", unflattened_size=" + python_tuple(sizes_);
}

Dropout::Dropout(double p) : p_(p) {
  if (!(p >= 0 && p <= 1)) {
    throw ValueError("Dropout: dropout probability has to be between 0 and 1, but got " +
                     python_float(p));
  }
}

Tensor Dropout::forward(const Tensor& input) {
  return dropout(input, p_, is_training());
}

std::string Dropout::extra_repr() const {
  return "p=" + python_float(p_) + ", inplace=False";
}

}  // namespace nns::nn
