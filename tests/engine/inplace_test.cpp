// SPDX-License-Identifier: GPL-3.0-or-later
// In-place ops: values and grad_fn against PyTorch, version counters, the error when a tensor
// saved for backward was modified in place, views, aliasing and the autograd rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/ops/ops.h"
#include "support/op_case.h"

namespace nns {
namespace {

using test::check_op_case;
using V = std::vector<Tensor>;

TensorOptions f64_grad() {
  return TensorOptions(kFloat64).requires_grad(true);
}

TEST(InPlace, ValuesAndGradientsMatchPyTorch) {
  // Each case runs on a clone (a non-leaf), as the generator does. Broadcast operands get
  // summed gradients, and addcmul_/addcdiv_ are fused multiply-adds in PyTorch's AVX2 build:
  // those compare within float tolerances, the rest exactly.
  struct Case {
    std::string name;
    test::OpFunction fn;
    bool exact;
  };
  const std::vector<Case> cases = {
      {"add_", [](const V& x) { return x[0].clone().add_(x[1], 2.0); }, false},
      {"add_.scalar", [](const V& x) { return x[0].clone().add_(1.25); }, true},
      {"sub_", [](const V& x) { return x[0].clone().sub_(x[1]); }, false},
      {"mul_", [](const V& x) { return x[0].clone().mul_(x[1]); }, false},
      {"mul_.scalar", [](const V& x) { return x[0].clone().mul_(-0.75); }, true},
      {"div_", [](const V& x) { return x[0].clone().div_(x[1]); }, true},
      {"div_.scalar", [](const V& x) { return x[0].clone().div_(3.0); }, true},
      {"clamp_", [](const V& x) { return x[0].clone().clamp_(-0.3, 0.4); }, true},
      {"relu_", [](const V& x) { return x[0].clone().relu_(); }, true},
      {"addcmul_", [](const V& x) { return x[0].clone().addcmul_(x[1], x[2], 0.5); }, false},
      {"addcdiv_", [](const V& x) { return x[0].clone().addcdiv_(x[1], x[2], -2.0); }, false},
      {"zero_", [](const V& x) { return x[0].clone().zero_(); }, true},
      {"fill_", [](const V& x) { return x[0].clone().fill_(1.5); }, true},
      {"copy_", [](const V& x) { return x[0].clone().copy_(x[1]); }, false},
  };
  for (const Case& c : cases) {
    check_op_case("elementwise", c.name + ".f32", c.fn, c.exact ? 0 : 4e-6, c.exact ? 0 : 1e-7);
    check_op_case("elementwise", c.name + ".f64", c.fn, c.exact ? 0 : 1e-12, c.exact ? 0 : 1e-15);
  }
}

TEST(InPlace, EveryOpBumpsTheVersionOnce) {
  const std::vector<std::pair<std::string, std::function<void(Tensor&)>>> ops = {
      {"add_", [](Tensor& t) { t.add_(ones({3})); }},
      {"add_ scalar", [](Tensor& t) { t.add_(1.0); }},
      {"sub_", [](Tensor& t) { t.sub_(ones({3}), 2.0); }},
      {"mul_", [](Tensor& t) { t.mul_(ones({3})); }},
      {"mul_ scalar", [](Tensor& t) { t.mul_(2.0); }},
      {"div_", [](Tensor& t) { t.div_(ones({3})); }},
      {"div_ scalar", [](Tensor& t) { t.div_(2.0); }},
      {"clamp_", [](Tensor& t) { t.clamp_(0.0, 1.0); }},
      {"relu_", [](Tensor& t) { t.relu_(); }},
      {"addcmul_", [](Tensor& t) { t.addcmul_(ones({3}), ones({3})); }},
      {"addcdiv_", [](Tensor& t) { t.addcdiv_(ones({3}), ones({3})); }},
      {"zero_", [](Tensor& t) { t.zero_(); }},
      {"fill_", [](Tensor& t) { t.fill_(3.0); }},
      {"copy_", [](Tensor& t) { t.copy_(ones({3})); }},
  };
  for (const auto& [name, op] : ops) {
    Tensor base = zeros({2, 3});
    Tensor row = base.select(0, 1);  // a view shares the counter of its storage
    const uint32_t before = base.version();
    op(row);
    EXPECT_EQ(base.version(), before + 1) << name;
    EXPECT_EQ(row.version(), before + 1) << name;
  }
  // Out-of-place ops leave the counter alone.
  Tensor t = ones({3});
  const uint32_t v = t.version();
  (void)(t + 1).exp();
  EXPECT_EQ(t.version(), v);
}

TEST(InPlace, WritesThroughViewsIntoTheBase) {
  Tensor base = zeros({3, 4});
  base.select(0, 1).add_(2.0);
  base.slice(1, 0, 4, 2).mul_(0.0).add_(5.0);
  base.t().select(0, 3).copy_(tensor({-1.0, -2.0, -3.0}));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{5, 0, 5, -1, 5, 2, 5, -2, 5, 0, 5, -3}));
}

TEST(InPlace, OverlappingOperandIsReadBeforeItIsWritten) {
  Tensor x = arange(9, kFloat64).view({3, 3});
  const std::vector<double> expected = (x + x.t()).to_vector<double>();
  x.add_(x.t());
  EXPECT_EQ(x.to_vector<double>(), expected);
  Tensor y = arange(4, kFloat64);
  y.slice(0, 1, 4).copy_(y.slice(0, 0, 3));  // shift right by one
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{0, 0, 1, 2}));
}

TEST(InPlace, ModifiedSavedOutputIsReportedLikePyTorch) {
  Tensor x = tensor({1.0, 2.0, 3.0}, f64_grad());
  Tensor y = x.sigmoid();  // SigmoidBackward0 saves its result
  Tensor z = y.sum();
  y.add_(1.0);
  try {
    z.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "one of the variables needed for gradient computation has been modified by an "
                  "inplace operation: [torch.DoubleTensor [3]], which is output 0 of "
                  "SigmoidBackward0, is at version 1; expected version 0 instead."),
              std::string::npos)
        << e.what();
  }
}

TEST(InPlace, ModifiedSavedInputIsReported) {
  Tensor a = tensor({1.0, 2.0}, f64_grad());
  Tensor b = tensor({3.0, 4.0}, kFloat64);
  Tensor y = (a * b).sum();  // MulBackward0 saves b for a's gradient
  b.mul_(2.0);
  b.mul_(2.0);
  try {
    y.backward();
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[torch.DoubleTensor [2]] is at version 2; expected version 0 instead"),
              std::string::npos)
        << msg;
  }
  // The same through a view of the saved tensor.
  Tensor c = tensor({3.0, 4.0}, kFloat64);
  Tensor w = (a * c).sum();
  c.select(0, 0).fill_(0.0);
  EXPECT_THROW(w.backward(), AutogradError);
}

TEST(InPlace, ReluAndClampInPlaceSaveWhatTheirBackwardNeeds) {
  // relu_ saves its result (self after the write); clamp_ keeps self from before it.
  Tensor x = tensor({-1.0, 0.5, 2.0}, f64_grad());
  Tensor y = x * 1.0;
  y.relu_();
  EXPECT_EQ(y.grad_fn()->name(), "ReluBackward0");
  Tensor z = x * 1.0;
  z.clamp_(0.5, 1.0);  // x == 0.5 sits on the bound: gradient 1, as PyTorch
  EXPECT_EQ(z.grad_fn()->name(), "ClampBackward1");
  (y + z).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 2, 1}));
}

TEST(InPlace, MulAndDivInPlaceUseSelfFromBeforeTheWrite) {
  Tensor a = tensor({2.0, 3.0}, f64_grad());
  Tensor b = tensor({5.0, 7.0}, f64_grad());
  Tensor y = a * 1.0;
  y.mul_(b);  // d/db = a (before the write)
  y.div_(b);  // d/db = -y_before / b^2
  EXPECT_EQ(y.grad_fn()->name(), "DivBackward0");
  y.sum().backward();
  // y = a * b / b: dy/da = 1, dy/db = a/b - a*b/b^2 = 0.
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{1, 1}));
  EXPECT_NEAR(b.grad().to_vector<double>()[0], 0, 1e-15);
  EXPECT_NEAR(b.grad().to_vector<double>()[1], 0, 1e-15);
}

TEST(InPlace, LeafThatRequiresGradNeedsNoGrad) {
  Tensor w = tensor({1.0, 2.0}, f64_grad());
  try {
    w.mul_(2.0);
    FAIL() << "expected AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("mul_: a leaf Variable that requires grad"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(w.version(), 0u);  // nothing was written
  {
    NoGradGuard no_grad;  // an optimizer step
    w.addcmul_(tensor({1.0, 1.0}, kFloat64), tensor({2.0, 3.0}, kFloat64), -0.5);
    w.zero_();
  }
  EXPECT_TRUE(w.is_leaf());
  EXPECT_EQ(w.to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(InPlace, ViewWrittenWithAGradOperandIsRefused) {
  Tensor base = zeros({2, 3}, kFloat64);
  Tensor w = ones({3}, f64_grad());
  EXPECT_THROW(base.select(0, 0).add_(w), AutogradError);
  EXPECT_THROW(base.select(0, 0).copy_(w), AutogradError);
  EXPECT_EQ(base.version(), 0u);
  base.add_(w);  // the tensor itself (not a view) takes the new history
  EXPECT_EQ(base.grad_fn()->name(), "AddBackward0");
  base.sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{2, 2, 2}));
}

TEST(InPlace, GradFnNamesMatchPyTorch) {
  const Tensor m = randn({2, 3}, TensorOptions().requires_grad(true));
  auto after = [&](const std::function<void(Tensor&)>& op) {
    Tensor c = m * 1.0;
    op(c);
    return c.grad_fn()->name();
  };
  EXPECT_EQ(after([&](Tensor& c) { c.add_(1.0); }), "AddBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.add_(m); }), "AddBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.sub_(m); }), "SubBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.mul_(2.0); }), "MulBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.mul_(m); }), "MulBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.div_(2.0); }), "DivBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.div_(m); }), "DivBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.clamp_(0.0, 1.0); }), "ClampBackward1");
  EXPECT_EQ(after([&](Tensor& c) { c.relu_(); }), "ReluBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.addcmul_(m, m); }), "AddcmulBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.addcdiv_(m, m); }), "AddcdivBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.zero_(); }), "ZeroBackward0");
  EXPECT_EQ(after([&](Tensor& c) { c.fill_(2.0); }), "FillBackward2");
  EXPECT_EQ(after([&](Tensor& c) { c.copy_(m); }), "CopyBackwards");
  // A plain tensor written with an operand that requires grad joins the graph.
  Tensor p = zeros({2, 3});
  p.add_(m);
  EXPECT_EQ(p.grad_fn()->name(), "AddBackward0");
  EXPECT_FALSE(p.is_leaf());
}

TEST(InPlace, CopyConvertsAndBroadcasts) {
  Tensor i = zeros({2, 2}, kInt64);
  i.copy_(tensor({1.7, -2.7}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 1, -2}));
  Tensor f = zeros({3});
  f.copy_(full({}, 4, kInt64));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{4, 4, 4}));
  // A float64 gradient flows back to a float32 source in its dtype.
  Tensor src = ones({3}, TensorOptions().requires_grad(true));
  Tensor dst = zeros({2, 3}, kFloat64);
  dst.copy_(src);
  dst.sum().backward();
  EXPECT_EQ(src.grad().dtype(), kFloat32);
  EXPECT_EQ(src.grad().to_vector<float>(), (std::vector<float>{2, 2, 2}));
}

TEST(InPlace, AccumulatesNonContiguousGradients) {
  // .grad must come out right whatever layout the incoming gradients have: expanded
  // (sum), transposed, and broadcast (bias-like).
  Tensor w = ones({3, 2}, f64_grad());
  w.sum().backward();
  w.t().sum({0}).sum().backward();
  (w * tensor({1.0, 2.0}, kFloat64)).sum().backward();
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{3, 4, 3, 4, 3, 4}));
  EXPECT_TRUE(w.grad().is_contiguous());
}

TEST(InPlace, IntegerCounterStaysInteger) {
  Tensor n = zeros({}, kInt64);  // num_batches_tracked
  n.add_(1.0);
  n.add_(1.0);
  EXPECT_EQ(n.dtype(), kInt64);
  EXPECT_EQ(n.item(), 2.0);
  n.mul_(3.0);
  EXPECT_EQ(n.item(), 6.0);
}

}  // namespace
}  // namespace nns
