// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/conv.h"

#include <cmath>

#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

namespace {
std::string tuple(Int2 v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

// The checks both convolutions make of their options.
void check_conv_options(const char* name, int64_t in_channels, int64_t out_channels,
                        int64_t groups) {
  const std::string n = name;
  if (groups <= 0) {
    throw ValueError(n + ": groups must be a positive integer, got " + std::to_string(groups));
  }
  if (in_channels % groups != 0) {
    throw ValueError(n + ": in_channels must be divisible by groups (" +
                     std::to_string(in_channels) + " and " + std::to_string(groups) + ")");
  }
  if (out_channels % groups != 0) {
    throw ValueError(n + ": out_channels must be divisible by groups (" +
                     std::to_string(out_channels) + " and " + std::to_string(groups) + ")");
  }
}

// PyTorch's _ConvNd.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), bias uniform in
// +-1/sqrt(fan_in).
void reset_conv_parameters(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    if (fan_in != 0) {
      const double bound = 1 / std::sqrt(static_cast<double>(fan_in));
      init::uniform_(bias, -bound, bound);
    }
  }
}

}  // namespace

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  check_conv_options("Conv2d", options.in_channels, options.out_channels, options.groups);
  const TensorOptions t = TensorOptions(options.dtype).device(options.device);
  weight = register_parameter(
      "weight", Parameter(empty({options.out_channels, options.in_channels / options.groups,
                                 options.kernel_size[0], options.kernel_size[1]},
                                t)));
  bias = register_parameter("bias",
                            options.bias ? Parameter(empty({options.out_channels}, t)) : Tensor());
  reset_parameters();
}

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Int2 kernel_size, Int2 stride,
               Int2 padding)
    : Conv2d(Conv2dOptions{in_channels, out_channels, kernel_size, stride, padding}) {}

void Conv2d::reset_parameters() {
  reset_conv_parameters(weight, bias);
}

Tensor Conv2d::forward(const Tensor& input) {
  return conv2d(input, weight, bias, options_.stride, options_.padding, options_.dilation,
                options_.groups);
}

std::string Conv2d::extra_repr() const {
  std::string s =
      std::to_string(options_.in_channels) + ", " + std::to_string(options_.out_channels) +
      ", kernel_size=" + tuple(options_.kernel_size) + ", stride=" + tuple(options_.stride);
  if (options_.padding != Int2{0, 0}) s += ", padding=" + tuple(options_.padding);
  if (options_.dilation != Int2{1, 1}) s += ", dilation=" + tuple(options_.dilation);
  if (options_.groups != 1) s += ", groups=" + std::to_string(options_.groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

Conv1d::Conv1d(const Conv1dOptions& options) : options_(options) {
  check_conv_options("Conv1d", options.in_channels, options.out_channels, options.groups);
  const TensorOptions t = TensorOptions(options.dtype).device(options.device);
  weight = register_parameter(
      "weight",
      Parameter(empty(
          {options.out_channels, options.in_channels / options.groups, options.kernel_size}, t)));
  bias = register_parameter("bias",
                            options.bias ? Parameter(empty({options.out_channels}, t)) : Tensor());
  reset_parameters();
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
               int64_t padding)
    : Conv1d(Conv1dOptions{in_channels, out_channels, kernel_size, stride, padding}) {}

void Conv1d::reset_parameters() {
  reset_conv_parameters(weight, bias);
}

Tensor Conv1d::forward(const Tensor& input) {
  return conv1d(input, weight, bias, options_.stride, options_.padding, options_.dilation,
                options_.groups);
}

std::string Conv1d::extra_repr() const {
  auto tuple1 = [](int64_t v) { return python_tuple({v}); };
  std::string s =
      std::to_string(options_.in_channels) + ", " + std::to_string(options_.out_channels) +
      ", kernel_size=" + tuple1(options_.kernel_size) + ", stride=" + tuple1(options_.stride);
  if (options_.padding != 0) s += ", padding=" + tuple1(options_.padding);
  if (options_.dilation != 1) s += ", dilation=" + tuple1(options_.dilation);
  if (options_.groups != 1) s += ", groups=" + std::to_string(options_.groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

}  // namespace nns::nn
