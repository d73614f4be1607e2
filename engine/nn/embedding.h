// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Embedding (torch.nn.Embedding): a table of num_embeddings rows of embedding_dim, looked up
// by int64 indices of any shape ([*] -> [*, embedding_dim]). Initialized from N(0, 1) as in
// PyTorch, with the padding_idx row (if any) zeroed; that row gets no gradient.
//
//   auto emb = std::make_shared<nns::nn::Embedding>(10, 3);
//   std::cout << *emb;  // Embedding(10, 3)
#include <optional>

#include "engine/nn/module.h"

namespace nns::nn {

struct EmbeddingOptions {
  int64_t num_embeddings = 0;
  int64_t embedding_dim = 0;
  // A negative index counts from the end (-1 is the last row), as in PyTorch.
  std::optional<int64_t> padding_idx;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class Embedding : public Module {
 public:
  explicit Embedding(const EmbeddingOptions& options);
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  // normal_(weight), then the padding row to zeros.
  void reset_parameters();
  const EmbeddingOptions& options() const { return options_; }
  // The padding row in [0, num_embeddings), or nullopt.
  std::optional<int64_t> padding_idx() const { return padding_idx_; }
  using Module::forward;
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

  Tensor weight;  // [num_embeddings, embedding_dim]

 private:
  EmbeddingOptions options_;
  std::optional<int64_t> padding_idx_;
};

}  // namespace nns::nn
