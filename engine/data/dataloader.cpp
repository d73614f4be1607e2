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

EpochBatches::EpochBatches(std::shared_ptr<const Dataset> data, Tensor order, int64_t batch_size,
                           int64_t num_batches, uint64_t augmentation_seed)
    : data_(std::move(data)),
      order_(std::move(order)),
      batch_size_(batch_size),
      num_batches_(num_batches),
      augmentation_seed_(augmentation_seed),
      ahead_(data_->stream ? std::make_shared<Ahead>() : nullptr) {}

namespace {

// Batch b of an epoch: the samples at order[b * batch_size, ...), with their random transforms
// drawn from the epoch's seed and each sample's index.
Batch make_batch(const Dataset& data, const Tensor& order, int64_t batch_size,
                 uint64_t augmentation_seed, int64_t b) {
  const Tensor index = order.slice(0, b * batch_size, (b + 1) * batch_size).contiguous();
  const Tensor targets = index_select(data.targets, 0, index);
  if (!data.augmentation && !data.stream) return {index_select(data.inputs, 0, index), targets};
  const std::vector<int64_t> rows = index.to_vector<int64_t>();
  const Tensor inputs = data.input_rows(rows);
  if (!data.augmentation) return {inputs, targets};
  std::vector<Tensor> samples;
  for (size_t k = 0; k < rows.size(); ++k) {
    samples.push_back(apply_random_transforms(*data.augmentation,
                                              inputs.select(0, static_cast<int64_t>(k)),
                                              epoch_seed(augmentation_seed, rows[k])));
  }
  return {stack(samples, 0), targets};
}

}  // namespace

Batch EpochBatches::operator[](int64_t b) const {
  if (b < 0 || b >= num_batches_) {
    throw IndexError("DataLoader: batch " + std::to_string(b) + " is out of range; the epoch has " +
                     std::to_string(num_batches_) + " batches");
  }
  if (!ahead_) return make_batch(*data_, order_, batch_size_, augmentation_seed_, b);
  const std::lock_guard<std::mutex> lock(ahead_->mutex);
  Batch batch = ahead_->batch == b ? ahead_->made.get()
                                   : make_batch(*data_, order_, batch_size_, augmentation_seed_, b);
  if (ahead_->made.valid()) ahead_->made.wait();  // another batch was ahead: let it finish
  ahead_->batch = -1;
  if (b + 1 < num_batches_) {
    // Copies of the handles it needs (not of this epoch, whose Ahead it would then hold).
    ahead_->made = std::async(std::launch::async, [data = data_, order = order_, size = batch_size_,
                                                   seed = augmentation_seed_, next = b + 1] {
      return make_batch(*data, order, size, seed, next);
    });
    ahead_->batch = b + 1;
  }
  return batch;
}

DataLoader::DataLoader(const Dataset& dataset, const DataLoaderOptions& options)
    : options_(options) {
  if (options.batch_size < 1) {
    throw ValueError("DataLoader: batch_size must be at least 1, got " +
                     std::to_string(options.batch_size));
  }
  if ((!dataset.inputs.defined() && !dataset.stream) || !dataset.targets.defined()) {
    throw ValueError("DataLoader: the data set '" + dataset.name + "' has no inputs or targets");
  }
  const int64_t inputs =
      dataset.stream ? static_cast<int64_t>(dataset.stream_rows.size()) : dataset.inputs.size(0);
  if (inputs != dataset.targets.size(0)) {
    throw ShapeError("DataLoader: the data set '" + dataset.name + "' has " +
                     std::to_string(inputs) + " inputs but " +
                     std::to_string(dataset.targets.size(0)) + " targets");
  }
  // index_select copies whole rows of contiguous tensors with one memcpy each.
  auto data = std::make_shared<Dataset>(dataset);
  if (data->inputs.defined()) data->inputs = data->inputs.contiguous();
  data->targets = data->targets.contiguous();
  data_ = std::move(data);
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
  return {data_, order(epoch), options_.batch_size, num_batches(), augmentation_seed};
}

}  // namespace nns::data
