// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/data/sources.h"
#include "engine/ops/indexing.h"
#include "engine/tensor/factories.h"

namespace nns::data {

std::string task_name(TaskKind task) {
  return task == TaskKind::Classification ? "classification" : "regression";
}

std::string input_kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::Points2D:
      return "2-D";
    case InputKind::Curve1D:
      return "1-D";
    case InputKind::Image:
      return "image";
    case InputKind::Tabular:
      return "tabular";
    case InputKind::Sequence:
      return "sequence";
  }
  return "tabular";
}

namespace {

// The class index of every sample, checked: a data set put together by hand may have targets
// that do not match num_classes, and they index arrays here.
std::vector<int64_t> class_labels(const Dataset& d, const std::string& where) {
  if (d.targets.dtype() != kInt64 || d.targets.dim() != 1) {
    throw DtypeError(where + ": classification targets must be int64 [N] class indices, got " +
                     dtype_name(d.targets.dtype()) + " " + shape_str(d.targets.sizes()));
  }
  std::vector<int64_t> labels = d.targets.to_vector<int64_t>();
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= d.num_classes) {
      throw ValueError(where + ": sample " + std::to_string(i) + " has class " +
                       std::to_string(labels[i]) +
                       ", outside [0, num_classes = " + std::to_string(d.num_classes) + ")");
    }
  }
  return labels;
}

}  // namespace

std::vector<int64_t> Dataset::class_counts() const {
  if (task != TaskKind::Classification || per_position()) return {};
  std::vector<int64_t> counts(static_cast<size_t>(num_classes), 0);
  for (int64_t label : class_labels(*this, "Dataset '" + name + "' class_counts")) {
    ++counts[static_cast<size_t>(label)];
  }
  return counts;
}

Tensor Dataset::input_rows(const std::vector<int64_t>& indices) const {
  const int64_t n = size();
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      throw IndexError("Dataset '" + name + "': sample " + std::to_string(i) +
                       " is out of range; the data set has " + std::to_string(n));
    }
  }
  if (!stream) {
    return index_select(inputs, 0, from_vector(indices, {static_cast<int64_t>(indices.size())}));
  }
  std::vector<int64_t> rows(indices.size());
  for (size_t k = 0; k < indices.size(); ++k)
    rows[k] = stream_rows[static_cast<size_t>(indices[k])];
  return stream->samples(rows);
}

Tensor Dataset::input_range(int64_t begin, int64_t count) const {
  if (!stream) return inputs.narrow(0, begin, count);
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::iota(indices.begin(), indices.end(), begin);
  return input_rows(indices);
}

Shape Dataset::sample_shape() const {
  Shape shape = stream             ? stream->shape()
                : inputs.defined() ? Shape(inputs.sizes().begin() + 1, inputs.sizes().end())
                                   : Shape{};
  // The random crops set the height and width a batch has.
  if (augmentation && shape.size() == 3) {
    for (const Transform& t : augmentation->random) {
      if (t.kind != Transform::Kind::RandomCrop) continue;
      shape[1] = t.size[0];
      shape[2] = t.size.size() == 2 ? t.size[1] : t.size[0];
    }
  }
  return shape;
}

Dataset Dataset::subset(const std::vector<int64_t>& indices) const {
  const int64_t n = size();
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= n) {
      throw IndexError("Dataset '" + name + "' subset: index " + std::to_string(indices[i]) +
                       " (at position " + std::to_string(i) +
                       ") is out of range; the data set has " + std::to_string(n) +
                       " samples, so indices must be in [0, " + std::to_string(n) + ")");
    }
  }
  const Tensor index = from_vector(indices, {static_cast<int64_t>(indices.size())});
  Dataset out = *this;
  if (stream) {
    out.stream_rows.clear();
    for (int64_t i : indices) out.stream_rows.push_back(stream_rows[static_cast<size_t>(i)]);
  } else {
    out.inputs = index_select(inputs, 0, index);
  }
  out.targets = index_select(targets, 0, index);
  return out;
}

DatasetSplit Dataset::split(double test_fraction, uint64_t seed) const {
  const int64_t n = size();
  const std::string where = "Dataset '" + name + "' split";
  if (!(test_fraction >= 0 && test_fraction < 1)) {
    throw ValueError(where + ": test_fraction must be in [0, 1), got " +
                     std::to_string(test_fraction));
  }
  const auto n_test = static_cast<int64_t>(std::llround(static_cast<double>(n) * test_fraction));
  if (n > 0 && n_test >= n) {
    throw ValueError(where + ": a test fraction of " + std::to_string(test_fraction) + " of " +
                     std::to_string(n) + " samples leaves no training sample; use a smaller one");
  }
  // Groups of sample indices that are split separately: one per class, or all samples.
  std::vector<std::vector<int64_t>> groups;
  if (task == TaskKind::Classification && !per_position()) {
    groups.resize(static_cast<size_t>(num_classes));
    const std::vector<int64_t> labels = class_labels(*this, where);
    for (int64_t i = 0; i < n; ++i) groups[static_cast<size_t>(labels[i])].push_back(i);
  } else {
    groups.emplace_back(static_cast<size_t>(n));
    std::iota(groups[0].begin(), groups[0].end(), int64_t{0});
  }
  // Each group's share of the test set, rounded down; the remainder goes to the groups with
  // the largest fractional parts so that the shares add up to n_test exactly.
  std::vector<int64_t> share(groups.size());
  std::vector<std::pair<double, size_t>> remainders;
  int64_t assigned = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double exact = static_cast<double>(groups[g].size()) * test_fraction;
    share[g] = static_cast<int64_t>(std::floor(exact));
    assigned += share[g];
    remainders.emplace_back(exact - static_cast<double>(share[g]), g);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; assigned < n_test && k < remainders.size(); ++k) {
    const size_t g = remainders[k].second;
    if (share[g] < static_cast<int64_t>(groups[g].size())) {
      ++share[g];
      ++assigned;
    }
  }

  Generator generator(seed);
  std::vector<bool> in_test(static_cast<size_t>(n), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    const int64_t count = static_cast<int64_t>(groups[g].size());
    if (share[g] == 0) continue;
    const Tensor permutation = randperm(count, &generator);
    const int64_t* order = permutation.data_ptr<int64_t>();
    for (int64_t k = 0; k < share[g]; ++k) {
      in_test[static_cast<size_t>(groups[g][static_cast<size_t>(order[k])])] = true;
    }
  }
  std::vector<int64_t> train_indices;
  std::vector<int64_t> test_indices;
  train_indices.reserve(static_cast<size_t>(n - n_test));
  test_indices.reserve(static_cast<size_t>(n_test));
  for (int64_t i = 0; i < n; ++i) {
    (in_test[static_cast<size_t>(i)] ? test_indices : train_indices).push_back(i);
  }
  return {subset(train_indices), subset(test_indices)};
}

}  // namespace nns::data
