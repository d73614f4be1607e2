// SPDX-License-Identifier: GPL-3.0-or-later
// The generator and the random factories against torch 1.13 (tests/fixtures/random.json):
// every value must be the same bit for bit, not merely close.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/factories.h"
#include "support/fixtures.h"

namespace nns {
namespace {

using test::exactly_equal;
using test::Fixtures;

const Fixtures& fixtures() {
  return Fixtures::load("random");
}

// The seeds and sizes make_fixtures.py records (RANDOM_SEEDS, RANDOM_SIZES).
const std::vector<uint64_t> kSeeds = {0, 1, 42, 2024, 67280421310721ULL, (1ULL << 32) + 7};
const std::vector<int64_t> kSizes = {1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 257};

struct DtypeCase {
  const char* tag;
  Dtype dtype;
};
const DtypeCase kDtypes[] = {{"f32", kFloat32}, {"f64", kFloat64}};

std::string key(const std::string& op, const char* tag, uint64_t seed, int64_t n) {
  return op + "." + tag + ".seed" + std::to_string(seed) + ".n" + std::to_string(n);
}

TEST(GeneratorTest, DefaultSeedIsPyTorchs) {
  Generator g;
  EXPECT_EQ(g.initial_seed(), 67280421310721ULL);
}

TEST(GeneratorTest, Random64IsTwoDrawsFirstHigh) {
  Generator a(123), b(123);
  const uint64_t hi = a.random();
  const uint64_t lo = a.random();
  EXPECT_EQ(b.random64(), (hi << 32) | lo);
}

TEST(GeneratorTest, SeedsDifferingAbove32BitsGiveTheSameStream) {
  // PyTorch's Mersenne Twister keeps the low 32 bits of the seed; so do we.
  Generator a(7), b((1ULL << 32) + 7);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.random(), b.random());
  EXPECT_EQ(b.initial_seed(), (1ULL << 32) + 7);
}

TEST(GeneratorTest, ManualSeedDropsTheCachedNormal) {
  Generator g(1);
  randn({1}, kFloat64, &g);
  ASSERT_TRUE(g.next_double_normal_sample.has_value());
  g.manual_seed(1);
  EXPECT_FALSE(g.next_double_normal_sample.has_value());
}

TEST(RandomTest, RandAndRandnMatchTorchForEverySeedDtypeAndSize) {
  for (const auto& [tag, dtype] : kDtypes) {
    for (uint64_t seed : kSeeds) {
      for (int64_t n : kSizes) {
        manual_seed(seed);
        EXPECT_TRUE(exactly_equal(rand({n}, dtype), fixtures().tensor(key("rand", tag, seed, n))));
        manual_seed(seed);
        EXPECT_TRUE(
            exactly_equal(randn({n}, dtype), fixtures().tensor(key("randn", tag, seed, n))));
      }
    }
  }
}

TEST(RandomTest, LargeFillsMatchTorchChecksums) {
  for (const auto& [tag, dtype] : kDtypes) {
    for (uint64_t seed : {1, 3}) {
      const std::string suffix = ".seed" + std::to_string(seed) + ".n200000.checksum";
      manual_seed(seed);
      EXPECT_EQ(test::checksum(randn({200000}, dtype)),
                fixtures().scalar(std::string("randn.") + tag + suffix))
          << tag << " seed " << seed;
      manual_seed(seed);
      EXPECT_EQ(test::checksum(rand({200000}, dtype)),
                fixtures().scalar(std::string("rand.") + tag + suffix))
          << tag << " seed " << seed;
    }
  }
}

TEST(RandomTest, MultiDimensionalRandnMatchesTorch) {
  manual_seed(11);
  EXPECT_TRUE(exactly_equal(randn({3, 5, 7}), fixtures().tensor("randn.f32.seed11.shape3x5x7")));
}

TEST(RandomTest, HalfPrecisionRandMatchesTorch) {
  for (uint64_t seed : {0, 5}) {
    const std::string suffix = ".seed" + std::to_string(seed) + ".n20";
    manual_seed(seed);
    EXPECT_TRUE(exactly_equal(rand({20}, kFloat16), fixtures().tensor("rand.f16" + suffix)));
    manual_seed(seed);
    EXPECT_TRUE(exactly_equal(rand({20}, kBFloat16), fixtures().tensor("rand.bf16" + suffix)));
  }
}

TEST(RandomTest, ConsecutiveCallsConsumeTheStreamLikeTorch) {
  const auto& fx = fixtures();
  manual_seed(7);
  EXPECT_TRUE(exactly_equal(randn({3}, kFloat64), fx.tensor("sequence.0.randn3")));
  // The sine half of the last Box-Muller pair was cached by the previous call.
  EXPECT_TRUE(exactly_equal(randn({1}), fx.tensor("sequence.1.randn1")));
  EXPECT_TRUE(exactly_equal(rand({5}), fx.tensor("sequence.2.rand5")));
  EXPECT_TRUE(exactly_equal(randn({20}), fx.tensor("sequence.3.randn20")));
  EXPECT_TRUE(exactly_equal(randn({3}), fx.tensor("sequence.4.randn3")));
  EXPECT_TRUE(exactly_equal(randint(0, 10, {6}), fx.tensor("sequence.5.randint")));
  EXPECT_TRUE(exactly_equal(randn({5}, kFloat64), fx.tensor("sequence.6.randn5")));
  manual_seed(7);
  EXPECT_TRUE(exactly_equal(randn({1}, kFloat64), fx.tensor("sequence.7.after_reseed.randn1")));
}

TEST(RandomTest, InPlaceFillsWithParametersMatchTorch) {
  for (const auto& [tag, dtype] : kDtypes) {
    for (int64_t n : {5, 37}) {
      const std::string suffix = std::string(".") + tag + ".n" + std::to_string(n);
      Tensor u = empty({n}, dtype);
      manual_seed(3);
      uniform_(u, -2.5, 3.25);
      EXPECT_TRUE(exactly_equal(u, fixtures().tensor("uniform_" + suffix)));
      Tensor g = empty({n}, dtype);
      manual_seed(4);
      normal_(g, 0.3, 1.7);
      EXPECT_TRUE(exactly_equal(g, fixtures().tensor("normal_" + suffix)));
    }
  }
}

TEST(RandomTest, StridedFillsVisitElementsInMemoryOrder) {
  for (const auto& [tag, dtype] : kDtypes) {
    const std::string suffix = std::string(".") + tag + ".transposed5x4";
    Tensor a = empty({5, 4}, dtype).t();
    ASSERT_FALSE(a.is_contiguous());
    manual_seed(8);
    normal_(a, -1.0, 0.5);
    EXPECT_TRUE(exactly_equal(a, fixtures().tensor("normal_" + suffix)));
    Tensor b = empty({5, 4}, dtype).t();
    manual_seed(8);
    uniform_(b);
    EXPECT_TRUE(exactly_equal(b, fixtures().tensor("uniform_" + suffix)));
  }
}

TEST(RandomTest, RandintMatchesTorchForNarrowAndWideRanges) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {0, 10}, {-5, 17}, {0, int64_t{1} << 40}, {-(int64_t{1} << 35), int64_t{1} << 35}, {3, 4}};
  for (uint64_t seed : {0, 42}) {
    const std::string prefix = "randint.seed" + std::to_string(seed) + ".";
    for (const auto& [low, high] : ranges) {
      manual_seed(seed);
      EXPECT_TRUE(exactly_equal(
          randint(low, high, {50}),
          fixtures().tensor(prefix + std::to_string(low) + "_" + std::to_string(high))));
    }
    manual_seed(seed);
    EXPECT_TRUE(exactly_equal(randint(0, 100, {20}, kFloat32),
                              fixtures().tensor(prefix + "float32.0_100")));
  }
}

TEST(RandomTest, RandpermMatchesTorch) {
  for (uint64_t seed : {0, 42}) {
    for (int64_t n : {0, 1, 2, 10, 1000}) {
      manual_seed(seed);
      EXPECT_TRUE(exactly_equal(
          randperm(n),
          fixtures().tensor("randperm.seed" + std::to_string(seed) + ".n" + std::to_string(n))));
    }
  }
  manual_seed(9);
  EXPECT_EQ(test::checksum(randperm(100000)), fixtures().scalar("randperm.seed9.n100000.checksum"));
}

TEST(RandomTest, BernoulliMaskMatchesTorchBernoulli) {
  for (uint64_t seed : {0, 42}) {
    for (const char* p : {"0.0", "0.3", "0.9", "1.0"}) {
      manual_seed(seed);
      EXPECT_TRUE(
          exactly_equal(bernoulli_mask({40}, std::stod(p), kFloat32),
                        fixtures().tensor("bernoulli.seed" + std::to_string(seed) + ".p" + p)));
    }
  }
}

TEST(RandomTest, OwnGeneratorLeavesTheDefaultOneAlone) {
  manual_seed(0);
  const std::vector<float> expected = rand({4}).to_vector<float>();
  manual_seed(0);
  Generator g(99);
  Generator same(99);
  const Tensor a = randn({20}, {}, &g);
  EXPECT_EQ(a.to_vector<float>(), randn({20}, {}, &same).to_vector<float>());
  EXPECT_EQ(rand({4}).to_vector<float>(), expected);
}

TEST(RandomTest, LikeFactoriesKeepShapeAndDtype) {
  const Tensor base = zeros({2, 3}, kFloat64);
  manual_seed(0);
  const Tensor r = rand_like(base);
  manual_seed(0);
  EXPECT_EQ(r.to_vector<double>(), rand({2, 3}, kFloat64).to_vector<double>());
  EXPECT_EQ(randn_like(base).sizes(), (Shape{2, 3}));
  EXPECT_EQ(randn_like(base).dtype(), kFloat64);
}

TEST(RandomTest, RequiresGradOptionMakesALeaf) {
  const Tensor w = randn({3}, TensorOptions().requires_grad(true));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_FALSE(rand({3}).requires_grad());
}

TEST(RandomTest, InPlaceFillsBumpTheVersion) {
  Tensor t = zeros({4});
  const uint32_t before = t.version();
  uniform_(t);
  EXPECT_GT(t.version(), before);
}

TEST(RandomTest, FillingALeafThatRequiresGradNeedsNoGrad) {
  Tensor w = zeros({3}, TensorOptions().requires_grad(true));
  try {
    normal_(w);
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_STREQ(e.what(),
                 "normal_: the tensor requires grad, so filling it in place would hide the fill "
                 "from autograd; do it under NoGradGuard (as nn::init does)");
  }
  NoGradGuard no_grad;
  EXPECT_NO_THROW(normal_(w));
}

TEST(RandomTest, ConcurrentCallsEachTakeAWholeBlockOfTheStream) {
  manual_seed(5);
  const std::vector<float> serial = rand({2000}).to_vector<float>();
  const std::vector<float> first(serial.begin(), serial.begin() + 1000);
  const std::vector<float> second(serial.begin() + 1000, serial.end());
  manual_seed(5);
  std::vector<float> a, b;
  std::thread ta([&] { a = rand({1000}).to_vector<float>(); });
  std::thread tb([&] { b = rand({1000}).to_vector<float>(); });
  ta.join();
  tb.join();
  EXPECT_TRUE((a == first && b == second) || (a == second && b == first));
}

template <class E, class Fn>
void expect_error(Fn fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception with: " << message;
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(RandomTest, BadArgumentsThrowTypedErrorsThatNameTheFix) {
  expect_error<DtypeError>([] { rand({2}, kInt64); },
                           "rand: expected a floating point dtype, got torch.int64; use randint "
                           "for integers");
  expect_error<DtypeError>([] { randn({2}, kBool); },
                           "randn: expected a floating point dtype, got torch.bool; pass "
                           "kFloat32 or kFloat64");
  expect_error<ValueError>([] { randint(5, 3, {2}); },
                           "randint: low (5) must be less than high (3)");
  expect_error<ValueError>([] { randperm(-1); }, "randperm: n must be non-negative, got -1");
  expect_error<ValueError>(
      [] {
        Tensor t = zeros({2});
        normal_(t, 0, -1);
      },
      "normal_: expects std >= 0.0, got std=-1");
  expect_error<ValueError>(
      [] {
        Tensor t = zeros({2});
        uniform_(t, 3, 1);
      },
      "uniform_: expects from <= to, got from=3 and to=1");
  expect_error<DtypeError>(
      [] {
        Tensor t = zeros({2}, kInt64);
        uniform_(t);
      },
      "uniform_: expected a floating point tensor, got torch.int64; convert it with "
      ".to(kFloat32) first");
  expect_error<ValueError>([] { bernoulli_mask({2}, 1.5, kFloat32); },
                           "bernoulli_mask: the keep probability must be in [0, 1], got 1.5");
}

}  // namespace
}  // namespace nns
