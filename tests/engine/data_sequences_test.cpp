// SPDX-License-Identifier: GPL-3.0-or-later
// nns::data's sequence tasks (engine/data/sequences.h): what each target is, per sequence and
// per position, the ignored positions of addition, the forecast windows, the text file's
// vocabulary and windows, and the files and values that are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <string>
#include <vector>

#include "engine/data/data.h"
#include "support/test_util.h"

namespace nns::data {
namespace {

std::vector<int64_t> row(const std::vector<int64_t>& values, int64_t i, int64_t length) {
  return {values.begin() + i * length, values.begin() + (i + 1) * length};
}

TEST(DataSequencesTest, ParityIsTheXorOfTheBitsAndNoiseFlipsThatFraction) {
  const Dataset d = make_parity({.samples = 500, .length = 7});
  ASSERT_EQ(d.inputs.sizes(), (Shape{500, 7}));
  ASSERT_EQ(d.targets.sizes(), (Shape{500}));
  EXPECT_EQ(d.input_kind, InputKind::Sequence);
  EXPECT_EQ(d.vocabulary, (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"even", "odd"}));
  EXPECT_FALSE(d.per_position());
  const std::vector<int64_t> x = d.inputs.to_vector<int64_t>();
  const std::vector<int64_t> y = d.targets.to_vector<int64_t>();
  int64_t ones = 0;
  for (int64_t i = 0; i < 500; ++i) {
    const std::vector<int64_t> bits = row(x, i, 7);
    const int64_t count = std::count(bits.begin(), bits.end(), 1);
    ones += count;
    EXPECT_EQ(y[static_cast<size_t>(i)], count % 2) << "sample " << i;
  }
  EXPECT_NEAR(static_cast<double>(ones) / 3500.0, 0.5, 0.03);  // fair bits
  const Dataset noisy = make_parity({.samples = 4000, .length = 7, .noise = 0.2});
  const std::vector<int64_t> nx = noisy.inputs.to_vector<int64_t>();
  const std::vector<int64_t> ny = noisy.targets.to_vector<int64_t>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < 4000; ++i) {
    const std::vector<int64_t> bits = row(nx, i, 7);
    wrong += ny[static_cast<size_t>(i)] != std::count(bits.begin(), bits.end(), 1) % 2;
  }
  // A replaced label is random, so half of the replaced ones stay right: about noise / 2.
  EXPECT_NEAR(static_cast<double>(wrong) / 4000.0, 0.1, 0.02);
}

TEST(DataSequencesTest, ReverseAndSortGiveAClassPerPosition) {
  const DigitSequenceOptions o{.samples = 300, .length = 5, .digits = 7};
  const Dataset reverse = make_reverse(o);
  const Dataset sort = make_sort(o);
  ASSERT_EQ(reverse.inputs.sizes(), (Shape{300, 5}));
  ASSERT_EQ(reverse.targets.sizes(), (Shape{300, 5}));
  EXPECT_TRUE(reverse.per_position());
  EXPECT_EQ(reverse.num_classes, 7);
  EXPECT_EQ(reverse.vocabulary.size(), 7u);
  // The same options draw the same inputs for both tasks.
  EXPECT_EQ(reverse.inputs.to_vector<int64_t>(), sort.inputs.to_vector<int64_t>());
  const std::vector<int64_t> x = reverse.inputs.to_vector<int64_t>();
  const std::vector<int64_t> yr = reverse.targets.to_vector<int64_t>();
  const std::vector<int64_t> ys = sort.targets.to_vector<int64_t>();
  for (int64_t i = 0; i < 300; ++i) {
    std::vector<int64_t> in = row(x, i, 5);
    for (int64_t v : in) ASSERT_TRUE(v >= 0 && v < 7);
    std::vector<int64_t> backwards(in.rbegin(), in.rend());
    EXPECT_EQ(row(yr, i, 5), backwards);
    std::sort(in.begin(), in.end());
    EXPECT_EQ(row(ys, i, 5), in);
  }
}

TEST(DataSequencesTest, AdditionWritesTheSumAtTheBlanksAndIgnoresTheRest) {
  const Dataset d = make_addition({.samples = 200, .digits = 3});
  constexpr int64_t kLength = 12;  // 3 digits, +, 3 digits, =, 4 blanks
  ASSERT_EQ(d.inputs.sizes(), (Shape{200, kLength}));
  ASSERT_EQ(d.targets.sizes(), (Shape{200, kLength}));
  EXPECT_TRUE(d.per_position());
  ASSERT_EQ(d.vocabulary.size(), 13u);
  EXPECT_EQ(d.vocabulary[10], "+");
  EXPECT_EQ(d.vocabulary[11], "=");
  EXPECT_EQ(d.vocabulary[12], "_");
  const std::vector<int64_t> x = d.inputs.to_vector<int64_t>();
  const std::vector<int64_t> y = d.targets.to_vector<int64_t>();
  for (int64_t i = 0; i < 200; ++i) {
    const std::vector<int64_t> in = row(x, i, kLength);
    const std::vector<int64_t> out = row(y, i, kLength);
    ASSERT_EQ(in[3], 10);
    ASSERT_EQ(in[7], 11);
    const int64_t a = in[0] * 100 + in[1] * 10 + in[2];
    const int64_t b = in[4] * 100 + in[5] * 10 + in[6];
    const int64_t sum = a + b;
    for (int64_t k = 0; k < 8; ++k) EXPECT_EQ(out[static_cast<size_t>(k)], kIgnoredPosition);
    for (int64_t k = 8; k < kLength; ++k) EXPECT_EQ(in[static_cast<size_t>(k)], 12);
    EXPECT_EQ(out[8] * 1000 + out[9] * 100 + out[10] * 10 + out[11], sum) << a << " + " << b;
  }
}

TEST(DataSequencesTest, ForecastWindowsEndWhereTheirTargetContinues) {
  const Dataset d = make_forecast({.samples = 50, .length = 16, .noise = 0, .wave = "sine"});
  ASSERT_EQ(d.inputs.sizes(), (Shape{50, 16, 1}));
  ASSERT_EQ(d.targets.sizes(), (Shape{50, 1}));
  EXPECT_EQ(d.task, TaskKind::Regression);
  EXPECT_TRUE(d.vocabulary.empty());
  const std::vector<float> x = d.inputs.to_vector<float>();
  const std::vector<float> y = d.targets.to_vector<float>();
  for (int64_t i = 0; i < 50; ++i) {
    // A noiseless sine of one period: the values stay in [-1, 1], and the target is the
    // continuation: v[t+1] = 2 cos(w) v[t] - v[t-1] for any sampled sinusoid.
    const float* v = x.data() + i * 16;
    for (int t = 0; t < 16; ++t) ASSERT_LE(std::abs(v[t]), 1.0f + 1e-6f);
    const double c = (v[2] + v[0]) / (2.0 * v[1]);
    if (std::abs(v[1]) < 0.2) continue;  // the ratio is ill-conditioned near a zero
    EXPECT_NEAR(2 * c * v[15] - v[14], y[static_cast<size_t>(i)], 2e-3) << "window " << i;
  }
  const Dataset saw = make_forecast({.samples = 20, .length = 8, .noise = 0, .wave = "sawtooth"});
  for (float v : saw.inputs.to_vector<float>()) ASSERT_TRUE(v >= -1 && v < 1);
}

using DataTextTest = test::TempDirTest;

TEST_F(DataTextTest, WindowsPredictTheNextCharacterOverTheFilesBytes) {
  const std::string text = "abcab cab\nbca";
  const Dataset d = make_text({.file = write("t.txt", text), .samples = 100, .length = 4});
  ASSERT_EQ(d.inputs.sizes(), (Shape{100, 4}));
  ASSERT_EQ(d.targets.sizes(), (Shape{100, 4}));
  EXPECT_TRUE(d.per_position());
  // The distinct bytes in byte order, shown as tokens: newline, space, a, b, c.
  EXPECT_EQ(d.vocabulary, (std::vector<std::string>{"\u23CE", "\u2423", "a", "b", "c"}));
  EXPECT_EQ(d.class_names, d.vocabulary);
  const std::string bytes = "\n abc";
  const std::vector<int64_t> x = d.inputs.to_vector<int64_t>();
  const std::vector<int64_t> y = d.targets.to_vector<int64_t>();
  for (int64_t i = 0; i < 100; ++i) {
    std::string window;
    for (int64_t t = 0; t < 4; ++t) window += bytes[static_cast<size_t>(x[i * 4 + t])];
    const size_t at = text.find(window);
    ASSERT_NE(at, std::string::npos) << window;
    // Each target is the input shifted by one: the character after each place.
    for (int64_t t = 0; t < 3; ++t) EXPECT_EQ(y[i * 4 + t], x[i * 4 + t + 1]);
    EXPECT_NE(text.find(window + bytes[static_cast<size_t>(y[i * 4 + 3])]), std::string::npos);
  }
}

TEST_F(DataTextTest, MissingShortAndBinaryFilesAreRefusedByName) {
  test::expect_error<ValueError>([] { make_text({}); }, {"text: pick a text file"});
  const std::string missing = (dir_ / "none.txt").string();
  test::expect_error<ValueError>([&] { make_text({.file = missing}); },
                                 {"text: the file '" + missing + "' cannot be opened"});
  const std::string short_file = write("short.txt", "abc");
  test::expect_error<ValueError>([&] { make_text({.file = short_file, .length = 8}); },
                                 {"has 3 bytes, fewer than length + 1 = 9"});
  const std::string binary = write("b.bin", std::string("abc\0def\0ghijklmnopqrstuvwxyz", 28));
  test::expect_error<ValueError>([&] { make_text({.file = binary, .length = 4}); },
                                 {"holds NUL bytes: it is not text"});
}

TEST(DataSequencesTest, CatalogOptionsAreCheckedAndAFileIsAPath) {
  test::expect_error<ValueError>(
      [] {
        make_dataset("reverse", {{"digits", 11.0}});
      },
      {"reverse: option 'digits' must be in [2, 10], got 11"});
  test::expect_error<ValueError>(
      [] {
        make_dataset("parity", {{"noise", 1.5}});
      },
      {"parity: option 'noise' must be in [0, 1], got 1.5"});
  test::expect_error<ValueError>(
      [] {
        make_dataset("forecast", {{"wave", std::string("square")}});
      },
      {"forecast: option 'wave' must be one of 'sine', 'sawtooth'"});
  test::expect_error<ValueError>(
      [] {
        make_dataset("text", {{"file", 3.0}});
      },
      {"text: option 'file' expects the path of a file, got the number 3"});
  EXPECT_EQ(dataset_info("text").option("file").type, OptionType::File);
}

}  // namespace
}  // namespace nns::data
