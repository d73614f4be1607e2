// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// One training step: zero_grad, forward, the loss, backward, the non-finite check, gradient
// clipping and the optimizer's update. A session runs it eagerly, and a CUDA graph
// (step_graph.h) is this same function run under capture, so the two cannot drift apart.
//
//   train::TrainStep step{*model, *optimizer, loss_fn, /*clip_grad_norm=*/1.0};
//   train::StepResult r = train::train_step(step, inputs, targets);
//   if (r.found_inf.item() != 0) { ... the loss or a gradient was not finite ... }
//
// The non-finite check writes a flag on the step's device (PyTorch's found_inf, as its
// GradScaler keeps it) rather than reading every gradient back, because a captured step cannot
// read anything back. Outside a capture the host reads the flag (free on the CPU, one wait on a
// GPU) and a step that is not finite ends before the update; under a capture the optimizer's
// kernels read it on the device and leave every weight and state as it was (the host's step
// counts aside). Either way the weights stay finite.
#include <functional>

#include "engine/nn/module.h"
#include "engine/optim/optimizer.h"
#include "engine/train/profiler.h"

namespace nns::train {

// What a step takes: the model, its optimizer and loss, and the calls that watch the step.
struct TrainStep {
  // The loss from the model's output and the batch's targets (a scalar tensor).
  using LossFn = std::function<Tensor(const Tensor& output, const Tensor& targets)>;

  nn::Module& model;
  optim::Optimizer& optimizer;
  LossFn loss;
  double clip_grad_norm = 0;  // nn::clip_grad_norm_'s max_norm; 0: off
  // zero_grad's set_to_none. False where a CUDA graph may hold the gradients: it writes them
  // where its capture found them.
  bool set_to_none = true;
  // Host calls at the step's points (either may be empty): the profiler's phase marks, and the
  // probes' look at the weights before the update (not made when the step is not finite).
  // Under a capture they run once, while capturing, and never on a replay: capture only steps
  // where they do nothing.
  std::function<void(ProfilePhase)> mark{};
  std::function<void()> before_optimizer_step{};
};

// What a step left on its device, valid until the next step.
struct StepResult {
  Tensor output;     // the model's output, detached
  Tensor loss;       // one element, detached
  Tensor found_inf;  // float32, one element: 1 when the loss or a gradient was not finite (then
                     // no parameter or optimizer state changed)
};

StepResult train_step(const TrainStep& step, const Tensor& inputs, const Tensor& targets);

}  // namespace nns::train
