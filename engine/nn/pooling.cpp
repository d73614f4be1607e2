// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/pooling.h"

namespace nns::nn {

namespace {

// One int when both components are equal, else "(h, w)".
std::string size_str(Int2 v) {
  if (v[0] == v[1]) return std::to_string(v[0]);
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ")";
}

// PyTorch keeps stride = kernel_size when stride is None, and prints that.
Int2 effective_stride(Int2 stride, Int2 kernel_size) {
  return stride == Int2{0, 0} ? kernel_size : stride;
}

std::string py_bool(bool b) {
  return b ? "True" : "False";
}

}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options) : options_(options) {
  options_.stride = effective_stride(options.stride, options.kernel_size);
}

MaxPool2d::MaxPool2d(Int2 kernel_size, Int2 stride, Int2 padding)
    : MaxPool2d(MaxPool2dOptions{kernel_size, stride, padding}) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, options_.kernel_size, options_.stride, options_.padding,
                    options_.dilation, options_.ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + size_str(options_.kernel_size) + ", stride=" + size_str(options_.stride) +
         ", padding=" + size_str(options_.padding) + ", dilation=" + size_str(options_.dilation) +
         ", ceil_mode=" + py_bool(options_.ceil_mode);
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : options_(options) {
  options_.stride = effective_stride(options.stride, options.kernel_size);
}

AvgPool2d::AvgPool2d(Int2 kernel_size, Int2 stride, Int2 padding)
    : AvgPool2d(AvgPool2dOptions{kernel_size, stride, padding}) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return avg_pool2d(input, options_.kernel_size, options_.stride, options_.padding,
                    options_.ceil_mode, options_.count_include_pad);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + size_str(options_.kernel_size) + ", stride=" + size_str(options_.stride) +
         ", padding=" + size_str(options_.padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options) : options_(options) {
  if (options.output_size[0] <= 0 || options.output_size[1] <= 0) {
    throw ValueError("AdaptiveAvgPool2d: output_size must be positive, got (" +
                     std::to_string(options.output_size[0]) + ", " +
                     std::to_string(options.output_size[1]) + ")");
  }
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Int2 output_size)
    : AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions{output_size}) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input, options_.output_size);
}

std::string AdaptiveAvgPool2d::extra_repr() const {
  return "output_size=" + size_str(options_.output_size);
}

}  // namespace nns::nn
