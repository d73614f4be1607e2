// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The custom modules of the seed notes (../shared/seeds/002, 003), written as a C++ user would
// write them; the nn tests run the seeds' examples with them.
#include "engine/nn/nn.h"
#include "engine/ops/ops.h"

namespace nns::test {

struct MyLinear : nn::Module {
  Tensor weight, bias;
  MyLinear(int64_t in_features, int64_t out_features) {
    weight = register_parameter("weight", nn::Parameter(randn({in_features, out_features})));
    bias = register_parameter("bias", nn::Parameter(randn({out_features})));
  }
  using Module::forward;
  Tensor forward(const Tensor& input) override { return input.matmul(weight) + bias; }
};

struct Net : nn::Module {
  std::shared_ptr<MyLinear> l0, l1;
  Net() {
    l0 = register_module("l0", std::make_shared<MyLinear>(4, 3));
    l1 = register_module("l1", std::make_shared<MyLinear>(3, 1));
  }
  using Module::forward;
  Tensor forward(const Tensor& x) override { return (*l1)((*l0)(x).relu()); }
};

struct BigNet : nn::Module {
  std::shared_ptr<MyLinear> l1;
  std::shared_ptr<Net> net;
  BigNet() {
    l1 = register_module("l1", std::make_shared<MyLinear>(5, 4));
    net = register_module("net", std::make_shared<Net>());
  }
  using Module::forward;
  Tensor forward(const Tensor& x) override { return (*net)((*l1)(x)); }
};

// forward(x, act) becomes forward({x}) plus the activation's name as a member, since forward
// takes tensors only.
struct DynamicNet : nn::Module {
  std::shared_ptr<nn::ModuleList> linears;
  std::shared_ptr<nn::ModuleDict> activations;
  std::shared_ptr<MyLinear> final;
  std::string act = "relu";
  explicit DynamicNet(int num_layers) {
    linears = register_module("linears", std::make_shared<nn::ModuleList>());
    for (int i = 0; i < num_layers; ++i) linears->append(std::make_shared<MyLinear>(4, 4));
    activations = register_module(
        "activations",
        std::make_shared<nn::ModuleDict>(nn::NamedList<nn::ModulePtr>{
            {"relu", std::make_shared<nn::ReLU>()}, {"lrelu", std::make_shared<nn::LeakyReLU>()}}));
    final = register_module("final", std::make_shared<MyLinear>(4, 1));
  }
  using Module::forward;
  Tensor forward(const Tensor& input) override {
    Tensor x = input;
    for (const auto& item : *linears) x = (*item.value())(x);
    return (*final)((*(*activations)[act])(x));
  }
};

struct ModalModule : nn::Module {
  using Module::forward;
  Tensor forward(const Tensor& x) override { return is_training() ? x + 1.0 : x; }
};

struct RunningMean : nn::Module {
  double momentum;
  Tensor mean;
  explicit RunningMean(int64_t num_features, double momentum = 0.9) : momentum(momentum) {
    mean = register_buffer("mean", zeros({num_features}));
  }
  using Module::forward;
  Tensor forward(const Tensor& x) override {
    mean = register_buffer("mean", momentum * mean + (1.0 - momentum) * x);
    return mean;
  }
};

struct StatefulModule : nn::Module {
  std::shared_ptr<nn::Linear> linear;
  StatefulModule() {
    register_parameter("param1", nn::Parameter(randn({2})));
    register_parameter("param2", nn::Parameter(randn({3})));
    register_parameter("param3", Tensor());
    std::vector<Tensor> list;
    for (int i = 0; i < 3; ++i) list.push_back(nn::Parameter(randn({2})));
    register_module("param_list", std::make_shared<nn::ParameterList>(list));
    // Drawn in the Python dict's order; PyTorch 1.13 adds a plain dict's entries sorted.
    Tensor foo = nn::Parameter(randn({3}));
    Tensor bar = nn::Parameter(randn({4}));
    register_module("param_dict", std::make_shared<nn::ParameterDict>(
                                      nn::NamedList<Tensor>{{"bar", bar}, {"foo", foo}}));
    register_buffer("buffer1", randn({4}), true);
    register_buffer("buffer2", randn({5}), false);
    register_buffer("buffer3", Tensor());
    linear = register_module("linear", std::make_shared<nn::Linear>(2, 3));
  }
};

struct TinyModel : nn::Module {
  TinyModel() {
    register_module("linear1", std::make_shared<nn::Linear>(100, 200));
    register_module("activation", std::make_shared<nn::ReLU>());
    register_module("linear2", std::make_shared<nn::Linear>(200, 10));
    register_module("softmax", std::make_shared<nn::Softmax>());
  }
  using Module::forward;
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (const auto& child : children()) y = (*child)(y);
    return y;
  }
};

}  // namespace nns::test
