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
