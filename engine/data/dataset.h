// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A labelled data set held in memory: inputs, targets and what they mean (task, classes,
// feature names, image size), with a seeded train/test split and subsets by index.
//
//   nns::data::Dataset spirals = nns::data::make_spirals({});
//   auto [train, test] = spirals.split(0.2, /*seed=*/0);   // 480 and 120 samples
//   train.inputs;    // float32 [480, 2]
//   train.targets;   // int64 [480], class indices in [0, 3)
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns::data {

// What the targets are: class indices (int64 [N]) or real values (float32 [N, 1]).
enum class TaskKind { Classification, Regression };

// What one sample's input is, so a UI knows how to draw it: a point in the plane ([N, 2]), a
// number on a line ([N, 1]), a grayscale image ([N, 1, H, W]), a row of numbers ([N, D]) or a
// sequence (int64 [N, T] tokens, or float32 [N, T, 1] values; engine/data/sequences.h).
enum class InputKind { Points2D, Curve1D, Image, Tabular, Sequence };

// "classification", "regression"; "2-D", "1-D", "image", "tabular", "sequence".
std::string task_name(TaskKind task);
std::string input_kind_name(InputKind kind);

struct DatasetSplit;
struct TransformPlan;
class SampleStream;

struct Dataset {
  std::string name;
  TaskKind task = TaskKind::Classification;
  InputKind input_kind = InputKind::Tabular;
  // float32, contiguous: [N, D] or, for images, [N, 1, H, W]; for sequences int64 [N, T] token
  // indices or float32 [N, T, 1] values.
  Tensor inputs;
  // int64 [N] class indices for classification, float32 [N, 1] for regression; int64 [N, T]
  // for a class per position (-100 where a position does not count), see per_position().
  Tensor targets;
  int64_t num_classes = 0;  // 0 for regression
  // One name per input column (empty for images); one per class (empty for regression).
  std::vector<std::string> feature_names;
  std::vector<std::string> class_names;
  // Token sequences only: the name of each input token index ("0".."9", "+", a character).
  std::vector<std::string> vocabulary;
  // Images only: the side lengths in pixels.
  int64_t image_height = 0;
  int64_t image_width = 0;
  // Images from a user's files only: the random transforms (RandomCrop, RandomHorizontalFlip;
  // engine/data/transforms.h) drawn anew every epoch. `inputs` then hold each sample before
  // them; the DataLoader applies them to every batch.
  std::shared_ptr<const TransformPlan> augmentation;
  // Images from a user's files only: the files that could not be read, each with why; they are
  // left out of the set (a UI lists them with the problems).
  std::vector<std::string> skipped;
  // Images from a user's files too large to hold decoded (engine/data/sources.h): `inputs` is
  // then undefined, and sample i is decoded when asked, as stream->sample(stream_rows[i]).
  std::shared_ptr<const SampleStream> stream;
  std::vector<int64_t> stream_rows;

  // The number of samples.
  int64_t size() const {
    return inputs.defined() ? inputs.size(0) : (stream && targets.defined() ? targets.size(0) : 0);
  }
  // The inputs of these samples, stacked ([n, ...]): rows of `inputs`, or decoded from the
  // stream on every core. IndexError for an index outside [0, size()).
  Tensor input_rows(const std::vector<int64_t>& indices) const;
  // Samples [begin, begin + count).
  Tensor input_range(int64_t begin, int64_t count) const;
  // One sample's input shape (without the batch) as a batch has it: after the random crops.
  Shape sample_shape() const;
  // A class per position: int64 targets [N, T] (reverse, sort, addition, text).
  bool per_position() const { return task == TaskKind::Classification && targets.dim() == 2; }
  // Samples per class (classification with a class per sample; empty otherwise).
  std::vector<int64_t> class_counts() const;
  // The samples at these indices, in this order (repeats allowed); throws IndexError naming
  // the data set for an index outside [0, size()).
  Dataset subset(const std::vector<int64_t>& indices) const;
  // A seeded split into train and test sets. round(size() * test_fraction) samples go to the
  // test set. Classification splits are stratified: each class gives the same fraction of its
  // samples to the test set (the rounding remainders go to the classes with the largest
  // fractional parts, lowest class first on ties), so both sets keep the class balance.
  // Regression and per-position splits take a random subset. Both parts keep the original sample
  // order. test_fraction must be in [0, 1) and leave at least one training sample (ValueError).
  DatasetSplit split(double test_fraction, uint64_t seed) const;
};

struct DatasetSplit {
  Dataset train;
  Dataset test;
};

}  // namespace nns::data
