// SPDX-License-Identifier: GPL-3.0-or-later
// Module hooks: forward pre/forward hooks, full backward (pre) hooks, global hooks, handles,
// with seed 002's and seed 004's examples against PyTorch's results.
#include <gtest/gtest.h>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("nn_module");
}

using Grads = std::vector<Tensor>;

// Seed 002: torch.manual_seed(1); m = nn.Linear(3, 3); x = torch.randn(2, 3, requires_grad=True)
struct HookExample : ::testing::Test {
  void SetUp() override {
    manual_seed(1);
    m = std::make_shared<nn::Linear>(3, 3);
    x = randn({2, 3}, TensorOptions().requires_grad(true));
  }
  std::shared_ptr<nn::Linear> m;
  Tensor x;
};

TEST_F(HookExample, LinearInitAndInputMatchPyTorch) {
  EXPECT_TRUE(exactly_equal(m->weight.detach(), fx().tensor("hooks.weight")));
  EXPECT_TRUE(exactly_equal(m->bias.detach(), fx().tensor("hooks.bias")));
  EXPECT_TRUE(exactly_equal(x.detach(), fx().tensor("hooks.x")));
}

TEST_F(HookExample, ForwardPreAndForwardHooks) {
  Tensor plain = (*m)(x);
  EXPECT_TRUE(all_close(plain.detach(), fx().tensor("hooks.plain"), 1e-6, 1e-7));
  EXPECT_EQ(plain.grad_fn()->name(), "AddmmBackward0");

  RemovableHandle pre =
      m->register_forward_pre_hook([](nn::Module&, const Grads& inputs) -> std::optional<Grads> {
        return Grads{inputs[0] + 1.0};
      });
  EXPECT_TRUE(all_close((*m)(x).detach(), fx().tensor("hooks.pre"), 1e-6, 1e-7));

  RemovableHandle fwd = m->register_forward_hook(
      [](nn::Module&, const Grads& inputs, const Grads& output) -> std::optional<Grads> {
        return Grads{output[0] + inputs[0]};  // residual, a la ResNet
      });
  Tensor both = (*m)(x);
  EXPECT_TRUE(all_close(both.detach(), fx().tensor("hooks.both"), 1e-6, 1e-7));
  EXPECT_EQ(both.grad_fn()->name(), "AddBackward0");

  pre.remove();
  fwd.remove();
  pre.remove();  // idempotent
  EXPECT_TRUE(all_close((*m)(x).detach(), fx().tensor("hooks.plain"), 1e-6, 1e-7));
}

TEST_F(HookExample, BackwardHookReturning42s) {
  (*m)(x).sum().backward();
  EXPECT_TRUE(all_close(x.grad(), fx().tensor("hooks.x.grad.plain"), 1e-6, 1e-7));
  m->zero_grad();
  x.grad().zero_();
  m->register_full_backward_hook(
      [](nn::Module&, const Grads& grad_input, const Grads&) -> std::optional<Grads> {
        Grads out;
        for (const Tensor& gi : grad_input) out.push_back(ones_like(gi) * 42.0);
        return out;
      });
  Tensor y = (*m)(x);
  EXPECT_EQ(y.grad_fn()->name(), "BackwardHookFunctionBackward");
  y.sum().backward();
  EXPECT_TRUE(exactly_equal(x.grad(), fx().tensor("hooks.x.grad.42")));
  // The parameters' gradients are not the hook's business.
  EXPECT_TRUE(m->weight.grad().defined());
}

// Seed 004: fc1 = Linear(1, 2), fc2 = Linear(2, 1), no bias, weights of 2; hooks on both.
TEST(NnHooksTest, SeedTwoLayerHooksSeeInputsAndGradients) {
  auto fc1 = std::make_shared<nn::Linear>(1, 2, false);
  auto fc2 = std::make_shared<nn::Linear>(2, 1, false);
  // As the seed does: fc1.weight = Parameter([[2.], [2.]]); fc2.weight = Parameter([2., 2.]).
  fc1->weight = fc1->register_parameter(
      "weight", nn::Parameter(from_vector(std::vector<float>{2, 2}, {2, 1})));
  fc2->weight = fc2->register_parameter("weight", nn::Parameter(tensor({2.0, 2.0})));
  auto model = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{fc1, fc2});
  struct Event {
    std::string tag;
    Tensor a, b;
  };
  std::vector<Event> events;
  std::vector<RemovableHandle> handles;
  for (const auto& [name, child] : model->named_children()) {
    const std::string n = name == "0" ? "fc1" : "fc2";
    handles.push_back(child->register_forward_hook(
        [&events, n](nn::Module&, const Grads& in, const Grads& out) -> std::optional<Grads> {
          events.push_back({"fwd:" + n, in[0].detach(), out[0].detach()});
          return std::nullopt;
        }));
    handles.push_back(child->register_full_backward_hook(
        [&events, n](nn::Module&, const Grads& gi, const Grads& go) -> std::optional<Grads> {
          events.push_back({"bwd:" + n, gi[0], go[0]});
          return std::nullopt;
        }));
  }
  Tensor x = tensor({2.0}, TensorOptions().requires_grad(true));
  Tensor out = (*model)(x);
  EXPECT_EQ(out.str(), fx().string("twolayer.out.repr"));
  out.backward();
  std::string order;
  for (const Event& e : events) order += (order.empty() ? "" : " ") + e.tag;
  EXPECT_EQ(order, fx().string("twolayer.order"));
  for (const Event& e : events) {
    const bool fwd = e.tag[0] == 'f';
    const std::string base = "twolayer." + e.tag.substr(0, 3) + "." + e.tag.substr(4) + ".";
    EXPECT_TRUE(exactly_equal(e.a, fx().tensor(base + (fwd ? "in" : "grad_input")))) << base;
    EXPECT_TRUE(exactly_equal(e.b, fx().tensor(base + (fwd ? "out" : "grad_output")))) << base;
  }
  EXPECT_TRUE(exactly_equal(x.grad(), fx().tensor("twolayer.x.grad")));
}

TEST(NnHooksTest, CallOrderGlobalFirstAndPrepend) {
  auto m = std::make_shared<nn::Identity>();
  std::vector<std::string> log;
  auto pre = [&log](std::string tag) {
    return [&log, tag](nn::Module&, const Grads&) -> std::optional<Grads> {
      log.push_back(tag);
      return std::nullopt;
    };
  };
  auto post = [&log](std::string tag) {
    return [&log, tag](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> {
      log.push_back(tag);
      return std::nullopt;
    };
  };
  RemovableHandle h1 = m->register_forward_pre_hook(pre("pre1"));
  RemovableHandle h2 = m->register_forward_pre_hook(pre("pre0"), /*prepend=*/true);
  RemovableHandle h3 = m->register_forward_hook(post("fwd1"));
  RemovableHandle h4 = m->register_forward_hook(post("fwd0"), /*prepend=*/true);
  RemovableHandle g1 = nn::register_module_forward_pre_hook(pre("global_pre"));
  RemovableHandle g2 = nn::register_module_forward_hook(post("global_fwd"));
  (*m)(zeros({1}));
  EXPECT_EQ(log,
            (std::vector<std::string>{"global_pre", "pre0", "pre1", "global_fwd", "fwd0", "fwd1"}));
  g1.remove();
  g2.remove();
  log.clear();
  (*m)(zeros({1}));
  EXPECT_EQ(log, (std::vector<std::string>{"pre0", "pre1", "fwd0", "fwd1"}));
}

TEST(NnHooksTest, BackwardHooksRunInOrderWithPrepend) {
  auto m = std::make_shared<nn::Identity>();
  std::vector<std::string> log;
  auto hook = [&log](std::string tag) {
    return [&log, tag](nn::Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
      log.push_back(tag);
      return Grads{gi[0] * 2.0};  // each hook sees the previous one's result
    };
  };
  m->register_full_backward_hook(hook("b"));
  m->register_full_backward_hook(hook("a"), /*prepend=*/true);
  Tensor x = tensor({1.0}, TensorOptions().requires_grad(true));
  (*m)(x).sum().backward();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(x.grad().item(), 4.0);
}

TEST(NnHooksTest, GlobalPreHookChangesEveryModulesInput) {
  RemovableHandle g = nn::register_module_forward_pre_hook(
      [](nn::Module&, const Grads& in) -> std::optional<Grads> { return Grads{in[0] * 10.0}; });
  auto seq = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Identity>(), std::make_shared<nn::Identity>()});
  // The Sequential and both children each scale by 10.
  const double out = (*seq)(tensor({1.0})).item();
  g.remove();
  EXPECT_EQ(out, 1000.0);
  EXPECT_EQ((*seq)(tensor({1.0})).item(), 1.0);
}

TEST(NnHooksTest, AlwaysCallHookRunsWhenForwardThrows) {
  struct Failing : nn::Module {
    using Module::forward;
    Tensor forward(const Tensor&) override { throw ValueError("boom"); }
  };
  auto m = std::make_shared<Failing>();
  int always = 0, normal = 0;
  m->register_forward_hook(
      [&](nn::Module&, const Grads&, const Grads& out) -> std::optional<Grads> {
        EXPECT_TRUE(out.empty());
        ++always;
        throw ValueError("hook errors are dropped");
      },
      false, /*always_call=*/true);
  m->register_forward_hook([&](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> {
    ++normal;
    return std::nullopt;
  });
  EXPECT_THROW((*m)(zeros({1})), ValueError);
  try {
    (*m)(zeros({1}));
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "boom");
  }
  EXPECT_EQ(always, 2);
  EXPECT_EQ(normal, 0);
}

TEST(NnHooksTest, HandlesAreSafeAfterTheModuleIsGone) {
  RemovableHandle h;
  {
    auto m = std::make_shared<nn::ReLU>();
    h = m->register_forward_hook([](nn::Module&, const Grads&,
                                    const Grads&) -> std::optional<Grads> { return std::nullopt; });
  }
  h.remove();
  h.remove();
  RemovableHandle moved = std::move(h);
  moved.remove();
}

TEST(NnHooksTest, BackwardPreHookReplacesGradOutput) {
  auto m = std::make_shared<nn::Identity>();
  Grads seen;
  m->register_full_backward_pre_hook(
      [](nn::Module&, const Grads& go) -> std::optional<Grads> { return Grads{go[0] * 3.0}; });
  m->register_full_backward_hook(
      [&seen](nn::Module&, const Grads&, const Grads& go) -> std::optional<Grads> {
        seen = go;
        return std::nullopt;
      });
  Tensor x = tensor({1.0, 2.0}, TensorOptions().requires_grad(true));
  ((*m)(x)*2.0).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{6, 6}));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].to_vector<float>(), (std::vector<float>{6, 6}));
}

TEST(NnHooksTest, GlobalBackwardHooksRunBeforeOwn) {
  auto m = std::make_shared<nn::Identity>();
  std::vector<std::string> log;
  m->register_full_backward_hook(
      [&log](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> {
        log.push_back("own");
        return std::nullopt;
      });
  RemovableHandle g = nn::register_module_full_backward_hook(
      [&log](nn::Module& mod, const Grads&, const Grads&) -> std::optional<Grads> {
        log.push_back("global:" + mod.name());
        return std::nullopt;
      });
  RemovableHandle gp = nn::register_module_full_backward_pre_hook(
      [&log](nn::Module&, const Grads&) -> std::optional<Grads> {
        log.push_back("global_pre");
        return std::nullopt;
      });
  Tensor x = tensor({1.0}, TensorOptions().requires_grad(true));
  (*m)(x).sum().backward();
  g.remove();
  gp.remove();
  EXPECT_EQ(log, (std::vector<std::string>{"global_pre", "global:Identity", "own"}));
}

TEST(NnHooksTest, WrongNumberOfGradientsIsAnError) {
  auto m = std::make_shared<nn::Identity>();
  m->register_full_backward_hook(
      [](nn::Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
        return Grads{gi[0], gi[0]};
      });
  Tensor x = tensor({1.0}, TensorOptions().requires_grad(true));
  Tensor y = (*m)(x).sum();
  try {
    y.backward();
    FAIL() << "expected an AutogradError";
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("returned an invalid number of grad_input, got 2, but "
                                         "expected 1"),
              std::string::npos)
        << e.what();
  }

  auto p = std::make_shared<nn::Identity>();
  p->register_full_backward_pre_hook(
      [](nn::Module&, const Grads&) -> std::optional<Grads> { return Grads{}; });
  Tensor x2 = tensor({1.0}, TensorOptions().requires_grad(true));
  EXPECT_THROW((*p)(x2).sum().backward(), AutogradError);
}

TEST(NnHooksTest, HookChangingAGradientShapeIsAnError) {
  auto m = std::make_shared<nn::Identity>();
  m->register_full_backward_hook(
      [](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> {
        return Grads{zeros({5})};
      });
  Tensor x = tensor({1.0, 2.0}, TensorOptions().requires_grad(true));
  EXPECT_THROW((*m)(x).sum().backward(), ShapeError);
}

TEST(NnHooksTest, InPlaceChangeOfWrappedOutputIsAnError) {
  auto m = std::make_shared<nn::Identity>();
  m->register_full_backward_hook(
      [](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> { return std::nullopt; });
  Tensor x = tensor({1.0, 2.0}, TensorOptions().requires_grad(true));
  Tensor y = (*m)(x);
  EXPECT_THROW(y.mul_(2.0), AutogradError);
}

TEST(NnHooksTest, ForwardModifyingItsInputInPlaceIsAnError) {
  struct Doubler : nn::Module {
    using Module::forward;
    Tensor forward(const Tensor& input) override {
      Tensor x = input;
      return x.mul_(2.0);
    }
  };
  auto m = std::make_shared<Doubler>();
  m->register_full_backward_hook(
      [](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> { return std::nullopt; });
  Tensor x = tensor({1.0, 2.0}, TensorOptions().requires_grad(true));
  EXPECT_THROW((*m)(x * 1.0), AutogradError);
}

TEST(NnHooksTest, InputsWithoutGradGiveUndefinedGradInput) {
  auto lin = std::make_shared<nn::Linear>(2, 1);
  Grads seen_gi;
  bool called = false;
  lin->register_full_backward_hook(
      [&](nn::Module&, const Grads& gi, const Grads& go) -> std::optional<Grads> {
        called = true;
        seen_gi = gi;
        EXPECT_EQ(go.size(), 1u);
        return std::nullopt;
      });
  (*lin)(ones({1, 2})).sum().backward();
  EXPECT_TRUE(called);
  ASSERT_EQ(seen_gi.size(), 1u);
  EXPECT_FALSE(seen_gi[0].defined());

  auto bad = std::make_shared<nn::Linear>(2, 1);
  bad->register_full_backward_hook(
      [](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> {
        return Grads{ones({1, 2})};
      });
  EXPECT_THROW((*bad)(ones({1, 2})).sum().backward(), AutogradError);
}

TEST(NnHooksTest, NoHooksTakesTheFastPathAndRemovedHooksLeaveNoTrace) {
  auto m = std::make_shared<nn::Linear>(2, 2);
  Tensor x = ones({1, 2}, TensorOptions().requires_grad(true));
  EXPECT_EQ((*m)(x).grad_fn()->name(), "AddmmBackward0");
  RemovableHandle h = m->register_full_backward_hook(
      [](nn::Module&, const Grads&, const Grads&) -> std::optional<Grads> { return std::nullopt; });
  EXPECT_EQ((*m)(x).grad_fn()->name(), "BackwardHookFunctionBackward");
  h.remove();
  EXPECT_EQ((*m)(x).grad_fn()->name(), "AddmmBackward0");
}

}  // namespace
}  // namespace nns::test
