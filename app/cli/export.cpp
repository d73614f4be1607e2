// nnstudio-cli export PROJECT --format pytorch --out DIR [--weights FILE] [--force]: the
// project's model as PyTorch code (engine/export/pytorch_code.h) in the folder DIR: model.py,
// README.md, and with --weights the weights as weights.pt.
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
  exporting::write_pytorch_export(project, o.text("out"), weights ? &*weights : nullptr,
                                  o.flag("force"));
  std::cout << "export: wrote " << o.text("out") << "/model.py (class " << project.name << ")"
            << (weights ? ", weights.pt" : "") << " and README.md\n";
  return 0;
}

}  // namespace

Command export_command() {
  return {
      "export",
      "write a project's model as PyTorch code (model.py) into a folder",
      {{"PROJECT", "the project file (.nns)"}},
      {{"format", "FORMAT", "pytorch", "pytorch: model.py with NN Studio's module names"},
       {"out", "DIR", "", "the folder to write (it must not exist, unless --force)"},
       {"weights", "FILE", "", "also write these weights (.pt, .pth, .safetensors) as weights.pt"},
       {"force", "", "", "replace DIR when it exists"}},
      run_export};
}

}  // namespace nns::cli
