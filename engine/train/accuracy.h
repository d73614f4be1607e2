// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Scoring a model's class predictions against the targets, for a class per sample ([N, C]
// scores, int64 [N] targets) or a class per position ([N, T, C] scores, int64 [N, T] targets;
// a position whose target is -100 does not count), and the loss's inputs for either.
//
//   auto [scores, labels] = nns::train::loss_inputs(output, targets);   // [N*T, C], [N*T]
//   Tensor loss = cross_entropy(scores, labels);
//   std::optional<nns::train::Accuracy> a = nns::train::score_predictions(output, targets);
//   a->rate();            // correct / counted
//   a->sequence_rate();   // sequences with every position right
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns::train {

struct Accuracy {
  int64_t correct = 0;  // predictions that are right (argmax, torch's first maximum)
  int64_t counted = 0;  // predictions that count
  // A class per position only: sequences with a position that counts, and those with every
  // such position right; per position (index t), the predictions that count and are right.
  int64_t sequences = 0;
  int64_t sequences_correct = 0;
  std::vector<int64_t> position_counted;
  std::vector<int64_t> position_correct;
  // A class per sample only: the class predicted for each sample, in order (batches added
  // after one another), from which a confusion matrix and the wrong samples are read.
  std::vector<int64_t> predicted;

  // NaN where nothing counted.
  double rate() const;
  double sequence_rate() const;
  std::vector<double> position_rates() const;
  // Sums another batch's figures into these (the per-position lists grow to the longer).
  void add(const Accuracy& other);
};

// The figures for one batch; std::nullopt when the output is not class scores for these
// targets (regression, or shapes that do not pair up).
std::optional<Accuracy> score_predictions(const Tensor& output, const Tensor& targets);

// What the loss is called with: per-position outputs [N, T, C] and targets [N, T] as [N*T, C]
// and [N*T], as PyTorch code writes it (loss(out.reshape(-1, C), y.reshape(-1))); any other
// pair as it is. ShapeError when per-position targets meet an output that is not [N, T, C].
std::pair<Tensor, Tensor> loss_inputs(const Tensor& output, const Tensor& targets);

}  // namespace nns::train
