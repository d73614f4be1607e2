// SPDX-License-Identifier: GPL-3.0-or-later
// Your own data's transforms and loading (engine/data/transforms.h, sources.h, image.h): the
// text round trip and its refusals, the random transforms (seeded per sample, a window of the
// padded image, padding that is black after Normalize, drawn anew each epoch by the DataLoader
// and replaced by centre crops for a test set), and images a decoder must refuse. Pixel values
// against torchvision itself are in tests/torch/own_data.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "engine/data/dataloader.h"
#include "engine/data/image.h"
#include "engine/data/sources.h"
#include "engine/data/transforms.h"
#include "engine/ops/indexing.h"
#include "engine/serialize/bytes.h"
#include "engine/tensor/factories.h"
#include "support/test_util.h"

namespace nns::data {
namespace {

using test::expect_error;

// A 3-channel image whose every pixel is distinct, so any crop or flip shows.
Image pattern(int64_t h, int64_t w) {
  Image image(h, w, 3);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      for (int64_t c = 0; c < 3; ++c) image.at(y, x, c) = static_cast<uint8_t>(7 * y + 3 * x + c);
    }
  }
  return image;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().raw_data(), b.contiguous().raw_data(),
                     static_cast<size_t>(a.numel()) * a.element_size()) == 0;
}

TEST(DataTransforms, TextRoundTripsAsTorchvisionCalls) {
  const std::string text =
      "Resize((40, 48)), CenterCrop(36), RandomCrop(32, padding=4), "
      "RandomHorizontalFlip(p=0.25), Grayscale(num_output_channels=3), ToTensor(), "
      "Normalize(mean=(0.5, 0.25, 0.125), std=(0.5, 0.5, 0.5))";
  const std::vector<Transform> t = parse_transforms(text);
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(transforms_text(t), text);
  // Positional and keyword arguments as torchvision takes them, and its module prefix.
  EXPECT_EQ(
      transforms_text(parse_transforms("T.Resize(size=8), transforms.RandomCrop(4, 2, True)")),
      "Resize(8), RandomCrop(4, padding=2, pad_if_needed=True)");
  EXPECT_EQ(transforms_text(parse_transforms("ToTensor(), Normalize([0.5], [0.2])")),
            "ToTensor(), Normalize(mean=(0.5,), std=(0.2,))");
  EXPECT_TRUE(parse_transforms("  ").empty());
}

TEST(DataTransforms, RefusesWhatTorchvisionWouldNotRun) {
  expect_error<ValueError>([&] { parse_transforms("Rotate(30)"); }, {"unknown transform 'Rotate'"});
  expect_error<ValueError>([&] { parse_transforms("Normalize((0.5,), (0.5,)), ToTensor()"); },
                           {"put ToTensor() before it"});
  expect_error<ValueError>([&] { parse_transforms("ToTensor(), Resize(8)"); },
                           {"Resize works on images"});
  expect_error<ValueError>([&] { parse_transforms("Resize(0)"); }, {"whole number of at least 1"});
  expect_error<ValueError>([&] { parse_transforms("Resize(8, antialias=True)"); },
                           {"no argument 'antialias'"});
  expect_error<ValueError>([&] { parse_transforms("Normalize(mean=(0.5, 0.5), std=(0.5,))"); },
                           {"one number per channel"});
  expect_error<ValueError>([&] { parse_transforms("Normalize(mean=(0.5,), std=(0,))"); },
                           {"greater than 0"});
  expect_error<ValueError>([&] { parse_transforms("Resize(8"); }, {"ends too early"});
  expect_error<ValueError>([&] { plan_transforms(parse_transforms("RandomCrop(8), Resize(4)")); },
                           {"before the random transforms"});
  // A Normalize for another number of channels is refused when it meets an image.
  expect_error<ValueError>(
      [&] {
        apply_transforms(parse_transforms("ToTensor(), Normalize((0.5, 0.5), (1, 1))"),
                         pattern(4, 4), 0);
      },
      {"2 means and stds for an image with 3 channels"});
}

TEST(DataTransforms, RandomCropIsAWindowOfThePaddedImageWithBlackPadding) {
  const std::vector<Transform> fixed = parse_transforms("ToTensor(), Normalize((0.5,), (0.25,))");
  const Tensor whole = apply_transforms(fixed, pattern(6, 5), 0);
  const std::vector<Transform> random =
      parse_transforms("RandomCrop(6, padding=2), ToTensor(), Normalize((0.5,), (0.25,))");
  // Black after Normalize, in float32 as torchvision computes it.
  const float black = (0.0f - 0.5f) / 0.25f;
  std::set<std::pair<int64_t, int64_t>> corners;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const Tensor crop = apply_transforms(random, pattern(6, 5), seed);
    ASSERT_EQ(crop.sizes(), (Shape{3, 6, 6}));
    EXPECT_TRUE(same(crop, apply_transforms(random, pattern(6, 5), seed)));  // repeatable
    bool found = false;
    for (int64_t top = 0; top <= 4 && !found; ++top) {
      for (int64_t left = 0; left <= 3 && !found; ++left) {
        bool match = true;
        for (int64_t c = 0; c < 3 && match; ++c) {
          for (int64_t y = 0; y < 6 && match; ++y) {
            for (int64_t x = 0; x < 6 && match; ++x) {
              const int64_t sy = top + y - 2, sx = left + x - 2;
              const float want = sy >= 0 && sy < 6 && sx >= 0 && sx < 5
                                     ? whole.data_ptr<float>()[(c * 6 + sy) * 5 + sx]
                                     : black;
              match = crop.data_ptr<float>()[(c * 6 + y) * 6 + x] == want;
            }
          }
        }
        if (match) {
          found = true;
          corners.insert({top, left});
        }
      }
    }
    EXPECT_TRUE(found) << "seed " << seed;
  }
  EXPECT_GT(corners.size(), 8u);  // the crops wander over the padded image
}

TEST(DataTransforms, TestSetsTakeCentreCropsAndNoFlips) {
  EXPECT_EQ(transforms_text(test_transforms(parse_transforms(
                "Resize(40), RandomCrop(32, padding=4), RandomHorizontalFlip(p=0.5), ToTensor()"))),
            "Resize(40), CenterCrop(32), ToTensor()");
  // On a data set whose inputs wait for their random transforms: the same centre crop as the
  // deterministic pipeline gives.
  Dataset d;
  d.input_kind = InputKind::Image;
  d.inputs = stack({apply_transforms(parse_transforms("ToTensor()"), pattern(9, 8), 0)}, 0);
  d.targets = zeros({1}, kInt64);
  d.augmentation = std::make_shared<TransformPlan>(
      plan_transforms(parse_transforms("RandomCrop(5), RandomHorizontalFlip(), ToTensor()")));
  const Dataset test = without_augmentation(d);
  EXPECT_FALSE(test.augmentation);
  EXPECT_TRUE(
      same(test.inputs.select(0, 0),
           apply_transforms(parse_transforms("CenterCrop(5), ToTensor()"), pattern(9, 8), 0)));
  EXPECT_EQ(test.image_height, 5);
}

TEST(DataTransforms, TheDataLoaderDrawsTheRandomTransformsAnewEachEpoch) {
  Dataset d;
  d.input_kind = InputKind::Image;
  std::vector<Tensor> samples;
  for (int i = 0; i < 8; ++i) {
    samples.push_back(
        apply_transforms(parse_transforms("ToTensor()"), pattern(10 + i, 10), 0).narrow(1, 0, 10));
  }
  d.inputs = stack(samples, 0);
  d.targets = zeros({8}, kInt64);
  d.augmentation = std::make_shared<TransformPlan>(
      plan_transforms(parse_transforms("RandomCrop(6), RandomHorizontalFlip(), ToTensor()")));
  const DataLoader loader(d, {.batch_size = 8, .shuffle = false, .seed = 3});
  const Tensor epoch0 = loader.epoch(0)[0].inputs;
  EXPECT_EQ(epoch0.sizes(), (Shape{8, 3, 6, 6}));
  EXPECT_TRUE(same(epoch0, loader.epoch(0)[0].inputs));   // a replayed epoch repeats
  EXPECT_FALSE(same(epoch0, loader.epoch(1)[0].inputs));  // the next draws anew
  const DataLoader other(d, {.batch_size = 8, .shuffle = false, .seed = 4});
  EXPECT_FALSE(same(epoch0, other.epoch(0)[0].inputs));  // another seed, other crops
}

// An image folder of binary PGM files (which stb_image reads): 90 images, so they are decoded
// on every core (the tsan preset runs this), in ImageFolder's order, with an unreadable one
// left out and named.
class DataImageFolder : public test::TempDirTest {
 protected:
  // Three classes of 30 grey 3 x 4 images (every one a different grey, its pixels numbered
  // too), and one file without pixels.
  std::filesystem::path writeFolder() {
    const std::filesystem::path root = dir_ / "folder";
    for (int c = 0; c < 3; ++c) {
      const std::filesystem::path cls = root / ("class" + std::to_string(c));
      std::filesystem::create_directories(cls);
      for (int i = 0; i < 30; ++i) {
        char name[16];
        std::snprintf(name, sizeof name, "%02d.pgm", i);
        std::ofstream out(cls / name, std::ios::binary);
        out << "P5\n4 3\n255\n";
        for (int p = 0; p < 12; ++p) out.put(static_cast<char>(c * 80 + i + (p == 0 ? 0 : p)));
      }
    }
    std::ofstream(root / "class1" / "zz.pgm", std::ios::binary) << "P5\n4 3\n255\n";
    return root;
  }
};

TEST_F(DataImageFolder, DecodesOnEveryCoreInTorchvisionsOrderAndSkipsWhatItCannotRead) {
  const std::filesystem::path root = writeFolder();
  SourceOptions options;
  options.transforms = parse_transforms("ToTensor()");
  const Dataset d = load_source(root.string(), options).dataset;
  ASSERT_EQ(d.size(), 90);
  ASSERT_EQ(d.skipped.size(), 1u);
  EXPECT_NE(d.skipped[0].find("zz.pgm"), std::string::npos) << d.skipped[0];
  EXPECT_EQ(d.inputs.sizes(), (Shape{90, 3, 3, 4}));  // grey files become RGB, as ImageFolder's
  const std::vector<int64_t> labels = d.targets.to_vector<int64_t>();
  for (int64_t k = 0; k < 90; ++k) {
    EXPECT_EQ(labels[k], k / 30);
    EXPECT_EQ(d.inputs.data_ptr<float>()[k * 36],
              static_cast<float>((k / 30) * 80 + k % 30) / 255.0f);
  }
  EXPECT_EQ(d.class_names, (std::vector<std::string>{"class0", "class1", "class2"}));
}

// A set larger than the memory budget is streamed: nothing decoded is kept but a bounded cache,
// and every batch (random transforms included, over two epochs, shuffled) and every sample is
// what the set held in memory gives, bit for bit.
TEST_F(DataImageFolder, ASetLargerThanTheBudgetIsStreamedWithTheSameBatches) {
  const std::filesystem::path root = writeFolder();
  SourceOptions options;
  options.transforms = parse_transforms(
      "RandomCrop(3, padding=1), RandomHorizontalFlip(), ToTensor(), Normalize((0.5,), (0.2,))");
  options.defer_random = true;
  const Dataset held = load_source(root.string(), options).dataset;
  ASSERT_FALSE(held.stream);
  const int64_t sample_bytes = 3 * 3 * 4 * sizeof(float);
  options.max_decoded_bytes = 10 * sample_bytes;  // 10 of the 90 samples
  const Dataset streamed = load_source(root.string(), options).dataset;
  ASSERT_TRUE(streamed.stream);
  EXPECT_FALSE(streamed.inputs.defined());
  EXPECT_EQ(streamed.size(), 90);
  EXPECT_EQ(streamed.skipped, held.skipped);
  EXPECT_EQ(streamed.sample_shape(), (Shape{3, 3, 3}));  // after the random crop
  std::vector<int64_t> all(90);
  std::iota(all.begin(), all.end(), int64_t{0});
  EXPECT_TRUE(same(streamed.input_rows(all), held.inputs));

  const DataLoaderOptions loading{.batch_size = 16, .shuffle = true, .seed = 5};
  const DataLoader a(held, loading), b(streamed, loading);
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const EpochBatches ea = a.epoch(epoch), eb = b.epoch(epoch);
    ASSERT_EQ(ea.size(), eb.size());
    for (int64_t k = 0; k < ea.size(); ++k) {
      EXPECT_TRUE(same(ea[k].inputs, eb[k].inputs)) << "epoch " << epoch << " batch " << k;
      EXPECT_TRUE(same(ea[k].targets, eb[k].targets));
    }
  }
  EXPECT_LE(streamed.stream->cached_bytes(), 10 * sample_bytes);
  EXPECT_GT(streamed.stream->decodes(), 90);  // decoded again when the cache let them go
  // A split keeps streaming the training part; its test part is held, with the crops' centres.
  const DatasetSplit split = streamed.split(0.2, 0);
  EXPECT_TRUE(split.train.stream);
  const Dataset test = without_augmentation(split.test);
  EXPECT_FALSE(test.stream);
  EXPECT_EQ(test.inputs.sizes(), (Shape{split.test.size(), 3, 3, 3}));
}

TEST(DataImages, CorruptAndHostileFilesAreRefusedNamingThem) {
  expect_error<serialize::FileError>(
      [&] { decode_image(reinterpret_cast<const uint8_t*>("hello"), 5, "a.png"); },
      {"a.png: not an image"});
  // A PNG header that claims 100,000 x 100,000 pixels: refused before anything is allocated.
  const uint8_t png[] = {0x89, 'P',  'N', 'G', '\r', '\n', 0x1a, '\n', 0,    0, 0,
                         13,   'I',  'H', 'D', 'R',  0,    1,    0x86, 0xa0, 0, 1,
                         0x86, 0xa0, 8,   2,   0,    0,    0,    0,    0,    0, 0};
  expect_error<serialize::FileError>([&] { decode_image(png, sizeof png, "bomb.png"); },
                                     {"bomb.png"});
  // A JPEG cut off after its start: libjpeg's message, not a crash.
  const uint8_t jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0, 0, 16, 'J', 'F', 'I', 'F'};
  expect_error<serialize::FileError>([&] { decode_image(jpeg, sizeof jpeg, "cut.jpg"); },
                                     {"cut.jpg: corrupt JPEG"});
  expect_error<serialize::FileError>([&] { load_source("/nonexistent/folder", {}); },
                                     {"no such file or folder"});
}

}  // namespace
}  // namespace nns::data
