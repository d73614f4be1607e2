// SPDX-License-Identifier: GPL-3.0-or-later
// Module: registration, lookup, iteration, modes, conversion, printing, and the seeds'
// custom modules with PyTorch's own results (tests/fixtures/nn_module.json).
#include <gtest/gtest.h>

#include <sstream>

#include "engine/backend/dispatch.h"
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "nn_seed_modules.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("nn_module");
}

template <class T>
std::string joined_names(const nn::NamedList<T>& items) {
  std::string out;
  bool first = true;
  for (const auto& [name, value] : items) {
    out += (first ? "" : " ") + name;
    first = false;
  }
  return out;
}

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(NnModuleTest, MyLinearMatchesPyTorch) {
  manual_seed(0);
  auto m = std::make_shared<MyLinear>(4, 3);
  Tensor x = randn({4});
  EXPECT_TRUE(exactly_equal(m->weight.detach(), fx().tensor("mylinear.weight")));
  EXPECT_TRUE(exactly_equal(m->bias.detach(), fx().tensor("mylinear.bias")));
  EXPECT_TRUE(exactly_equal(x, fx().tensor("mylinear.x")));
  Tensor y = (*m)(x);
  EXPECT_TRUE(all_close(y.detach(), fx().tensor("mylinear.out"), 1e-6, 1e-7));
  EXPECT_EQ(y.grad_fn()->name(), fx().string("mylinear.out.grad_fn"));
  EXPECT_EQ(joined_names(m->named_parameters()), "weight bias");
  EXPECT_TRUE(m->weight.is_leaf());
  EXPECT_TRUE(m->weight.requires_grad());
}

TEST(NnModuleTest, NetChildrenReprAndForward) {
  manual_seed(0);
  auto net = std::make_shared<Net>();
  Tensor x = randn({4});
  EXPECT_TRUE(exactly_equal(x, fx().tensor("net.x")));
  EXPECT_TRUE(all_close((*net)(x).detach(), fx().tensor("net.out"), 1e-6, 1e-7));
  EXPECT_EQ(net->repr(), fx().string("net.repr"));
  std::string children;
  for (const auto& [name, child] : net->named_children()) {
    children += (children.empty() ? "" : "\n") + name + "=" + child->repr();
  }
  EXPECT_EQ(children, fx().string("net.named_children"));
  std::ostringstream os;
  os << *net;
  EXPECT_EQ(os.str(), fx().string("net.repr"));
}

TEST(NnModuleTest, BigNetNamedModules) {
  manual_seed(0);
  auto big = std::make_shared<BigNet>();
  std::string listing;
  for (const auto& [name, m] : big->named_modules()) {
    listing += (listing.empty() ? "" : "\n---\n") + ("'" + name + "': ") + m->repr();
  }
  EXPECT_EQ(listing, fx().string("bignet.named_modules"));
  EXPECT_EQ(joined_names(big->named_parameters()), fx().string("bignet.named_parameters"));
  ASSERT_EQ(big->modules().size(), 5u);
  EXPECT_EQ(big->modules()[0].get(), big.get());
}

TEST(NnModuleTest, DynamicNetNamesReprAndDtype) {
  manual_seed(0);
  auto dyn = std::make_shared<DynamicNet>(3);
  Tensor x = randn({4});
  EXPECT_EQ(joined_names(dyn->named_parameters()), fx().string("dynamicnet.named_parameters"));
  EXPECT_EQ(dyn->repr(), fx().string("dynamicnet.repr"));
  EXPECT_TRUE(all_close((*dyn)(x).detach(), fx().tensor("dynamicnet.out.relu"), 1e-5, 1e-6));
  dyn->act = "lrelu";
  EXPECT_TRUE(all_close((*dyn)(x).detach(), fx().tensor("dynamicnet.out.lrelu"), 1e-5, 1e-6));
  Tensor w = dyn->final->weight;
  dyn->to(kFloat64);
  dyn->act = "relu";
  EXPECT_TRUE(w.is_same(dyn->final->weight));
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
  EXPECT_TRUE(
      all_close((*dyn)(x.to(kFloat64)).detach(), fx().tensor("dynamicnet.out.f64"), 1e-5, 1e-6));
}

TEST(NnModuleTest, ModalModuleFollowsTrainingFlag) {
  manual_seed(0);
  auto m = std::make_shared<ModalModule>();
  Tensor x = randn({4});
  EXPECT_TRUE(exactly_equal(x, fx().tensor("modal.x")));
  EXPECT_TRUE(m->is_training());
  EXPECT_EQ((*m)(x).to_vector<float>()[0], x.to_vector<float>()[0] + 1.0f);
  m->eval();
  EXPECT_FALSE(m->is_training());
  EXPECT_TRUE((*m)(x).is_same(x));
}

TEST(NnModuleTest, TrainAndEvalAreRecursive) {
  auto net = std::make_shared<Net>();
  net->eval();
  for (const auto& m : net->modules()) EXPECT_FALSE(m->is_training());
  net->train();
  for (const auto& m : net->modules()) EXPECT_TRUE(m->is_training());
  net->l0->train(false);
  EXPECT_TRUE(net->is_training());
  EXPECT_FALSE(net->l0->is_training());
}

TEST(NnModuleTest, RegistrationChecksNames) {
  nn::Module m("Custom");
  m.register_parameter("w", nn::Parameter(zeros({2})));
  m.register_buffer("b", zeros({2}));
  m.register_module("c", std::make_shared<nn::ReLU>());
  EXPECT_THROW(m.register_parameter("", zeros({1})), KeyError);
  EXPECT_THROW(m.register_parameter("a.b", zeros({1})), KeyError);
  EXPECT_NE(message_of([&] { m.register_parameter("a.b", zeros({1})); }).find("\"a.b\""),
            std::string::npos);
  EXPECT_THROW(m.register_buffer("x.y", zeros({1})), KeyError);
  EXPECT_THROW(m.register_module("", nullptr), KeyError);
  const std::string clash =
      message_of([&] { m.register_parameter("b", nn::Parameter(zeros({1}))); });
  EXPECT_NE(clash.find("attribute 'b' already exists as a Buffer"), std::string::npos) << clash;
  EXPECT_THROW(m.register_parameter("c", nn::Parameter(zeros({1}))), KeyError);
  EXPECT_THROW(m.register_buffer("w", zeros({1})), KeyError);
  EXPECT_THROW(m.register_module("w", std::make_shared<nn::ReLU>()), KeyError);
  EXPECT_THROW(m.register_module("b", std::make_shared<nn::ReLU>()), KeyError);
  // A non-leaf cannot be a parameter.
  Tensor leaf = zeros({2}, TensorOptions().requires_grad(true));
  EXPECT_THROW(m.register_parameter("nl", leaf * 2), ValueError);
  // The failed registrations changed nothing.
  EXPECT_EQ(joined_names(m.named_parameters()), "w");
  EXPECT_EQ(joined_names(m.named_buffers()), "b");
  EXPECT_EQ(joined_names(m.named_children()), "c");
  // Registering the same name again replaces the member of that kind, in place.
  Tensor w2 = nn::Parameter(ones({3}));
  m.register_parameter("v", nn::Parameter(ones({1})));
  m.register_parameter("w", w2);
  EXPECT_EQ(joined_names(m.named_parameters()), "w v");
  EXPECT_TRUE(m.get_parameter("w").is_same(w2));
}

TEST(NnModuleTest, NullEntriesReserveNames) {
  nn::Module m("Custom");
  m.register_parameter("p", Tensor());
  m.register_buffer("b", Tensor());
  m.register_module("c", nullptr);
  EXPECT_TRUE(m.named_parameters().empty());
  EXPECT_TRUE(m.named_buffers().empty());
  EXPECT_TRUE(m.named_children().empty());
  EXPECT_EQ(m.state_dict().size(), 0u);
  EXPECT_THROW(m.register_buffer("p", zeros({1})), KeyError);
  EXPECT_THROW(m.register_parameter("c", nn::Parameter(zeros({1}))), KeyError);
  EXPECT_EQ(m.repr(), "Custom(\n  (c): None\n)");
  // The reserved name takes a value of its own kind later.
  m.register_parameter("p", nn::Parameter(zeros({1})));
  EXPECT_EQ(joined_names(m.named_parameters()), "p");
}

TEST(NnModuleTest, GetSubmoduleParameterBuffer) {
  auto big = std::make_shared<BigNet>();
  EXPECT_EQ(big->get_submodule("net.l0").get(), big->net->l0.get());
  EXPECT_EQ(big->get_submodule("").get(), big.get());
  EXPECT_TRUE(big->get_parameter("net.l1.bias").is_same(big->net->l1->bias));
  EXPECT_TRUE(big->get_parameter("l1.weight").is_same(big->l1->weight));
  const std::string missing = message_of([&] { big->get_submodule("net.l7.x"); });
  EXPECT_NE(missing.find("Net has no attribute `l7`"), std::string::npos) << missing;
  EXPECT_THROW(big->get_submodule("net.l7"), KeyError);
  EXPECT_THROW(big->get_submodule("net.l0.weight"), KeyError);
  EXPECT_NE(
      message_of([&] { big->get_submodule("net.l0.weight"); }).find("`weight` is not an nn.Module"),
      std::string::npos);
  EXPECT_THROW(big->get_parameter("net.l0.nope"), KeyError);
  EXPECT_NE(message_of([&] {
              big->get_parameter("net.l0.nope");
            }).find("MyLinear has no attribute `nope`"),
            std::string::npos);
  EXPECT_THROW(big->get_parameter("net.l0"), KeyError);

  auto rm = std::make_shared<RunningMean>(4);
  EXPECT_TRUE(rm->get_buffer("mean").is_same(rm->mean));
  EXPECT_THROW(rm->get_buffer("var"), KeyError);
  auto lin = std::make_shared<MyLinear>(2, 2);
  EXPECT_NE(message_of([&] { lin->get_buffer("weight"); }).find("`weight` is not a buffer"),
            std::string::npos);
}

TEST(NnModuleTest, SharedModulesAndTiedParametersAppearOnce) {
  auto shared = std::make_shared<MyLinear>(2, 2);
  nn::Module m("Tied");
  m.register_module("a", shared);
  m.register_module("b", shared);
  m.register_parameter("w", shared->weight);
  EXPECT_EQ(joined_names(m.named_children()), "a");
  EXPECT_EQ(joined_names(m.named_modules()), " a");
  EXPECT_EQ(joined_names(m.named_modules("", false)), " a b");
  EXPECT_EQ(joined_names(m.named_parameters()), "w a.bias");
  EXPECT_EQ(joined_names(m.named_parameters("", true, false)), "w a.weight a.bias b.weight b.bias");
  EXPECT_EQ(joined_names(m.named_parameters("model")), "model.w model.a.bias");
  EXPECT_EQ(joined_names(m.named_parameters("", false)), "w");
  EXPECT_EQ(m.parameters().size(), 2u);
  // The state dict lists a tied tensor under every name.
  EXPECT_EQ(m.state_dict().keys(),
            (std::vector<std::string>{"w", "a.weight", "a.bias", "b.weight", "b.bias"}));
}

TEST(NnModuleTest, ApplyVisitsChildrenFirst) {
  auto net = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::Linear>(2, 2)});
  std::vector<std::string> seen;
  nn::Module& result = net->apply([&](nn::Module& m) {
    seen.push_back(m.repr());
    if (auto* linear = dynamic_cast<nn::Linear*>(&m)) {
      NoGradGuard no_grad;
      linear->weight.fill_(1.0);
    }
  });
  EXPECT_EQ(&result, net.get());
  std::string joined;
  for (const auto& s : seen) joined += (joined.empty() ? "" : "\n---\n") + s;
  EXPECT_EQ(joined, fx().string("apply.seen"));
  for (const auto& [name, p] : net->named_parameters()) {
    if (name.find("weight") != std::string::npos) {
      for (float v : p.to_vector<float>()) EXPECT_EQ(v, 1.0f);
    }
  }
}

TEST(NnModuleTest, ZeroGradAndRequiresGrad) {
  manual_seed(0);
  auto net = std::make_shared<Net>();
  (*net)(randn({4})).sum().backward();
  for (const Tensor& p : net->parameters()) ASSERT_TRUE(p.grad().defined());
  net->zero_grad(false);
  for (const Tensor& p : net->parameters()) {
    for (float v : p.grad().to_vector<float>()) EXPECT_EQ(v, 0.0f);
  }
  net->zero_grad();
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined());

  net->requires_grad_(false);
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.requires_grad());
  net->requires_grad_(true);
  // Freezing one parameter (fc1.weight.requires_grad = False) leaves it without a gradient.
  net->l0->weight.requires_grad_(false);
  (*net)(randn({4})).sum().backward();
  EXPECT_FALSE(net->l0->weight.grad().defined());
  EXPECT_TRUE(net->l0->bias.grad().defined());
}

TEST(NnModuleTest, ToKeepsParameterObjectsAndSkipsIntegerBuffers) {
  manual_seed(0);
  nn::Module m("Holder");
  Tensor p = m.register_parameter("p", nn::Parameter(randn({3})));
  Tensor count = m.register_buffer("count", zeros({1}, kInt64));
  Tensor running = m.register_buffer("running", ones({2}));
  (p * 2).sum().backward();
  const std::vector<float> before = p.to_vector<float>();

  m.double_();
  EXPECT_TRUE(m.get_parameter("p").is_same(p));
  EXPECT_EQ(p.dtype(), kFloat64);
  EXPECT_EQ(p.grad().dtype(), kFloat64);
  EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(count.dtype(), kInt64);
  EXPECT_EQ(running.dtype(), kFloat64);
  EXPECT_TRUE(m.get_buffer("running").is_same(running));
  const std::vector<double> after = p.to_vector<double>();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], static_cast<double>(before[i]));

  m.half();
  EXPECT_EQ(p.dtype(), kFloat16);
  m.bfloat16();
  EXPECT_EQ(p.dtype(), kBFloat16);
  m.float_();
  EXPECT_EQ(p.dtype(), kFloat32);
  m.cpu();
  EXPECT_TRUE(p.device().is_cpu());

  EXPECT_THROW(m.to(kInt64), DtypeError);
  EXPECT_NE(message_of([&] { m.to(kInt64); }).find("nn.Module.to only accepts floating point"),
            std::string::npos);
  EXPECT_EQ(p.dtype(), kFloat32);
}

TEST(NnModuleTest, MoveToAMissingDeviceChangesNothing) {
  if (device_available(Device(DeviceType::CUDA, 0))) GTEST_SKIP() << "a CUDA device is present";
  auto net = std::make_shared<Net>();
  Tensor w = net->l0->weight;
  const std::vector<float> before = w.to_vector<float>();
  EXPECT_THROW(net->cuda(), DeviceError);
  EXPECT_TRUE(w.device().is_cpu());
  EXPECT_EQ(w.to_vector<float>(), before);
  EXPECT_EQ(w.dtype(), kFloat32);
}

TEST(NnModuleTest, ToDeviceAndDtypeTogether) {
  auto net = std::make_shared<Net>();
  Tensor w = net->l1->weight;
  net->to(kCPU, kFloat64);
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_TRUE(w.device().is_cpu());
  EXPECT_THROW(net->to(kCPU, kBool), DtypeError);
  EXPECT_EQ(w.dtype(), kFloat64);
}

TEST(NnModuleTest, ModuleCannotBeItsOwnChild) {
  auto m = std::make_shared<nn::Module>("Loop");
  EXPECT_THROW(m->register_module("self", m), ValueError);
  EXPECT_TRUE(m->named_children().empty());
}

TEST(NnModuleTest, NameComesFromTheClass) {
  EXPECT_EQ(Net().name(), "Net");
  EXPECT_EQ(nn::Linear(1, 1).name(), "Linear");
  EXPECT_EQ(nn::Module("Custom").name(), "Custom");
  EXPECT_EQ(nn::Module().name(), "Module");
  auto m = std::make_shared<nn::Module>();
  EXPECT_THROW((*m)(zeros({1})), ValueError);
}

TEST(NnModuleTest, MultiTensorForward) {
  struct AddMul : nn::Module {
    using Module::forward;
    std::vector<Tensor> forward(const std::vector<Tensor>& in) override {
      if (in.size() == 1) return {in[0], in[0]};
      return {in[0] + in[1], in[0] * in[1]};
    }
  };
  auto m = std::make_shared<AddMul>();
  std::vector<Tensor> out = (*m)({tensor({2.0}), tensor({3.0})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].item(), 5.0);
  EXPECT_EQ(out[1].item(), 6.0);
  // The single-tensor call needs exactly one output.
  EXPECT_THROW((*m)(tensor({1.0})), ValueError);
  // A module that overrides only the single-tensor forward takes exactly one input.
  EXPECT_THROW((*std::make_shared<nn::ReLU>())({tensor({1.0}), tensor({2.0})}), ValueError);
}

}  // namespace
}  // namespace nns::test
