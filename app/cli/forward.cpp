// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli forward PROJECT --input IN.safetensors --output OUT.safetensors: runs the
// project's model on the tensor `input` and writes `output`; with --grad also the gradients of
// output.sum() w.r.t. the input (`grad.input`) and every parameter (`grad.<name>`), so that a
// script can compare them with PyTorch's.
#include <iostream>
#include <string>

#include "app/cli/commands.h"
#include "engine/graph/builder.h"
#include "engine/serialize/serialize.h"
#include "engine/train/session.h"

namespace nns::cli {
namespace {

int run_forward(const Options& o) {
  if (!o.has("input")) throw UsageError("forward: --input FILE is required", "forward");
  if (!o.has("output")) throw UsageError("forward: --output FILE is required", "forward");
  const graph::Project project = graph::load_project(o.positional(0));
  // On a GPU: model and input go there, results come back to the CPU to be written.
  const Device device = train::training_device(o.has("device") ? o.text("device") : "cpu");
  // Without --weights, the weights a training run starts from (as the ONNX export writes).
  const std::shared_ptr<graph::GraphModule> model =
      o.has("weights") ? graph::build_model(project) : graph::build_initial_model(project);
  if (o.has("weights"))
    serialize::load_into(*model, serialize::load_state_dict_file(o.text("weights")),
                         /*strict=*/true);
  if (o.flag("eval")) model->eval();
  if (!device.is_cpu()) model->to(device);

  const nn::StateDict inputs = serialize::load_state_dict_file(o.text("input"));
  const Tensor* found = inputs.find("input");
  if (!found)
    throw KeyError(o.text("input") + " has no tensor named 'input'; its tensors are: " + [&inputs] {
      std::string names;
      for (const auto& item : inputs) names += (names.empty() ? "" : ", ") + item.key();
      return names.empty() ? std::string("none") : names;
    }());
  Tensor input = found->detach().to(device);
  const bool grad = o.flag("grad");
  // Token indices (int64) have no gradient: only the parameters' are written then.
  const bool input_grad = grad && input.is_floating_point();
  if (input_grad) input.requires_grad_(true);
  const Tensor output = (*model)(input);
  nn::StateDict result;
  result.insert("output", output.detach().to(kCPU));
  if (grad) {
    output.sum().backward();
    if (input_grad) result.insert("grad.input", input.grad().to(kCPU));
    for (const auto& [name, p] : model->named_parameters()) {
      if (p.grad().defined()) result.insert("grad." + name, p.grad().to(kCPU));
    }
  }
  serialize::save_state_dict_file(result, o.text("output"));
  std::cout << "forward: wrote output " << shape_str(output.sizes());
  if (grad) std::cout << " and " << result.size() - 1 << " gradients";
  std::cout << " to " << o.text("output") << "\n";
  return 0;
}

}  // namespace

Command forward_command() {
  return {"forward",
          "run a project's model on a tensor from a file and write the output",
          {{"PROJECT", "the project file (.nns)"}},
          {{"weights", "FILE", "",
            "run with these weights (.pt, .pth or .safetensors); without it, those training starts "
            "from (the project's seed)"},
           {"input", "FILE", "", "a state-dict file holding the tensor 'input'"},
           {"output", "FILE", "", "write 'output' (and the gradients) to this file"},
           {"grad", "", "",
            "also write grad.input (a floating-point input's) and grad.<parameter> of "
            "output.sum()"},
           {"eval", "", "", "run in eval mode (dropout off, batch norm's running statistics)"},
           {"device", "DEVICE", "cpu", "run on cpu, cuda or cuda:N (see nnstudio-cli devices)"}},
          run_forward};
}

}  // namespace nns::cli
