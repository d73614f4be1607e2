// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Attention maps: the weights per head of the MultiheadAttention modules in a model, for one
// sequence, as plain numbers for a window to draw (probes.h and TrainingSession::predict fill
// them). Turning recording on costs a copy of the weights per forward, so it is on only for the
// forwards that are looked at.
//
//   nns::train::AttentionRecording rec(model);   // every MultiheadAttention in it records
//   model->forward(x);
//   for (const nns::train::AttentionMap& m : rec.maps(0)) draw(m);   // sequence 0 of x
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/attention.h"

namespace nns::train {

struct AttentionMap {
  // The MultiheadAttention's name below the module recorded ("encoder.0.self_attn"; "" for
  // that module itself).
  std::string module;
  int64_t heads = 0;
  int64_t queries = 0;  // L
  int64_t keys = 0;     // S
  // [heads, queries, keys], row-major: row q of head h is where query q looks (sums to 1).
  std::vector<float> weights;
};

using AttentionModules =
    std::vector<std::pair<std::string, std::shared_ptr<nn::MultiheadAttention>>>;

// The MultiheadAttention modules in `module`'s tree (itself included), in named_modules order.
AttentionModules attention_modules(const nn::ModulePtr& module);

// Sequence `index` of what `mha` recorded in its last forward; empty weights (heads 0) when it
// recorded nothing or the batch has no such sequence.
AttentionMap attention_map(const std::string& name, const nn::MultiheadAttention& mha,
                           int64_t index);

// Turns recording on for the attention modules of `module` while it lives (off again and the
// recorded weights dropped when it ends).
class AttentionRecording {
 public:
  explicit AttentionRecording(const nn::ModulePtr& module);
  explicit AttentionRecording(AttentionModules modules);
  ~AttentionRecording();
  AttentionRecording(const AttentionRecording&) = delete;
  AttentionRecording& operator=(const AttentionRecording&) = delete;

  bool empty() const { return modules_.empty(); }
  // Sequence `index` of the last forward, one map per module that recorded.
  std::vector<AttentionMap> maps(int64_t index) const;

 private:
  AttentionModules modules_;
};

}  // namespace nns::train
