// SPDX-License-Identifier: GPL-3.0-or-later
// Gradients of the view and layout ops, by finite differences, and their grad_fn names as
// PyTorch 1.13 prints them.
#include <gtest/gtest.h>

#include "engine/ops/ops.h"
#include "support/gradcheck.h"

namespace nns {
namespace {

using testing::gradcheck;
using Inputs = std::vector<Tensor>;

Tensor input(const Shape& shape) {
  manual_seed(3);
  return randn(shape, kFloat64);
}

TEST(ShapeOpsGrad, Views) {
  Tensor x = input({2, 3, 4});
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].view({6, 4}); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].reshape({4, -1}); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].transpose(0, 2).reshape({24}); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].permute({2, 0, 1}); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].flatten(1); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].unflatten(2, {2, 2}); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].unsqueeze(1).squeeze(); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].unsqueeze(0).squeeze(0); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].select(1, -1).t(); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].slice(2, 1, 4, 2); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].narrow(1, 1, 2); }, {x}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& in) {
        return in[0].select(0, 1).expand({5, 3, 4});
      },
      {x}));
  EXPECT_TRUE(gradcheck(
      [](const Inputs& in) {
        return in[0].slice(1, 0, 1).expand({2, 3, 4});
      },
      {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].transpose(0, 1).contiguous(); }, {x}));
  EXPECT_TRUE(gradcheck([](const Inputs& in) { return in[0].clone(); }, {x}));
}

TEST(ShapeOpsGrad, DtypeConversionPassesTheGradientBack) {
  Tensor x = input({3}).requires_grad_(true);
  Tensor y = x.to(kFloat32);
  EXPECT_EQ(y.grad_fn()->name(), "ToCopyBackward0");
  y.backward(ones({3}));
  EXPECT_EQ(x.grad().dtype(), kFloat64);
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{1, 1, 1}));
  EXPECT_FALSE(x.to(kInt64).requires_grad());
}

TEST(ShapeOpsGrad, GradFnNamesMatchPyTorch) {
  Tensor x = input({2, 3, 4}).requires_grad_(true);
  EXPECT_EQ(x.view({6, 4}).grad_fn()->name(), "ViewBackward0");
  EXPECT_EQ(x.reshape({6, 4}).grad_fn()->name(), "ReshapeAliasBackward0");
  EXPECT_EQ(x.transpose(0, 1).reshape({12, 2}).grad_fn()->name(), "UnsafeViewBackward0");
  EXPECT_EQ(x.select(0, 0).t().grad_fn()->name(), "TBackward0");
  EXPECT_EQ(x.transpose(0, 2).grad_fn()->name(), "TransposeBackward0");
  EXPECT_EQ(x.permute({2, 0, 1}).grad_fn()->name(), "PermuteBackward0");
  EXPECT_EQ(x.unsqueeze(0).squeeze().grad_fn()->name(), "SqueezeBackward0");
  EXPECT_EQ(x.unsqueeze(0).squeeze(0).grad_fn()->name(), "SqueezeBackward1");
  EXPECT_EQ(x.unsqueeze(1).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_EQ(x.slice(1, 1, 3).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(x.narrow(2, 1, 2).grad_fn()->name(), "SliceBackward0");
  EXPECT_EQ(x.select(0, 1).grad_fn()->name(), "SelectBackward0");
  EXPECT_EQ(x.slice(1, 0, 1).expand({2, 5, 4}).grad_fn()->name(), "ExpandBackward0");
  EXPECT_EQ(x.transpose(0, 1).contiguous().grad_fn()->name(), "CloneBackward0");
  EXPECT_EQ(x.unflatten(2, {2, 2}).grad_fn()->name(), "ViewBackward0");
}

}  // namespace
}  // namespace nns
