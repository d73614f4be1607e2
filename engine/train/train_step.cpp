// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/train/train_step.h"

#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/backend/cuda_graph.h"
#include "engine/backend/dispatch.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/nn/clip_grad.h"
#include "engine/ops/ops.h"
#include "engine/tensor/factories.h"

namespace nns::train {
namespace {

// Sets found_inf (float32, on t's device) to 1 when t holds a NaN or an infinity: by the device's
// kernel, which never waits for the host (and so can be captured), or by any_non_finite where
// the device has none (the CPU, whose memory the host reads directly, and dtypes other than
// float32 and float64).
void record_non_finite(const Tensor& t, Tensor& found_inf) {
  if (!t.is_floating_point()) return;
  const OptimizerKernels& k = kernels<OptimizerKernels>(t.device(), "non-finite check");
  auto* flag = static_cast<float*>(found_inf.raw_data());
  if (t.dtype() == kFloat32 && k.non_finite_f32 != nullptr) {
    const Tensor c = t.contiguous();
    k.non_finite_f32(static_cast<const float*>(c.raw_data()), c.numel(), flag);
  } else if (t.dtype() == kFloat64 && k.non_finite_f64 != nullptr) {
    const Tensor c = t.contiguous();
    k.non_finite_f64(static_cast<const double*>(c.raw_data()), c.numel(), flag);
  } else if (any_non_finite(t)) {
    found_inf.fill_(1.0);
  }
}

// The flag for the loss and every gradient the optimizer will use.
Tensor found_non_finite(const optim::Optimizer& optimizer, const Tensor& loss) {
  Tensor found_inf = empty({}, TensorOptions(kFloat32).device(loss.device()));
  found_inf.zero_();
  record_non_finite(loss, found_inf);
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    for (const Tensor& p : group.params) {
      if (p.grad().defined()) record_non_finite(p.grad(), found_inf);
    }
  }
  return found_inf;
}

void clip_gradients(const optim::Optimizer& optimizer, double max_norm) {
  std::vector<Tensor> params;
  for (const optim::ParamGroup& group : optimizer.param_groups()) {
    params.insert(params.end(), group.params.begin(), group.params.end());
  }
  nn::clip_grad_norm_(params, max_norm);
}

// The optimizer's step reading found_inf, which is unset again however the step ends.
void optimizer_step(optim::Optimizer& optimizer, const Tensor& found_inf) {
  struct Unset {
    optim::Optimizer& optimizer;
    ~Unset() { optimizer.set_found_inf(Tensor()); }
  } unset{optimizer};
  optimizer.set_found_inf(found_inf);
  optimizer.step();
}

}  // namespace

StepResult train_step(const TrainStep& step, const Tensor& inputs, const Tensor& targets) {
  const auto mark = [&](ProfilePhase phase) {
    if (step.mark) step.mark(phase);
  };
  mark(ProfilePhase::Optimizer);
  step.optimizer.zero_grad(step.set_to_none);
  mark(ProfilePhase::Forward);
  const Tensor output = step.model(inputs);
  mark(ProfilePhase::Loss);
  const Tensor loss = step.loss(output, targets);
  mark(ProfilePhase::Backward);
  loss.backward();
  // The gradients' check and clipping are the optimizer's part of the step.
  mark(ProfilePhase::Optimizer);
  StepResult result;
  result.output = output.detach();
  result.loss = loss.detach();
  {
    NoGradGuard no_grad;
    result.found_inf = found_non_finite(step.optimizer, loss);
    if (cuda::Graph::capturing() == nullptr && result.found_inf.item() != 0.0) return result;
    if (step.clip_grad_norm > 0) clip_gradients(step.optimizer, step.clip_grad_norm);
  }
  if (step.before_optimizer_step) step.before_optimizer_step();
  optimizer_step(step.optimizer, result.found_inf);
  return result;
}

}  // namespace nns::train
