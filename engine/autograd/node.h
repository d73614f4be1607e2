// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The backward graph. A Node is one recorded operation (PyTorch's grad_fn): it takes the
// gradients of its outputs and returns the gradients of its inputs, which flow along
// next_edges to the nodes that made those inputs. Leaves that require grad end in an
// AccumulateGrad node that adds into .grad.
//
// An op's backward lives next to its forward (engine/ops/*.cpp):
//
//   struct ExpBackward0 : Node {
//     SavedVariable result;
//     std::string name() const override { return "ExpBackward0"; }
//     variable_list apply(variable_list&& grads) override {
//       return {grads[0] * result.unpack(this)};
//     }
//     void release_variables() override { result.reset(); }
//   };
//   ...
//   Tensor out = ...forward...;
//   if (auto node = make_node<ExpBackward0>({self})) {
//     node->result = SavedVariable(out, /*is_output=*/true);
//     set_history(out, node);
//   }
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns {

using variable_list = std::vector<Tensor>;

struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool valid() const { return function != nullptr; }
};

// Shape, dtype and device of one output, so that a missing gradient can be made as zeros and
// a returned gradient can be checked.
struct OutputMeta {
  Shape sizes;
  Dtype dtype = kFloat32;
  Device device = kCPU;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // PyTorch's class name, e.g. "AddBackward0": what grad_fn=<...> prints.
  virtual std::string name() const = 0;
  // Gradients of the outputs in, gradients of the inputs (one per next edge) out. A missing
  // output gradient arrives as zeros; an undefined returned gradient means "none".
  virtual variable_list apply(variable_list&& grads) = 0;
  // Frees saved tensors after a backward without retain_graph.
  virtual void release_variables() {}

  std::vector<Edge> next_edges;
  std::vector<OutputMeta> output_meta;
  // Hooks of the tensors that are this node's outputs, by output number; they run on the
  // incoming gradient before apply().
  std::vector<std::shared_ptr<TensorHookTable>> tensor_pre_hooks;
  // The hooks to run on the gradient of output i (none: nullptr).
  virtual const std::shared_ptr<TensorHookTable>* hooks_for_output(size_t i) const {
    return i < tensor_pre_hooks.size() && tensor_pre_hooks[i] ? &tensor_pre_hooks[i] : nullptr;
  }
  // Order of creation; the engine runs later nodes first, as PyTorch does.
  uint64_t sequence_nr() const { return sequence_nr_; }

 private:
  uint64_t sequence_nr_;
};

// The node at the end of a leaf that requires grad: adds the incoming gradient into .grad.
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> variable);
  std::string name() const override { return "AccumulateGrad"; }
  variable_list apply(variable_list&& grads) override;
  const std::shared_ptr<TensorImpl>& variable() const { return variable_; }
  // A leaf's hooks live on the leaf (registered before or after this node was made).
  const std::shared_ptr<TensorHookTable>* hooks_for_output(size_t) const override {
    return variable_->autograd && variable_->autograd->hooks ? &variable_->autograd->hooks
                                                             : nullptr;
  }

 private:
  std::shared_ptr<TensorImpl> variable_;
};

// A tensor kept by a node for its backward. It keeps the data (not the graph: no cycles)
// and the version it had; unpack() fails if the tensor was modified in place since, or if
// the graph was freed by a backward without retain_graph.
class SavedVariable {
 public:
  SavedVariable() = default;
  // is_output: the tensor is an output of the node that saves it (for the error text).
  SavedVariable(const Tensor& tensor, bool is_output = false);
  Tensor unpack(const Node* owner) const;
  void reset();
  bool defined() const { return was_defined_; }

 private:
  Tensor data_;
  uint32_t saved_version_ = 0;
  bool was_defined_ = false;
  bool is_output_ = false;
  bool released_ = false;
  Shape sizes_;
  Dtype dtype_ = kFloat32;
};

// The edge along which a gradient for `tensor` must flow: its grad_fn, its leaf accumulator,
// or none when it does not require grad.
Edge gradient_edge(const Tensor& tensor);

// True when grad mode is on and any input requires grad: the op must record a node.
bool any_requires_grad(std::initializer_list<const Tensor*> inputs);
bool any_requires_grad(const std::vector<Tensor>& inputs);

// Creates node T wired to the inputs' gradient edges, or returns nullptr when nothing needs
// recording (grad mode off or no input requires grad). Undefined inputs get invalid edges.
template <class T, class... Args>
std::shared_ptr<T> make_node(const std::vector<Tensor>& inputs, Args&&... args) {
  if (!any_requires_grad(inputs)) return nullptr;
  auto node = std::make_shared<T>(std::forward<Args>(args)...);
  node->next_edges.reserve(inputs.size());
  for (const Tensor& input : inputs) {
    node->next_edges.push_back(input.defined() ? gradient_edge(input) : Edge{});
  }
  return node;
}

// Makes `output` (output number `output_nr`) a result of node: sets grad_fn and
// requires_grad, and records its metadata on the node.
void set_history(const Tensor& output, const std::shared_ptr<Node>& node, uint32_t output_nr = 0);
void set_history(const std::vector<Tensor>& outputs, const std::shared_ptr<Node>& node);

// Checks that a tensor about to be modified in place may be: not a leaf that requires grad
// while grad mode is on, not a view of a tensor in a graph. op names the caller.
void check_inplace(const Tensor& self, const char* op);
// After an in-place op on self recorded by node: self's grad_fn becomes node (PyTorch's
// rebase_history). Call only when node is not null.
void rebase_history(const Tensor& self, const std::shared_ptr<Node>& node);

// The AccumulateGrad node of a leaf that requires grad (made on first use).
std::shared_ptr<Node> grad_accumulator(const Tensor& leaf);

// Sums a broadcast gradient back to `shape` (the backward of broadcasting).
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace nns
