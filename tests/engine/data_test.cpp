// SPDX-License-Identifier: GPL-3.0-or-later
// nns::data: the generators (determinism, shapes, balance, the formulas), the catalog, splits
// and subsets, the data loader, and CSV files good and bad.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "engine/data/data.h"
#include "engine/ops/indexing.h"
#include "engine/tensor/factories.h"
#include "support/test_util.h"

namespace nns::data {
namespace {

// Same dtype, shape and bytes.
bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(),
                     static_cast<size_t>(a.numel()) * a.element_size()) == 0;
}

using test::expect_error;

// Samples i = 0..n-1 with feature i and class i % classes, to follow samples through splits.
Dataset numbered(int64_t n, int64_t classes) {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int64_t i = 0; i < n; ++i) {
    x.push_back(static_cast<float>(i));
    y.push_back(i % classes);
  }
  Dataset d;
  d.name = "numbered";
  d.inputs = from_vector(x, {n, 1});
  d.targets = from_vector(y, {n});
  d.num_classes = classes;
  return d;
}

std::vector<int64_t> ids(const Tensor& inputs) {
  std::vector<int64_t> out;
  for (float v : inputs.to_vector<float>()) out.push_back(static_cast<int64_t>(v));
  return out;
}

// A text file for the text data set (which has no default file), written once per process.
std::string sample_text_file() {
  static const std::string path = [] {
    const std::string p =
        (std::filesystem::path(::testing::TempDir()) / "nns_data_sample_text.txt").string();
    std::string text;
    for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }();
  return path;
}

// The options every catalog entry builds with: the text set needs its file.
DatasetOptions with_file(const std::string& name, DatasetOptions options = {}) {
  if (name == "text") options["file"] = sample_text_file();
  return options;
}

// ---- Generators --------------------------------------------------------------------------------

TEST(DataGeneratorsTest, SameSeedGivesTheSameBitsAndAnotherSeedOtherData) {
  for (const DatasetInfo& info : dataset_catalog()) {
    SCOPED_TRACE(info.name);
    const Dataset a = make_dataset(info.name, with_file(info.name, {{"seed", 7.0}}));
    const Dataset b = make_dataset(info.name, with_file(info.name, {{"seed", 7.0}}));
    const Dataset c = make_dataset(info.name, with_file(info.name, {{"seed", 8.0}}));
    EXPECT_TRUE(same_bits(a.inputs, b.inputs));
    EXPECT_TRUE(same_bits(a.targets, b.targets));
    EXPECT_FALSE(same_bits(a.inputs, c.inputs));
  }
}

TEST(DataGeneratorsTest, SpiralsKeepTheExampleFormula) {
  // The formula of app/cli/example.cpp: point i of class c at radius i / (m - 1) and angle
  // 4c + 4r + noise * randn, with one randn per point drawn first from Generator(seed).
  const Dataset d = make_spirals({.samples = 300, .classes = 3, .noise = 0.2, .seed = 5});
  Generator g(5);
  const std::vector<double> jitter = randn({300}, kFloat64, &g).to_vector<double>();
  const std::vector<float> xy = d.inputs.to_vector<float>();
  const std::vector<int64_t> labels = d.targets.to_vector<int64_t>();
  for (int64_t c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < 100; ++i) {
      const auto k = static_cast<size_t>(c * 100 + i);
      const double r = static_cast<double>(i) / 99;
      const double t = 4.0 * static_cast<double>(c) + 4.0 * r + 0.2 * jitter[k];
      ASSERT_EQ(xy[2 * k], static_cast<float>(r * std::sin(t)));
      ASSERT_EQ(xy[2 * k + 1], static_cast<float>(r * std::cos(t)));
      ASSERT_EQ(labels[k], c);
    }
  }
  EXPECT_EQ(d.inputs.sizes(), (Shape{300, 2}));
  EXPECT_EQ(d.inputs.dtype(), kFloat32);
  EXPECT_EQ(d.targets.dtype(), kInt64);
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.input_kind, InputKind::Points2D);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x1", "x2"}));
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"0", "1", "2"}));
}

TEST(DataGeneratorsTest, ClassesAreBalanced) {
  EXPECT_EQ(make_spirals({.samples = 601, .classes = 3}).class_counts(),
            (std::vector<int64_t>{201, 200, 200}));
  EXPECT_EQ(make_moons({.samples = 501}).class_counts(), (std::vector<int64_t>{251, 250}));
  EXPECT_EQ(make_circles({}).class_counts(), (std::vector<int64_t>{250, 250}));
  EXPECT_EQ(make_xor({.samples = 400}).class_counts(), (std::vector<int64_t>{200, 200}));
  EXPECT_EQ(make_blobs({.samples = 500, .classes = 3}).class_counts(),
            (std::vector<int64_t>{167, 167, 166}));
  EXPECT_EQ(make_digits({.samples = 1000}).class_counts(), std::vector<int64_t>(10, 100));
  // The checkerboard's classes are the halves of a fair board under uniform points.
  const std::vector<int64_t> board = make_checkerboard({.samples = 4000}).class_counts();
  EXPECT_NEAR(static_cast<double>(board[0]) / 4000, 0.5, 0.03);
}

TEST(DataGeneratorsTest, ShapesWithoutNoiseFollowTheirDefinitions) {
  const Dataset circles = make_circles({.samples = 200, .noise = 0, .factor = 0.3});
  const std::vector<float> c = circles.inputs.to_vector<float>();
  const std::vector<int64_t> cl = circles.targets.to_vector<int64_t>();
  for (size_t i = 0; i < cl.size(); ++i) {
    EXPECT_NEAR(std::hypot(c[2 * i], c[2 * i + 1]), cl[i] == 0 ? 1.0 : 0.3, 1e-6);
  }
  const Dataset moons = make_moons({.samples = 200, .noise = 0});
  const std::vector<float> m = moons.inputs.to_vector<float>();
  const std::vector<int64_t> ml = moons.targets.to_vector<int64_t>();
  for (size_t i = 0; i < ml.size(); ++i) {
    // Upper moon: unit circle around (-0.5, -0.25); lower one around (0.5, 0.25).
    const double cx = ml[i] == 0 ? -0.5 : 0.5;
    const double cy = ml[i] == 0 ? -0.25 : 0.25;
    EXPECT_NEAR(std::hypot(m[2 * i] - cx, m[2 * i + 1] - cy), 1.0, 1e-6);
  }
  const Dataset x = make_xor({.samples = 300, .noise = 0});
  const std::vector<float> xv = x.inputs.to_vector<float>();
  const std::vector<int64_t> xl = x.targets.to_vector<int64_t>();
  for (size_t i = 0; i < xl.size(); ++i) {
    EXPECT_EQ(xl[i], xv[2 * i] * xv[2 * i + 1] > 0 ? 0 : 1);
    EXPECT_LE(std::abs(xv[2 * i]), 1.0f);
  }
  const Dataset board = make_checkerboard({.samples = 500, .tiles = 3, .noise = 0});
  const std::vector<float> bv = board.inputs.to_vector<float>();
  const std::vector<int64_t> bl = board.targets.to_vector<int64_t>();
  for (size_t i = 0; i < bl.size(); ++i) {
    const auto tile = [](float v) { return static_cast<int64_t>(std::floor((v + 1) / 2 * 3)); };
    EXPECT_EQ(bl[i], (tile(bv[2 * i]) + tile(bv[2 * i + 1])) % 2);
  }
}

TEST(DataGeneratorsTest, BlobsInManyDimensionsSitAroundTheirCenters) {
  const Dataset d =
      make_blobs({.samples = 600, .classes = 4, .dims = 5, .noise = 0.05, .center_range = 2});
  EXPECT_EQ(d.inputs.sizes(), (Shape{600, 5}));
  EXPECT_EQ(d.input_kind, InputKind::Tabular);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"x1", "x2", "x3", "x4", "x5"}));
  // The per-class standard deviation along each axis is the spread.
  const std::vector<float> v = d.inputs.to_vector<float>();
  for (int64_t c = 0; c < 4; ++c) {
    double sum = 0;
    double sum2 = 0;
    for (int64_t i = c * 150; i < (c + 1) * 150; ++i) {
      sum += v[static_cast<size_t>(i * 5)];
      sum2 += v[static_cast<size_t>(i * 5)] * v[static_cast<size_t>(i * 5)];
    }
    const double mean = sum / 150;
    EXPECT_LE(std::abs(mean), 2.0 + 0.05);
    EXPECT_NEAR(std::sqrt(sum2 / 150 - mean * mean), 0.05, 0.01);
  }
}

TEST(DataGeneratorsTest, CurvesAreRegressionSetsOfTheirFunctions) {
  const std::vector<std::pair<std::string, double (*)(double)>> curves = {
      {"xsin", [](double x) { return x * std::sin(2 * std::numbers::pi * x); }},
      {"sine", [](double x) { return std::sin(std::numbers::pi * x); }},
      {"cubic", [](double x) { return 2 * x * x * x - x; }},
      {"step", [](double x) { return x < 0 ? -0.5 : 0.5; }},
  };
  ASSERT_EQ(curve_names().size(), curves.size());
  for (const auto& [name, f] : curves) {
    SCOPED_TRACE(name);
    const Dataset d = make_curve({.samples = 100, .noise = 0, .curve = name});
    EXPECT_EQ(d.task, TaskKind::Regression);
    EXPECT_EQ(d.input_kind, InputKind::Curve1D);
    EXPECT_EQ(d.inputs.sizes(), (Shape{100, 1}));
    EXPECT_EQ(d.targets.sizes(), (Shape{100, 1}));
    EXPECT_EQ(d.targets.dtype(), kFloat32);
    EXPECT_EQ(d.num_classes, 0);
    EXPECT_TRUE(d.class_counts().empty());
    const std::vector<float> x = d.inputs.to_vector<float>();
    const std::vector<float> y = d.targets.to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_GE(x[i], -1.0f);
      ASSERT_LT(x[i], 1.0f);
      ASSERT_NEAR(y[i], f(x[i]), 1e-6);
    }
  }
  // With noise the residuals have the noise's standard deviation.
  const Dataset noisy = make_curve({.samples = 4000, .noise = 0.1});
  const std::vector<float> x = noisy.inputs.to_vector<float>();
  const std::vector<float> y = noisy.targets.to_vector<float>();
  double sum2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double r = y[i] - x[i] * std::sin(2 * std::numbers::pi * x[i]);
    sum2 += r * r;
  }
  EXPECT_NEAR(std::sqrt(sum2 / 4000), 0.1, 0.005);
}

// The index of the nearest class centroid of the training images, for each test image.
double nearest_centroid_accuracy(const Dataset& train, const Dataset& test) {
  const int64_t d = train.inputs.numel() / train.size();
  const std::vector<float> xs = train.inputs.to_vector<float>();
  const std::vector<int64_t> ys = train.targets.to_vector<int64_t>();
  std::vector<double> centroids(static_cast<size_t>(10 * d), 0);
  std::vector<int64_t> counts(10, 0);
  for (size_t i = 0; i < ys.size(); ++i) {
    ++counts[static_cast<size_t>(ys[i])];
    for (int64_t k = 0; k < d; ++k) {
      centroids[static_cast<size_t>(ys[i] * d + k)] += xs[i * static_cast<size_t>(d) + k];
    }
  }
  for (int64_t c = 0; c < 10; ++c) {
    for (int64_t k = 0; k < d; ++k) {
      centroids[static_cast<size_t>(c * d + k)] /= static_cast<double>(counts[c]);
    }
  }
  const std::vector<float> xt = test.inputs.to_vector<float>();
  const std::vector<int64_t> yt = test.targets.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < yt.size(); ++i) {
    int64_t best = 0;
    double best_distance = INFINITY;
    for (int64_t c = 0; c < 10; ++c) {
      double distance = 0;
      for (int64_t k = 0; k < d; ++k) {
        const double e =
            xt[i * static_cast<size_t>(d) + k] - centroids[static_cast<size_t>(c * d + k)];
        distance += e * e;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    correct += best == yt[i] ? 1 : 0;
  }
  return static_cast<double>(correct) / static_cast<double>(yt.size());
}

TEST(DataDigitsTest, ImagesOfEveryDigitInTheUnitRange) {
  for (int64_t size : {8, 16}) {
    const Dataset d = make_digits({.samples = 500, .size = size});
    EXPECT_EQ(d.inputs.sizes(), (Shape{500, 1, size, size}));
    EXPECT_EQ(d.input_kind, InputKind::Image);
    EXPECT_EQ(d.image_height, size);
    EXPECT_EQ(d.image_width, size);
    EXPECT_EQ(d.num_classes, 10);
    EXPECT_EQ(d.class_names.back(), "9");
    EXPECT_EQ(d.class_counts(), std::vector<int64_t>(10, 50));
    const std::vector<float> pixels = d.inputs.to_vector<float>();
    EXPECT_EQ(*std::min_element(pixels.begin(), pixels.end()), 0.0f);
    EXPECT_EQ(*std::max_element(pixels.begin(), pixels.end()), 1.0f);
    // Strokes cover a fair part of each image, not all of it.
    double mean = 0;
    for (float p : pixels) mean += p;
    mean /= static_cast<double>(pixels.size());
    EXPECT_GT(mean, 0.1);
    EXPECT_LT(mean, 0.5);
  }
}

TEST(DataDigitsTest, NearestCentroidIsFarAboveChanceButNotPerfect) {
  const auto start = std::chrono::steady_clock::now();
  const DatasetSplit split = make_digits({}).split(0.25, 0);
  const double accuracy = nearest_centroid_accuracy(split.train, split.test);
  EXPECT_GT(accuracy, 0.5);  // chance is 0.1
  EXPECT_LT(accuracy, 0.9);  // shifts and distortion keep it from being a lookup (0.64)
  // Without shifts, distortion and noise every digit is its own template.
  const DatasetSplit clean = make_digits({.noise = 0, .shift = 0, .distortion = 0}).split(0.25, 0);
  EXPECT_EQ(nearest_centroid_accuracy(clean.train, clean.test), 1.0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

// ---- Catalog -----------------------------------------------------------------------------------

TEST(DataCatalogTest, EveryEntryBuildsWithItsDefaults) {
  const std::vector<DatasetInfo> catalog = dataset_catalog();
  std::vector<std::string> names;
  for (const DatasetInfo& info : catalog) names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"spirals", "moons", "circles", "xor", "blobs",
                                             "checkerboard", "curve", "digits", "parity", "reverse",
                                             "sort", "addition", "forecast", "text"}));
  for (const DatasetInfo& info : catalog) {
    SCOPED_TRACE(info.name);
    EXPECT_FALSE(info.description.empty());
    for (const OptionInfo& o : info.options) {
      EXPECT_FALSE(o.description.empty()) << o.name;
      if (o.type == OptionType::Choice) {
        EXPECT_NE(std::find(o.choices.begin(), o.choices.end(), o.default_choice), o.choices.end());
      } else if (o.type == OptionType::File) {
        EXPECT_FALSE(o.file_filter.empty()) << o.name;
      } else {
        EXPECT_LE(o.min, o.default_value) << o.name;
        EXPECT_LE(o.default_value, o.max) << o.name;
      }
    }
    const Dataset d = make_dataset(info.name, with_file(info.name));
    EXPECT_EQ(d.name, info.name);
    EXPECT_EQ(d.task, info.task);
    EXPECT_EQ(d.input_kind, info.input_kind);
    EXPECT_EQ(d.size(), static_cast<int64_t>(info.option("samples").default_value));
    // Token sequences are indices (for an Embedding); everything else is float32.
    const bool tokens = !d.vocabulary.empty();
    EXPECT_EQ(d.inputs.dtype(), tokens ? kInt64 : kFloat32);
    EXPECT_TRUE(d.inputs.is_contiguous());
    EXPECT_EQ(d.targets.dtype(), info.task == TaskKind::Classification ? kInt64 : kFloat32);
    EXPECT_EQ(static_cast<int64_t>(d.class_names.size()), d.num_classes);
    for (int64_t count : d.class_counts()) EXPECT_GT(count, 0);
    if (tokens) {
      const auto vocabulary = static_cast<int64_t>(d.vocabulary.size());
      for (int64_t v : d.inputs.to_vector<int64_t>()) ASSERT_TRUE(v >= 0 && v < vocabulary);
    } else {
      for (float v : d.inputs.to_vector<float>()) ASSERT_TRUE(std::isfinite(v));
    }
    // Class targets are classes, or (per position) the ignored marker.
    if (info.task == TaskKind::Classification) {
      for (int64_t y : d.targets.to_vector<int64_t>()) {
        ASSERT_TRUE((y >= 0 && y < d.num_classes) || (d.per_position() && y == kIgnoredPosition));
      }
    }
    // Every set splits (per-position sets by a plain random subset).
    const DatasetSplit split = d.split(0.2, 0);
    EXPECT_EQ(split.train.size() + split.test.size(), d.size());
  }
}

TEST(DataCatalogTest, OptionsOverrideTheDefaults) {
  const Dataset d = make_dataset("spirals", {{"classes", 5.0}, {"samples", 50.0}});
  EXPECT_EQ(d.num_classes, 5);
  EXPECT_EQ(d.size(), 50);
  const Dataset curve = make_dataset("curve", {{"curve", std::string("step")}, {"noise", 0.0}});
  for (float y : curve.targets.to_vector<float>()) EXPECT_EQ(std::abs(y), 0.5f);
  EXPECT_EQ(make_dataset("digits", {{"size", 12.0}}).inputs.sizes(), (Shape{4000, 1, 12, 12}));
  EXPECT_EQ(make_dataset("blobs", {{"dims", 3.0}}).inputs.size(1), 3);
}

TEST(DataCatalogTest, UnknownNamesAndBadValuesAreRefused) {
  expect_error<KeyError>([] { make_dataset("spiral"); }, {"unknown data set 'spiral'",
                                                          "spirals, moons, circles, xor, blobs, "
                                                          "checkerboard, curve, digits"});
  expect_error<KeyError>(
      [] {
        make_dataset("moons", {{"classes", 3.0}});
      },
      {"moons: unknown option 'classes'", "samples, noise, seed"});
  expect_error<ValueError>(
      [] {
        make_dataset("spirals", {{"classes", 12.0}});
      },
      {"spirals: option 'classes' must be in [2, 10], got 12"});
  expect_error<ValueError>(
      [] {
        make_dataset("spirals", {{"classes", 2.5}});
      },
      {"option 'classes' must be a whole number, got 2.5"});
  expect_error<ValueError>(
      [] {
        make_dataset("moons", {{"noise", -0.1}});
      },
      {"moons: option 'noise' must be in [0, 10], got -0.1"});
  expect_error<ValueError>(
      [] {
        make_dataset("moons", {{"noise", NAN}});
      },
      {"option 'noise' must be in [0, 10], got nan"});
  expect_error<ValueError>(
      [] {
        make_dataset("moons", {{"noise", std::string("high")}});
      },
      {"option 'noise' expects a number, got the string 'high'"});
  expect_error<ValueError>(
      [] {
        make_dataset("curve", {{"curve", 2.0}});
      },
      {"option 'curve' expects one of 'xsin', 'sine', 'cubic', 'step'"});
  expect_error<ValueError>(
      [] {
        make_dataset("curve", {{"curve", std::string("tan")}});
      },
      {"option 'curve' must be one of 'xsin'", "got 'tan'"});
  expect_error<ValueError>(
      [] {
        make_dataset("digits", {{"samples", 1e6}});
      },
      {"digits: option 'samples' must be in [10, 20000]"});
  // The make_* functions check against the same catalog, plus limits between options.
  expect_error<ValueError>([] { make_spirals({.samples = 100, .classes = 1}); },
                           {"spirals: option 'classes' must be in [2, 10], got 1"});
  expect_error<ValueError>([] { make_blobs({.samples = 3, .classes = 4}); },
                           {"blobs: option 'samples' must be at least 4 (one point per blob), "
                            "got 3"});
  expect_error<ValueError>([] { make_circles({.factor = 1.5}); },
                           {"circles: option 'factor' must be in [0.01, 0.99], got 1.5"});
  expect_error<KeyError>([] { dataset_info("blobs").option("size"); },
                         {"blobs: unknown option 'size'; its options are samples, classes, dims, "
                          "noise, center_range, seed"});
}

// ---- Split and subset --------------------------------------------------------------------------

TEST(DataSplitTest, StratifiedDisjointAndComplete) {
  const Dataset d = numbered(103, 3);  // 35, 34, 34 per class
  const DatasetSplit s = d.split(0.2, 4);
  EXPECT_EQ(s.test.size(), 21);  // round(20.6)
  EXPECT_EQ(s.train.size(), 82);
  std::vector<int64_t> all = ids(s.train.inputs);
  const std::vector<int64_t> test = ids(s.test.inputs);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));  // original order kept
  EXPECT_TRUE(std::is_sorted(test.begin(), test.end()));
  all.insert(all.end(), test.begin(), test.end());
  std::sort(all.begin(), all.end());
  std::vector<int64_t> expected(103);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
  // Targets follow their inputs, and each class gives 20% to the test set: 7 each.
  for (const Dataset* part : {&s.train, &s.test}) {
    const std::vector<int64_t> x = ids(part->inputs);
    const std::vector<int64_t> y = part->targets.to_vector<int64_t>();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] % 3);
  }
  EXPECT_EQ(s.test.class_counts(), (std::vector<int64_t>{7, 7, 7}));
  EXPECT_EQ(s.train.name, "numbered");
  EXPECT_EQ(s.train.num_classes, 3);
}

TEST(DataSplitTest, DeterministicBySeed) {
  const Dataset d = make_moons({});
  EXPECT_TRUE(same_bits(d.split(0.3, 1).test.inputs, d.split(0.3, 1).test.inputs));
  EXPECT_FALSE(same_bits(d.split(0.3, 1).test.inputs, d.split(0.3, 2).test.inputs));
  const DatasetSplit r = make_curve({.samples = 50}).split(0.3, 0);
  EXPECT_EQ(r.test.size(), 15);
  EXPECT_EQ(r.train.size(), 35);
  EXPECT_EQ(r.test.targets.sizes(), (Shape{15, 1}));
  EXPECT_EQ(d.split(0, 0).test.size(), 0);
  EXPECT_EQ(d.split(0, 0).test.inputs.sizes(), (Shape{0, 2}));
}

TEST(DataSplitTest, BadFractionsAndLabelsAreRefused) {
  const Dataset d = numbered(3, 1);
  expect_error<ValueError>([&] { d.split(1.0, 0); },
                           {"Dataset 'numbered' split: test_fraction must be in [0, 1)"});
  expect_error<ValueError>([&] { d.split(-0.5, 0); }, {"must be in [0, 1)"});
  expect_error<ValueError>([&] { d.split(0.9, 0); },
                           {"0.900000 of 3 samples leaves no training sample"});
  // Targets that do not fit num_classes (a data set put together by hand).
  Dataset wrong = numbered(5, 2);
  wrong.num_classes = 1;
  expect_error<ValueError>([&] { wrong.split(0.2, 0); },
                           {"sample 1 has class 1, outside [0, num_classes = 1)"});
  wrong.targets = wrong.targets.to(kFloat32);
  expect_error<DtypeError>([&] { wrong.class_counts(); },
                           {"class_counts: classification targets must be int64 [N] class "
                            "indices, got torch.float32 [5]"});
}

TEST(DataSubsetTest, PicksRowsInOrderAndChecksRange) {
  const Dataset d = numbered(10, 2);
  const Dataset s = d.subset({9, 0, 9});
  EXPECT_EQ(ids(s.inputs), (std::vector<int64_t>{9, 0, 9}));
  EXPECT_EQ(s.targets.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(d.subset({}).size(), 0);
  expect_error<IndexError>(
      [&] {
        d.subset({1, 10});
      },
      {"Dataset 'numbered' subset: index 10 (at position 1) is out of range", "[0, 10)"});
  expect_error<IndexError>([&] { d.subset({-1}); }, {"index -1"});
}

// ---- DataLoader --------------------------------------------------------------------------------

TEST(DataLoaderTest, EveryEpochCoversEverySampleOnce) {
  const Dataset d = numbered(103, 3);
  const DataLoader loader(d, {.batch_size = 10, .shuffle = true, .seed = 3});
  EXPECT_EQ(loader.num_batches(), 11);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    int64_t batches = 0;
    for (const Batch& batch : loader.epoch(epoch)) {
      const std::vector<int64_t> x = ids(batch.inputs);
      const std::vector<int64_t> y = batch.targets.to_vector<int64_t>();
      EXPECT_EQ(batch.inputs.size(0), batches < 10 ? 10 : 3);
      for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], x[i] % 3);
      seen.insert(seen.end(), x.begin(), x.end());
      ++batches;
    }
    EXPECT_EQ(batches, 11);
    std::sort(seen.begin(), seen.end());
    std::vector<int64_t> expected(103);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(seen, expected);
  }
}

TEST(DataLoaderTest, ReshufflesEachEpochReproducibly) {
  const Dataset d = numbered(50, 2);
  const DataLoader a(d, {.batch_size = 8, .seed = 11});
  const DataLoader b(d, {.batch_size = 8, .seed = 11});
  const DataLoader c(d, {.batch_size = 8, .seed = 12});
  EXPECT_TRUE(same_bits(a.order(0), b.order(0)));
  EXPECT_TRUE(same_bits(a.order(5), b.order(5)));
  EXPECT_FALSE(same_bits(a.order(0), a.order(1)));
  EXPECT_FALSE(same_bits(a.order(0), c.order(0)));
  // Epoch e is torch.randperm(N, generator=torch.Generator().manual_seed(epoch_seed(seed, e))).
  Generator g(epoch_seed(11, 2));
  EXPECT_TRUE(same_bits(a.order(2), randperm(50, &g)));
  EXPECT_TRUE(
      same_bits(a.epoch(2)[1].inputs, index_select(d.inputs, 0, a.order(2).slice(0, 8, 16))));
  EXPECT_NE(epoch_seed(1, 0), epoch_seed(0, 1));
}

TEST(DataLoaderTest, InOrderWithoutShuffleAndDropLast) {
  const Dataset d = numbered(10, 2);
  const DataLoader loader(d, {.batch_size = 4, .shuffle = false, .drop_last = true});
  EXPECT_EQ(loader.num_batches(), 2);
  const EpochBatches epoch = loader.epoch(0);
  ASSERT_EQ(epoch.size(), 2);
  EXPECT_EQ(ids(epoch[0].inputs), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ids(epoch[1].inputs), (std::vector<int64_t>{4, 5, 6, 7}));
  expect_error<IndexError>([&] { epoch[2]; }, {"DataLoader: batch 2 is out of range", "2 batches"});
  // Images keep their shape; regression targets their column.
  const DataLoader images(make_digits({.samples = 20}), {.batch_size = 6});
  EXPECT_EQ(images.epoch(0)[3].inputs.sizes(), (Shape{2, 1, 8, 8}));
  const DataLoader curve(make_curve({.samples = 20}), {.batch_size = 6});
  EXPECT_EQ(curve.epoch(0)[0].targets.sizes(), (Shape{6, 1}));
  expect_error<ValueError>([&] { DataLoader(d, {.batch_size = 0}); },
                           {"DataLoader: batch_size must be at least 1, got 0"});
}

// ---- CSV ---------------------------------------------------------------------------------------

using DataCsvTest = test::TempDirTest;

TEST_F(DataCsvTest, StringClassesAreNumberedInSortedOrder) {
  const std::string path = write("flowers.csv",
                                 "\xEF\xBB\xBF"
                                 "length, width ,species\r\n"
                                 "1.5,2,virginica\r\n"
                                 "\r\n"
                                 "-3e-1, \"4\",setosa\r\n"
                                 "5,+6,\"versi, color\"\r\n"
                                 "7,8,setosa\r\n\n\n");
  const Dataset d = load_csv(path, "species");
  EXPECT_EQ(d.name, "flowers");
  EXPECT_EQ(d.task, TaskKind::Classification);
  EXPECT_EQ(d.input_kind, InputKind::Points2D);
  EXPECT_EQ(d.feature_names, (std::vector<std::string>{"length", "width"}));
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"setosa", "versi, color", "virginica"}));
  EXPECT_EQ(d.num_classes, 3);
  EXPECT_EQ(d.inputs.to_vector<float>(), (std::vector<float>{1.5f, 2, -0.3f, 4, 5, 6, 7, 8}));
  EXPECT_EQ(d.targets.to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, 0}));
}

TEST_F(DataCsvTest, IntegerClassesSortNumericallyAndRegressionKeepsNumbers) {
  const std::string path = write("t.csv", "label,a,b,c\n10,1,2,3\n2,4,5,6\n-1,7,8,9\n2,0,0,0\n");
  const Dataset d = load_csv(path, "label");
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"-1", "2", "10"}));
  EXPECT_EQ(d.targets.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 0, 1}));
  EXPECT_EQ(d.input_kind, InputKind::Tabular);
  EXPECT_EQ(d.inputs.sizes(), (Shape{4, 3}));
  const Dataset r = load_csv(path, "b", {.task = TaskKind::Regression});
  EXPECT_EQ(r.task, TaskKind::Regression);
  EXPECT_EQ(r.targets.sizes(), (Shape{4, 1}));
  EXPECT_EQ(r.targets.to_vector<float>(), (std::vector<float>{2, 5, 8, 0}));
  EXPECT_EQ(r.feature_names, (std::vector<std::string>{"label", "a", "c"}));
  EXPECT_EQ(r.num_classes, 0);
  // The loaded set splits and batches like a built-in one.
  EXPECT_EQ(DataLoader(d.split(0.5, 0).train, {.batch_size = 1}).num_batches(), 2);
}

TEST_F(DataCsvTest, StandardizeGivesZeroMeanUnitStd) {
  const std::string path = write("s.csv", "x,k,y\n1,5,a\n2,5,b\n3,5,a\n4,5,b\n");
  const Dataset d = load_csv(path, "y", {.standardize = true});
  const std::vector<float> v = d.inputs.to_vector<float>();
  const double s = 1 / std::sqrt(1.25);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(v[static_cast<size_t>(2 * i)], (i + 1 - 2.5) * s, 1e-6);
    EXPECT_EQ(v[static_cast<size_t>(2 * i + 1)], 0.0f);  // a constant column is only centered
  }
}

TEST_F(DataCsvTest, BadFilesGiveErrorsWithLineAndColumn) {
  expect_error<ValueError>(
      [&] { load_csv(write("a.csv", "x,y,label\n1,2,a\n3,abc,b\n"), "label"); },
      {"load_csv: ", "a.csv:3, column 2 ('y'): 'abc' is not a number"});
  expect_error<ValueError>([&] { load_csv(write("b.csv", "x,y,label\n1,2,a\n3,b\n"), "label"); },
                           {"b.csv:3: the row has 2 cells but the header has 3 columns"});
  expect_error<ValueError>([&] { load_csv(write("c.csv", "x,y,label\n1,2,a,\n"), "label"); },
                           {"c.csv:2: the row has 4 cells but the header has 3 columns"});
  expect_error<KeyError>([&] { load_csv(write("d.csv", "x,y,label\n1,2,a\n"), "class"); },
                         {"d.csv' has no column named 'class'; its columns are x, y, label"});
  expect_error<ValueError>([&] { load_csv(write("e.csv", ""), "label"); },
                           {"e.csv' is empty; expected a header row"});
  expect_error<ValueError>([&] { load_csv(write("f.csv", "\n \r\n"), "label"); }, {"is empty"});
  expect_error<ValueError>([&] { load_csv(write("g.csv", "x,label\n"), "label"); },
                           {"g.csv' has a header but no data rows"});
  expect_error<ValueError>([&] { load_csv((dir_ / "missing.csv").string(), "label"); },
                           {"cannot open", "missing.csv': no such file"});
  expect_error<ValueError>([&] { load_csv(dir_.string(), "label"); }, {"not a regular file"});
  expect_error<ValueError>([&] { load_csv(write("h.csv", "x,label\n,a\n"), "label"); },
                           {"h.csv:2, column 1 ('x'): the cell is empty"});
  expect_error<ValueError>([&] { load_csv(write("i.csv", "x,label\n1,\"a\n"), "label"); },
                           {"i.csv:2: the quote opened at column 2", "is not closed"});
  expect_error<ValueError>([&] { load_csv(write("j.csv", "x,x,label\n1,2,a\n"), "label"); },
                           {"columns 1 and 2 are both named 'x'"});
  expect_error<ValueError>([&] { load_csv(write("k.csv", "x,label\ninf,a\n"), "label"); },
                           {"k.csv:2, column 1 ('x'): 'inf' is not a finite float32 number"});
  expect_error<ValueError>([&] { load_csv(write("l.csv", "label\na\n"), "label"); },
                           {"has only the label column 'label'"});
  expect_error<ValueError>(
      [&] { load_csv(write("m.csv", "x,y\n1,a\n"), "y", {.task = TaskKind::Regression}); },
      {"m.csv:2, column 2 ('y'): 'a' is not a number; a regression target must be numeric"});
  expect_error<ValueError>([&] { load_csv(write("n.csv", "x,y\n1,1.5e999\n"), "x"); },
                           {"n.csv:2, column 2 ('y')"});
}

TEST_F(DataCsvTest, HugeFilesAreRefusedAtTheLimits) {
  std::string text = "x,label\n";
  for (int i = 0; i < 100; ++i) text += std::to_string(i) + "," + std::to_string(i) + "\n";
  const std::string path = write("big.csv", text);
  expect_error<ValueError>([&] { load_csv(path, "label", {.max_rows = 99}); },
                           {"has more than 99 data rows", "CsvOptions::max_rows"});
  expect_error<ValueError>([&] { load_csv(path, "label", {.max_bytes = 100}); },
                           {"bytes, more than the limit of 100"});
  expect_error<ValueError>(
      [&] { load_csv(path, "label", {.max_classes = 50}); },
      {"the label column 'label' has 100 distinct values", "use the regression task"});
  EXPECT_EQ(load_csv(path, "label", {.max_rows = 100}).num_classes, 100);
}

}  // namespace
}  // namespace nns::data
