// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Shape inference helpers that several families of built-in node types share. Internal to the
// engine.
#include <string>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/ops/nn_ops.h"

namespace nns::graph {

using Shapes = std::vector<SymShape>;

// The shape of a one-input type's input.
const SymShape& one_input(const Shapes& in);

// A 2-D option (a single integer stands for both); null (an optional stride) is {0, 0},
// which the pooling modules read as "the kernel size".
Int2 get_int2(const Json& options, const char* name);

// Wraps a dim against a rank, naming the option when it is out of range.
int64_t wrap(int64_t dim, size_t rank, const std::string& option, const SymShape& shape);

// Sizes along a dim after a sliding window (convolution or pooling), as PyTorch computes it.
int64_t window_out(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                   bool ceil_mode);

// The name of a variadic node's i-th input port: "in0", "in1", ...
std::string variadic_port(size_t i);

// Broadcast of two shapes where -1 (the batch) matches anything; port_b names the second
// input in the error.
SymShape broadcast(const SymShape& a, const SymShape& b, const std::string& port_b);

// torch.flatten's output shape (the options start_dim and end_dim), for nn.Flatten and the
// functional torch.flatten alike.
Shapes infer_flatten(const Json& options, const Shapes& in);

}  // namespace nns::graph
