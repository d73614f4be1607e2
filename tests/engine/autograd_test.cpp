// SPDX-License-Identifier: GPL-3.0-or-later
// Autograd as MODULE_SEMANTICS.md and seed 004 describe it, checked against PyTorch's own
// results (tests/fixtures/autograd.json).
#include <gtest/gtest.h>

#include "engine/ops/ops.h"
#include "support/fixtures.h"

namespace nns {
namespace {

TensorOptions grad_f64() {
  return TensorOptions(kFloat64).requires_grad(true);
}

TEST(Autograd, Seed004LeafRulesAndGradients) {
  const auto& fx = test::Fixtures::load("autograd");
  Tensor w = tensor({1.0}, TensorOptions().requires_grad(true));
  Tensor x = tensor({2.0}, TensorOptions().requires_grad(true));
  Tensor a = add(w, x);
  Tensor b = add(w, 1);
  Tensor y = mul(a, b);
  y.backward();
  EXPECT_TRUE(test::exactly_equal(w.grad(), fx.tensor("seed004.w.grad")));
  EXPECT_TRUE(test::exactly_equal(x.grad(), fx.tensor("seed004.x.grad")));
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(a.is_leaf());
  EXPECT_FALSE(b.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  // Non-leaf gradients are freed unless retained.
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(y.grad().defined());
  EXPECT_EQ(a.grad_fn()->name(), fx.string("seed004.a.grad_fn"));
  EXPECT_EQ(b.grad_fn()->name(), fx.string("seed004.b.grad_fn"));
  EXPECT_EQ(y.grad_fn()->name(), fx.string("seed004.y.grad_fn"));
  EXPECT_EQ(y.str(), fx.string("seed004.y.repr"));
}

TEST(Autograd, ResultOfTensorsWithoutGradIsALeaf) {
  Tensor a = tensor({1.0});
  Tensor b = a + 1;
  EXPECT_TRUE(b.is_leaf());
  EXPECT_FALSE(b.requires_grad());
  EXPECT_EQ(b.grad_fn(), nullptr);
}

TEST(Autograd, Seed004RetainGradAccumulationAndHooks) {
  const auto& fx = test::Fixtures::load("autograd");
  Tensor x = tensor({2.0}, grad_f64());
  Tensor y = tensor({6.0}, grad_f64());
  Tensor y_ = y / 2;
  Tensor z = x.pow(2) + y_ * 2;
  auto expect_grads = [&](const std::string& step, bool with_y_) {
    SCOPED_TRACE(step);
    EXPECT_TRUE(test::exactly_equal(x.grad(), fx.tensor("hooks." + step + ".x.grad")));
    EXPECT_TRUE(test::exactly_equal(y.grad(), fx.tensor("hooks." + step + ".y.grad")));
    if (with_y_) {
      EXPECT_TRUE(test::exactly_equal(y_.grad(), fx.tensor("hooks." + step + ".y_.grad")));
    } else {
      EXPECT_FALSE(y_.grad().defined());
    }
  };
  z.backward(Tensor(), /*retain_graph=*/true);
  expect_grads("1_backward", false);

  std::vector<Tensor> g = autograd::grad({z}, {x, y, y_}, {}, /*retain_graph=*/true);
  EXPECT_TRUE(test::exactly_equal(g[0], fx.tensor("hooks.2_grad.x")));
  EXPECT_TRUE(test::exactly_equal(g[1], fx.tensor("hooks.2_grad.y")));
  EXPECT_TRUE(test::exactly_equal(g[2], fx.tensor("hooks.2_grad.y_")));
  // autograd::grad leaves .grad alone.
  EXPECT_EQ(x.grad().item(), 4.0);

  y_.retain_grad();
  EXPECT_TRUE(y_.retains_grad());
  z.backward(Tensor(), true);
  expect_grads("3_retain_grad", true);

  x.grad().zero_();
  z.backward(Tensor(), true);
  expect_grads("4_zero", true);

  std::vector<Tensor> seen;
  RemovableHandle h1 = y_.register_hook([&](const Tensor& grad) { seen.push_back(grad.clone()); });
  RemovableHandle h2 = y_.register_hook(TensorHook([](const Tensor& grad) { return grad * 2; }));
  z.backward();
  expect_grads("5_hooks", true);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(test::exactly_equal(seen[0], fx.tensor("hooks.5_hooks.seen")));
  h1.remove();
  h2.remove();
  h2.remove();  // idempotent
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  (x * 3).sum().backward();
  (x * 3).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{6.0, 6.0}));
  x.set_grad(Tensor());
  (x * x).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2.0, 4.0}));
}

TEST(Autograd, SharedSubgraphSumsGradients) {
  Tensor x = tensor({3.0}, grad_f64());
  Tensor h = x * x;      // used twice below
  Tensor y = h * h + h;  // y = x^4 + x^2, dy/dx = 4x^3 + 2x = 114
  y.backward();
  EXPECT_DOUBLE_EQ(x.grad().item(), 114.0);
}

TEST(Autograd, BackwardTwiceThroughFreedGraphIsAClearError) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = (x.exp() * x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("Trying to backward through the graph a second time"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos);
  }
}

TEST(Autograd, RetainGraphAllowsASecondBackward) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = (x.exp() * x).sum();
  y.backward(Tensor(), true);
  Tensor first = x.grad().clone();
  y.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (first * 2).to_vector<double>());
}

TEST(Autograd, NonScalarBackwardNeedsAGradient) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = x * 2;
  EXPECT_THROW(y.backward(), AutogradError);
  try {
    y.backward();
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("grad can be implicitly created only for scalar outputs"),
              std::string::npos);
  }
  EXPECT_THROW(y.backward(ones({3}, kFloat64)), ShapeError);
  y.backward(tensor({1.0, 10.0}, kFloat64));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2.0, 20.0}));
}

TEST(Autograd, BackwardOnATensorWithoutGradIsAnError) {
  Tensor x = tensor({1.0});
  EXPECT_THROW((x * 2).sum().backward(), AutogradError);
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = tensor({1.0}, grad_f64());
  Tensor y;
  {
    NoGradGuard no_grad;
    y = x * 2;
    EXPECT_FALSE(GradMode::is_enabled());
    {
      EnableGradGuard enable;
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(y.is_leaf());
}

TEST(Autograd, DetachSharesStorageAndLeavesTheGraph) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = x * 2;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  EXPECT_EQ(d.storage(), y.storage());
  d.fill_(5);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{5.0, 5.0}));
}

TEST(Autograd, HookMayReplaceTheGradientOfALeaf) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  RemovableHandle h = x.register_hook(TensorHook([](const Tensor& g) { return g * 10; }));
  (x * 2).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{20.0, 20.0}));
  h.remove();
  x.set_grad(Tensor());
  (x * 2).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2.0, 2.0}));
}

TEST(Autograd, HookReturningTheWrongShapeIsAnError) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = x * 2;
  RemovableHandle h =
      y.register_hook(TensorHook([](const Tensor&) { return ones({3}, kFloat64); }));
  EXPECT_THROW(y.sum().backward(), ShapeError);
}

TEST(Autograd, HandleOutlivesTheTensor) {
  RemovableHandle h;
  {
    Tensor x = tensor({1.0}, grad_f64());
    h = x.register_hook([](const Tensor&) {});
  }
  h.remove();  // the table is gone: nothing happens
  h.remove();
}

TEST(Autograd, HookOnATensorWithoutGradIsAnError) {
  EXPECT_THROW(tensor({1.0}).register_hook([](const Tensor&) {}), AutogradError);
}

TEST(Autograd, GradOfUnusedInputNeedsAllowUnused) {
  Tensor x = tensor({1.0}, grad_f64());
  Tensor unused = tensor({1.0}, grad_f64());
  Tensor y = (x * 2).sum();
  EXPECT_THROW(autograd::grad({y}, {x, unused}, {}, true), AutogradError);
  std::vector<Tensor> g = autograd::grad({y}, {x, unused}, {}, false, /*allow_unused=*/true);
  EXPECT_EQ(g[0].item(), 2.0);
  EXPECT_FALSE(g[1].defined());
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsAnError) {
  Tensor x = tensor({1.0}, grad_f64());
  EXPECT_THROW(x.add_(1.0), AutogradError);
  {
    NoGradGuard no_grad;
    x.add_(1.0);  // the optimizer's way
  }
  EXPECT_EQ(x.item(), 2.0);
}

TEST(Autograd, ModifyingASavedTensorInPlaceIsDetected) {
  Tensor x = tensor({1.0, 2.0}, grad_f64());
  Tensor y = x.exp();  // ExpBackward0 saves its result
  Tensor z = y.sum();
  const uint32_t before = y.version();
  y.mul_(2.0);
  EXPECT_EQ(y.version(), before + 1);
  try {
    z.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ExpBackward0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("is at version 1; expected version 0"), std::string::npos) << msg;
  }
}

TEST(Autograd, InPlaceOnANonLeafRebasesHistory) {
  Tensor x = tensor({1.0, -2.0}, grad_f64());
  Tensor y = x * 3;
  y.relu_();
  EXPECT_EQ(y.grad_fn()->name(), "ReluBackward0");
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{3.0, 0.0}));
}

TEST(Autograd, RequiresGradOnlyForFloatingLeaves) {
  Tensor i = arange(3, kInt64);
  EXPECT_THROW(i.requires_grad_(true), DtypeError);
  Tensor x = tensor({1.0}, grad_f64());
  Tensor y = x * 2;
  EXPECT_THROW(y.requires_grad_(false), AutogradError);
}

TEST(Autograd, BackwardFollowsViews) {
  Tensor x = arange(6, kFloat64).requires_grad_(true);
  Tensor y = x.view({2, 3}).transpose(0, 1).slice(0, 1, 3).select(1, 1);  // x[4], x[5]
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{4.0, 5.0}));
  (y * tensor({1.0, 2.0}, kFloat64)).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 1, 2}));
}

}  // namespace
}  // namespace nns
