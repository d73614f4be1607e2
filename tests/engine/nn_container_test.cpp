// SPDX-License-Identifier: GPL-3.0-or-later
// Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict: their operations keep
// names and named_parameters() consistent; reprs as PyTorch prints them.
#include <gtest/gtest.h>

#include "engine/nn/nn.h"
#include "engine/ops/ops.h"
#include "support/fixtures.h"

namespace nns::test {
namespace {

const Fixtures& fx() {
  return Fixtures::load("nn_module");
}

template <class T>
std::string names(const nn::NamedList<T>& items) {
  std::string out;
  bool first = true;
  for (const auto& [name, v] : items) {
    out += (first ? "" : " ") + name;
    first = false;
  }
  return out;
}

std::shared_ptr<nn::Sequential> three() {
  return std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(2, 2), std::make_shared<nn::ReLU>(),
                                 std::make_shared<nn::Linear>(2, 1)});
}

TEST(NnContainerTest, SequentialChainsAndIndexes) {
  auto seq = three();
  Tensor x = randn({3, 2});
  auto l0 = std::dynamic_pointer_cast<nn::Linear>((*seq)[0]);
  auto l2 = std::dynamic_pointer_cast<nn::Linear>((*seq)[-1]);
  ASSERT_TRUE(l0 && l2);
  Tensor expected = (*l2)((*l0)(x).relu());
  EXPECT_EQ((*seq)(x).to_vector<float>(), expected.to_vector<float>());
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ(names(seq->named_parameters()), "0.weight 0.bias 2.weight 2.bias");
  EXPECT_THROW((*seq)[3], IndexError);
  EXPECT_THROW((*seq)[-4], IndexError);
}

TEST(NnContainerTest, SequentialSliceEraseAndNames) {
  auto seq = three();
  EXPECT_EQ(seq->slice(1, 3)->repr(), fx().string("seq.slice"));
  EXPECT_EQ(seq->slice(-2, 100)->repr(), fx().string("seq.slice"));
  seq->erase(0);
  EXPECT_EQ(seq->repr(), fx().string("seq.del"));
  EXPECT_EQ(names(seq->named_parameters()), "1.weight 1.bias");

  auto named = std::make_shared<nn::Sequential>(nn::NamedList<nn::ModulePtr>{
      {"fc", std::make_shared<nn::Identity>()}, {"act", std::make_shared<nn::Tanh>()}});
  EXPECT_EQ(named->repr(), fx().string("seq.ordered"));
}

TEST(NnContainerTest, SequentialAppendInsertPopRenumber) {
  auto seq = three();
  auto extra = std::make_shared<nn::Linear>(1, 1);
  seq->append(extra);
  EXPECT_EQ(names(seq->named_children()), "0 1 2 3");
  auto first = std::make_shared<nn::Linear>(2, 2);
  seq->insert(0, first);
  EXPECT_EQ(names(seq->named_children()), "0 1 2 3 4");
  EXPECT_EQ((*seq)[0].get(), first.get());
  EXPECT_EQ(names(seq->named_parameters()),
            "0.weight 0.bias 1.weight 1.bias 3.weight 3.bias 4.weight 4.bias");
  EXPECT_TRUE(seq->get_parameter("4.weight").is_same(extra->weight));
  EXPECT_EQ(seq->pop(-1).get(), extra.get());
  EXPECT_EQ(seq->pop(0).get(), first.get());
  EXPECT_EQ(names(seq->named_children()), "0 1 2");
  seq->extend({std::make_shared<nn::Identity>(), std::make_shared<nn::Identity>()});
  EXPECT_EQ(names(seq->named_children()), "0 1 2 3 4");
  EXPECT_THROW(seq->insert(9, extra), IndexError);
  seq->insert(-1, extra);
  EXPECT_EQ((*seq)[4].get(), extra.get());
  EXPECT_EQ(seq->size(), 6u);
}

TEST(NnContainerTest, ModuleListHasNoForward) {
  auto list = std::make_shared<nn::ModuleList>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::ReLU>(), std::make_shared<nn::Tanh>()});
  EXPECT_THROW((*list)(zeros({1})), ValueError);
  std::string seen;
  for (const auto& item : *list) seen += item.key() + ":" + item.value()->name() + " ";
  EXPECT_EQ(seen, "0:ReLU 1:Tanh ");
  EXPECT_EQ(list->slice(1, 2)->name(), "ModuleList");
}

TEST(NnContainerTest, ModuleDictOperations) {
  auto relu = std::make_shared<nn::ReLU>();
  auto d = std::make_shared<nn::ModuleDict>(
      nn::NamedList<nn::ModulePtr>{{"relu", relu}, {"lrelu", std::make_shared<nn::LeakyReLU>()}});
  EXPECT_EQ(d->keys(), (std::vector<std::string>{"relu", "lrelu"}));
  EXPECT_EQ((*d)["relu"].get(), relu.get());
  EXPECT_THROW((*d)["gelu"], KeyError);
  EXPECT_THROW((*d)(zeros({1})), ValueError);
  auto tanh = std::make_shared<nn::Tanh>();
  d->update({{"relu", tanh}, {"lin", std::make_shared<nn::Linear>(1, 1)}});
  EXPECT_EQ(names(d->items()), "relu lrelu lin");
  EXPECT_EQ((*d)["relu"].get(), tanh.get());
  EXPECT_EQ(names(d->named_parameters()), "lin.weight lin.bias");
  EXPECT_EQ(d->pop("relu").get(), tanh.get());
  EXPECT_EQ(names(d->items()), "lrelu lin");
  EXPECT_FALSE(d->contains("relu"));
  EXPECT_EQ(d->values().size(), 2u);
  EXPECT_THROW(d->insert("a.b", relu), KeyError);
  d->clear();
  EXPECT_EQ(d->size(), 0u);
}

TEST(NnContainerTest, ParameterListOperationsAndRepr) {
  auto list = std::make_shared<nn::ParameterList>(std::vector<Tensor>{
      nn::Parameter(zeros({2})), nn::Parameter(zeros({2})), nn::Parameter(zeros({2}))});
  EXPECT_EQ(list->repr(), fx().string("paramlist.repr"));
  EXPECT_EQ(names(list->named_parameters()), "0 1 2");
  Tensor extra = nn::Parameter(ones({1}));
  list->insert(1, extra);
  EXPECT_EQ(names(list->named_parameters()), "0 1 2 3");
  EXPECT_TRUE((*list)[1].is_same(extra));
  EXPECT_TRUE(list->pop(1).is_same(extra));
  EXPECT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[-1].numel(), 2);
  EXPECT_THROW((*list)[5], IndexError);
  list->append(extra);
  EXPECT_EQ(list->state_dict().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
}

TEST(NnContainerTest, ParameterDictOperationsAndRepr) {
  auto d = std::make_shared<nn::ParameterDict>(nn::NamedList<Tensor>{
      {"foo", nn::Parameter(zeros({3}))}, {"bar", nn::Parameter(zeros({4, 2}, kFloat64))}});
  EXPECT_EQ(d->repr(), fx().string("paramdict.repr"));
  EXPECT_EQ(d->keys(), (std::vector<std::string>{"foo", "bar"}));
  EXPECT_EQ((*d)["bar"].dtype(), kFloat64);
  EXPECT_THROW((*d)["baz"], KeyError);
  d->insert("baz", nn::Parameter(ones({1})));
  EXPECT_EQ(names(d->items()), "foo bar baz");
  d->pop("foo");
  EXPECT_EQ(names(d->named_parameters()), "bar baz");
  EXPECT_TRUE(d->contains("baz"));
  EXPECT_EQ(d->values().size(), 2u);
}

}  // namespace
}  // namespace nns::test
