// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/nn/embedding.h"

#include "engine/autograd/grad_mode.h"
#include "engine/nn/init.h"
#include "engine/ops/nn_ops.h"
#include "engine/tensor/factories.h"

namespace nns::nn {

Embedding::Embedding(const EmbeddingOptions& options) : options_(options) {
  if (options.num_embeddings < 0 || options.embedding_dim < 0) {
    throw ValueError("Embedding: num_embeddings and embedding_dim must be >= 0, got " +
                     std::to_string(options.num_embeddings) + " and " +
                     std::to_string(options.embedding_dim));
  }
  if (options.padding_idx) {
    const int64_t p = *options.padding_idx, n = options.num_embeddings;
    if (p >= n || p < -n) {
      throw ValueError("Embedding: padding_idx must be within num_embeddings (" +
                       std::to_string(n) + " rows, so in [" + std::to_string(-n) + ", " +
                       std::to_string(n - 1) + "]), got " + std::to_string(p));
    }
    padding_idx_ = p < 0 ? p + n : p;
  }
  weight = register_parameter(
      "weight", Parameter(empty({options.num_embeddings, options.embedding_dim},
                                TensorOptions(options.dtype).device(options.device))));
  reset_parameters();
}

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim,
                     std::optional<int64_t> padding_idx)
    : Embedding(EmbeddingOptions{num_embeddings, embedding_dim, padding_idx}) {}

void Embedding::reset_parameters() {
  init::normal_(weight);
  if (padding_idx_ && !init::SkipInitGuard::active()) {
    NoGradGuard no_grad;
    weight[*padding_idx_].zero_();
  }
}

Tensor Embedding::forward(const Tensor& input) {
  return embedding(weight, input, padding_idx_.value_or(-1));
}

std::string Embedding::extra_repr() const {
  std::string s =
      std::to_string(options_.num_embeddings) + ", " + std::to_string(options_.embedding_dim);
  if (padding_idx_) s += ", padding_idx=" + std::to_string(*padding_idx_);
  return s;
}

}  // namespace nns::nn
