// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/types/families.h"
#include "engine/graph/types/shape_helpers.h"

namespace nns::graph {
namespace {

Shapes infer_fixed(const Json& o, const Shapes&) {
  return {get_list(o, "shape")};
}

}  // namespace

std::vector<NodeType> io_params_types() {
  std::vector<NodeType> types;
  NodeType input;
  input.kind = NodeKind::Input;
  input.name = "Input";
  input.category = "Input / Output";
  input.description = "a model input: a batch of tensors of the given shape";
  input.options = {
      list_option("shape", Json::array({2}), "shape of one sample (without the batch)", 0, 1),
      choice_option("dtype", "float32", {"float32", "int64"},
                    "float32 for features, int64 for class indices (Embedding)")};
  input.outputs = out_port();
  input.infer_shapes = [](const Json& o, const Shapes&) {
    SymShape s{-1};
    const Shape sample = get_list(o, "shape");
    s.insert(s.end(), sample.begin(), sample.end());
    return Shapes{s};
  };
  types.push_back(std::move(input));

  NodeType output;
  output.kind = NodeKind::Output;
  output.name = "Output";
  output.category = "Input / Output";
  output.description = "a model output: forward returns the tensor fed to it";
  output.inputs = in_port();
  output.infer_shapes = [](const Json&, const Shapes&) { return Shapes{}; };
  types.push_back(std::move(output));

  // initial_tensor (engine/graph/node_types.cpp) reads these names: the two lists go together.
  const std::vector<std::string> inits{"zeros",          "ones",         "randn",
                                       "rand",           "uniform",      "kaiming_uniform",
                                       "xavier_uniform", "xavier_normal"};
  NodeType parameter;
  parameter.kind = NodeKind::Parameter;
  parameter.name = "Parameter";
  parameter.category = "Parameters";
  parameter.description =
      "nn.Parameter: a learnable tensor registered on the model or block under the node's name";
  parameter.options = {list_option("shape", Json::array({1}), "the tensor's shape", 0, 0),
                       choice_option("init", "randn", inits,
                                     "initial values (uniform: in [-1, 1); kaiming_uniform: as "
                                     "Linear's weight)"),
                       bool_option("requires_grad", true, "trained by the optimizer")};
  parameter.outputs = out_port();
  parameter.infer_shapes = infer_fixed;
  types.push_back(std::move(parameter));

  NodeType buffer;
  buffer.kind = NodeKind::Buffer;
  buffer.name = "Buffer";
  buffer.category = "Parameters";
  buffer.description =
      "register_buffer: a tensor of the module's state that is not trained (running statistics)";
  buffer.options = {list_option("shape", Json::array({1}), "the tensor's shape", 0, 0),
                    choice_option("init", "zeros", inits, "initial values"),
                    bool_option("persistent", true, "part of the state dict")};
  buffer.outputs = out_port();
  buffer.infer_shapes = infer_fixed;
  types.push_back(std::move(buffer));

  NodeType ref;
  ref.kind = NodeKind::Ref;
  ref.name = "Ref";
  ref.category = "Reshape";
  ref.description =
      "calls another node's module again, sharing its parameters (a second call of one attribute)";
  ref.options = {int_option("target", 0, "the id of the node whose module is called", 0)};
  ref.inputs = in_port();
  ref.outputs = out_port();
  types.push_back(std::move(ref));
  return types;
}

}  // namespace nns::graph
