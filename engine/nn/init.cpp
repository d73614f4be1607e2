// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/init.h"

#include <Eigen/Dense>
#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/factories.h"

namespace nns::nn::init {

namespace {
thread_local bool skipping = false;

int64_t correct_fan(const Tensor& tensor, const std::string& mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  if (mode == "fan_in") return fan_in;
  if (mode == "fan_out") return fan_out;
  throw ValueError("kaiming init: mode " + mode + " not supported, please use fan_in or fan_out");
}
}  // namespace

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid") {
    return 1;
  }
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4;
  throw ValueError("calculate_gain: unsupported nonlinearity " + nonlinearity +
                   "; use linear, conv2d, sigmoid, tanh, relu, leaky_relu or selu");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor) {
  if (tensor.dim() < 2) {
    throw ShapeError(
        "Fan in and fan out can not be computed for tensor with fewer than 2 "
        "dimensions (got shape " +
        shape_str(tensor.sizes()) + ")");
  }
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); ++d) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

Tensor& zeros_(Tensor& tensor) {
  return constant_(tensor, 0);
}
Tensor& ones_(Tensor& tensor) {
  return constant_(tensor, 1);
}

Tensor& constant_(Tensor& tensor, double value) {
  if (SkipInitGuard::active()) return tensor;
  NoGradGuard no_grad;
  return tensor.fill_(value);
}

Tensor& uniform_(Tensor& tensor, double a, double b, Generator* generator) {
  if (SkipInitGuard::active()) return tensor;
  NoGradGuard no_grad;
  return nns::uniform_(tensor, a, b, generator);
}

Tensor& normal_(Tensor& tensor, double mean, double std, Generator* generator) {
  if (SkipInitGuard::active()) return tensor;
  NoGradGuard no_grad;
  return nns::normal_(tensor, mean, std, generator);
}

Tensor& xavier_uniform_(Tensor& tensor, double gain, Generator* generator) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  const double bound = std::sqrt(3.0) * std;
  return init::uniform_(tensor, -bound, bound, generator);
}

Tensor& xavier_normal_(Tensor& tensor, double gain, Generator* generator) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(tensor);
  const double std = gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
  return init::normal_(tensor, 0, std, generator);
}

Tensor& kaiming_uniform_(Tensor& tensor, double a, const std::string& mode,
                         const std::string& nonlinearity, Generator* generator) {
  const double std =
      calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(correct_fan(tensor, mode)));
  const double bound = std::sqrt(3.0) * std;
  return init::uniform_(tensor, -bound, bound, generator);
}

Tensor& kaiming_normal_(Tensor& tensor, double a, const std::string& mode,
                        const std::string& nonlinearity, Generator* generator) {
  const double std =
      calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(correct_fan(tensor, mode)));
  return init::normal_(tensor, 0, std, generator);
}

Tensor& orthogonal_(Tensor& tensor, double gain, Generator* generator) {
  if (tensor.dim() < 2) {
    throw ShapeError(
        "orthogonal_: only tensors with 2 or more dimensions are supported, got "
        "shape " +
        shape_str(tensor.sizes()));
  }
  if (tensor.numel() == 0 || SkipInitGuard::active()) return tensor;
  const int64_t rows = tensor.size(0);
  const int64_t cols = tensor.numel() / rows;
  Tensor flat = empty({rows, cols}, TensorOptions(tensor.dtype()).device(tensor.device()));
  nns::normal_(flat, 0, 1, generator);
  // Q of the QR decomposition of the tall orientation, with the signs of R's diagonal moved
  // into Q so that the result is uniformly distributed (as PyTorch does).
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  const std::vector<double> values = flat.to_vector<double>();
  Eigen::MatrixXd a(m, n);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      (wide ? a(j, i) : a(i, j)) = values[static_cast<size_t>(i * cols + j)];
    }
  }
  Eigen::HouseholderQR<Eigen::MatrixXd> qr(a);
  Eigen::MatrixXd q = qr.householderQ() * Eigen::MatrixXd::Identity(m, n);
  const Eigen::MatrixXd r = qr.matrixQR().topRows(n).triangularView<Eigen::Upper>();
  for (int64_t j = 0; j < n; ++j) {
    const double d = r(j, j);
    q.col(j) *= d > 0 ? 1.0 : (d < 0 ? -1.0 : 0.0);
  }
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      out[static_cast<size_t>(i * cols + j)] = (wide ? q(j, i) : q(i, j)) * gain;
    }
  }
  NoGradGuard no_grad;
  tensor.copy_(from_vector(out, {rows, cols}).view(tensor.sizes()));
  return tensor;
}

SkipInitGuard::SkipInitGuard() : previous_(skipping) {
  skipping = true;
}
SkipInitGuard::~SkipInitGuard() {
  skipping = previous_;
}
bool SkipInitGuard::active() {
  return skipping;
}

}  // namespace nns::nn::init
