// SPDX-License-Identifier: GPL-3.0-or-later
// The backward engine: walks the graph from the outputs, runs each node once all the
// gradients flowing into it have arrived, later-created nodes first (PyTorch's order).
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "engine/autograd/autograd.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor/factories.h"

namespace nns::autograd {

namespace {

struct NodeState {
  int dependencies = 0;
  variable_list inputs;  // gradients of the node's outputs, summed as they arrive
};

struct Capture {
  size_t input_index;  // which grad() input
  uint32_t slot;       // which output of the node
};

struct ByLatest {
  bool operator()(const Node* a, const Node* b) const {
    return a->sequence_nr() < b->sequence_nr();
  }
};

std::string tensor_desc(const char* what, size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}

// Checks the outputs and makes their starting gradients (ones for one-element outputs).
variable_list initial_grads(const std::vector<Tensor>& outputs,
                            const std::vector<Tensor>& grad_outputs, const char* op) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size()) {
    throw AutogradError(std::string(op) + ": got " + std::to_string(grad_outputs.size()) +
                        " gradients for " + std::to_string(outputs.size()) +
                        " outputs; pass one gradient per output (or none for scalars)");
  }
  variable_list grads;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    if (!out.defined()) {
      throw AutogradError(std::string(op) + ": " + tensor_desc("output", i) + " is undefined");
    }
    if (!out.requires_grad()) {
      throw AutogradError(std::string(op) + ": element " + std::to_string(i) +
                          " of tensors does not require grad and does not have a grad_fn; "
                          "make sure a leaf it depends on has requires_grad set and that "
                          "grad mode is on");
    }
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      if (out.numel() != 1) {
        throw AutogradError(std::string(op) +
                            ": grad can be implicitly created only for scalar outputs; this "
                            "output has shape " +
                            shape_str(out.sizes()) +
                            ", so pass a gradient of that shape (or reduce it with sum())");
      }
      g = ones_like(out);
    } else if (g.sizes() != out.sizes()) {
      throw ShapeError(std::string(op) + ": mismatch in shape: " + tensor_desc("grad_output", i) +
                       " has a shape of " + shape_str(g.sizes()) + " and " +
                       tensor_desc("output", i) + " has a shape of " + shape_str(out.sizes()));
    }
    grads.push_back(g);
  }
  return grads;
}

void accumulate(Tensor& slot, Tensor grad) {
  if (!grad.defined()) return;
  if (!slot.defined()) {
    slot = std::move(grad);
  } else {
    slot = slot + grad;
  }
}

// Runs the graph. With captures (autograd::grad) only nodes that lead to a captured gradient
// run, AccumulateGrad never does, and the captured gradients are returned.
std::vector<Tensor> run(const std::vector<Tensor>& outputs, const variable_list& grads,
                        bool retain_graph,
                        const std::unordered_map<Node*, std::vector<Capture>>* captures,
                        size_t num_captures) {
  NoGradGuard no_grad;  // backward formulas are not recorded (no double backward)
  std::vector<Edge> roots;
  for (const Tensor& out : outputs) roots.push_back(gradient_edge(out));

  // Every node reachable from the roots, with how many edges point into it.
  std::unordered_map<Node*, NodeState> state;
  std::vector<Node*> order;  // discovery order, for the "needed" pass
  {
    std::vector<Node*> stack;
    for (const Edge& e : roots) {
      if (state.try_emplace(e.function.get()).second) stack.push_back(e.function.get());
    }
    while (!stack.empty()) {
      Node* node = stack.back();
      stack.pop_back();
      order.push_back(node);
      for (const Edge& next : node->next_edges) {
        if (!next.valid()) continue;
        auto [it, inserted] = state.try_emplace(next.function.get());
        it->second.dependencies++;
        if (inserted) stack.push_back(next.function.get());
      }
    }
  }

  // For grad(): a node is needed when it is captured or leads to a captured node.
  std::unordered_set<Node*> needed;
  if (captures) {
    bool changed = true;
    for (auto& [node, caps] : *captures) {
      if (state.count(node)) needed.insert(node);
    }
    while (changed) {
      changed = false;
      for (Node* node : order) {
        if (needed.count(node)) continue;
        for (const Edge& next : node->next_edges) {
          if (next.valid() && needed.count(next.function.get())) {
            needed.insert(node);
            changed = true;
            break;
          }
        }
      }
    }
  }

  std::vector<Tensor> captured(num_captures);
  std::priority_queue<Node*, std::vector<Node*>, ByLatest> ready;
  for (size_t i = 0; i < roots.size(); ++i) {
    NodeState& s = state[roots[i].function.get()];
    if (s.inputs.size() <= roots[i].input_nr) s.inputs.resize(roots[i].input_nr + 1);
    accumulate(s.inputs[roots[i].input_nr], grads[i]);
  }
  for (const Edge& e : roots) {
    NodeState& s = state[e.function.get()];
    if (s.dependencies == 0) {
      s.dependencies = -1;  // queued
      ready.push(e.function.get());
    }
  }

  while (!ready.empty()) {
    Node* node = ready.top();
    ready.pop();
    NodeState& s = state[node];
    variable_list inputs = std::move(s.inputs);
    inputs.resize(std::max(inputs.size(), node->output_meta.size()));

    if (captures) {
      auto it = captures->find(node);
      if (it != captures->end()) {
        for (const Capture& c : it->second) {
          if (c.slot < inputs.size()) captured[c.input_index] = inputs[c.slot];
        }
      }
      if (!needed.count(node) || dynamic_cast<AccumulateGrad*>(node)) continue;
      bool leads_on = false;
      for (const Edge& next : node->next_edges) {
        leads_on = leads_on || (next.valid() && needed.count(next.function.get()));
      }
      if (!leads_on) continue;
    }

    // Tensor hooks of the node's outputs may replace their gradients.
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::shared_ptr<TensorHookTable>* hooks = node->hooks_for_output(i);
      if (!hooks || !inputs[i].defined()) continue;
      for (const auto& [id, hook] : *(*hooks)->snapshot()) {
        Tensor replaced = hook(inputs[i]);
        if (!replaced.defined()) continue;
        if (replaced.sizes() != inputs[i].sizes()) {
          throw ShapeError("hook: a tensor hook on the output of " + node->name() +
                           " returned a gradient of shape " + shape_str(replaced.sizes()) +
                           ", but the gradient has shape " + shape_str(inputs[i].sizes()));
        }
        inputs[i] = std::move(replaced);
      }
    }
    // A missing gradient of one output of a multi-output node is zero.
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined() && i < node->output_meta.size()) {
        const OutputMeta& m = node->output_meta[i];
        inputs[i] = zeros(m.sizes, TensorOptions(m.dtype).device(m.device));
      }
    }

    variable_list out = node->apply(std::move(inputs));
    if (!retain_graph) node->release_variables();
    if (out.size() != node->next_edges.size() && !dynamic_cast<AccumulateGrad*>(node)) {
      throw AutogradError(node->name() + ": returned " + std::to_string(out.size()) +
                          " gradients, expected " + std::to_string(node->next_edges.size()));
    }
    for (size_t i = 0; i < node->next_edges.size() && i < out.size(); ++i) {
      const Edge& next = node->next_edges[i];
      if (!next.valid()) continue;
      NodeState& ns = state[next.function.get()];
      if (ns.inputs.size() <= next.input_nr) ns.inputs.resize(next.input_nr + 1);
      accumulate(ns.inputs[next.input_nr], std::move(out[i]));
      if (--ns.dependencies == 0) {
        ns.dependencies = -1;
        ready.push(next.function.get());
      }
    }
  }
  return captured;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph) {
  variable_list grads = initial_grads(outputs, grad_outputs, "backward");
  run(outputs, grads, retain_graph, nullptr, 0);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool allow_unused) {
  variable_list grads = initial_grads(outputs, grad_outputs, "autograd::grad");
  std::unordered_map<Node*, std::vector<Capture>> captures;
  std::vector<std::shared_ptr<Node>> keep_alive;  // accumulators made here for the leaves
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) {
      throw AutogradError("autograd::grad: " + tensor_desc("inputs", i) +
                          " does not require grad; only tensors with requires_grad can be "
                          "differentiated against");
    }
    Edge e = gradient_edge(inputs[i]);
    keep_alive.push_back(e.function);
    captures[e.function.get()].push_back({i, e.input_nr});
  }
  std::vector<Tensor> result = run(outputs, grads, retain_graph, &captures, inputs.size());
  for (size_t i = 0; i < result.size(); ++i) {
    if (!result[i].defined() && !allow_unused) {
      throw AutogradError("autograd::grad: One of the differentiated Tensors (" +
                          tensor_desc("inputs", i) +
                          ") appears to not have been used in the graph. Set allow_unused=true "
                          "if this is the desired behavior.");
    }
  }
  return result;
}

}  // namespace nns::autograd
