// nnstudio-cli export PROJECT --format pytorch --out DIR [--weights FILE] [--force]: the
// project's model as PyTorch code (engine/export/pytorch_code.h) in the folder DIR: model.py,
// train.py (one process or DDP under torchrun), data.pt, README.md, and with --weights the
// weights as weights.pt.
#include <filesystem>
#include <iostream>

#include "app/cli/commands.h"
#include "engine/export/pytorch_code.h"
#include "engine/serialize/serialize.h"

namespace nns::cli {
namespace {

int run_export(const Options& o) {
  o.choice("format", {"pytorch"});
  if (!o.has("out")) throw UsageError("export: --out DIR is required", "export");
  const graph::Project project = graph::load_project(o.positional(0));
  std::optional<nn::StateDict> weights;
  if (o.has("weights")) weights = serialize::load_state_dict_file(o.text("weights"));
  const std::string base_dir = std::filesystem::path(o.positional(0)).parent_path().string();
  exporting::write_pytorch_export(project, o.text("out"), base_dir, weights ? &*weights : nullptr,
                                  o.flag("force"));
  std::cout << "export: wrote " << o.text("out") << ": model.py (class " << project.name
            << "), train.py, data.pt" << (weights ? ", weights.pt" : "") << ", README.md\n";
  return 0;
}

}  // namespace

Command export_command() {
  return {
      "export",
      "write a project's model and training as PyTorch code into a folder",
      {{"PROJECT", "the project file (.nns)"}},
      {{"format", "FORMAT", "pytorch", "pytorch: model.py with NN Studio's module names"},
       {"out", "DIR", "", "the folder to write (it must not exist, unless --force)"},
       {"weights", "FILE", "", "also write these weights (.pt, .pth, .safetensors) as weights.pt"},
       {"force", "", "", "replace DIR when it exists"}},
      run_export};
}

}  // namespace nns::cli
