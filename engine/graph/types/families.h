// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The built-in node types, one family per file of this folder; make_registry()
// (engine/graph/node_types.cpp) concatenates them in palette order. Internal to the engine:
// plugins build their types with the public helpers of engine/graph/node_types.h.
#include <vector>

#include "engine/graph/node_types.h"

namespace nns::graph {

std::vector<NodeType> linear_conv_types();    // Linear, Conv2d, Conv1d, Embedding
std::vector<NodeType> activation_types();     // ReLU ... LogSoftmax
std::vector<NodeType> normalization_types();  // BatchNorm1d, BatchNorm2d, LayerNorm
std::vector<NodeType> dropout_types();        // Dropout
std::vector<NodeType> pooling_types();        // MaxPool2d, AvgPool2d, AdaptiveAvgPool2d
std::vector<NodeType> recurrent_types();      // RNN, LSTM, GRU
std::vector<NodeType> attention_types();      // MultiheadAttention, Transformer*Layer
std::vector<NodeType> reshape_types();        // Flatten, Unflatten, Identity
std::vector<NodeType> functional_types();     // Add, Mul, Concat, MatMul, F.relu
// F.hardtanh, F.hardswish, torch.sigmoid, ...; Sub, Div, Constant, torch.flatten, Reshape, ...
std::vector<NodeType> activation_function_types();
std::vector<NodeType> tensor_function_types();
std::vector<NodeType> io_params_types();  // Input, Output, Parameter, Buffer, Ref

// The ports of a type with one input "in" or one output "out", as module_type gives them.
std::vector<PortSpec> in_port();
std::vector<PortSpec> out_port();

}  // namespace nns::graph
