// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// How far two snapshots of a model's weights are apart, entry by entry: what "diff two
// snapshots" colours the canvas's nodes by.
//
//   for (auto& [key, c] : nns::train::weight_changes(before.model, after.model))
//     c.relative();   // ||after - before|| / ||before||
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/module.h"

namespace nns::train {

struct WeightChange {
  double norm_before = 0;  // ||a||
  double norm_after = 0;   // ||b||
  double norm_change = 0;  // ||b - a||
  int64_t numel = 0;
  // ||b - a|| / ||a|| (inf when a is 0 and b is not; 0 when both are 0).
  double relative() const {
    if (norm_before > 0) return norm_change / norm_before;
    return norm_change > 0 ? INFINITY : 0.0;
  }
  // Sums another entry's figures into these (the norms as square roots of summed squares).
  void add(const WeightChange& other);
};

// The floating-point entries both state dicts have with the same shape, in a's order; other
// entries (integer buffers such as num_batches_tracked, a shape that changed) are left out.
std::vector<std::pair<std::string, WeightChange>> weight_changes(const nn::StateDict& a,
                                                                 const nn::StateDict& b);

}  // namespace nns::train
