// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/step_graph.h"

#include "engine/autograd/grad_mode.h"
#include "engine/tensor/factories.h"

namespace nns::train {
namespace {

// A batch's shapes and dtypes, inputs then targets.
std::vector<int64_t> shape_key(const Tensor& inputs, const Tensor& targets) {
  std::vector<int64_t> key;
  for (const Tensor* t : {&inputs, &targets}) {
    key.push_back(static_cast<int64_t>(t->dtype()));
    key.push_back(t->dim());
    key.insert(key.end(), t->sizes().begin(), t->sizes().end());
  }
  return key;
}

// At most this many shapes keep a graph (a dataset's full batch and its last, smaller one are
// two); more clears them all.
constexpr size_t kMaxGraphs = 4;

}  // namespace

StepGraph::StepGraph(TrainStep step, Device device) : step_(std::move(step)), device_(device) {
  step_.set_to_none = false;
  if (!device.is_cuda()) disabled_ = "CUDA graphs run on a GPU only";
}

std::vector<Tensor> StepGraph::graph_tensors() const {
  std::vector<Tensor> tensors;
  for (const optim::ParamGroup& group : step_.optimizer.param_groups()) {
    for (const Tensor& p : group.params) {
      tensors.push_back(p);
      tensors.push_back(p.grad());
      if (const optim::ParamState* st = step_.optimizer.find_state(p)) {
        for (const auto& item : *st) tensors.push_back(item.value());
      }
    }
  }
  for (const auto& [name, buffer] : step_.model.named_buffers()) tensors.push_back(buffer);
  return tensors;
}

bool StepGraph::unchanged_since_capture() const {
  const std::vector<Tensor> now = graph_tensors();
  if (now.size() != held_.size()) return false;
  for (size_t i = 0; i < now.size(); ++i) {
    if (!now[i].is_same(held_[i])) return false;
  }
  return true;
}

void StepGraph::clear() {
  graphs_.clear();
  held_.clear();
}

std::optional<StepResult> StepGraph::step(const Tensor& inputs, const Tensor& targets) {
  if (!disabled_.empty() || !warm_) return std::nullopt;
  if (!graphs_.empty() && !unchanged_since_capture()) clear();
  const ShapeKey key = shape_key(inputs, targets);
  auto it = graphs_.find(key);
  if (it == graphs_.end()) {
    if (graphs_.size() >= kMaxGraphs) clear();
    std::unique_ptr<Captured> c = capture(inputs, targets);
    if (!c) return std::nullopt;
    ++captures_;
    graph_nodes_ = c->graph->nodes();
    it = graphs_.emplace(key, std::move(c)).first;
    held_ = graph_tensors();
  } else {
    NoGradGuard no_grad;
    it->second->inputs.copy_(inputs);
    it->second->targets.copy_(targets);
  }
  it->second->graph->replay();
  ++replays_;
  return it->second->result;
}

std::unique_ptr<StepGraph::Captured> StepGraph::capture(const Tensor& inputs,
                                                        const Tensor& targets) {
  auto c = std::make_unique<Captured>();
  {
    NoGradGuard no_grad;
    c->inputs = empty(inputs.sizes(), TensorOptions(inputs.dtype()).device(device_));
    c->inputs.copy_(inputs);
    c->targets = empty(targets.sizes(), TensorOptions(targets.dtype()).device(device_));
    c->targets.copy_(targets);
  }
  c->graph = std::make_unique<cuda::Graph>(device_.index);
  c->graph->capture_begin();
  try {
    c->result = train_step(step_, c->inputs, c->targets);
    c->graph->capture_end();
  } catch (const std::exception& e) {
    c->graph->abort_capture();
    disabled_ = std::string("the training step cannot run as a CUDA graph: ") + e.what();
    return nullptr;
  }
  return c;
}

}  // namespace nns::train
