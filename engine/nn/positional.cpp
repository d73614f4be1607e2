// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/positional.h"

#include <cmath>
#include <vector>

#include "engine/nn/init.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::nn {
namespace {

void check(const PositionalOptions& o, const std::string& owner) {
  if (o.d_model < 1 || o.max_len < 1)
    throw ValueError(owner + ": d_model and max_len must be >= 1, got " +
                     std::to_string(o.d_model) + " and " + std::to_string(o.max_len));
}

// x + table[:L], the table [max_len, d_model] broadcast over the batch.
Tensor add_positions(const Tensor& x, const Tensor& table, const PositionalOptions& o,
                     const std::string& owner) {
  const std::string layout = o.batch_first ? "[N, L, d_model]" : "[L, N, d_model]";
  if (x.dim() != 3 || x.size(2) != o.d_model)
    throw ShapeError(owner + ": expected an input " + layout + " with d_model = " +
                     std::to_string(o.d_model) + ", got " + shape_str(x.shape()));
  const int64_t length = x.size(o.batch_first ? 1 : 0);
  if (length > o.max_len)
    throw ShapeError(owner + ": the input has " + std::to_string(length) +
                     " positions, more than max_len = " + std::to_string(o.max_len));
  const Tensor rows = table.narrow(0, 0, length);  // [L, d_model]
  return x + (o.batch_first ? rows.unsqueeze(0) : rows.unsqueeze(1));
}

std::string repr_of(const PositionalOptions& o) {
  return "d_model=" + std::to_string(o.d_model) + ", max_len=" + std::to_string(o.max_len) +
         (o.batch_first ? ", batch_first=True" : "");
}

}  // namespace

PositionalEncoding::PositionalEncoding(const PositionalOptions& options) : options_(options) {
  check(options_, "PositionalEncoding");
  const int64_t d = options_.d_model, n = options_.max_len;
  // In double, then float32: the table PyTorch's float32 code computes differs in the last
  // bits for large positions; the twin computes it the same way (positional source below).
  std::vector<double> values(static_cast<size_t>(n * d));
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t i = 0; i < d; i += 2) {
      const double angle = static_cast<double>(p) * std::exp(-std::log(10000.0) * i / d);
      values[static_cast<size_t>(p * d + i)] = std::sin(angle);
      if (i + 1 < d) values[static_cast<size_t>(p * d + i + 1)] = std::cos(angle);
    }
  }
  pe = register_buffer("pe", from_vector(values, {n, d}).to(kFloat32), /*persistent=*/false);
}

Tensor PositionalEncoding::forward(const Tensor& input) {
  return add_positions(input, pe, options_, "PositionalEncoding");
}

std::string PositionalEncoding::extra_repr() const {
  return repr_of(options_);
}

LearnedPositionalEncoding::LearnedPositionalEncoding(const PositionalOptions& options)
    : options_(options) {
  check(options_, "LearnedPositionalEncoding");
  weight = register_parameter("weight", Parameter(empty({options_.max_len, options_.d_model})));
  init::normal_(weight);
}

Tensor LearnedPositionalEncoding::forward(const Tensor& input) {
  return add_positions(input, weight, options_, "LearnedPositionalEncoding");
}

std::string LearnedPositionalEncoding::extra_repr() const {
  return repr_of(options_);
}

const std::string& positional_encoding_pytorch_source() {
  static const std::string source = R"(import math


class PositionalEncoding(nn.Module):
    """x + the sinusoids of "Attention Is All You Need" for each position (NN Studio's)."""

    def __init__(self, d_model, max_len=512, batch_first=False):
        super().__init__()
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
        pe = torch.zeros(max_len, d_model, dtype=torch.float64)
        for i in range(0, d_model, 2):
            angle = position[:, 0] * math.exp(-math.log(10000.0) * i / d_model)
            pe[:, i] = torch.sin(angle)
            if i + 1 < d_model:
                pe[:, i + 1] = torch.cos(angle)
        self.register_buffer("pe", pe.float(), persistent=False)

    def forward(self, x):
        rows = self.pe[: x.size(1 if self.batch_first else 0)]
        return x + (rows.unsqueeze(0) if self.batch_first else rows.unsqueeze(1))

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}" + (
            ", batch_first=True" if self.batch_first else "")
)";
  return source;
}

const std::string& learned_positional_encoding_pytorch_source() {
  static const std::string source = R"(class LearnedPositionalEncoding(nn.Module):
    """x + a learned row for each position (NN Studio's)."""

    def __init__(self, d_model, max_len=512, batch_first=False):
        super().__init__()
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        self.weight = nn.Parameter(torch.empty(max_len, d_model).normal_())

    def forward(self, x):
        rows = self.weight[: x.size(1 if self.batch_first else 0)]
        return x + (rows.unsqueeze(0) if self.batch_first else rows.unsqueeze(1))

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}" + (
            ", batch_first=True" if self.batch_first else "")
)";
  return source;
}

}  // namespace nns::nn
