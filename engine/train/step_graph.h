// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A training step on a GPU as a CUDA graph (engine/backend/cuda_graph.h): train_step
// (train_step.h) run under capture once for a batch shape, and replayed for every later batch
// of that shape, so a small model's step costs one launch instead of hundreds.
//
//   train::StepGraph graphs({*model, *optimizer, loss, clip_grad_norm}, device);
//   // the first step runs eagerly (it makes the gradients and the optimizer's state), then:
//   graphs.warmed_up();
//   if (auto r = graphs.step(inputs, targets)) { r->loss.item(); ... } else { eager step }
//
// The gradients and the optimizer's state stay where the capture found them: a step that runs
// eagerly in between (a step the probes sample) must zero the gradients in place
// (TrainStep::set_to_none false). Where any of them, a parameter or a buffer was replaced since
// the capture (a state restored, gradients dropped), the graphs are captured again. A step that
// cannot be a graph (it reads a value back to the host) turns graphs off for good, with the
// reason. The step's host calls (TrainStep::mark, before_optimizer_step) run at the capture
// only: ask for a graph only for steps where they do nothing.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/cuda_graph.h"
#include "engine/train/train_step.h"

namespace nns::train {

class StepGraph {
 public:
  // The graphs always zero the gradients in place, whatever step.set_to_none says.
  StepGraph(TrainStep step, Device device);

  // One step with this batch (on the CPU or the device): captured the first time its shapes
  // come, replayed after. nullopt when the step is to run eagerly instead (before warmed_up(),
  // or with graphs off: disabled_reason()); nothing has changed then.
  std::optional<StepResult> step(const Tensor& inputs, const Tensor& targets);
  // An eager step ran (with set_to_none false): the gradients and the state exist.
  void warmed_up() { warm_ = true; }
  // Drops every graph and its memory.
  void clear();

  // Why graphs are off ("" while they are on).
  const std::string& disabled_reason() const { return disabled_; }
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }
  // The launches one replay makes (the last graph captured's nodes; 0 before a capture).
  size_t graph_nodes() const { return graph_nodes_; }

 private:
  struct Captured {
    std::unique_ptr<cuda::Graph> graph;
    Tensor inputs, targets;  // the batch is copied into these before each replay
    StepResult result;
  };
  using ShapeKey = std::vector<int64_t>;

  std::unique_ptr<Captured> capture(const Tensor& inputs, const Tensor& targets);
  // The tensors a graph reads and writes in place: parameters, gradients, the optimizer's
  // state and the model's buffers, in a fixed order.
  std::vector<Tensor> graph_tensors() const;
  bool unchanged_since_capture() const;

  TrainStep step_;
  Device device_;
  bool warm_ = false;
  std::string disabled_;
  std::map<ShapeKey, std::unique_ptr<Captured>> graphs_;
  std::vector<Tensor> held_;  // graph_tensors() when the graphs were captured (kept alive)
  int64_t captures_ = 0, replays_ = 0;
  size_t graph_nodes_ = 0;
};

}  // namespace nns::train
