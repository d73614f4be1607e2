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
#include <string>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/data/image_sets.h"
#include "engine/data/transforms.h"

namespace nns::data {

struct SourceOptions {
  std::vector<Transform> transforms;  // images only
  Split split = Split::Train;
  int64_t head = -1;         // the first `head` samples; all when negative
  uint64_t seed = 0;         // the random transforms' seed
  std::string label_column;  // CSV only; empty: the last column
  // Images: leave the random transforms to the DataLoader, drawn anew every epoch
  // (Dataset::augmentation), instead of applying them once with `seed`.
  bool defer_random = false;
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
