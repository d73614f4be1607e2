// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli import SOURCE OUT.nns [--input SHAPE[:DTYPE]]... [--python PY] [--force]:
// an ONNX model (SOURCE ending in .onnx, engine/onnx/onnx_import.h) or PyTorch code
// (FILE.py:EXPR or package.module:EXPR, engine/torch_import/torch_import.h) as a project with
// its weights: OUT.nns and OUT.safetensors beside it. Nothing is written when the model cannot
// be read whole.
#include <filesystem>
#include <iostream>
#include <string>

#include "app/cli/commands.h"
#include "engine/graph/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/tensor/error.h"
#include "engine/torch_import/torch_import.h"

namespace nns::cli {
namespace {

std::string program_dir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

int run_import(const Options& o) {
  const std::string& source = o.positional(0);
  const std::string& out = o.positional(1);
  if (std::filesystem::path(out).extension() != ".nns")
    throw UsageError("import: OUT '" + out + "' must end in .nns", "import");
  const bool pytorch = torch_import::is_pytorch_source(source);
  if (!pytorch && (o.has("input") || o.has("python")))
    throw UsageError("import: --input and --python are for PyTorch code; an ONNX model (" + source +
                         ") has its input shapes",
                     "import");
  const std::string weights = graph::weights_path_for(out);
  std::error_code ec;
  for (const std::string& path : {out, weights}) {
    if (std::filesystem::exists(path, ec) && !o.flag("force"))
      throw ValueError("'" + path + "' exists; choose a new name, or replace it (--force)");
  }
  graph::ImportedProject imported;
  if (pytorch) {
    torch_import::Request request{source, o.list("input"), o.text("python")};
    imported = torch_import::import_pytorch(request, program_dir(), [](const std::string& line) {
      std::cerr << "import: " << line << "\n";
    });
  } else {
    imported = onnx::import_model_file(source);
  }
  graph::write_imported(imported, out);
  int64_t parameters = 0;
  for (const Tensor& tensor : imported.weights.values()) {
    if (tensor.is_floating_point()) parameters += tensor.numel();
  }
  std::cout << "wrote " << out << " (" << imported.project.graph.nodes.size() << " nodes";
  if (!imported.project.blocks.empty())
    std::cout << ", " << imported.project.blocks.size() << " custom blocks";
  std::cout << ", dataset " << imported.project.dataset.name << ") and " << weights << " ("
            << imported.weights.size() << " tensors, " << parameters << " values)\n";
  for (const std::string& note : imported.notes) std::cout << "note: " << note << "\n";
  return 0;
}

}  // namespace

Command import_command() {
  Command c{"import",
            "open an ONNX model or PyTorch code as a project (.nns) with its weights "
            "(.safetensors)",
            {{"SOURCE",
              "an ONNX model (.onnx, opsets 13 to 21), or PyTorch code: FILE.py:EXPR or "
              "package.module:EXPR (model.py:Net, torchvision.models:resnet18(num_classes=10)); "
              "a class or function is called with no arguments"},
             {"OUT", "the project to write (.nns); its weights go beside it as .safetensors"}},
            {{"input", "SHAPE[:DTYPE]", "",
              "PyTorch code: one forward argument's shape without the batch (3,224,224), "
              "int64 for tokens (12:int64); one --input per argument"},
             {"python", "PY", "",
              "PyTorch code: the Python that has torch (default: $NNSTUDIO_PYTHON, else python3)"},
             {"force", "", "", "replace OUT and its weights when they exist"}},
            run_import};
  c.options[0].repeated = true;
  return c;
}

}  // namespace nns::cli
