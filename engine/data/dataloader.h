// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Minibatches over a data set, like torch.utils.data.DataLoader: batch size, shuffling with a
// seed, drop_last. Epoch e shuffles with its own generator, seeded with epoch_seed(seed, e),
// so any epoch's order can be rebuilt on its own (a resumed run or a replayed step gets the
// same batches), and with the same seed two runs see the same batches.
//
//   nns::data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .seed = 1});
//   for (int64_t epoch = 0; epoch < 10; ++epoch) {
//     for (const nns::data::Batch& batch : loader.epoch(epoch)) {
//       model->forward(batch.inputs);   // [64, ...], the last batch may be smaller
//     }
//   }
#include <cstdint>
#include <future>
#include <iterator>
#include <memory>
#include <mutex>

#include "engine/data/dataset.h"

namespace nns::data {

struct Batch {
  Tensor inputs;   // [B, ...] rows of Dataset::inputs
  Tensor targets;  // [B] or [B, 1]
};

struct DataLoaderOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  uint64_t seed = 0;
  // Leave out the last batch when it is smaller than batch_size.
  bool drop_last = false;
};

// The seed of epoch `epoch`'s generator: seed and epoch mixed by SplitMix64, so that nearby
// seeds and epochs give unrelated orders.
uint64_t epoch_seed(uint64_t seed, int64_t epoch);

// The batches of one epoch, in order; cheap to copy (handles). A streamed data set's next
// batch is decoded on other threads while the caller works on this one.
class EpochBatches {
 public:
  EpochBatches(std::shared_ptr<const Dataset> data, Tensor order, int64_t batch_size,
               int64_t num_batches, uint64_t augmentation_seed);

  int64_t size() const { return num_batches_; }
  // Batch b in [0, size()); IndexError outside.
  Batch operator[](int64_t b) const;
  // The sample indices of the epoch in order (int64 [N]).
  const Tensor& order() const { return order_; }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator(const EpochBatches* epoch, int64_t index) : epoch_(epoch), index_(index) {}
    Batch operator*() const { return (*epoch_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    bool operator==(const Iterator& other) const { return index_ == other.index_; }

   private:
    const EpochBatches* epoch_;
    int64_t index_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, num_batches_}; }

 private:
  std::shared_ptr<const Dataset> data_;
  Tensor order_;
  int64_t batch_size_;
  int64_t num_batches_;
  uint64_t augmentation_seed_;
  // Streamed sets: the batch being made ahead.
  struct Ahead {
    std::mutex mutex;
    int64_t batch = -1;
    std::future<Batch> made;
  };
  std::shared_ptr<Ahead> ahead_;
};

class DataLoader {
 public:
  // batch_size must be at least 1 (ValueError). The loader keeps the data set's tensors (made
  // contiguous once) or its stream, not a copy of the data.
  DataLoader(const Dataset& dataset, const DataLoaderOptions& options = {});

  const DataLoaderOptions& options() const { return options_; }
  int64_t dataset_size() const { return data_->size(); }
  // Batches per epoch: ceil(N / batch_size), or floor with drop_last (len(loader)).
  int64_t num_batches() const;
  // The sample order of an epoch: a permutation when shuffling, else 0..N-1.
  Tensor order(int64_t epoch) const;
  EpochBatches epoch(int64_t epoch) const;

 private:
  std::shared_ptr<const Dataset> data_;
  DataLoaderOptions options_;
};

}  // namespace nns::data
