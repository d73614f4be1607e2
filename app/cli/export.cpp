// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli export PROJECT --format pytorch --out DIR [--weights FILE] [--force]: the
// project's model as PyTorch code (engine/export/pytorch_code.h) in the folder DIR: model.py,
// train.py (one process or DDP under torchrun), data.pt, README.md, and with --weights the
// weights as weights.pt.
// nnstudio-cli export PROJECT --format onnx --out MODEL.onnx [--weights FILE] [--opset N]
// [--force]: the model as an ONNX file (engine/onnx/onnx_export.h), in eval mode with a
// dynamic batch, its weights as initializers named by their state-dict keys.
#include <filesystem>
#include <iostream>

#include "app/cli/commands.h"
#include "engine/export/pytorch_code.h"
#include "engine/onnx/onnx_export.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"

namespace nns::cli {
namespace {

int run_export(const Options& o) {
  const std::string& format = o.choice("format", {"pytorch", "onnx"});
  if (!o.has("out"))
    throw UsageError("export: --out is required (a folder for pytorch, a .onnx file for onnx)",
                     "export");
  if (format != "onnx" && o.has("opset"))
    throw UsageError("export: --opset is for --format onnx only", "export");
  const int64_t opset =
      o.has("opset") ? o.integer("opset", onnx::kMinOpset, onnx::kMaxOpset) : onnx::kDefaultOpset;
  const graph::Project project = graph::load_project(o.positional(0));
  std::optional<nn::StateDict> weights;
  if (o.has("weights")) weights = serialize::load_state_dict_file(o.text("weights"));
  const std::string& out = o.text("out");
  if (format == "onnx") {
    std::error_code ec;
    if (std::filesystem::exists(out, ec) && !o.flag("force"))
      throw ValueError("'" + out + "' exists; choose a new file, or replace it (--force)");
    onnx::write_model_file(project, out, weights ? &*weights : nullptr, opset);
    std::cout << "export: wrote " << out << ": ONNX opset " << opset << ", model " << project.name
              << (weights ? " with the given weights" : " with its initial weights") << "\n";
    return 0;
  }
  const std::string base_dir = std::filesystem::path(o.positional(0)).parent_path().string();
  exporting::write_pytorch_export(project, out, base_dir, weights ? &*weights : nullptr,
                                  o.flag("force"));
  std::cout << "export: wrote " << out << ": model.py (class " << project.name
            << "), train.py, data.pt" << (weights ? ", weights.pt" : "") << ", README.md\n";
  return 0;
}

}  // namespace

Command export_command() {
  return {"export",
          "write a project's model as PyTorch code (a folder) or as an ONNX file",
          {{"PROJECT", "the project file (.nns)"}},
          {{"format", "FORMAT", "pytorch",
            "pytorch: model.py with NN Studio's module names, train.py, data.pt; onnx: one "
            ".onnx file in eval mode with a dynamic batch N"},
           {"out", "PATH", "",
            "the folder (pytorch) or file (onnx) to write; it must not exist, unless --force"},
           {"weights", "FILE", "",
            "the weights to write (.pt, .pth, .safetensors): weights.pt (pytorch) or the "
            "initializers (onnx; without it, the project's initial weights)"},
           {"opset", "N", "",
            "onnx only: the ONNX opset, " + std::to_string(onnx::kMinOpset) + " to " +
                std::to_string(onnx::kMaxOpset) + " (default " +
                std::to_string(onnx::kDefaultOpset) + ")"},
           {"force", "", "", "replace PATH when it exists"}},
          run_export};
}

}  // namespace nns::cli
