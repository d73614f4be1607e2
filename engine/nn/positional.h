// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Position information for attention, which is otherwise blind to order. torch.nn has no
// module for it; these are the two every transformer tutorial writes, and the PyTorch code
// export writes them as such classes (positional_pytorch_source):
//   - PositionalEncoding: x + the fixed sinusoids of "Attention Is All You Need"
//     (pe[p, 2i] = sin(p / 10000^(2i / d_model)), pe[p, 2i + 1] = cos(...)), kept in a
//     non-persistent buffer "pe" [max_len, d_model] (no state-dict entry);
//   - LearnedPositionalEncoding: x + a learned row per position, the parameter "weight"
//     [max_len, d_model] initialised as nn.Embedding's (normal).
// The input is [L, N, d_model], or [N, L, d_model] with batch_first; L <= max_len.
#include <string>

#include "engine/nn/module.h"

namespace nns::nn {

struct PositionalOptions {
  int64_t d_model = 0;
  int64_t max_len = 512;
  bool batch_first = false;
};

class PositionalEncoding : public Module {
 public:
  explicit PositionalEncoding(const PositionalOptions& options);
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  Tensor pe;  // [max_len, d_model], not in the state dict

 private:
  PositionalOptions options_;
};

class LearnedPositionalEncoding : public Module {
 public:
  explicit LearnedPositionalEncoding(const PositionalOptions& options);
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  Tensor weight;  // [max_len, d_model]

 private:
  PositionalOptions options_;
};

// The two classes in PyTorch, for the code export: their constructors take the options above
// as keyword arguments and their state_dict() has these modules' keys.
const std::string& positional_encoding_pytorch_source();
const std::string& learned_positional_encoding_pytorch_source();

}  // namespace nns::nn
