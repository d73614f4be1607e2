// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli import MODEL.onnx OUT.nns [--force]: an ONNX model as a project with its weights
// (engine/onnx/onnx_import.h): OUT.nns and OUT.safetensors beside it. Nothing is written when
// the model cannot be read whole.
#include <filesystem>
#include <iostream>
#include <string>

#include "app/cli/commands.h"
#include "engine/graph/builder.h"
#include "engine/onnx/onnx_import.h"
#include "engine/tensor/error.h"

namespace nns::cli {
namespace {

int run_import(const Options& o) {
  const std::string& model = o.positional(0);
  const std::string& out = o.positional(1);
  if (std::filesystem::path(out).extension() != ".nns")
    throw UsageError("import: OUT '" + out + "' must end in .nns", "import");
  const std::string weights = onnx::weights_path_for(out);
  std::error_code ec;
  for (const std::string& path : {out, weights}) {
    if (std::filesystem::exists(path, ec) && !o.flag("force"))
      throw ValueError("'" + path + "' exists; choose a new name, or replace it (--force)");
  }
  const onnx::Imported imported = onnx::import_model_file(model);
  onnx::write_imported(imported, out);
  int64_t parameters = 0;
  for (const Tensor& tensor : imported.weights.values()) {
    if (tensor.is_floating_point()) parameters += tensor.numel();
  }
  std::cout << "wrote " << out << " (" << imported.project.graph.nodes.size() << " nodes, dataset "
            << imported.project.dataset.name << ") and " << weights << " ("
            << imported.weights.size() << " tensors, " << parameters << " values)\n";
  for (const std::string& note : imported.notes) std::cout << "note: " << note << "\n";
  return 0;
}

}  // namespace

Command import_command() {
  return {"import",
          "open an ONNX model as a project (.nns) with its weights (.safetensors)",
          {{"MODEL", "the ONNX model (.onnx), opsets 13 to 17"},
           {"OUT", "the project to write (.nns); its weights go beside it as .safetensors"}},
          {{"force", "", "", "replace OUT and its weights when they exist"}},
          run_import};
}

}  // namespace nns::cli
