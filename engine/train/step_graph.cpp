// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/step_graph.h"

#include "engine/autograd/grad_mode.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/nn/clip_grad.h"
#include "engine/tensor/error.h"
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

// Sets found_inf (float32, on t's device) to 1 when t holds a NaN or an infinity, on the device.
void record_non_finite(const Tensor& t, const Tensor& found_inf) {
  if (t.dtype() != kFloat32 && t.dtype() != kFloat64) return;
  const Tensor c = t.contiguous();
  const OptimizerKernels& k = kernels<OptimizerKernels>(t.device(), "non-finite check");
  auto* flag = static_cast<float*>(found_inf.raw_data());
  if (t.dtype() == kFloat32) {
    k.non_finite<float>()(static_cast<const float*>(c.raw_data()), c.numel(), flag);
  } else {
    k.non_finite<double>()(static_cast<const double*>(c.raw_data()), c.numel(), flag);
  }
}

// At most this many shapes keep a graph (a dataset's full batch and its last, smaller one are
// two); more clears them all.
constexpr size_t kMaxGraphs = 4;

}  // namespace

StepGraph::StepGraph(nn::Module& model, optim::Optimizer& optimizer, LossFn loss,
                     double clip_grad_norm, Device device)
    : model_(model),
      optimizer_(optimizer),
      loss_(std::move(loss)),
      clip_grad_norm_(clip_grad_norm),
      device_(device) {
  if (!device.is_cuda()) disabled_ = "CUDA graphs run on a GPU only";
}

std::vector<Tensor> StepGraph::graph_tensors() const {
  std::vector<Tensor> tensors;
  for (const optim::ParamGroup& group : optimizer_.param_groups()) {
    for (const Tensor& p : group.params) {
      tensors.push_back(p);
      tensors.push_back(p.grad());
      if (const optim::ParamState* st = optimizer_.find_state(p)) {
        for (const auto& item : *st) tensors.push_back(item.value());
      }
    }
  }
  for (const auto& [name, buffer] : model_.named_buffers()) tensors.push_back(buffer);
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

std::optional<StepGraph::Result> StepGraph::step(const Tensor& inputs, const Tensor& targets) {
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
    c->result.found_inf = zeros({}, TensorOptions(kFloat32).device(device_));
  }
  c->graph = std::make_unique<cuda::Graph>(device_.index);
  c->graph->capture_begin();
  try {
    optimizer_.zero_grad(/*set_to_none=*/false);
    const Tensor output = model_(c->inputs);
    const Tensor loss = loss_(output, c->targets);
    loss.backward();
    {
      NoGradGuard no_grad;
      Tensor found_inf = c->result.found_inf;
      found_inf.zero_();
      record_non_finite(loss, found_inf);
      std::vector<Tensor> params;
      for (const optim::ParamGroup& group : optimizer_.param_groups()) {
        for (const Tensor& p : group.params) {
          if (p.grad().defined()) record_non_finite(p.grad(), found_inf);
          params.push_back(p);
        }
      }
      if (clip_grad_norm_ > 0) nn::clip_grad_norm_(params, clip_grad_norm_);
    }
    optimizer_.set_found_inf(c->result.found_inf);
    optimizer_.step();
    optimizer_.set_found_inf(Tensor());
    c->result.output = output.detach();
    c->result.loss = loss.detach();
    c->graph->capture_end();
  } catch (const std::exception& e) {
    optimizer_.set_found_inf(Tensor());
    c->graph->abort_capture();
    disabled_ = std::string("the training step cannot run as a CUDA graph: ") + e.what();
    return nullptr;
  }
  return c;
}

}  // namespace nns::train
