// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The losses of torch.nn as modules: MSELoss, L1Loss, HuberLoss, CrossEntropyLoss, NLLLoss,
// BCEWithLogitsLoss. Each takes (input, target) and returns the loss reduced as its options
// say (Reduction::Mean by default; Reduction::None keeps one loss per element). They wrap
// the functions of engine/ops/loss_ops.h, where the shapes each one takes are described.
//
// How to call one (the one way for training code): the two-tensor call operator, which runs
// forward with the module's hooks, as calling a PyTorch module does:
//
//   auto criterion = std::make_shared<nns::nn::CrossEntropyLoss>();
//   nns::Tensor loss = (*criterion)(logits, labels);  // logits [N, C], labels int64 [N]
//   loss.backward();
//
// It is the same as Module's list form, (*criterion)({logits, labels})[0], which is what
// type-erased callers (a graph, a Module pointer) use; forward({input, target}) skips hooks.
//
// Class weights and pos_weight are buffers (in the state dict when given, as in PyTorch);
// reprs are PyTorch's: "CrossEntropyLoss()".
#include "engine/nn/module.h"
#include "engine/ops/loss_ops.h"

namespace nns::nn {

// None, Mean, Sum: the enum of engine/ops/loss_ops.h (shared with the functions), with
// reduction_name() / reduction_from_name() for PyTorch's strings.
using nns::Reduction;

// The base of the losses: two inputs, one output.
class Loss : public Module {
 public:
  using Module::forward;
  using Module::operator();
  // Runs the module (hooks included) on {input, target}; returns the loss.
  Tensor operator()(const Tensor& input, const Tensor& target);
  // Takes exactly {input, target}.
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
};

struct MSELossOptions {
  Reduction reduction = Reduction::Mean;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(const MSELossOptions& options = {}) : options_(options) {}
  const MSELossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  MSELossOptions options_;
};

struct L1LossOptions {
  Reduction reduction = Reduction::Mean;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(const L1LossOptions& options = {}) : options_(options) {}
  const L1LossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  L1LossOptions options_;
};

struct HuberLossOptions {
  Reduction reduction = Reduction::Mean;
  double delta = 1.0;  // > 0
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(const HuberLossOptions& options = {});
  const HuberLossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

 private:
  HuberLossOptions options_;
};

struct CrossEntropyLossOptions {
  Tensor weight;  // optional [C] class weights
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
  double label_smoothing = 0.0;  // in [0, 1]
};

// Logits [N, C] (or [C], or [N, C, d1, ...]) against int64 class indices [N] ([], [N, d1, ...]).
class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options = {});
  const CrossEntropyLossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor weight;  // the "weight" buffer, undefined when not given

 private:
  CrossEntropyLossOptions options_;
};

struct NLLLossOptions {
  Tensor weight;  // optional [C] class weights
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::Mean;
};

// Log-probabilities (e.g. LogSoftmax's output) against int64 class indices.
class NLLLoss : public Loss {
 public:
  explicit NLLLoss(const NLLLossOptions& options = {});
  const NLLLossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor weight;  // the "weight" buffer, undefined when not given

 private:
  NLLLossOptions options_;
};

struct BCEWithLogitsLossOptions {
  Tensor weight;  // optional, broadcast against the input
  Reduction reduction = Reduction::Mean;
  Tensor pos_weight;  // optional weight of the positives, e.g. [C] for an [N, C] input
};

// Logits against targets in [0, 1] of the same shape and dtype.
class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options = {});
  const BCEWithLogitsLossOptions& options() const { return options_; }
  using Loss::forward;
  Tensor forward(const Tensor& input, const Tensor& target) override;

  Tensor weight, pos_weight;  // buffers, undefined when not given

 private:
  BCEWithLogitsLossOptions options_;
};

}  // namespace nns::nn
