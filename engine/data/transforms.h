// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torchvision's image transforms, by their names and with their behaviour on a Pillow image,
// so that a project's data goes through the same steps here and in its exported train.py:
//
//   std::vector<nns::data::Transform> t = nns::data::parse_transforms(
//       "Resize(40), RandomCrop(32, padding=4), ToTensor(), Normalize(mean=(0.5,), std=(0.25,))");
//   nns::Tensor x = nns::data::apply_transforms(t, image, /*seed=*/sample_seed);   // [1, 32, 32]
//
// The text is Python: transforms_text() writes each transform as its torchvision call, which
// the export puts inside transforms.Compose([...]) unchanged. Resize is Pillow's bilinear
// resampling with its fixed-point arithmetic, and CenterCrop rounds as Python does, so the
// deterministic transforms give torchvision's tensors bit for bit. The random ones (RandomCrop,
// RandomHorizontalFlip) draw from a generator seeded per sample, so a run repeats exactly; they
// cannot draw torch's numbers.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/image.h"
#include "engine/tensor/tensor.h"

namespace nns::data {

struct Transform {
  enum class Kind {
    Resize,                // size: the smaller edge, or (h, w)
    CenterCrop,            // size: a square side, or (h, w)
    RandomCrop,            // size; padding (1, 2 or 4 numbers, as torchvision); pad_if_needed
    RandomHorizontalFlip,  // p
    Grayscale,             // num_output_channels (1 or 3)
    ToTensor,              // uint8 HWC -> float32 CHW in [0, 1]
    Normalize,             // mean, std: one per channel (or one for all)
  };
  Kind kind = Kind::ToTensor;
  std::vector<int64_t> size;
  std::vector<int64_t> padding;
  bool pad_if_needed = false;
  double p = 0.5;
  int64_t num_output_channels = 1;
  std::vector<double> mean;
  std::vector<double> std;
};

// Every transform's torchvision name, in the order a UI offers them.
const std::vector<std::string>& transform_names();

// Parses "Name(args), Name(args), ..." (positional or keyword arguments as torchvision takes
// them; numbers, tuples and lists). ValueError naming the transform and the argument for an
// unknown name, a missing or extra argument, a value out of range; and when the list does
// not hold the image steps, then ToTensor, then Normalize (Normalize works on tensors, the
// others on images). An empty text is no transforms.
std::vector<Transform> parse_transforms(const std::string& text);
// One transform as torchvision's call ("RandomCrop(32, padding=4)"); parse_transforms reads it.
std::string transform_text(const Transform& transform);
// The list, joined by ", ".
std::string transforms_text(const std::vector<Transform>& transforms);
// Whether any transform draws random numbers (a data set made through them changes by epoch).
bool has_random_transforms(const std::vector<Transform>& transforms);

// The image through the transforms, as a float32 [C, H, W] tensor; a ToTensor is implied at
// the end of the image steps when the list has none. `seed` seeds the random transforms.
// ValueError when a Normalize has a number of means or stds other than 1 or the channels'.
Tensor apply_transforms(const std::vector<Transform>& transforms, Image image, uint64_t seed);

// The transforms as they run: `fixed`, the image steps before the first random one, then
// ToTensor and Normalize; `random`, the random ones (RandomCrop, RandomHorizontalFlip), which
// move pixels only, so they run on the tensor afterwards, filling padding with where a black
// pixel lands after Normalize: the same tensor bit for bit, and a data set can keep each sample
// before them and draw them anew for every epoch. ValueError when a Resize, CenterCrop or
// Grayscale follows a random transform (put it before them).
struct TransformPlan {
  std::vector<Transform> fixed;
  std::vector<Transform> random;
};
TransformPlan plan_transforms(const std::vector<Transform>& transforms);
// The random steps on one sample [C, H, W] (after plan.fixed), drawing from `seed`.
Tensor apply_random_transforms(const TransformPlan& plan, const Tensor& sample, uint64_t seed);
// What a test set goes through: each RandomCrop becomes a CenterCrop of its size and the flips
// are left out, as a test set is usually transformed.
std::vector<Transform> test_transforms(const std::vector<Transform>& transforms);

// The image steps alone (up to ToTensor): Pillow's resize, crops, flip and grayscale.
Image resize(const Image& image, int64_t height, int64_t width);
Image crop(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width);

}  // namespace nns::data
