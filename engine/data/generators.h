// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The built-in data sets, made by the program from a seed: 2-D classification sets (spirals,
// two moons, circles, XOR, checkerboard), Gaussian blobs in any number of dimensions, a 1-D
// regression curve and 8x8 (or larger) images of handwritten-looking digits. Every random
// number comes from an nns::Generator seeded with `seed`, so the same options give the same
// bits on every machine. The option structs' defaults are the catalog's defaults.
//
//   nns::data::SpiralsOptions options;
//   options.classes = 2;
//   options.noise = 0.1;
//   nns::data::Dataset spirals = nns::data::make_spirals(options);  // inputs [600, 2]
//
// Points lie in about [-1, 1] on each axis; image pixels in [0, 1]. Class samples are as
// balanced as the sample count allows (the first classes get one more on a remainder).
// Values out of range throw ValueError naming the data set and the option.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/data/dataset.h"

namespace nns::data {

// Interleaved spiral arms, one per class (the CS231n / TensorFlow Playground set): the i-th of
// the m points of class c sits at radius r = i / (m - 1) and angle 4c + 4r + noise * N(0, 1).
struct SpiralsOptions {
  int64_t samples = 600;
  int64_t classes = 3;
  double noise = 0.2;  // standard deviation of the angle, in radians
  uint64_t seed = 0;
};
Dataset make_spirals(const SpiralsOptions& options);

// Two interleaving half circles (scikit-learn's make_moons), centered on the origin.
struct MoonsOptions {
  int64_t samples = 500;
  double noise = 0.1;  // standard deviation of the Gaussian added to each coordinate
  uint64_t seed = 0;
};
Dataset make_moons(const MoonsOptions& options);

// An outer circle of radius 1 (class 0) around an inner one of radius `factor` (class 1).
struct CirclesOptions {
  int64_t samples = 500;
  double noise = 0.05;  // standard deviation of the Gaussian added to each coordinate
  double factor = 0.5;  // inner radius, in (0, 1)
  uint64_t seed = 0;
};
Dataset make_circles(const CirclesOptions& options);

// Points spread evenly over the four quadrants of [-1, 1]^2: class 0 where x and y have the
// same sign, class 1 where they differ.
struct XorOptions {
  int64_t samples = 500;
  double noise = 0.05;  // Gaussian jitter added after labelling, so some points cross over
  uint64_t seed = 0;
};
Dataset make_xor(const XorOptions& options);

// Gaussian clusters, one per class, around centers drawn uniformly from [-center_range,
// center_range]^dims.
struct BlobsOptions {
  int64_t samples = 500;
  int64_t classes = 3;
  int64_t dims = 2;
  double noise = 0.2;  // the spread: standard deviation of every cluster along every axis
  double center_range = 1.0;
  uint64_t seed = 0;
};
Dataset make_blobs(const BlobsOptions& options);

// Uniform points in [-1, 1]^2 on a tiles x tiles board of alternating classes.
struct CheckerboardOptions {
  int64_t samples = 1000;
  int64_t tiles = 4;
  double noise = 0.02;  // Gaussian jitter added after labelling
  uint64_t seed = 0;
};
Dataset make_checkerboard(const CheckerboardOptions& options);

// y = f(x) + noise * N(0, 1) for x uniform in [-1, 1]; inputs [N, 1], targets float32 [N, 1].
// Curves: "xsin" x sin(2 pi x), "sine" sin(pi x), "cubic" 2x^3 - x, "step" 0.5 sign(x).
struct CurveOptions {
  int64_t samples = 200;
  double noise = 0.1;
  std::string curve = "xsin";
  uint64_t seed = 0;
};
Dataset make_curve(const CurveOptions& options);
// The curve names make_curve knows, in catalog order.
const std::vector<std::string>& curve_names();

// Digits 0-9 drawn with strokes (lines and elliptic arcs) onto size x size grayscale images,
// anti-aliased, each with its own random shift, scale, rotation, shear, stroke width and ink
// level, plus Gaussian pixel noise; pixels clamped to [0, 1]. Inputs [N, 1, size, size];
// sample i shows digit i % 10.
struct DigitsOptions {
  // With the other defaults, 3000 training images take a 64-128-10 MLP to about 97% test
  // accuracy (2000 leave it near 94%).
  int64_t samples = 4000;
  int64_t size = 8;       // image side in pixels
  double noise = 0.1;     // standard deviation of the pixel noise
  double shift = 0.12;    // largest shift of the digit, as a fraction of the image side
  double distortion = 1;  // scales the random rotation, shear, scale and stroke width (0: none)
  uint64_t seed = 0;
};
Dataset make_digits(const DigitsOptions& options);

}  // namespace nns::data
