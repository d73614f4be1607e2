// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/autograd/node.h"

#include <atomic>

#include "engine/autograd/grad_mode.h"
#include "engine/ops/reduction.h"

namespace nns {

namespace {
std::atomic<uint64_t> next_sequence_nr{0};
thread_local bool grad_mode_enabled = true;
}  // namespace

bool GradMode::is_enabled() {
  return grad_mode_enabled;
}
void GradMode::set_enabled(bool enabled) {
  grad_mode_enabled = enabled;
}

Node::Node() : sequence_nr_(next_sequence_nr.fetch_add(1, std::memory_order_relaxed)) {}

// ---- AccumulateGrad ---------------------------------------------------------------------

AccumulateGrad::AccumulateGrad(std::shared_ptr<TensorImpl> variable)
    : variable_(std::move(variable)) {
  output_meta.push_back({variable_->sizes, variable_->dtype, variable_->storage->device()});
}

variable_list AccumulateGrad::apply(variable_list&& grads) {
  Tensor grad = std::move(grads[0]);
  if (!grad.defined()) return {};
  NoGradGuard no_grad;
  AutogradMeta& meta = variable_->autograd_meta();
  if (!meta.grad) {
    // Take the incoming buffer when nobody else holds it or its storage (the common case,
    // also for a view of a dead intermediate such as TBackward's transpose), else copy, so
    // that .grad never aliases a tensor the user can see.
    const std::shared_ptr<TensorImpl>& impl = grad.impl_ptr();
    if (impl.use_count() == 1 && impl->storage.use_count() == 1 && grad.is_contiguous() &&
        impl->storage_offset == 0) {
      impl->is_view = false;  // its base is gone: the gradient owns its storage alone
      meta.grad = impl;
    } else {
      meta.grad = grad.clone().impl_ptr();
    }
  } else {
    Tensor(meta.grad).add_(grad);
  }
  return {};
}

// ---- SavedVariable ----------------------------------------------------------------------

SavedVariable::SavedVariable(const Tensor& tensor, bool is_output)
    : was_defined_(tensor.defined()), is_output_(is_output) {
  if (!tensor.defined()) return;
  // An output is kept as data only: with its grad_fn it would own the node that saves it (a
  // cycle). An input points only at earlier nodes, so the handle itself is kept (cheaper).
  data_ = is_output ? tensor.detach() : tensor;
  saved_version_ = tensor.version();
  sizes_ = tensor.sizes();
  dtype_ = tensor.dtype();
}

Tensor SavedVariable::unpack(const Node* owner) const {
  if (released_) {
    throw AutogradError(
        "Trying to backward through the graph a second time (or directly access saved tensors "
        "after they have already been freed). Saved intermediate values of the graph are freed "
        "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
        "backward through the graph a second time or if you need to access saved tensors after "
        "calling backward.");
  }
  if (!was_defined_) return Tensor();
  if (data_.version() != saved_version_) {
    // PyTorch's legacy type names, as its message prints them.
    static const char* kTypeNames[] = {"torch.FloatTensor", "torch.DoubleTensor",
                                       "torch.HalfTensor",  "torch.BFloat16Tensor",
                                       "torch.LongTensor",  "torch.BoolTensor"};
    std::string type = kTypeNames[static_cast<int>(dtype_)];
    throw AutogradError(
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [" +
        type + " " + shape_str(sizes_) + "]" +
        (is_output_ && owner ? ", which is output 0 of " + owner->name() + "," : std::string()) +
        " is at version " + std::to_string(data_.version()) + "; expected version " +
        std::to_string(saved_version_) +
        " instead. Hint: replace the in-place operation (such as add_ or relu_) with its "
        "out-of-place form, or clone() the tensor before modifying it.");
  }
  return data_;
}

void SavedVariable::reset() {
  data_ = Tensor();
  released_ = true;
}

// ---- Graph construction -----------------------------------------------------------------

std::shared_ptr<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& meta = leaf.impl()->autograd_meta();
  if (auto existing = meta.grad_accumulator.lock()) return existing;
  auto node = std::make_shared<AccumulateGrad>(leaf.impl_ptr());
  meta.grad_accumulator = node;
  return node;
}

Edge gradient_edge(const Tensor& tensor) {
  const TensorImpl& impl = *tensor.impl();
  if (!impl.autograd) return Edge{};
  if (impl.autograd->grad_fn) return Edge{impl.autograd->grad_fn, impl.autograd->output_nr};
  if (impl.autograd->requires_grad) return Edge{grad_accumulator(tensor), 0};
  return Edge{};
}

bool any_requires_grad(std::initializer_list<const Tensor*> inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

bool any_requires_grad(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs) {
    if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& meta = output.impl()->autograd_meta();
  meta.grad_fn = node;
  meta.output_nr = output_nr;
  meta.requires_grad = false;  // requires_grad() reads grad_fn for non-leaves
  if (node->output_meta.size() <= output_nr) node->output_meta.resize(output_nr + 1);
  node->output_meta[output_nr] = {output.sizes(), output.dtype(), output.device()};
}

void set_history(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& node) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].defined()) set_history(outputs[i], node, static_cast<uint32_t>(i));
  }
}

void check_inplace(const Tensor& self, const char* op) {
  if (!GradMode::is_enabled() || !self.requires_grad()) return;
  if (self.is_leaf()) {
    throw AutogradError(std::string(op) +
                        ": a leaf Variable that requires grad is being used in an in-place "
                        "operation; wrap the update in nns::NoGradGuard (torch.no_grad()) or "
                        "work on a clone()");
  }
  if (self.impl()->is_view) {
    throw AutogradError(std::string(op) +
                        ": in-place modification of a view of a tensor that is part of a graph "
                        "is not supported; clone() the view first");
  }
}

void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node) {
  AutogradMeta& meta = self.impl()->autograd_meta();
  // Hooks registered on the old grad_fn stay with it; the tensor starts afresh.
  meta.hooks.reset();
  meta.retains_grad = false;
  set_history(self, node, 0);
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  const Shape& gs = grad.sizes();
  if (gs == shape) return grad;
  const int64_t lead = static_cast<int64_t>(gs.size()) - static_cast<int64_t>(shape.size());
  Shape dims;
  for (int64_t i = 0; i < static_cast<int64_t>(gs.size()); ++i) {
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) dims.push_back(i);
  }
  Tensor reduced = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return reduced.view(shape);
}

}  // namespace nns
