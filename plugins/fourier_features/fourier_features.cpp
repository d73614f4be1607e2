// SPDX-License-Identifier: GPL-3.0-or-later
// Random Fourier features (Tancik et al. 2020): y = cat(sin(2 pi x B^T), cos(2 pi x B^T)) with
// a fixed random B of shape [out_features / 2, in_features] drawn from N(0, sigma^2), a
// persistent buffer ("ff.B" in the state dict). They let a small MLP learn high-frequency
// functions such as the spirals. An example plugin, written with engine ops only.
#include <cmath>
#include <memory>

#include "engine/graph/node_types.h"
#include "engine/nn/layers.h"
#include "engine/nn/module.h"
#include "engine/ops/ops.h"
#include "engine/plugin/plugin.h"

namespace {

using nns::Tensor;

class FourierFeatures : public nns::nn::Module {
 public:
  FourierFeatures(int64_t in_features, int64_t out_features, double sigma)
      : Module("FourierFeatures"),
        in_features_(in_features),
        out_features_(out_features),
        sigma_(sigma) {
    if (in_features <= 0 || out_features <= 0 || out_features % 2 != 0)
      throw nns::ValueError(
          "FourierFeatures: in_features must be positive and out_features positive and even, "
          "got in_features=" +
          std::to_string(in_features) + ", out_features=" + std::to_string(out_features));
    // Drawn from the default generator, so a project's seed makes the same B every time.
    B_ = register_buffer("B", nns::randn({out_features / 2, in_features}) * sigma);
  }

  using Module::forward;
  Tensor forward(const Tensor& x) override {
    const Tensor projected = nns::matmul(x, B_.t()) * (2 * M_PI);
    return nns::cat({projected.sin(), projected.cos()}, -1);
  }

  std::string extra_repr() const override {
    return "in_features=" + std::to_string(in_features_) +
           ", out_features=" + std::to_string(out_features_) +
           ", sigma=" + nns::nn::python_float(sigma_);
  }

 private:
  int64_t in_features_;
  int64_t out_features_;
  double sigma_;
  Tensor B_;
};

std::vector<nns::graph::SymShape> infer_fourier_features(
    const nns::graph::Json& o, const std::vector<nns::graph::SymShape>& in) {
  const nns::graph::SymShape& x = in.at(0);
  const int64_t features = nns::graph::get_int(o, "in_features");
  if (x.size() < 2 || x.back() != features)
    nns::graph::bad_input("in", x,
                          "[N, *, " + std::to_string(features) + "] (last dim = in_features)");
  nns::graph::SymShape out = x;
  out.back() = nns::graph::get_int(o, "out_features");
  return {out};
}

void register_types(nns::plugin::Registrar& registrar) {
  using namespace nns::graph;
  registrar.add(module_type(
      "FourierFeatures", "Linear / Conv",
      "random Fourier features: cat(sin(2 pi x B^T), cos(2 pi x B^T)), B ~ N(0, sigma^2) fixed",
      {int_option("in_features", 2, "size of each input sample", 1),
       int_option("out_features", 64, "size of each output sample (even: sin and cos halves)", 2),
       float_option("sigma", 1.0, "standard deviation of B's entries (the frequency scale)", 0)},
      [](const nns::graph::Json& o) {
        return std::make_shared<FourierFeatures>(get_int(o, "in_features"),
                                                 get_int(o, "out_features"), get_float(o, "sigma"));
      },
      infer_fourier_features));
  // The PyTorch twin the code export writes into model.py.
  registrar.types().back().pytorch_source = R"PY(import math


class FourierFeatures(nn.Module):
    """Random Fourier features: cat(sin(2 pi x B^T), cos(2 pi x B^T)), B ~ N(0, sigma^2)."""

    def __init__(self, in_features, out_features, sigma=1.0):
        super().__init__()
        self.register_buffer("B", torch.randn(out_features // 2, in_features) * sigma)

    def forward(self, x):
        projected = (x @ self.B.t()) * (2 * math.pi)
        return torch.cat([torch.sin(projected), torch.cos(projected)], dim=-1)
)PY";
}

}  // namespace

NNS_PLUGIN("fourier_features", "1.0.0",
           "Random Fourier features (in_features -> out_features), an example plugin",
           register_types)
