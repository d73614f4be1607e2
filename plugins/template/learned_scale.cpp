// SPDX-License-Identifier: GPL-3.0-or-later
// A plugin written outside NN Studio's tree (plugins/README.md walks through it): LearnedScale,
// y = x * scale with one learnable scale per feature (the last dim), initialised to `init`.
#include <memory>

#include "engine/graph/node_types.h"
#include "engine/nn/layers.h"
#include "engine/nn/module.h"
#include "engine/ops/ops.h"
#include "engine/plugin/plugin.h"

namespace {

class LearnedScale : public nns::nn::Module {
 public:
  LearnedScale(int64_t features, double init) : Module("LearnedScale"), init_(init) {
    scale_ = register_parameter("scale", nns::nn::Parameter(nns::ones({features}) * init));
  }

  using Module::forward;
  nns::Tensor forward(const nns::Tensor& x) override { return x * scale_; }

  std::string extra_repr() const override {
    return "features=" + std::to_string(scale_.size(0)) + ", init=" + nns::nn::python_float(init_);
  }

 private:
  double init_;
  nns::Tensor scale_;
};

// The last dim must be `features`; the output has the input's shape.
std::vector<nns::graph::SymShape> infer_shapes(const nns::graph::Json& o,
                                               const std::vector<nns::graph::SymShape>& in) {
  const int64_t features = nns::graph::get_int(o, "features");
  if (in.at(0).size() < 2 || in.at(0).back() != features)
    nns::graph::bad_input("in", in.at(0), "[N, *, " + std::to_string(features) + "]");
  return {in.at(0)};
}

void register_types(nns::plugin::Registrar& registrar) {
  using namespace nns::graph;
  registrar.add(module_type(
      "LearnedScale", "Math", "x * scale, one learnable scale per feature (the last dim)",
      {int_option("features", 1, "size of the last dim", 1),
       float_option("init", 1.0, "the scales' initial value")},
      [](const Json& o) {
        return std::make_shared<LearnedScale>(get_int(o, "features"), get_float(o, "init"));
      },
      infer_shapes));
  // Its PyTorch twin, for the PyTorch code export (plugins/README.md).
  registrar.types().back().pytorch_source = R"PY(class LearnedScale(nn.Module):
    def __init__(self, features, init=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(features) * init)

    def forward(self, x):
        return x * self.scale
)PY";
}

}  // namespace

NNS_PLUGIN("learned_scale", "0.1.0", "LearnedScale: a plugin built with the SDK", register_types)
