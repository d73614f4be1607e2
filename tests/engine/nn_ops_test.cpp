// SPDX-License-Identifier: GPL-3.0-or-later
// The nn functionals: conv2d, max/avg pooling, dropout, batch_norm (with its running
// statistics) and layer_norm, against PyTorch (tests/fixtures/nn_ops.json), finite
// differences, and the errors for bad shapes and arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/ops/ops.h"
#include "support/gradcheck.h"
#include "support/op_case.h"
#include "support/test_util.h"

namespace nns {
namespace {

using test::error_of;
using test::values;

using testing::gradcheck;
using Inputs = std::vector<Tensor>;

constexpr double kRtol = 1e-5, kAtol = 1e-5;

Tensor rnd(const Shape& shape) {
  return randn(shape, kFloat64);
}

TEST(Conv2d, MatchesPyTorch) {
  using test::check_op_case;
  auto conv = [](Int2 stride, Int2 padding, Int2 dilation, int64_t groups) {
    return [=](const Inputs& x) {
      return conv2d(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), stride, padding, dilation, groups);
    };
  };
  check_op_case("nn_ops", "conv2d", conv({1, 1}, {0, 0}, {1, 1}, 1), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_stride2_pad1", conv({2, 2}, {1, 1}, {1, 1}, 1), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_dilation2", conv({1, 1}, {2, 1}, {2, 2}, 1), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_groups2", conv({1, 1}, {0, 0}, {1, 1}, 2), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_pointwise", conv({1, 1}, {0, 0}, {1, 1}, 1), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_rect", conv({2, 1}, {1, 0}, {1, 2}, 1), kRtol, kAtol);
  check_op_case("nn_ops", "conv2d_unbatched", conv({1, 1}, {0, 0}, {1, 1}, 1), kRtol, kAtol);
}

TEST(Conv2d, Gradcheck) {
  struct Case {
    Shape input, weight;
    Int2 stride, padding, dilation;
    int64_t groups;
    bool bias;
  };
  const Case cases[] = {
      {{2, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, true},
      {{1, 2, 6, 5}, {2, 2, 3, 2}, {2, 2}, {1, 1}, {1, 1}, 1, false},
      {{1, 1, 7, 7}, {2, 1, 3, 3}, {1, 2}, {2, 0}, {2, 1}, 1, true},
      {{2, 4, 4, 4}, {4, 2, 2, 2}, {1, 1}, {1, 1}, {1, 1}, 2, true},
      {{1, 3, 3, 4}, {3, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 3, false},  // depthwise
      {{2, 3, 3, 3}, {2, 3, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, true},   // pointwise
      {{1, 2, 5, 5}, {2, 2, 1, 1}, {2, 2}, {0, 0}, {1, 1}, 1, true},   // strided 1x1
      {{2, 4, 4}, {2, 2, 2, 2}, {1, 1}, {0, 0}, {1, 1}, 1, true},      // unbatched
  };
  for (const Case& c : cases) {
    Inputs inputs = {rnd(c.input), rnd(c.weight)};
    if (c.bias) inputs.push_back(rnd({c.weight[0]}));
    EXPECT_TRUE(gradcheck(
        [&](const Inputs& x) {
          return conv2d(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), c.stride, c.padding, c.dilation,
                        c.groups);
        },
        inputs))
        << "input " << shape_str(c.input) << " weight " << shape_str(c.weight);
  }
  // A transposed (non-contiguous) input.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return conv2d(x[0].transpose(2, 3), x[1], x[2], {1, 1}, {1, 0});
      },
      {rnd({1, 2, 4, 5}), rnd({2, 2, 2, 3}), rnd({2})}));
}

TEST(Conv2d, OnlyWantedGradients) {
  Tensor x = randn({1, 2, 4, 4});
  Tensor w = randn({3, 2, 3, 3}).requires_grad_(true);
  Tensor y = conv2d(x, w);
  EXPECT_EQ(y.grad_fn()->name(), "ConvolutionBackward0");
  y.sum().backward();
  EXPECT_EQ(w.grad().sizes(), w.sizes());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Conv2d, Errors) {
  std::string msg = error_of<ShapeError>([] { conv2d(ones({1, 5, 8, 8}), ones({4, 3, 3, 3})); });
  EXPECT_NE(msg.find("conv2d: given groups=1, weight of shape [4, 3, 3, 3] expects the input to "
                     "have 3 channels, but got input of shape [1, 5, 8, 8] with 5 channels"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] {
    conv2d(ones({1, 2, 8, 8}), ones({3, 1, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 2);
  });
  EXPECT_NE(msg.find("expected weight to be divisible by 2 at dimension 0"), std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { conv2d(ones({1, 3, 8, 8}), ones({4, 3, 3})); });
  EXPECT_NE(msg.find("weight must be 4-D"), std::string::npos) << msg;
  msg = error_of<ShapeError>([] { conv2d(ones({3, 8}), ones({4, 3, 3, 3})); });
  EXPECT_NE(msg.find("input of shape [3, 8]"), std::string::npos) << msg;
  msg = error_of<ShapeError>([] { conv2d(ones({1, 3, 8, 8}), ones({4, 3, 3, 3}), ones({3})); });
  EXPECT_NE(msg.find("expected bias to be 1-D with 4 elements, but got bias of shape [3]"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { conv2d(ones({1, 1, 2, 2}), ones({1, 1, 3, 3})); });
  EXPECT_NE(msg.find("smaller than the dilated kernel of 3x3"), std::string::npos) << msg;
  EXPECT_THROW(conv2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}), {}, {0, 1}), ValueError);
  EXPECT_THROW(conv2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}), {}, {1, 1}, {-1, 0}), ValueError);
  EXPECT_THROW(conv2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 0),
               ValueError);
  EXPECT_THROW(conv2d(ones({1, 1, 4, 4}), ones({1, 1, 3, 3}, kFloat64)), DtypeError);
  EXPECT_THROW(conv2d(ones({1, 1, 4, 4}, kInt64), ones({1, 1, 3, 3}, kInt64)), DtypeError);
}

TEST(Pooling, MatchesPyTorch) {
  using test::check_op_case;
  auto max = [](Int2 k, Int2 s, Int2 p, Int2 d, bool ceil) {
    return [=](const Inputs& x) { return max_pool2d(x[0], k, s, p, d, ceil); };
  };
  check_op_case("nn_ops", "max_pool2d", max({2, 2}, {0, 0}, {0, 0}, {1, 1}, false));
  check_op_case("nn_ops", "max_pool2d_k3s2p1", max({3, 3}, {2, 2}, {1, 1}, {1, 1}, false));
  check_op_case("nn_ops", "max_pool2d_ceil", max({2, 2}, {2, 2}, {0, 0}, {1, 1}, true));
  check_op_case("nn_ops", "max_pool2d_dilation", max({2, 3}, {1, 2}, {1, 1}, {2, 2}, true));
  check_op_case("nn_ops", "max_pool2d_unbatched", max({2, 2}, {0, 0}, {0, 0}, {1, 1}, false));
  check_op_case("nn_ops", "max_pool2d_overlap", max({3, 3}, {1, 1}, {0, 0}, {1, 1}, false));
  auto avg = [](Int2 k, Int2 s, Int2 p, bool ceil, bool include_pad) {
    return [=](const Inputs& x) { return avg_pool2d(x[0], k, s, p, ceil, include_pad); };
  };
  check_op_case("nn_ops", "avg_pool2d", avg({2, 2}, {0, 0}, {0, 0}, false, true));
  check_op_case("nn_ops", "avg_pool2d_k3s2p1", avg({3, 3}, {2, 2}, {1, 1}, false, true));
  check_op_case("nn_ops", "avg_pool2d_k3s2p1_exclude_pad",
                avg({3, 3}, {2, 2}, {1, 1}, false, false));
  check_op_case("nn_ops", "avg_pool2d_ceil", avg({2, 2}, {2, 2}, {0, 0}, true, true));
  check_op_case("nn_ops", "avg_pool2d_ceil_pad_exclude", avg({3, 3}, {2, 2}, {1, 1}, true, false));
}

TEST(Pooling, Gradcheck) {
  // Distinct values keep the maxima away from ties that finite differences would straddle.
  auto distinct = [](const Shape& shape) {
    return (randperm(shape_numel(shape)).to(kFloat64) * 0.1).reshape(shape);
  };
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return max_pool2d(x[0], {2, 2});
      },
      {distinct({2, 2, 4, 4})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return max_pool2d(x[0], {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
      },
      {distinct({1, 2, 6, 7})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return max_pool2d(x[0], {2, 2}, {1, 1}, {1, 0}, {2, 2}, false);
      },
      {distinct({1, 1, 5, 5})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return max_pool2d(x[0], {3, 3}, {1, 1});
      },
      {distinct({2, 4, 4})}));  // overlapping windows, unbatched
  for (bool ceil : {false, true}) {
    for (bool include_pad : {false, true}) {
      EXPECT_TRUE(gradcheck(
          [=](const Inputs& x) {
            return avg_pool2d(x[0], {3, 2}, {2, 2}, {1, 1}, ceil, include_pad);
          },
          {rnd({2, 1, 5, 6})}))
          << "ceil_mode " << ceil << " count_include_pad " << include_pad;
    }
  }
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return avg_pool2d(x[0].transpose(1, 2), {2, 2});
      },
      {rnd({1, 4, 2, 4})}));
}

TEST(Pooling, MaxPoolPicksTheFirstMaximumAndPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = from_vector(std::vector<double>{1, 5, 5, 0, 2, nan, 0, 7, 3, 3, 1, 7}, {1, 1, 3, 4})
                 .requires_grad_(true);
  Tensor y = max_pool2d(x, {2, 2}, {1, 1});
  std::vector<double> v = values(y);
  ASSERT_EQ(v.size(), 6u);
  for (int i : {0, 1, 3, 4}) EXPECT_TRUE(std::isnan(v[i])) << i;
  EXPECT_EQ(v[2], 7);
  EXPECT_EQ(v[5], 7);
  y.sum().backward();
  // The NaN takes the gradient of the four windows that hold it; of the two 7s in the last
  // window the first (row-major) wins.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0, 0, 0, 4, 0, 2, 0, 0, 0, 0}));
}

TEST(Pooling, Errors) {
  std::string msg = error_of<ValueError>([] {
    max_pool2d(ones({1, 1, 8, 8}), {2, 2}, {2, 2}, {2, 2});
  });
  EXPECT_NE(msg.find("max_pool2d: pad should be at most half of the kernel size"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([] { max_pool2d(ones({1, 1, 2, 2}), {3, 3}); });
  EXPECT_NE(msg.find("max_pool2d: the input of shape [1, 1, 2, 2] is too small"), std::string::npos)
      << msg;
  EXPECT_THROW(avg_pool2d(ones({1, 1, 2, 2}), {3, 3}), ShapeError);
  EXPECT_THROW(max_pool2d(ones({4, 4}), {2, 2}), ShapeError);
  EXPECT_THROW(avg_pool2d(ones({1, 1, 4, 4}), {0, 2}), ValueError);
  EXPECT_THROW(max_pool2d(ones({1, 1, 4, 4}, kInt64), {2, 2}), DtypeError);
}

TEST(Dropout, MatchesPyTorchWithTheSameSeed) {
  using test::check_op_case;
  auto seeded = [](double p, uint64_t seed) {
    return [=](const Inputs& x) {
      manual_seed(seed);
      return dropout(x[0], p, true);
    };
  };
  check_op_case("nn_ops", "dropout_p0.3_seed7", seeded(0.3, 7));
  check_op_case("nn_ops", "dropout_p0.5_seed1", seeded(0.5, 1));
  check_op_case("nn_ops", "dropout_f64_p0.2_seed3", seeded(0.2, 3));
}

TEST(Dropout, IdentityCasesAndErrors) {
  Tensor x = randn({3, 4}).requires_grad_(true);
  EXPECT_TRUE(dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(dropout(x, 0.0, true).is_same(x));
  Tensor all = dropout(x, 1.0, true);
  EXPECT_EQ(values(all), std::vector<double>(12, 0.0));
  EXPECT_EQ(all.grad_fn()->name(), "MulBackward0");
  Generator g(3);
  Tensor y = dropout(x, 0.25, true, &g);
  EXPECT_EQ(y.grad_fn()->name(), "MulBackward0");
  y.sum().backward();
  // The gradient is the scaled mask: 0 where dropped, 1/(1-p) where kept.
  std::vector<double> grad = values(x.grad()), out = values(y), in = values(x.detach());
  for (size_t i = 0; i < grad.size(); ++i) {
    EXPECT_TRUE(grad[i] == 0 || std::abs(grad[i] - 1 / 0.75) < 1e-6) << grad[i];
    EXPECT_NEAR(out[i], in[i] * grad[i], 1e-6);
  }
  EXPECT_THROW(dropout(x, 1.5), ValueError);
  EXPECT_THROW(dropout(x, -0.1), ValueError);
  // The same seed draws the same mask on every evaluation, so finite differences apply.
  EXPECT_TRUE(gradcheck(
      [](const Inputs& in) {
        Generator seeded(5);
        return dropout(in[0], 0.3, true, &seeded);
      },
      {rnd({4, 5})}));
}

// The running statistics of a batch_norm case, made from the fixture and checked after.
void check_batch_norm_case(const std::string& name, bool affine, bool training, double momentum,
                           bool running) {
  const auto& fx = test::Fixtures::load("nn_ops");
  Tensor rm = running ? fx.tensor(name + ".running_mean").to_tensor() : Tensor();
  Tensor rv = running ? fx.tensor(name + ".running_var").to_tensor() : Tensor();
  const uint32_t version = running ? rm.version() : 0;
  test::check_op_case(
      "nn_ops", name,
      [&](const Inputs& x) {
        return batch_norm(x[0], rm, rv, affine ? x[1] : Tensor(), affine ? x[2] : Tensor(),
                          training, momentum);
      },
      kRtol, kAtol);
  if (!running) return;
  EXPECT_TRUE(test::all_close(rm, fx.tensor(name + ".running_mean_after"), 1e-6, 1e-7)) << name;
  EXPECT_TRUE(test::all_close(rv, fx.tensor(name + ".running_var_after"), 1e-6, 1e-7)) << name;
  EXPECT_EQ(rm.version(), training ? version + 1 : version) << name;
}

TEST(BatchNorm, MatchesPyTorchIncludingRunningStats) {
  check_batch_norm_case("batch_norm_train", true, true, 0.1, true);
  check_batch_norm_case("batch_norm_train_no_affine", false, true, 0.3, true);
  check_batch_norm_case("batch_norm_train_2d", true, true, 0.1, true);
  check_batch_norm_case("batch_norm_train_3d", true, true, 0.1, true);
  check_batch_norm_case("batch_norm_train_no_running", true, true, 0.1, false);
  check_batch_norm_case("batch_norm_eval", true, false, 0.1, true);
}

TEST(BatchNorm, Gradcheck) {
  for (const Shape& shape : {Shape{4, 3}, Shape{2, 3, 5}, Shape{3, 2, 2, 3}}) {
    const int64_t c = shape[1];
    EXPECT_TRUE(gradcheck(
        [](const Inputs& x) { return batch_norm(x[0], Tensor(), Tensor(), x[1], x[2], true); },
        {rnd(shape), rnd({c}), rnd({c})}))
        << shape_str(shape);
    EXPECT_TRUE(gradcheck(
        [](const Inputs& x) {
          return batch_norm(x[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
        },
        {rnd(shape)}))
        << shape_str(shape);
    Tensor rm = rnd({c}), rv = rand({c}, kFloat64) + 0.5;
    EXPECT_TRUE(
        gradcheck([&](const Inputs& x) { return batch_norm(x[0], rm, rv, x[1], x[2], false); },
                  {rnd(shape), rnd({c}), rnd({c})}))
        << shape_str(shape);
  }
}

TEST(BatchNorm, Errors) {
  std::string msg = error_of<ShapeError>([] {
    batch_norm(ones({2, 3}), zeros({4}), ones({4}), Tensor(), Tensor(), true);
  });
  EXPECT_NE(msg.find("batch_norm: running_mean should be of shape [3]"), std::string::npos) << msg;
  msg = error_of<ValueError>([] {
    batch_norm(ones({1, 3}), zeros({3}), ones({3}), Tensor(), Tensor(), true);
  });
  EXPECT_NE(msg.find("expected more than 1 value per channel when training"), std::string::npos)
      << msg;
  EXPECT_THROW(batch_norm(ones({2, 3}), Tensor(), Tensor(), Tensor(), Tensor(), false), ValueError);
  EXPECT_THROW(batch_norm(ones({3}), Tensor(), Tensor(), Tensor(), Tensor(), true), ShapeError);
  EXPECT_THROW(batch_norm(ones({2, 3}), Tensor(), Tensor(), ones({3}, kFloat64), Tensor(), true),
               DtypeError);
}

TEST(LayerNorm, MatchesPyTorch) {
  using test::check_op_case;
  check_op_case(
      "nn_ops", "layer_norm", [](const Inputs& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
      kRtol, kAtol);
  check_op_case(
      "nn_ops", "layer_norm_2d_shape",
      [](const Inputs& x) {
        return layer_norm(x[0], {3, 4}, x[1], x[2], 1e-3);
      },
      kRtol, kAtol);
  check_op_case(
      "nn_ops", "layer_norm_no_affine", [](const Inputs& x) { return layer_norm(x[0], {5}); },
      kRtol, kAtol);
}

TEST(LayerNorm, Gradcheck) {
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return layer_norm(x[0], {4}, x[1], x[2]); },
                        {rnd({2, 3, 4}), rnd({4}), rnd({4})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return layer_norm(x[0], {2, 3}, x[1], x[2]);
      },
      {rnd({2, 2, 3}), rnd({2, 3}), rnd({2, 3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return layer_norm(x[0].t(), {3}); }, {rnd({3, 4})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return layer_norm(x[0], {5}, x[1]); },
                        {rnd({2, 5}), rnd({5})}));
}

TEST(LayerNorm, Errors) {
  std::string msg = error_of<ShapeError>([] { layer_norm(ones({2, 4}), {5}); });
  EXPECT_NE(msg.find("layer_norm: given normalized_shape=[5], expected input with shape [*, 5], "
                     "but got input of shape [2, 4]"),
            std::string::npos)
      << msg;
  EXPECT_THROW(layer_norm(ones({2, 4}), {4}, ones({5})), ShapeError);
  EXPECT_THROW(layer_norm(ones({2, 4}), {}), ValueError);
  EXPECT_THROW(layer_norm(ones({2, 4}, kInt64), {4}), DtypeError);
  EXPECT_THROW(layer_norm(ones({2, 4}), {4}, ones({4}, kFloat64)), DtypeError);
}

TEST(NNOps, GradFnNames) {
  Tensor x = randn({2, 2, 4, 4}).requires_grad_(true);
  EXPECT_EQ(conv2d(x, randn({3, 2, 3, 3})).grad_fn()->name(), "ConvolutionBackward0");
  EXPECT_EQ(max_pool2d(x, {2, 2}).grad_fn()->name(), "MaxPool2DWithIndicesBackward0");
  EXPECT_EQ(avg_pool2d(x, {2, 2}).grad_fn()->name(), "AvgPool2DBackward0");
  EXPECT_EQ(batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true).grad_fn()->name(),
            "NativeBatchNormBackward0");
  EXPECT_EQ(layer_norm(x, {4}).grad_fn()->name(), "NativeLayerNormBackward0");
  EXPECT_EQ(conv2d(x[0], randn({3, 2, 3, 3})).grad_fn()->name(), "SqueezeBackward1");
}

}  // namespace
}  // namespace nns
