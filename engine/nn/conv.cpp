#include "engine/nn/conv.h"

#include <cmath>

#include "engine/nn/init.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

namespace {
std::string tuple(Int2 v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}
}  // namespace

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  if (options.groups <= 0) {
    throw ValueError("Conv2d: groups must be a positive integer, got " +
                     std::to_string(options.groups));
  }
  if (options.in_channels % options.groups != 0) {
    throw ValueError("Conv2d: in_channels must be divisible by groups (" +
                     std::to_string(options.in_channels) + " and " +
                     std::to_string(options.groups) + ")");
  }
  if (options.out_channels % options.groups != 0) {
    throw ValueError("Conv2d: out_channels must be divisible by groups (" +
                     std::to_string(options.out_channels) + " and " +
                     std::to_string(options.groups) + ")");
  }
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
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    if (fan_in != 0) {
      const double bound = 1 / std::sqrt(static_cast<double>(fan_in));
      init::uniform_(bias, -bound, bound);
    }
  }
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

}  // namespace nns::nn
