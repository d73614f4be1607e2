// SPDX-License-Identifier: GPL-3.0-or-later
// The losses, as functions and modules: values and gradients (input and target) against
// PyTorch for every reduction, label smoothing, ignore_index, class weights and pos_weight
// (tests/fixtures/losses.json), finite differences, reprs and the errors for bad targets.
#include <gtest/gtest.h>

#include <cmath>

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
  return Fixtures::load("losses");
}

// Reductions and log_softmax sum in another order than PyTorch.
constexpr double kRtol = 1e-5, kAtol = 1e-6;
const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};

Tensor fixture(const std::string& name) {
  return fx().tensor(name).to_tensor();
}

void check(const std::string& name, const OpFunction& fn) {
  check_op_case("losses", name, fn, kRtol, kAtol);
}

TEST(LossFunctions, RegressionLossesMatchPyTorch) {
  for (Reduction red : kReductions) {
    for (const char* tag : {"f32", "f64"}) {
      const std::string suffix = reduction_name(red) + "." + tag;
      check("mse." + suffix, [=](const Inputs& x) { return mse_loss(x[0], x[1], red); });
      check("l1." + suffix, [=](const Inputs& x) { return l1_loss(x[0], x[1], red); });
      check("huber." + suffix, [=](const Inputs& x) { return huber_loss(x[0], x[1], red); });
      check("huber_delta0.5." + suffix,
            [=](const Inputs& x) { return huber_loss(x[0], x[1], red, 0.5); });
    }
  }
}

TEST(LossFunctions, CrossEntropyAndNllMatchPyTorch) {
  const Tensor w = fixture("class_weight");
  for (Reduction red : kReductions) {
    const std::string r = "." + reduction_name(red);
    auto ce = [=](const Tensor& weight, int64_t ignore, double smoothing) {
      return [=](const Inputs& x) {
        return cross_entropy(x[0], x[1], weight, ignore, red, smoothing);
      };
    };
    check("ce" + r, ce(Tensor(), -100, 0));
    check("ce_weight" + r, ce(w, -100, 0));
    check("ce_ignore" + r, ce(Tensor(), -100, 0));
    check("ce_ignore2" + r, ce(Tensor(), 2, 0));
    check("ce_smooth" + r, ce(Tensor(), -100, 0.1));
    check("ce_smooth_weight_ignore" + r, ce(w, -100, 0.2));
    check("ce_3d" + r, ce(Tensor(), -100, 0));
    check("ce_4d_smooth" + r, ce(Tensor(), -100, 0.3));
    check("ce_f64" + r, ce(Tensor(), -100, 0));
    check("nll" + r, [=](const Inputs& x) { return nll_loss(x[0], x[1], Tensor(), -100, red); });
    const Tensor w3 = w.slice(0, 0, 3);
    check("nll_weight_ignore" + r,
          [=](const Inputs& x) { return nll_loss(x[0], x[1], w3, 0, red); });
    check("nll_4d" + r, [=](const Inputs& x) { return nll_loss(x[0], x[1], Tensor(), -100, red); });
  }
  check("ce_unbatched", [](const Inputs& x) { return cross_entropy(x[0], x[1]); });
  check("ce_unbatched_smooth", [](const Inputs& x) {
    return cross_entropy(x[0], x[1], Tensor(), -100, Reduction::Mean, 0.1);
  });
  check("ce_all_ignored", [](const Inputs& x) { return cross_entropy(x[0], x[1]); });
}

TEST(LossFunctions, BinaryCrossEntropyWithLogitsMatchesPyTorch) {
  const Tensor pw = fixture("pos_weight"), rw = fixture("row_weight");
  for (Reduction red : kReductions) {
    const std::string r = "." + reduction_name(red);
    auto bce = [=](const Tensor& weight, const Tensor& pos_weight) {
      return [=](const Inputs& x) {
        return binary_cross_entropy_with_logits(x[0], x[1], weight, red, pos_weight);
      };
    };
    check("bce" + r, bce(Tensor(), Tensor()));
    check("bce_pos_weight" + r, bce(Tensor(), pw));
    check("bce_weight" + r, bce(rw, Tensor()));
    check("bce_both" + r, bce(rw, pw));
    check("bce_f64" + r, bce(Tensor(), Tensor()));
  }
}

TEST(LossFunctions, Gradcheck) {
  manual_seed(5);
  auto r = [](const Shape& s) { return randn(s, kFloat64); };
  const Tensor labels = from_vector(std::vector<int64_t>{2, 0, -100, 1}, {4});
  const Tensor w = from_vector(std::vector<double>{0.3, 1.0, 2.0}, {3});
  for (Reduction red : kReductions) {
    SCOPED_TRACE(reduction_name(red));
    EXPECT_TRUE(gradcheck([=](const Inputs& x) { return mse_loss(x[0], x[1], red); },
                          {r({3, 4}), r({3, 4})}));
    EXPECT_TRUE(gradcheck([=](const Inputs& x) { return huber_loss(x[0], x[1], red, 0.8); },
                          {r({3, 4}) * 2, r({3, 4})}));
    EXPECT_TRUE(
        gradcheck([=](const Inputs& x) { return cross_entropy(x[0], labels, w, -100, red, 0.15); },
                  {r({4, 3})}));
    EXPECT_TRUE(gradcheck([=](const Inputs& x) { return nll_loss(x[0], labels, w, -100, red); },
                          {r({4, 3})}));
    EXPECT_TRUE(gradcheck(
        [=](const Inputs& x) {
          return cross_entropy(x[0], from_vector(std::vector<int64_t>{0, 2, 1, 1}, {2, 2}),
                               Tensor(), -100, red);
        },
        {r({2, 3, 2})}));
    const Tensor pw = rand({4}, kFloat64) + 0.5;
    EXPECT_TRUE(gradcheck(
        [=](const Inputs& x) {
          return binary_cross_entropy_with_logits(x[0], x[1], Tensor(), red, pw);
        },
        {r({3, 4}) * 2, rand({3, 4}, kFloat64)}));
    EXPECT_TRUE(gradcheck(
        [=](const Inputs& x) {
          return binary_cross_entropy_with_logits(x[0], x[1], Tensor(), red);
        },
        {r({3, 4}) * 2, rand({3, 4}, kFloat64)}));
  }
}

TEST(LossFunctions, Reductions) {
  EXPECT_EQ(reduction_name(Reduction::None), "none");
  EXPECT_EQ(reduction_from_name("sum"), Reduction::Sum);
  const std::string msg = error_of<ValueError>([] { reduction_from_name("average"); });
  EXPECT_NE(msg.find("\"average\""), std::string::npos) << msg;
}

TEST(LossFunctions, Errors) {
  const Tensor logits = randn({4, 3});
  // Targets: dtype, shape, range, each naming the loss.
  std::string msg = error_of<DtypeError>([&] { cross_entropy(logits, randn({4})); });
  EXPECT_NE(msg.find("cross_entropy: expected the target to hold class indices of dtype int64"),
            std::string::npos)
      << msg;
  msg = error_of<ShapeError>([&] {
    cross_entropy(logits, from_vector(std::vector<int64_t>{0, 1, 2}, {3}));
  });
  EXPECT_NE(msg.find("cross_entropy: expected a target of shape [4]"), std::string::npos) << msg;
  msg = error_of<IndexError>([&] {
    cross_entropy(logits, from_vector(std::vector<int64_t>{0, 1, 3, 0}, {4}));
  });
  EXPECT_NE(msg.find("cross_entropy: target 3 is out of bounds"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 2]"), std::string::npos) << msg;
  msg = error_of<IndexError>([&] {
    nll_loss(logits, from_vector(std::vector<int64_t>{0, -1, 1, 0}, {4}));
  });
  EXPECT_NE(msg.find("nll_loss: target -1 is out of bounds"), std::string::npos) << msg;
  EXPECT_THROW(cross_entropy(logits, zeros({4, 3}, kInt64)), ShapeError);
  EXPECT_THROW(cross_entropy(randn({}), zeros({}, kInt64)), ShapeError);
  EXPECT_THROW(cross_entropy(logits, zeros({4}, kInt64), ones({4})), ShapeError);
  EXPECT_THROW(cross_entropy(logits, zeros({4}, kInt64), ones({3}, kFloat64)), DtypeError);
  EXPECT_THROW(cross_entropy(logits, zeros({4}, kInt64), Tensor(), -100, Reduction::Mean, 1.5),
               ValueError);
  EXPECT_THROW(cross_entropy(ones({4, 3}, kInt64), zeros({4}, kInt64)), DtypeError);

  msg = error_of<ShapeError>([] { mse_loss(randn({4, 1}), randn({4})); });
  EXPECT_NE(msg.find("mse_loss: the target's shape [4] differs from the input's [4, 1]"),
            std::string::npos)
      << msg;
  EXPECT_THROW(mse_loss(randn({4}), randn({4}, kFloat64)), DtypeError);
  EXPECT_THROW(l1_loss(randn({4}), randn({3})), ShapeError);
  EXPECT_THROW(huber_loss(randn({4}), randn({4}), Reduction::Mean, 0), ValueError);
  EXPECT_THROW(binary_cross_entropy_with_logits(randn({4, 3}), rand({4, 3}), Tensor(),
                                                Reduction::Mean, ones({4})),
               ShapeError);
  EXPECT_THROW(binary_cross_entropy_with_logits(randn({4, 3}), rand({3})), ShapeError);
}

// ---- modules ----------------------------------------------------------------------------

TEST(LossModules, CallFormsAgreeWithTheFunctions) {
  manual_seed(0);
  const Tensor logits = randn({5, 4}, TensorOptions().requires_grad(true));
  const Tensor labels = from_vector(std::vector<int64_t>{0, 3, 1, 2, 2}, {5});
  nn::CrossEntropyLossOptions o;
  o.label_smoothing = 0.1;
  auto criterion = std::make_shared<nn::CrossEntropyLoss>(o);
  const double expected =
      cross_entropy(logits, labels, Tensor(), -100, Reduction::Mean, 0.1).item();
  EXPECT_EQ((*criterion)(logits, labels).item(), expected);
  EXPECT_EQ((*criterion)({logits, labels})[0].item(), expected);
  EXPECT_EQ(criterion->forward({logits, labels})[0].item(), expected);

  // Hooks run on the two-tensor call.
  int calls = 0;
  auto handle = criterion->register_forward_hook(
      [&](nn::Module&, const std::vector<Tensor>& in,
          const std::vector<Tensor>&) -> std::optional<std::vector<Tensor>> {
        EXPECT_EQ(in.size(), 2u);
        ++calls;
        return std::nullopt;
      });
  Tensor loss = (*criterion)(logits, labels);
  EXPECT_EQ(calls, 1);
  loss.backward();
  EXPECT_TRUE(logits.grad().defined());

  const std::string msg = error_of<ValueError>([&] { (*criterion)(logits); });
  EXPECT_NE(msg.find("CrossEntropyLoss.forward: got 1 inputs"), std::string::npos) << msg;
}

TEST(LossModules, EachModuleMatchesItsFunction) {
  manual_seed(1);
  const Tensor x = randn({3, 4}), y = randn({3, 4}), p = rand({3, 4});
  const Tensor logp = x.log_softmax(1);
  const Tensor labels = from_vector(std::vector<int64_t>{1, 0, 3}, {3});
  const Tensor w = fixture("class_weight"), pw = fixture("pos_weight");
  for (Reduction red : kReductions) {
    SCOPED_TRACE(reduction_name(red));
    auto same = [](const Tensor& a, const Tensor& b) { EXPECT_EQ(values(a), values(b)); };
    same(nn::MSELoss({red})(x, y), mse_loss(x, y, red));
    same(nn::L1Loss({red})(x, y), l1_loss(x, y, red));
    same(nn::HuberLoss({red, 0.3})(x, y), huber_loss(x, y, red, 0.3));
    same(nn::CrossEntropyLoss({w, 1, red, 0.2})(x, labels),
         cross_entropy(x, labels, w, 1, red, 0.2));
    same(nn::NLLLoss({w, 0, red})(logp, labels), nll_loss(logp, labels, w, 0, red));
    same(nn::BCEWithLogitsLoss({Tensor(), red, pw})(x, p),
         binary_cross_entropy_with_logits(x, p, Tensor(), red, pw));
  }
}

TEST(LossModules, ReprsBuffersAndOptions) {
  const Tensor w = fixture("class_weight"), pw = fixture("pos_weight");
  nn::L1LossOptions l1;
  l1.reduction = Reduction::Sum;
  nn::HuberLossOptions huber;
  huber.delta = 0.5;
  nn::CrossEntropyLossOptions ce;
  ce.weight = w;
  ce.label_smoothing = 0.1;
  nn::BCEWithLogitsLossOptions bce;
  bce.pos_weight = pw;
  const std::vector<nn::ModulePtr> losses = {
      std::make_shared<nn::MSELoss>(),        std::make_shared<nn::L1Loss>(l1),
      std::make_shared<nn::HuberLoss>(huber), std::make_shared<nn::CrossEntropyLoss>(ce),
      std::make_shared<nn::NLLLoss>(),        std::make_shared<nn::BCEWithLogitsLoss>(bce)};
  std::string all;
  for (const auto& l : losses) all += (all.empty() ? "" : "\n") + l->repr();
  EXPECT_EQ(all, fx().string("losses.repr"));

  auto join = [](const std::vector<std::string>& keys) {
    std::string s;
    for (const auto& k : keys) s += (s.empty() ? "" : " ") + k;
    return s;
  };
  nn::CrossEntropyLossOptions weighted;
  weighted.weight = w;
  EXPECT_EQ(join(nn::CrossEntropyLoss(weighted).state_dict().keys()),
            fx().string("ce_weight.state_dict"));
  EXPECT_EQ(join(nn::BCEWithLogitsLoss(bce).state_dict().keys()),
            fx().string("bce_pos_weight.state_dict"));
  EXPECT_TRUE(nn::CrossEntropyLoss().state_dict().keys().empty());

  // The weight buffer follows the module's dtype.
  nn::CrossEntropyLoss moved(weighted);
  moved.to(kFloat64);
  EXPECT_EQ(moved.weight.dtype(), kFloat64);
  const Tensor logits = randn({2, 4}, kFloat64);
  const Tensor labels = from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_EQ(moved(logits, labels).dtype(), kFloat64);

  nn::HuberLossOptions bad;
  bad.delta = -1;
  EXPECT_THROW(nn::HuberLoss{bad}, ValueError);
  nn::CrossEntropyLossOptions bad_ce;
  bad_ce.label_smoothing = -0.1;
  EXPECT_THROW(nn::CrossEntropyLoss{bad_ce}, ValueError);
}

}  // namespace
}  // namespace nns::test
