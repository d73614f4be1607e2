// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A data set from a user's files, the kind found from what the path is: an image folder, MNIST
// or CIFAR files (engine/data/image_sets.h, through torchvision's transforms,
// engine/data/transforms.h), a NumPy .npz (arrays x and y, or x_train, y_train, x_test, y_test)
// or an .npy whose labels lie beside it (x.npy and y.npy, or NAME_x.npy and NAME_y.npy), or a
// CSV file (its last column the label unless one is named).
//
//   nns::data::SourceOptions options;
//   options.transforms = nns::data::parse_transforms("ToTensor(), Normalize((0.5,), (0.5,))");
//   nns::data::LoadedSource mnist = nns::data::load_source("data/MNIST/raw", options);
//   mnist.dataset.inputs;   // float32 [60000, 1, 28, 28]
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image_sets.h"
#include "engine/data/transforms.h"

namespace nns::data {

// A quarter of the machine's memory, or $NNSTUDIO_DATA_MEMORY bytes: what decoded images may
// take before a set is streamed.
int64_t default_decoded_budget();

struct SourceOptions {
  std::vector<Transform> transforms;  // images only
  Split split = Split::Train;
  int64_t head = -1;         // the first `head` samples; all when negative
  uint64_t seed = 0;         // the random transforms' seed
  std::string label_column;  // CSV only; empty: the last column
  // Images: leave the random transforms to the DataLoader, drawn anew every epoch
  // (Dataset::augmentation), instead of applying them once with `seed`.
  bool defer_random = false;
  // Images: the most memory the decoded samples may take. A larger set is streamed
  // (Dataset::stream): decoded again when a batch asks, the most recent kept up to this.
  int64_t max_decoded_bytes = default_decoded_budget();
};

// The samples of an image set too large to hold decoded: each is decoded when asked, through
// the transforms before the random ones, and the most recently used are kept up to a byte
// budget. Safe to use from several threads at once; samples() decodes a batch on every core
// (the DataLoader asks for the next batch while a step runs).
class SampleStream {
 public:
  SampleStream(std::shared_ptr<const ImageSet> set, std::vector<Transform> fixed, Shape shape,
               int64_t cache_bytes);
  // One sample's shape, [C, H, W].
  const Shape& shape() const { return shape_; }
  // Sample `index` of the image set (its own index, not a data set's row). FileError naming
  // the file when it can no longer be read; ValueError when its size changed.
  Tensor sample(int64_t index) const;
  // These samples, stacked [n, C, H, W].
  Tensor samples(const std::vector<int64_t>& indices) const;
  // What the cache holds now, and the samples decoded since it was made.
  int64_t cached_bytes() const;
  int64_t decodes() const;

 private:
  std::shared_ptr<const ImageSet> set_;
  std::vector<Transform> fixed_;
  Shape shape_;
  int64_t cache_bytes_;
  mutable std::mutex mutex_;
  mutable std::list<int64_t> recent_;  // most recently used first
  mutable std::unordered_map<int64_t, std::pair<Tensor, std::list<int64_t>::iterator>> cache_;
  mutable int64_t cached_ = 0;
  mutable int64_t decodes_ = 0;
};

struct LoadedSource {
  Dataset dataset;
  std::string kind;  // "image folder", "MNIST", ..., "NumPy", "CSV"
};

// The kind of source at `path` ("image folder", "MNIST", "Fashion-MNIST", "CIFAR-10",
// "CIFAR-100", "NumPy", "CSV"), or empty when it is none of them.
std::string source_kind(const std::string& path);

// Whether the source has a test split of its own (MNIST's t10k files, CIFAR's test batch, a
// test/ folder, an .npz's x_test and y_test).
bool has_test_split(const std::string& path);

// The source's samples (its `split`), in the order torchvision's dataset indexes them, after
// the transforms. Images are decoded on all cores; an image that cannot be read is skipped and
// listed. Throws FileError/ValueError naming the file for a source that cannot be read: images
// of different sizes after the transforms (naming the first that differs and suggesting a
// Resize), no image readable at all, arrays of the wrong shapes or dtypes.
LoadedSource load_source(const std::string& path, const SourceOptions& options);

// The data set as a test set sees it: its random transforms (Dataset::augmentation) replaced
// by what test_transforms() makes of them (each RandomCrop a CenterCrop, no flips), applied to
// `inputs` once. Data sets without them come back as they are.
Dataset without_augmentation(const Dataset& dataset);

// The images' per-channel mean and standard deviation after `transforms` (the Normalize
// among them left out), over at most `max_samples` samples spread evenly over the set: what a
// Normalize for this data should hold.
void channel_statistics(const std::string& path, const std::vector<Transform>& transforms,
                        int64_t max_samples, std::vector<double>& mean, std::vector<double>& std);

}  // namespace nns::data
