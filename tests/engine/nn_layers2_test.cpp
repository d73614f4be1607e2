// SPDX-License-Identifier: GPL-3.0-or-later
// The layers of issue 4 (Conv1d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, LayerNorm, Embedding,
// GELU, SiLU, ELU, PReLU, LogSoftmax, Unflatten) and their ops (silu, elu, prelu, conv1d,
// adaptive_avg_pool2d): values and gradients against PyTorch (tests/fixtures/nn_layers2.json),
// default initialization bit for bit, reprs, finite differences and errors.
#include <gtest/gtest.h>

#include <functional>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"
#include "support/gradcheck.h"
#include "support/op_case.h"
#include "support/test_util.h"

namespace nns::test {
namespace {

using Inputs = std::vector<Tensor>;
using nns::testing::gradcheck;

const Fixtures& fx() {
  return Fixtures::load("nn_layers2");
}

// Products and normalizations sum in another order than PyTorch.
constexpr double kRtol = 1e-5, kAtol = 1e-6;

// Replays a _module_case of nn_layers2.py: the module made after manual_seed(seed) has
// PyTorch's parameters bit for bit and its repr; output and gradients match within rtol/atol
// (0: exactly).
void check_module_case(const std::string& name, uint64_t seed,
                       const std::function<nn::ModulePtr()>& make, double rtol = 0,
                       double atol = 0) {
  const std::string key = "m." + name;
  SCOPED_TRACE("module case " + key);
  manual_seed(seed);
  nn::ModulePtr m = make();
  for (const auto& [pname, p] : m->named_parameters()) {
    EXPECT_TRUE(exactly_equal(p.detach(), fx().tensor(key + ".param." + pname))) << pname;
  }
  EXPECT_EQ(m->repr(), fx().string(key + ".repr"));
  Tensor x = fx().tensor(key + ".x").to_tensor();
  if (x.is_floating_point()) x.requires_grad_(true);
  Tensor out = (*m)(x);
  EXPECT_TRUE(matches(out.detach(), fx().tensor(key + ".out"), rtol, atol));
  EXPECT_EQ(out.grad_fn()->name(), fx().string(key + ".grad_fn"));
  out.backward(fx().tensor(key + ".grad_out").to_tensor());
  if (fx().has_tensor(key + ".grad_input")) {
    EXPECT_TRUE(matches(x.grad(), fx().tensor(key + ".grad_input"), rtol, atol)) << "grad_input";
  }
  for (const auto& [pname, p] : m->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << pname;
    EXPECT_TRUE(matches(p.grad(), fx().tensor(key + ".grad." + pname), rtol, atol)) << pname;
  }
}

template <class M, class... Args>
std::function<nn::ModulePtr()> maker(Args... args) {
  return [=] { return std::make_shared<M>(args...); };
}

// ---- ops ------------------------------------------------------------------------------------

TEST(NnLayers2Ops, ActivationsMatchPyTorch) {
  for (const char* tag : {"f32", "f64"}) {
    const std::string t = tag;
    check_op_case(
        "nn_layers2", "silu." + t, [](const Inputs& x) { return silu(x[0]); }, 1e-6, 1e-7);
    check_op_case(
        "nn_layers2", "elu." + t, [](const Inputs& x) { return elu(x[0]); }, 1e-6, 1e-7);
    check_op_case(
        "nn_layers2", "elu_alpha0.5." + t, [](const Inputs& x) { return elu(x[0], 0.5); }, 1e-6,
        1e-7);
  }
  // prelu is exact: one product per element.
  for (const char* name : {"prelu_shared", "prelu_channels", "prelu_1d_shared"}) {
    check_op_case(
        "nn_layers2", name, [](const Inputs& x) { return prelu(x[0], x[1]); }, 1e-6, 1e-7);
  }
}

TEST(NnLayers2Ops, Conv1dMatchesPyTorch) {
  auto conv = [](int64_t stride, int64_t padding, int64_t dilation, int64_t groups) {
    return [=](const Inputs& x) {
      return conv1d(x[0], x[1], x.size() > 2 ? x[2] : Tensor(), stride, padding, dilation, groups);
    };
  };
  check_op_case("nn_layers2", "conv1d", conv(1, 0, 1, 1), kRtol, kAtol);
  check_op_case("nn_layers2", "conv1d_s2p1d2g2", conv(2, 1, 2, 2), kRtol, kAtol);
  check_op_case("nn_layers2", "conv1d_no_bias", conv(1, 0, 1, 1), kRtol, kAtol);
  check_op_case("nn_layers2", "conv1d_pointwise", conv(1, 0, 1, 1), kRtol, kAtol);
  check_op_case("nn_layers2", "conv1d_unbatched", conv(1, 0, 1, 1), kRtol, kAtol);
}

TEST(NnLayers2Ops, AdaptiveAvgPool2dMatchesPyTorch) {
  auto pool = [](Int2 size) {
    return [=](const Inputs& x) { return adaptive_avg_pool2d(x[0], size); };
  };
  // The 1x1 case is a mean (MeanBackward1), whose summation order differs from PyTorch's.
  check_op_case("nn_layers2", "adaptive_avg_pool2d_1x1", pool({1, 1}), 1e-6, 1e-7);
  check_op_case("nn_layers2", "adaptive_avg_pool2d_2x3", pool({2, 3}));
  check_op_case("nn_layers2", "adaptive_avg_pool2d_uneven", pool({3, 4}));
  check_op_case("nn_layers2", "adaptive_avg_pool2d_upsample", pool({5, 7}));
  check_op_case("nn_layers2", "adaptive_avg_pool2d_unbatched", pool({2, 2}));
}

TEST(NnLayers2Ops, Gradcheck) {
  manual_seed(3);
  auto r = [](const Shape& s) { return randn(s, kFloat64); };
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return silu(x[0]); }, {r({3, 4}) * 3}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return elu(x[0], 0.7); }, {r({3, 4}) * 3}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return prelu(x[0], x[1]); },
                        {r({2, 3, 4}), from_vector(std::vector<double>{0.1, -0.3, 0.6}, {3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return prelu(x[0], x[1]); },
                        {r({2, 5}), from_vector(std::vector<double>{0.2}, {1})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return conv1d(x[0], x[1], x[2], 2, 1, 1, 1); },
                        {r({2, 2, 7}), r({3, 2, 3}), r({3})}));
  EXPECT_TRUE(gradcheck([](const Inputs& x) { return conv1d(x[0], x[1], Tensor(), 1, 2, 2, 2); },
                        {r({1, 4, 6}), r({4, 2, 2})}));
  EXPECT_TRUE(
      gradcheck([](const Inputs& x) { return conv1d(x[0], x[1]); }, {r({3, 5}), r({2, 3, 1})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return adaptive_avg_pool2d(x[0], {3, 2});
      },
      {r({2, 2, 7, 5})}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& x) {
        return adaptive_avg_pool2d(x[0], {4, 6});
      },
      {r({1, 3, 3, 4})}));
}

TEST(NnLayers2Ops, Errors) {
  const Tensor x = randn({2, 3, 4});
  std::string msg = error_of<ShapeError>([&] { prelu(x, ones({2})); });
  EXPECT_NE(msg.find("prelu"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 parameters and 3 channels"), std::string::npos) << msg;
  EXPECT_THROW(prelu(x, ones({3}, kFloat64)), DtypeError);
  EXPECT_THROW(prelu(x, ones({1, 3})), ShapeError);
  EXPECT_THROW(silu(ones({3}, kInt64)), DtypeError);
  EXPECT_THROW(elu(ones({3}, kInt64)), DtypeError);

  msg = error_of<ShapeError>([&] { conv1d(randn({2, 3, 4, 4}), randn({2, 3, 3})); });
  EXPECT_NE(msg.find("conv1d: expected a 2-D (unbatched) or 3-D"), std::string::npos) << msg;
  EXPECT_THROW(conv1d(x, randn({2, 3, 3, 3})), ShapeError);
  msg = error_of<ShapeError>([&] { conv1d(x, randn({2, 2, 3})); });
  EXPECT_NE(msg.find("expects the input to have 2 channels"), std::string::npos) << msg;
  EXPECT_THROW(conv1d(x, randn({2, 3, 5})), ShapeError);  // kernel longer than the input
  EXPECT_THROW(conv1d(x, randn({2, 3, 3}), Tensor(), 0), ValueError);

  EXPECT_THROW(adaptive_avg_pool2d(randn({2, 3}), {1, 1}), ShapeError);
  EXPECT_THROW(adaptive_avg_pool2d(randn({1, 2, 0, 3}), {1, 1}), ShapeError);
  EXPECT_THROW(adaptive_avg_pool2d(x, {0, 2}), ValueError);
  EXPECT_THROW(adaptive_avg_pool2d(ones({1, 2, 3}, kInt64), {1, 1}), DtypeError);
}

// ---- modules ----------------------------------------------------------------------------

TEST(NnLayers2Modules, MatchPyTorch) {
  nn::Conv1dOptions c;
  c.in_channels = 3;
  c.out_channels = 4;
  c.kernel_size = 3;
  c.padding = 1;
  check_module_case("conv1d_module", 0, maker<nn::Conv1d>(c), kRtol, kAtol);
  nn::Conv1dOptions g;
  g.in_channels = 4;
  g.out_channels = 6;
  g.kernel_size = 2;
  g.stride = 2;
  g.dilation = 2;
  g.groups = 2;
  g.bias = false;
  check_module_case("conv1d_module_groups", 7, maker<nn::Conv1d>(g), kRtol, kAtol);

  check_module_case("maxpool2d", 0, maker<nn::MaxPool2d>(Int2{2, 2}));
  nn::MaxPool2dOptions mp;
  mp.kernel_size = {3, 3};
  mp.stride = {2, 2};
  mp.padding = {1, 1};
  mp.ceil_mode = true;
  check_module_case("maxpool2d_k3s2p1", 0, maker<nn::MaxPool2d>(mp));
  check_module_case("avgpool2d", 0, maker<nn::AvgPool2d>(Int2{2, 2}));
  nn::AvgPool2dOptions ap;
  ap.kernel_size = {3, 3};
  ap.stride = {2, 2};
  ap.padding = {1, 1};
  ap.count_include_pad = false;
  check_module_case("avgpool2d_exclude_pad", 0, maker<nn::AvgPool2d>(ap));
  check_module_case("adaptiveavgpool2d", 0, maker<nn::AdaptiveAvgPool2d>(Int2{2, 3}));
  check_module_case("adaptiveavgpool2d_1", 0, maker<nn::AdaptiveAvgPool2d>(Int2{1, 1}), 1e-6, 1e-7);

  check_module_case("layernorm", 0, maker<nn::LayerNorm>(Shape{6}), kRtol, kAtol);
  check_module_case("layernorm_2d_no_affine", 0, maker<nn::LayerNorm>(Shape{3, 4}, 1e-3, false),
                    kRtol, kAtol);

  // PyTorch's float32 gelu loses precision to 1 + erf(x) for negative x (see
  // elementwise_test.cpp); the engine's erfc form is the more exact one.
  check_module_case("gelu", 0, maker<nn::GELU>(), 1e-6, 3e-7);
  check_module_case("gelu_tanh", 0, maker<nn::GELU>("tanh"), 1e-6, 3e-7);
  check_module_case("silu", 0, maker<nn::SiLU>(), 1e-6, 1e-7);
  check_module_case("elu", 0, maker<nn::ELU>(0.7), 1e-6, 1e-7);
  check_module_case("prelu", 0, maker<nn::PReLU>(), 1e-6, 1e-7);
  check_module_case("prelu_channels", 0, maker<nn::PReLU>(3, 0.1), 1e-6, 1e-7);
  check_module_case("logsoftmax", 0, maker<nn::LogSoftmax>(1), 1e-6, 1e-6);
  check_module_case("logsoftmax_legacy_dim", 0, maker<nn::LogSoftmax>(), 1e-6, 1e-6);
  check_module_case("unflatten", 0, maker<nn::Unflatten>(1, Shape{2, 3}));

  check_module_case("embedding", 0, maker<nn::Embedding>(10, 3));
  check_module_case("embedding_pad", 3, maker<nn::Embedding>(10, 3, 2));
  check_module_case("embedding_pad_neg", 5, maker<nn::Embedding>(6, 4, -1));
}

TEST(NnLayers2Modules, DefaultInitIsBitEqualToPyTorch) {
  for (uint64_t seed : {0, 1, 42}) {
    const std::string s = "seed" + std::to_string(seed);
    manual_seed(seed);
    nn::Conv1d conv(16, 32, 5);
    EXPECT_EQ(static_cast<double>(checksum(conv.weight.detach())),
              fx().scalar("init.conv1d." + s + ".weight"));
    EXPECT_EQ(static_cast<double>(checksum(conv.bias.detach())),
              fx().scalar("init.conv1d." + s + ".bias"));
    manual_seed(seed);
    nn::Embedding emb(100, 17, 7);
    EXPECT_EQ(static_cast<double>(checksum(emb.weight.detach())),
              fx().scalar("init.embedding." + s + ".weight"));
  }
}

TEST(NnLayers2Modules, Reprs) {
  nn::Conv1dOptions odd;
  odd.in_channels = 4;
  odd.out_channels = 4;
  odd.kernel_size = 3;
  odd.stride = 2;
  odd.padding = 1;
  odd.dilation = 2;
  odd.groups = 2;
  odd.bias = false;
  nn::MaxPool2dOptions mp;
  mp.kernel_size = {2, 3};
  mp.stride = {1, 1};
  mp.padding = {1, 1};
  mp.dilation = {2, 2};
  mp.ceil_mode = true;
  nn::AvgPool2dOptions ap;
  ap.kernel_size = {3, 3};
  ap.stride = {2, 2};
  ap.padding = {1, 1};
  ap.ceil_mode = true;
  ap.count_include_pad = false;
  const std::vector<nn::ModulePtr> layers = {
      std::make_shared<nn::Conv1d>(1, 6, 5),
      std::make_shared<nn::Conv1d>(odd),
      std::make_shared<nn::MaxPool2d>(Int2{2, 2}),
      std::make_shared<nn::MaxPool2d>(mp),
      std::make_shared<nn::AvgPool2d>(Int2{2, 2}),
      std::make_shared<nn::AvgPool2d>(ap),
      std::make_shared<nn::AdaptiveAvgPool2d>(Int2{1, 1}),
      std::make_shared<nn::AdaptiveAvgPool2d>(Int2{2, 3}),
      std::make_shared<nn::LayerNorm>(Shape{4}),
      std::make_shared<nn::LayerNorm>(Shape{3, 4}, 1e-3, false),
      std::make_shared<nn::Embedding>(10, 3),
      std::make_shared<nn::Embedding>(10, 3, -1),
      std::make_shared<nn::GELU>(),
      std::make_shared<nn::GELU>("tanh"),
      std::make_shared<nn::SiLU>(),
      std::make_shared<nn::ELU>(),
      std::make_shared<nn::ELU>(0.5),
      std::make_shared<nn::PReLU>(),
      std::make_shared<nn::PReLU>(3, 0.1),
      std::make_shared<nn::LogSoftmax>(1),
      std::make_shared<nn::LogSoftmax>(),
      std::make_shared<nn::Unflatten>(1, Shape{2, 3}),
      std::make_shared<nn::Unflatten>(-1, Shape{5})};
  std::string all;
  for (const auto& l : layers) all += (all.empty() ? "" : "\n") + l->repr();
  EXPECT_EQ(all, fx().string("layers.repr"));
}

TEST(NnLayers2Modules, OptionsResetAndStateDict) {
  nn::PReLU prelu_layer(3, 0.1);
  {
    NoGradGuard no_grad;
    prelu_layer.weight.fill_(2.0);
  }
  prelu_layer.reset_parameters();
  EXPECT_EQ(values(prelu_layer.weight), (std::vector<double>{0.1f, 0.1f, 0.1f}));
  EXPECT_EQ(prelu_layer.options().num_parameters, 3);

  nn::LayerNorm plain(Shape{3, 4}, 1e-5, false);
  EXPECT_TRUE(plain.state_dict().keys().empty());
  EXPECT_FALSE(plain.weight.defined());
  nn::LayerNorm affine(Shape{5});
  EXPECT_EQ(affine.state_dict().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(values(affine.weight), std::vector<double>(5, 1.0));

  nn::Embedding emb(5, 2, -2);
  EXPECT_EQ(emb.padding_idx(), 3);
  emb.reset_parameters();
  EXPECT_EQ(values(emb.weight[3]), (std::vector<double>{0, 0}));
  // The padding row gets no gradient.
  Tensor out = emb(from_vector(std::vector<int64_t>{3, 1, 3}, {3}));
  out.sum().backward();
  EXPECT_EQ(values(emb.weight.grad()[3]), (std::vector<double>{0, 0}));
  EXPECT_EQ(values(emb.weight.grad()[1]), (std::vector<double>{1, 1}));

  nn::Conv1dOptions o;
  o.in_channels = 2;
  o.out_channels = 2;
  o.kernel_size = 3;
  o.dtype = kFloat64;
  nn::Conv1d conv(o);
  EXPECT_EQ(conv.weight.dtype(), kFloat64);
  EXPECT_EQ(conv(randn({1, 2, 6}, kFloat64)).sizes(), (Shape{1, 2, 4}));

  // The pooling options keep the effective stride (PyTorch's stride=None is the kernel size).
  nn::MaxPool2d pool(Int2{3, 2});
  EXPECT_EQ(pool.options().stride, (Int2{3, 2}));
  nn::Unflatten unflat(1, {2, -1});
  EXPECT_EQ(unflat(randn({4, 6})).sizes(), (Shape{4, 2, 3}));
}

TEST(NnLayers2Modules, Errors) {
  nn::Conv1dOptions bad;
  bad.in_channels = 3;
  bad.out_channels = 4;
  bad.groups = 2;
  std::string msg = error_of<ValueError>([&] { nn::Conv1d{bad}; });
  EXPECT_NE(msg.find("Conv1d: in_channels must be divisible by groups"), std::string::npos) << msg;
  msg = error_of<ValueError>([] { nn::Embedding(5, 2, 5); });
  EXPECT_NE(msg.find("Embedding: padding_idx must be within num_embeddings"), std::string::npos)
      << msg;
  EXPECT_THROW(nn::Embedding(5, 2, -6), ValueError);
  EXPECT_THROW(nn::GELU("fast"), ValueError);
  EXPECT_THROW(nn::PReLU(0), ValueError);
  EXPECT_THROW(nn::LayerNorm(Shape{}), ValueError);
  EXPECT_THROW(nn::AdaptiveAvgPool2d(Int2{0, 1}), ValueError);
  EXPECT_THROW(nn::Unflatten(1, Shape{}), ValueError);
  // Wrong input shapes name the op.
  nn::LayerNorm ln(Shape{4});
  msg = error_of<ShapeError>([&] { ln(randn({2, 5})); });
  EXPECT_NE(msg.find("layer_norm"), std::string::npos) << msg;
  nn::Embedding emb(4, 2);
  EXPECT_THROW(emb(from_vector(std::vector<int64_t>{4}, {1})), IndexError);
  EXPECT_THROW(emb(randn({2})), DtypeError);
  nn::PReLU pr(3);
  EXPECT_THROW(pr(randn({2, 4})), ShapeError);
}

}  // namespace
}  // namespace nns::test
