// SPDX-License-Identifier: GPL-3.0-or-later
// A plugin that loads fine but whose layer's forward throws: training must stop with its
// message, like any layer's error.
#include "engine/nn/module.h"
#include "engine/plugin/plugin.h"
#include "engine/tensor/error.h"

namespace {
class FaultyLayer : public nns::nn::Module {
 public:
  FaultyLayer() : Module("FaultyLayer") {}
  using Module::forward;
  nns::Tensor forward(const nns::Tensor&) override {
    throw nns::ValueError("FaultyLayer: this layer always fails");
  }
};

void register_types(nns::plugin::Registrar& registrar) {
  registrar.add(nns::graph::module_type(
      "FaultyLayer", "Test", "throws in forward", {},
      [](const nns::graph::Json&) { return std::make_shared<FaultyLayer>(); },
      nns::graph::same_shape));
}
}  // namespace

NNS_PLUGIN("faulty", "0.1.0", "a layer whose forward throws", register_types)
