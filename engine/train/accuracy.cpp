// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/autograd/grad_mode.h"
#include "engine/data/sequences.h"
#include "engine/ops/ops.h"
#include "engine/tensor/error.h"

namespace nns::train {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double ratio(int64_t a, int64_t b) {
  return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : kNaN;
}

bool per_position(const Tensor& targets) {
  return targets.dim() == 2 && targets.dtype() == kInt64;
}

// The argmax of each row of `scores` [rows, cols]: torch.argmax's first maximum, a NaN
// counting as the maximum.
template <class T>
int64_t argmax_row(const T* row, int64_t cols) {
  int64_t best = 0;
  for (int64_t c = 1; c < cols; ++c) {
    if (std::isnan(row[best])) break;
    if (row[c] > row[best] || std::isnan(row[c])) best = c;
  }
  return best;
}

}  // namespace

double Accuracy::rate() const {
  return ratio(correct, counted);
}

double Accuracy::sequence_rate() const {
  return ratio(sequences_correct, sequences);
}

std::vector<double> Accuracy::position_rates() const {
  std::vector<double> rates(position_counted.size());
  for (size_t t = 0; t < rates.size(); ++t)
    rates[t] = ratio(position_correct[t], position_counted[t]);
  return rates;
}

void Accuracy::add(const Accuracy& other) {
  correct += other.correct;
  counted += other.counted;
  sequences += other.sequences;
  sequences_correct += other.sequences_correct;
  const size_t length = std::max(position_counted.size(), other.position_counted.size());
  position_counted.resize(length, 0);
  position_correct.resize(length, 0);
  for (size_t t = 0; t < other.position_counted.size(); ++t) {
    position_counted[t] += other.position_counted[t];
    position_correct[t] += other.position_correct[t];
  }
  predicted.insert(predicted.end(), other.predicted.begin(), other.predicted.end());
}

std::optional<Accuracy> score_predictions(const Tensor& output, const Tensor& targets) {
  if (!output.defined() || !targets.defined() || targets.dtype() != kInt64 ||
      !output.is_floating_point() || output.dim() != targets.dim() + 1 || targets.dim() < 1 ||
      targets.dim() > 2) {
    return std::nullopt;
  }
  for (int64_t d = 0; d < targets.dim(); ++d) {
    if (output.size(d) != targets.size(d)) return std::nullopt;
  }
  NoGradGuard no_grad;
  Tensor scores = output.detach();
  if (scores.dtype() != kFloat32 && scores.dtype() != kFloat64) scores = scores.to(kFloat32);
  scores = scores.contiguous();
  const Tensor labels = targets.contiguous();
  const int64_t n = targets.size(0);
  const int64_t length = targets.dim() == 2 ? targets.size(1) : 1;
  const int64_t cols = scores.size(-1);
  const int64_t* y = labels.data_ptr<int64_t>();
  Accuracy a;
  if (targets.dim() == 2) {
    a.position_counted.assign(static_cast<size_t>(length), 0);
    a.position_correct.assign(static_cast<size_t>(length), 0);
  }
  auto count = [&](const auto* s) {
    for (int64_t i = 0; i < n; ++i) {
      bool counted = false, all_right = true;
      for (int64_t t = 0; t < length; ++t) {
        const int64_t r = i * length + t;
        if (y[r] == data::kIgnoredPosition) continue;
        const int64_t guess = argmax_row(s + r * cols, cols);
        const bool right = guess == y[r];
        if (targets.dim() == 1) a.predicted.push_back(guess);
        counted = true;
        all_right = all_right && right;
        ++a.counted;
        a.correct += right ? 1 : 0;
        if (targets.dim() == 2) {
          ++a.position_counted[static_cast<size_t>(t)];
          a.position_correct[static_cast<size_t>(t)] += right ? 1 : 0;
        }
      }
      if (targets.dim() == 2 && counted) {
        ++a.sequences;
        a.sequences_correct += all_right ? 1 : 0;
      }
    }
  };
  if (scores.dtype() == kFloat32) {
    count(scores.data_ptr<float>());
  } else {
    count(scores.data_ptr<double>());
  }
  return a;
}

std::pair<Tensor, Tensor> loss_inputs(const Tensor& output, const Tensor& targets) {
  if (!per_position(targets)) return {output, targets};
  if (output.dim() != 3 || output.size(0) != targets.size(0) || output.size(1) != targets.size(1)) {
    throw ShapeError("the targets hold a class per position, " + shape_str(targets.sizes()) +
                     " = [N, T], so the model's output must be [N, T, classes], but it is " +
                     shape_str(output.sizes()) +
                     "; end the model with a Linear on a batch_first sequence");
  }
  return {output.reshape({-1, output.size(2)}), targets.reshape({-1})};
}

}  // namespace nns::train
