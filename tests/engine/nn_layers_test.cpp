// SPDX-License-Identifier: GPL-3.0-or-later
// The simple layers and nn::init: PyTorch's default initialization (same seed, same values),
// reprs, and forward behaviour.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "nn_seed_modules.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("nn_module");
}

TEST(NnLayersTest, TinyModelInitMatchesPyTorch) {
  manual_seed(0);
  auto tiny = std::make_shared<TinyModel>();
  EXPECT_EQ(tiny->repr(), fx().string("tiny.repr"));
  EXPECT_EQ(tiny->get_submodule("linear2")->repr(), fx().string("tiny.linear2.repr"));
  for (const auto& [name, p] : tiny->named_parameters()) {
    EXPECT_EQ(static_cast<double>(checksum(p.detach())), fx().scalar("tiny." + name + ".checksum"))
        << name;
  }
  EXPECT_TRUE(exactly_equal(tiny->get_parameter("linear2.bias").detach(),
                            fx().tensor("tiny.linear2.bias")));
  Tensor out = (*tiny)(randn({3, 100}));
  EXPECT_EQ(out.sizes(), (Shape{3, 10}));
}

TEST(NnLayersTest, Reprs) {
  std::vector<nn::ModulePtr> layers = {
      std::make_shared<nn::Flatten>(),          std::make_shared<nn::Softmax>(),
      std::make_shared<nn::Softmax>(1),         std::make_shared<nn::Dropout>(),
      std::make_shared<nn::LeakyReLU>(0.2),     std::make_shared<nn::LeakyReLU>(),
      std::make_shared<nn::Identity>(),         std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Sigmoid>(),          std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(4, 3, false)};
  std::string all;
  for (const auto& l : layers) all += (all.empty() ? "" : "\n") + l->repr();
  EXPECT_EQ(all, fx().string("layers.repr"));
  EXPECT_EQ(nn::python_float(1.0), "1.0");
  EXPECT_EQ(nn::python_float(1e-5), "1e-05");
}

TEST(NnLayersTest, LinearOptionsAndReset) {
  nn::LinearOptions options;
  options.in_features = 3;
  options.out_features = 2;
  options.bias = false;
  options.dtype = kFloat64;
  nn::Linear lin(options);
  EXPECT_EQ(lin.weight.dtype(), kFloat64);
  EXPECT_FALSE(lin.bias.defined());
  EXPECT_EQ(lin.state_dict().keys(), std::vector<std::string>{"weight"});
  const std::vector<double> before = lin.weight.to_vector<double>();
  lin.reset_parameters();
  EXPECT_NE(lin.weight.to_vector<double>(), before);
  for (double v : lin.weight.to_vector<double>()) EXPECT_LE(std::abs(v), 1 / std::sqrt(3.0));
  EXPECT_THROW(nn::Linear(-1, 2), ValueError);
}

TEST(NnLayersTest, DropoutFollowsTrainingAndSoftmaxDefaultDim) {
  nn::Dropout drop(0.5);
  Tensor x = ones({100});
  drop.eval();
  EXPECT_TRUE(drop(x).is_same(x));
  drop.train();
  const std::vector<float> y = drop(x).to_vector<float>();
  for (float v : y) EXPECT_TRUE(v == 0.0f || v == 2.0f);
  EXPECT_THROW(nn::Dropout(1.5), ValueError);

  nn::Softmax sm;
  Tensor probs = sm(ones({2, 4}));
  for (float v : probs.to_vector<float>()) EXPECT_FLOAT_EQ(v, 0.25f);
  nn::Flatten flat;
  EXPECT_EQ(flat(ones({2, 3, 4})).sizes(), (Shape{2, 12}));
}

TEST(NnLayersTest, InitFunctions) {
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_THROW(nn::init::calculate_gain("swish"), ValueError);
  Tensor w = nn::Parameter(empty({4, 3, 2, 2}));
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(w), (std::pair<int64_t, int64_t>{12, 16}));
  Tensor v = nn::Parameter(empty({3}));
  EXPECT_THROW(nn::init::xavier_uniform_(v), ShapeError);
  nn::init::constant_(v, 0.5);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  nn::init::zeros_(w);
  EXPECT_EQ(w.sum().item(), 0.0);
  nn::init::ones_(w);
  EXPECT_EQ(w.sum().item(), 48.0);
  nn::init::xavier_uniform_(w);
  const double bound = std::sqrt(6.0 / 28);
  for (float x : w.to_vector<float>()) EXPECT_LE(std::abs(x), bound);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}

}  // namespace
}  // namespace nns::test

namespace nns::test {
namespace {

TEST(NnLayersTest, Conv2dInitForwardAndRepr) {
  manual_seed(0);
  nn::Conv2dOptions options;
  options.in_channels = 2;
  options.out_channels = 3;
  options.kernel_size = {3, 3};
  options.padding = {1, 1};
  auto conv = std::make_shared<nn::Conv2d>(options);
  Tensor x = randn({2, 2, 5, 5});
  EXPECT_TRUE(exactly_equal(conv->weight.detach(), fx().tensor("conv.weight")));
  EXPECT_TRUE(exactly_equal(conv->bias.detach(), fx().tensor("conv.bias")));
  EXPECT_TRUE(exactly_equal(x, fx().tensor("conv.x")));
  EXPECT_TRUE(all_close((*conv)(x).detach(), fx().tensor("conv.out"), 1e-5, 1e-6));

  nn::Conv2dOptions odd;
  odd.in_channels = 4;
  odd.out_channels = 4;
  odd.kernel_size = {3, 1};
  odd.stride = {2, 2};
  odd.dilation = {2, 2};
  odd.groups = 2;
  odd.bias = false;
  const std::string reprs =
      conv->repr() + "\n" + nn::Conv2d(1, 6, {5, 5}).repr() + "\n" + nn::Conv2d(odd).repr();
  EXPECT_EQ(reprs, fx().string("conv.repr"));
  odd.groups = 3;
  EXPECT_THROW(nn::Conv2d{odd}, ValueError);
}

TEST(NnLayersTest, BatchNormRunningStatsAndEval) {
  manual_seed(0);
  auto bn = std::make_shared<nn::BatchNorm2d>(3);
  Tensor x1 = randn({4, 3, 2, 2});
  Tensor x2 = randn({4, 3, 2, 2});
  EXPECT_TRUE(exactly_equal(x2, fx().tensor("bn2d.x2")));
  EXPECT_TRUE(all_close((*bn)(x1).detach(), fx().tensor("bn2d.train1"), 1e-5, 1e-6));
  (*bn)(x2);
  EXPECT_TRUE(all_close(bn->running_mean, fx().tensor("bn2d.running_mean"), 1e-5, 1e-7));
  EXPECT_TRUE(all_close(bn->running_var, fx().tensor("bn2d.running_var"), 1e-5, 1e-7));
  EXPECT_TRUE(exactly_equal(bn->num_batches_tracked, fx().tensor("bn2d.num_batches_tracked")));
  bn->eval();
  EXPECT_TRUE(all_close((*bn)(x1).detach(), fx().tensor("bn2d.eval"), 1e-5, 1e-6));
  std::string keys;
  for (const std::string& k : bn->state_dict().keys()) keys += (keys.empty() ? "" : " ") + k;
  EXPECT_EQ(keys, fx().string("bn2d.keys"));

  // The int64 counter stays int64 when the module changes dtype.
  bn->double_();
  EXPECT_EQ(bn->running_mean.dtype(), kFloat64);
  EXPECT_EQ(bn->num_batches_tracked.dtype(), kInt64);
  EXPECT_THROW((*bn)(zeros({4, 3})), ShapeError);

  nn::BatchNormOptions cma_options{3};
  cma_options.momentum = std::nullopt;
  auto cma = std::make_shared<nn::BatchNorm1d>(cma_options);
  (*cma)(x1.select(3, 0).select(2, 0));
  (*cma)(x2.select(3, 0).select(2, 0));
  EXPECT_TRUE(all_close(cma->running_mean, fx().tensor("bn1d.cma.running_mean"), 1e-5, 1e-7));
  EXPECT_THROW((*cma)(zeros({2, 3, 4, 5})), ShapeError);

  nn::BatchNormOptions plain{5};
  plain.eps = 1e-3;
  plain.affine = false;
  plain.track_running_stats = false;
  auto untracked = std::make_shared<nn::BatchNorm1d>(plain);
  EXPECT_EQ(bn->repr() + "\n" + cma->repr() + "\n" + untracked->repr(), fx().string("bn.repr"));
  EXPECT_TRUE(untracked->state_dict().empty());
  untracked->eval();
  EXPECT_EQ((*untracked)(randn({4, 5})).sizes(), (Shape{4, 5}));
}

TEST(NnLayersTest, BatchNormDtypeOption) {
  nn::BatchNormOptions options{3};
  options.dtype = kFloat16;
  nn::BatchNorm2d bn(options);
  EXPECT_EQ(bn.running_mean.dtype(), kFloat16);
  EXPECT_EQ(bn.weight.dtype(), kFloat16);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
}

TEST(NnLayersTest, OrthogonalAndSkipInit) {
  manual_seed(0);
  Tensor w = empty({3, 5});
  nn::init::orthogonal_(w);
  EXPECT_TRUE(all_close(w, fx().tensor("orthogonal.3x5"), 1e-4, 1e-5));
  Tensor v = empty({4, 2});
  nn::init::orthogonal_(v, 2.0);
  EXPECT_TRUE(all_close(v, fx().tensor("orthogonal.4x2.gain2"), 1e-4, 1e-5));
  Tensor vector = empty({3});
  EXPECT_THROW(nn::init::orthogonal_(vector), ShapeError);

  manual_seed(0);
  auto m = nn::skip_init<nn::Linear>(5, 3);
  EXPECT_EQ(m->weight.sizes(), (Shape{3, 5}));
  EXPECT_TRUE(m->weight.requires_grad());
  EXPECT_TRUE(exactly_equal(randn({3}), fx().tensor("skip_init.next_randn")));
  EXPECT_FALSE(nn::init::SkipInitGuard::active());
  nn::init::orthogonal_(m->weight);
  EXPECT_EQ(m->weight.sizes(), (Shape{3, 5}));
}

}  // namespace
}  // namespace nns::test

namespace nns::test {
namespace {

TEST(NnLayersTest, InitDrawsLikePyTorch) {
  manual_seed(0);
  Tensor a = empty({4, 6});
  EXPECT_TRUE(
      all_close(nn::init::xavier_normal_(a), fx().tensor("init.xavier_normal"), 1e-6, 1e-7));
  Tensor b = empty({3, 4});
  EXPECT_TRUE(all_close(nn::init::xavier_uniform_(b, 0.5), fx().tensor("init.xavier_uniform.gain"),
                        1e-6, 1e-7));
  Tensor c = empty({5, 3});
  EXPECT_TRUE(all_close(nn::init::kaiming_normal_(c, 0, "fan_out", "relu"),
                        fx().tensor("init.kaiming_normal"), 1e-6, 1e-7));
  Tensor d = empty({2, 3, 2, 2});
  EXPECT_TRUE(
      all_close(nn::init::kaiming_uniform_(d), fx().tensor("init.kaiming_uniform"), 1e-6, 1e-7));
  Tensor e = empty({20});
  EXPECT_TRUE(all_close(nn::init::normal_(e, 1.0, 0.5), fx().tensor("init.normal"), 1e-6, 1e-7));
  EXPECT_THROW(nn::init::kaiming_uniform_(d, 0, "fan_middle"), ValueError);

  nn::LinearOptions options{5, 3};
  options.dtype = kFloat16;
  nn::Linear half(options);
  EXPECT_EQ(half.weight.dtype(), kFloat16);
  EXPECT_TRUE(exactly_equal(half.weight.detach(), fx().tensor("init.linear_half.weight")));
  EXPECT_TRUE(exactly_equal(half.bias.detach(), fx().tensor("init.linear_half.bias")));
  options.dtype = kBFloat16;
  nn::Linear bf16(options);
  EXPECT_TRUE(exactly_equal(bf16.weight.detach(), fx().tensor("init.linear_bf16.weight")));
  EXPECT_TRUE(exactly_equal(bf16.bias.detach(), fx().tensor("init.linear_bf16.bias")));
}

}  // namespace
}  // namespace nns::test
