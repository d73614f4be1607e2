// SPDX-License-Identifier: GPL-3.0-or-later
// RMSNorm as torch.nn.RMSNorm (PyTorch 2.4): y = x * rsqrt(mean(x^2) + eps) * weight, the mean
// over the last normalized_shape.size() dims; eps null is the dtype's machine epsilon
// (torch.finfo(x.dtype).eps). An example plugin: one module type, written with engine ops
// only, so autograd, hooks, probes and state dicts ("rms.weight") work with no more code.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>

#include "engine/graph/node_types.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/nn/module.h"
#include "engine/ops/ops.h"
#include "engine/plugin/plugin.h"

namespace {

using nns::Shape;
using nns::Tensor;

class RMSNorm : public nns::nn::Module {
 public:
  RMSNorm(Shape normalized_shape, std::optional<double> eps, bool elementwise_affine)
      : Module("RMSNorm"),
        normalized_shape_(std::move(normalized_shape)),
        eps_(eps),
        elementwise_affine_(elementwise_affine) {
    if (normalized_shape_.empty() || std::any_of(normalized_shape_.begin(), normalized_shape_.end(),
                                                 [](int64_t s) { return s <= 0; }))
      throw nns::ValueError("RMSNorm: normalized_shape must hold positive sizes, got " +
                            nns::nn::python_tuple(normalized_shape_));
    // register_parameter keeps the name reserved when there is no weight, as PyTorch's
    // register_parameter('weight', None).
    weight_ = register_parameter("weight", elementwise_affine_
                                               ? nns::nn::Parameter(nns::ones(normalized_shape_))
                                               : Tensor());
  }

  using Module::forward;
  Tensor forward(const Tensor& x) override {
    const auto rank = static_cast<int64_t>(x.dim());
    const auto n = static_cast<int64_t>(normalized_shape_.size());
    Shape dims;
    for (int64_t d = rank - n; d < rank; ++d) dims.push_back(d);
    const double eps =
        eps_.value_or(x.dtype() == nns::kFloat64 ? std::numeric_limits<double>::epsilon()
                                                 : std::numeric_limits<float>::epsilon());
    Tensor y = x * (x.pow(2).mean(dims, /*keepdim=*/true) + eps).rsqrt();
    return elementwise_affine_ ? y * weight_ : y;
  }

  std::string extra_repr() const override {
    return nns::nn::python_tuple(normalized_shape_) +
           ", eps=" + (eps_ ? nns::nn::python_float(*eps_) : std::string("None")) +
           ", elementwise_affine=" + (elementwise_affine_ ? "True" : "False");
  }

 private:
  Shape normalized_shape_;
  std::optional<double> eps_;
  bool elementwise_affine_;
  Tensor weight_;
};

// The input must end in normalized_shape, as LayerNorm's.
std::vector<nns::graph::SymShape> infer_rms_norm(const nns::graph::Json& o,
                                                 const std::vector<nns::graph::SymShape>& in) {
  const nns::graph::SymShape& x = in.at(0);
  const Shape normalized = nns::graph::get_list(o, "normalized_shape");
  const bool fits = x.size() > normalized.size() &&
                    std::equal(normalized.begin(), normalized.end(), x.end() - normalized.size());
  if (!fits)
    nns::graph::bad_input(
        "in", x, "[N, *, ...] ending in normalized_shape " + nns::graph::shape_str(normalized));
  return {x};
}

void register_types(nns::plugin::Registrar& registrar) {
  using namespace nns::graph;
  registrar.add(module_type(
      "RMSNorm", "Normalization",
      "torch.nn.RMSNorm: x / sqrt(mean(x^2) + eps) * weight over the last dims",
      {list_option("normalized_shape", nns::graph::Json::array({1}),
                   "the trailing dims to normalize over (their sizes)", 0, 1),
       optional_float_option("eps",
                             "added to the mean square; null: the dtype's machine "
                             "epsilon, as PyTorch",
                             0),
       bool_option("elementwise_affine", true, "learn a weight of normalized_shape (ones)")},
      [](const nns::graph::Json& o) {
        return std::make_shared<RMSNorm>(get_list(o, "normalized_shape"),
                                         get_optional_float(o, "eps"),
                                         get_bool(o, "elementwise_affine"));
      },
      infer_rms_norm));
  // The PyTorch twin the code export writes into model.py: torch 2.4 has nn.RMSNorm, 1.13 not.
  registrar.types().back().pytorch_source = R"PY(class RMSNorm(nn.Module):
    """torch.nn.RMSNorm (PyTorch 2.4), for any PyTorch version."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        dims = tuple(range(-len(self.normalized_shape), 0))
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y
)PY";
}

}  // namespace

NNS_PLUGIN("rmsnorm", "1.0.0", "RMSNorm (torch.nn.RMSNorm), an example plugin", register_types)
