// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Running the backward graph (torch.autograd).
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"

namespace nns::autograd {

// Computes gradients of outputs w.r.t. the graph's leaves and accumulates them into .grad
// (torch.autograd.backward). grad_outputs may be empty for one-element outputs.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

// Returns d(outputs)/d(inputs) without touching any .grad (torch.autograd.grad). An input the
// outputs do not depend on is an error unless allow_unused, when its gradient is undefined.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool allow_unused = false);

}  // namespace nns::autograd
