// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli convert IN OUT: a state dict from one weight format to the other, each named
// by its extension (.pt/.pth/.bin: PyTorch's torch.save zip; .safetensors). A checkpoint
// converts its model_state_dict alone.
#include <iostream>
#include <string>

#include "app/cli/commands.h"
#include "engine/serialize/serialize.h"

namespace nns::cli {
namespace {

int run_convert(const Options& options) {
  const std::string& in = options.positional(0);
  const std::string& out = options.positional(1);
  if (!serialize::format_from_extension(out)) {
    throw UsageError("convert: OUT '" + out + "' must end in .pt, .pth, .bin or .safetensors",
                     "convert");
  }
  const serialize::FileContents contents = serialize::read_file(in);
  nn::StateDict state_dict;
  if (const serialize::PyValue* model = contents.root.find("model_state_dict")) {
    state_dict = serialize::state_dict_from_py(*model, in + " [model_state_dict]");
    std::cout << "note: " << in
              << " is a checkpoint; converting its model_state_dict only (the other entries "
                 "are not written)\n";
  } else {
    state_dict = serialize::state_dict_from_py(contents.root, in);
  }
  serialize::save_state_dict_file(state_dict, out);
  std::cout << "wrote " << out << ": "
            << serialize::format_name(*serialize::format_from_extension(out)) << ", "
            << state_dict.size() << " tensors\n";
  return 0;
}

}  // namespace

Command convert_command() {
  return {"convert",
          "convert a state dict between .pt/.pth/.bin and .safetensors",
          {{"IN", "the file to read"}, {"OUT", "the file to write (format by extension)"}},
          {},
          run_convert};
}

}  // namespace nns::cli
