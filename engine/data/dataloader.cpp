// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/dataloader.h"

#include <string>

#include "engine/data/transforms.h"
#include "engine/ops/indexing.h"
#include "engine/tensor/factories.h"

namespace nns::data {

uint64_t epoch_seed(uint64_t seed, int64_t epoch) {
  // SplitMix64 (Steele, Lea, Flood 2014) of the seed, then of that plus the epoch: every bit
  // of both inputs reaches the low 32 bits that the Mersenne Twister keeps.
  const auto mix = [](uint64_t z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  return mix(mix(seed) + static_cast<uint64_t>(epoch));
}

Batch EpochBatches::operator[](int64_t b) const {
  if (b < 0 || b >= num_batches_) {
    throw IndexError("DataLoader: batch " + std::to_string(b) + " is out of range; the epoch has " +
                     std::to_string(num_batches_) + " batches");
  }
  const Tensor index = order_.slice(0, b * batch_size_, (b + 1) * batch_size_);
  if (!augmentation_) return {index_select(inputs_, 0, index), index_select(targets_, 0, index)};
  const Tensor rows = index.contiguous();
  std::vector<Tensor> samples;
  for (int64_t k = 0; k < rows.numel(); ++k) {
    const int64_t i = rows.data_ptr<int64_t>()[k];
    samples.push_back(apply_random_transforms(*augmentation_, inputs_.select(0, i),
                                              epoch_seed(augmentation_seed_, i)));
  }
  return {stack(samples, 0), index_select(targets_, 0, index)};
}

DataLoader::DataLoader(const Dataset& dataset, const DataLoaderOptions& options)
    : options_(options) {
  if (options.batch_size < 1) {
    throw ValueError("DataLoader: batch_size must be at least 1, got " +
                     std::to_string(options.batch_size));
  }
  if (!dataset.inputs.defined() || !dataset.targets.defined()) {
    throw ValueError("DataLoader: the data set '" + dataset.name + "' has no inputs or targets");
  }
  if (dataset.inputs.size(0) != dataset.targets.size(0)) {
    throw ShapeError("DataLoader: the data set '" + dataset.name + "' has " +
                     std::to_string(dataset.inputs.size(0)) + " inputs but " +
                     std::to_string(dataset.targets.size(0)) + " targets");
  }
  // index_select copies whole rows of contiguous tensors with one memcpy each.
  inputs_ = dataset.inputs.contiguous();
  targets_ = dataset.targets.contiguous();
  augmentation_ = dataset.augmentation;
}

int64_t DataLoader::num_batches() const {
  const int64_t n = dataset_size();
  const int64_t b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

Tensor DataLoader::order(int64_t epoch) const {
  if (!options_.shuffle) return arange(static_cast<double>(dataset_size()), kInt64);
  Generator generator(epoch_seed(options_.seed, epoch));
  return randperm(dataset_size(), &generator);
}

EpochBatches DataLoader::epoch(int64_t epoch) const {
  // The random transforms' seeds come from another stream than the shuffling's.
  const uint64_t augmentation_seed = epoch_seed(~options_.seed, epoch);
  return {inputs_,       targets_,      order(epoch),     options_.batch_size,
          num_batches(), augmentation_, augmentation_seed};
}

}  // namespace nns::data
