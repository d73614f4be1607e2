// SPDX-License-Identifier: GPL-3.0-or-later
// state_dict and load_state_dict: order, prefixes, what is left out, strict and non-strict
// loads, PyTorch's error text, all-or-nothing loads, assign, and the state-dict hooks.
#include <gtest/gtest.h>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "nn_seed_modules.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("nn_module");
}

std::string joined(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "" : " ") + k;
  return out;
}

std::vector<std::vector<float>> values_of(nn::Module& m) {
  std::vector<std::vector<float>> out;
  for (const auto& item : m.state_dict()) out.push_back(item.value().to_vector<float>());
  return out;
}

TEST(NnStateDictTest, StatefulModuleKeyOrderAndValues) {
  manual_seed(0);
  auto m = std::make_shared<StatefulModule>();
  nn::StateDict sd = m->state_dict();
  EXPECT_EQ(joined(sd.keys()), fx().string("stateful.keys"));
  for (const auto& item : sd) {
    EXPECT_TRUE(all_close(item.value(), fx().tensor("stateful.sd." + item.key()), 0, 0))
        << item.key();
    EXPECT_FALSE(item.value().requires_grad()) << item.key();
  }
  EXPECT_EQ(m->repr(), fx().string("stateful.repr"));
  std::string buffers;
  for (const auto& [name, b] : m->named_buffers()) buffers += (buffers.empty() ? "" : " ") + name;
  EXPECT_EQ(buffers, fx().string("stateful.named_buffers"));

  auto loaded = std::make_shared<StatefulModule>();
  EXPECT_EQ(loaded->load_state_dict(sd).str(), fx().string("stateful.load"));
  EXPECT_EQ(values_of(*loaded), values_of(*m));
}

TEST(NnStateDictTest, KeepVarsAndDetachedValues) {
  auto lin = std::make_shared<nn::Linear>(2, 3);
  nn::StateDict plain = lin->state_dict();
  EXPECT_FALSE(plain["weight"].is_same(lin->weight));
  EXPECT_FALSE(plain["weight"].requires_grad());
  EXPECT_EQ(plain["weight"].storage(), lin->weight.storage());  // same data, not a copy
  nn::StateDict vars = lin->state_dict("", true);
  EXPECT_TRUE(vars["weight"].is_same(lin->weight));
  EXPECT_EQ(joined(lin->state_dict("model.").keys()), "model.weight model.bias");
}

TEST(NnStateDictTest, RunningMeanRoundTrip) {
  manual_seed(0);
  auto m = std::make_shared<RunningMean>(4);
  for (int i = 0; i < 10; ++i) (*m)(randn({4}));
  EXPECT_TRUE(all_close(m->mean, fx().tensor("runningmean.mean"), 1e-6, 1e-7));
  nn::StateDict sd = m->state_dict();
  EXPECT_EQ(joined(sd.keys()), "mean");
  auto loaded = std::make_shared<RunningMean>(4);
  EXPECT_EQ(loaded->load_state_dict(sd).str(), "<All keys matched successfully>");
  EXPECT_EQ(loaded->mean.to_vector<float>(), m->mean.to_vector<float>());
  // A copy: changing the source later does not reach the loaded module.
  m->mean.fill_(7.0);
  EXPECT_NE(loaded->mean.to_vector<float>(), m->mean.to_vector<float>());
}

TEST(NnStateDictTest, StrictLoadListsEveryProblemAndChangesNothing) {
  manual_seed(0);
  auto net = std::make_shared<Net>();
  const auto before = values_of(*net);
  nn::StateDict bad = net->state_dict();
  for (auto& item : bad) item.value() = item.value().clone() + 1.0;  // valid new values
  bad["l0.weight"] = zeros({3, 4});
  bad.pop("l1.bias");
  bad.insert("l2.weight", zeros({1}));
  try {
    net->load_state_dict(bad);
    FAIL() << "expected a StateDictError";
  } catch (const nn::StateDictError& e) {
    EXPECT_EQ(std::string(e.what()), fx().string("net.load.error"));
    EXPECT_EQ(e.keys.missing_keys, std::vector<std::string>{"l1.bias"});
    EXPECT_EQ(e.keys.unexpected_keys, std::vector<std::string>{"l2.weight"});
  }
  EXPECT_EQ(values_of(*net), before);

  // Non-strict: the key lists come back; a size mismatch is still an error.
  EXPECT_THROW(net->load_state_dict(bad, false), nn::StateDictError);
  EXPECT_EQ(values_of(*net), before);
  nn::StateDict keys_only = net->state_dict();
  keys_only.pop("l1.bias");
  keys_only.insert("extra", zeros({1}));
  EXPECT_EQ(net->load_state_dict(keys_only, false).str(), fx().string("net.load.nonstrict"));
  EXPECT_THROW(net->load_state_dict(keys_only), nn::StateDictError);
}

TEST(NnStateDictTest, CopyKeepsDtypeAssignTakesTheTensor) {
  auto lin = std::make_shared<nn::Linear>(2, 1);
  Tensor w = lin->weight;
  nn::StateDict sd("Key");
  sd.insert("weight", tensor({{1.0, 2.0}}, kFloat64));
  sd.insert("bias", tensor({3.0}, kFloat64));
  lin->load_state_dict(sd);
  EXPECT_EQ(w.dtype(), kFloat32);
  EXPECT_EQ(w.to_vector<float>(), (std::vector<float>{1, 2}));
  EXPECT_TRUE(lin->get_parameter("weight").is_same(w));

  lin->load_state_dict(sd, true, /*assign=*/true);
  EXPECT_TRUE(lin->get_parameter("weight").is_same(w));
  EXPECT_EQ(w.dtype(), kFloat64);
  EXPECT_EQ(w.storage(), sd["weight"].storage());
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}

TEST(NnStateDictTest, ZeroDimParameterTakesAOneElementVector) {
  nn::Module m("Scalar");
  Tensor s = m.register_parameter("s", nn::Parameter(scalar_tensor(0.0)));
  nn::StateDict sd("Key");
  sd.insert("s", tensor({5.0}));
  m.load_state_dict(sd);
  EXPECT_EQ(s.item(), 5.0);
}

TEST(NnStateDictTest, NonPersistentBuffersAreNotLoadedOrExpected) {
  nn::Module m("Buffers");
  m.register_buffer("kept", zeros({1}));
  m.register_buffer("scratch", zeros({1}), false);
  EXPECT_EQ(joined(m.state_dict().keys()), "kept");
  EXPECT_TRUE(m.is_persistent_buffer("kept"));
  EXPECT_FALSE(m.is_persistent_buffer("scratch"));
  nn::StateDict sd("Key");
  sd.insert("kept", ones({1}));
  sd.insert("scratch", ones({1}));
  const nn::IncompatibleKeys keys = m.load_state_dict(sd, false);
  EXPECT_EQ(keys.unexpected_keys, std::vector<std::string>{"scratch"});
  EXPECT_EQ(m.get_buffer("scratch").item(), 0.0);
  EXPECT_EQ(m.get_buffer("kept").item(), 1.0);
}

TEST(NnStateDictTest, Hooks) {
  auto lin = std::make_shared<nn::Linear>(2, 1);
  RemovableHandle h =
      lin->register_state_dict_hook([](nn::Module&, nn::StateDict& sd, const std::string& prefix) {
        sd.insert(prefix + "version", scalar_tensor(2));
      });
  auto holder = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{lin});
  EXPECT_EQ(joined(holder->state_dict().keys()), "0.weight 0.bias 0.version");
  h.remove();
  EXPECT_EQ(joined(holder->state_dict().keys()), "0.weight 0.bias");

  // A pre hook renames old keys; a post hook forgives a missing bias.
  lin->register_load_state_dict_pre_hook(
      [](nn::Module&, nn::StateDict& sd, const std::string& prefix) {
        if (sd.contains(prefix + "w")) sd.insert(prefix + "weight", sd.pop(prefix + "w"));
      });
  lin->register_load_state_dict_post_hook([](nn::Module&, nn::IncompatibleKeys& keys) {
    std::erase(keys.missing_keys, std::string("0.bias"));
  });
  nn::StateDict old("Key");
  old.insert("0.w", tensor({{4.0, 5.0}}));
  EXPECT_EQ(holder->load_state_dict(old).str(), "<All keys matched successfully>");
  EXPECT_EQ(lin->weight.to_vector<float>(), (std::vector<float>{4, 5}));
}

TEST(NnStateDictTest, OrderedDictKeepsInsertionOrder) {
  nn::OrderedDict<int> d("Thing");
  d.insert("b", 1);
  d.insert("a", 2);
  d.insert("c", 3);
  EXPECT_EQ(joined(d.keys()), "b a c");
  EXPECT_EQ(d.pop("a"), 2);
  EXPECT_EQ(joined(d.keys()), "b c");
  EXPECT_EQ(d["c"], 3);
  d.insert_or_assign("b", 9);
  EXPECT_EQ(joined(d.keys()), "b c");
  EXPECT_EQ(d["b"], 9);
  EXPECT_THROW(d.insert("c", 0), KeyError);
  try {
    d["zz"];
  } catch (const KeyError& e) {
    EXPECT_STREQ(e.what(), "Thing 'zz' is not defined");
  }
  EXPECT_THROW(d.pop("zz"), KeyError);
}

}  // namespace
}  // namespace nns::test
