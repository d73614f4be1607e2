// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/weight_changes.h"

#include "engine/tensor/dtype.h"

namespace nns::train {

void WeightChange::add(const WeightChange& o) {
  norm_before = std::sqrt(norm_before * norm_before + o.norm_before * o.norm_before);
  norm_after = std::sqrt(norm_after * norm_after + o.norm_after * o.norm_after);
  norm_change = std::sqrt(norm_change * norm_change + o.norm_change * o.norm_change);
  numel += o.numel;
}

std::vector<std::pair<std::string, WeightChange>> weight_changes(const nn::StateDict& a,
                                                                 const nn::StateDict& b) {
  std::vector<std::pair<std::string, WeightChange>> out;
  for (const auto& item : a) {
    const Tensor* other = b.find(item.key());
    const Tensor& x = item.value();
    if (!other || !x.is_floating_point() || !other->is_floating_point() ||
        x.sizes() != other->sizes()) {
      continue;
    }
    const Tensor p = x.to(kCPU).to(kFloat64).contiguous();
    const Tensor q = other->to(kCPU).to(kFloat64).contiguous();
    const double* u = p.data_ptr<double>();
    const double* v = q.data_ptr<double>();
    double aa = 0, bb = 0, dd = 0;
    for (int64_t i = 0; i < p.numel(); ++i) {
      aa += u[i] * u[i];
      bb += v[i] * v[i];
      dd += (v[i] - u[i]) * (v[i] - u[i]);
    }
    out.emplace_back(item.key(),
                     WeightChange{std::sqrt(aa), std::sqrt(bb), std::sqrt(dd), p.numel()});
  }
  return out;
}

}  // namespace nns::train
