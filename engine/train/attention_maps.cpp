// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/attention_maps.h"

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/dtype.h"

namespace nns::train {

AttentionModules attention_modules(const nn::ModulePtr& module) {
  AttentionModules out;
  if (!module) return out;
  for (auto& [name, m] : module->named_modules()) {
    if (auto mha = std::dynamic_pointer_cast<nn::MultiheadAttention>(m))
      out.emplace_back(name, mha);
  }
  return out;
}

AttentionMap attention_map(const std::string& name, const nn::MultiheadAttention& mha,
                           int64_t index) {
  AttentionMap map;
  map.module = name;
  const Tensor& w = mha.last_head_weights;  // [N, heads, L, S]
  if (!w.defined() || w.dim() != 4 || index < 0 || index >= w.size(0)) return map;
  NoGradGuard no_grad;
  map.heads = w.size(1);
  map.queries = w.size(2);
  map.keys = w.size(3);
  map.weights = w.select(0, index).to(kFloat32).contiguous().to_vector<float>();
  return map;
}

AttentionRecording::AttentionRecording(const nn::ModulePtr& module)
    : AttentionRecording(attention_modules(module)) {}

AttentionRecording::AttentionRecording(AttentionModules modules) : modules_(std::move(modules)) {
  for (auto& [name, mha] : modules_) mha->record_head_weights = true;
}

AttentionRecording::~AttentionRecording() {
  for (auto& [name, mha] : modules_) {
    mha->record_head_weights = false;
    mha->last_head_weights = Tensor();
  }
}

std::vector<AttentionMap> AttentionRecording::maps(int64_t index) const {
  std::vector<AttentionMap> out;
  for (const auto& [name, mha] : modules_) {
    AttentionMap map = attention_map(name, *mha, index);
    if (map.heads > 0) out.push_back(std::move(map));
  }
  return out;
}

}  // namespace nns::train
