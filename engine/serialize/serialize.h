// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// State dict files that PyTorch reads and writes: `.pt`/`.pth`/`.bin` (torch.save's zip
// format) and `.safetensors`. The format follows the file's extension; the content is checked
// too. Reading never runs code from the file: pickles go through a restricted unpickler that
// knows only the globals a state dict needs (see pickle.h), and every length, offset and size
// is checked against the file before anything is allocated.
//
//   nns::serialize::save_state_dict_file(model->state_dict(), "model.safetensors");
//   auto report = nns::serialize::load_into(*model, nns::serialize::load_state_dict_file(
//                                                       "model.pt"), /*strict=*/false);
//
//   nns::serialize::Checkpoint ckpt{model->state_dict(), sgd.state_dict(), {}};
//   ckpt.extra.emplace_back("epoch", nns::serialize::PyValue(5));
//   nns::serialize::save_checkpoint(ckpt, "ckpt.pt");   // torch.load(...)["epoch"] == 5
//
// A bad file throws FileError naming the file and what is wrong with it; nothing is changed.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/nn/module.h"
#include "engine/optim/optimizer.h"
#include "engine/serialize/pickle.h"

namespace nns::serialize {

enum class Format { TorchZip, Safetensors };

// "PyTorch zip (torch.save)" or "safetensors".
std::string format_name(Format format);
// The format a path's extension names: .pt, .pth, .bin -> TorchZip; .safetensors ->
// Safetensors; anything else -> nullopt.
std::optional<Format> format_from_extension(const std::string& path);
// The format the leading bytes show (a zip, or a plausible safetensors header), or nullopt.
// Known foreign formats (legacy torch.save, TorchScript) are refused by the readers.
std::optional<Format> sniff_format(const uint8_t* data, size_t size);

// A file's whole content as read, for inspection: the unpickled object of a torch file (an
// OrderedDict of tensors for a state dict, a dict for a checkpoint), or an OrderedDict of
// the tensors of a safetensors file plus its `__metadata__`.
struct FileContents {
  Format format = Format::TorchZip;
  PyValue root;
  // safetensors' `__metadata__` (string -> string), in the header's order.
  std::vector<std::pair<std::string, std::string>> metadata;
  // torch zip only: the `version` record and the byte order the storages were written in.
  int64_t version = 0;
  std::string byteorder;
};

// Reads any supported file (format by extension, or by content for other extensions).
FileContents read_file(const std::string& path);
// The same from memory (the fuzz targets' entry point); `name` is used in messages.
FileContents read_bytes(const uint8_t* data, size_t size, Format format,
                        const std::string& name = "<memory>");

// ---- State dicts ------------------------------------------------------------------------------
// A file holding a flat name -> tensor map: a torch.save(model.state_dict()) file or a
// safetensors file. A checkpoint dict is refused with a pointer to load_checkpoint.
nn::StateDict load_state_dict_file(const std::string& path);
// Writes atomically: a temporary file in the same folder, flushed and fsynced, then renamed
// over path. On any error the target is untouched and the temporary removed.
void save_state_dict_file(const nn::StateDict& state_dict, const std::string& path);
// A state dict as a PyValue (an OrderedDict of tensors) and back; the reverse checks that
// every key is a string and every value a tensor, naming the first that is not.
PyValue state_dict_to_py(const nn::StateDict& state_dict);
nn::StateDict state_dict_from_py(const PyValue& value, const std::string& where);

// ---- Checkpoints ------------------------------------------------------------------------------
// The dict PyTorch's tutorials save: {"model_state_dict": ..., "optimizer_state_dict": ...,
// "epoch": ..., "loss": ..., ...}. The optimizer state is in PyTorch's layout (state:
// {int: {name: tensor}}, param_groups: [{options..., "params": [ints]}]), so a PyTorch
// SGD/Adam resumes from it and ours from PyTorch's.
struct Checkpoint {
  nn::StateDict model;
  std::optional<optim::OptimizerStateDict> optimizer;
  // Every other top-level entry (epoch, step, loss, ...), in file order.
  std::vector<std::pair<std::string, PyValue>> extra;

  // An extra entry by key, or nullptr.
  const PyValue* find(const std::string& key) const;
};

// Torch zip only (safetensors holds tensors alone); atomic like save_state_dict_file.
void save_checkpoint(const Checkpoint& checkpoint, const std::string& path);
// A checkpoint dict (model_state_dict required), or a plain state dict file (which becomes
// `model`, with no optimizer and no extra entries).
Checkpoint load_checkpoint(const std::string& path);
PyValue optimizer_state_to_py(const optim::OptimizerStateDict& state);
optim::OptimizerStateDict optimizer_state_from_py(const PyValue& value, const std::string& where);

// ---- Loading into a module --------------------------------------------------------------------
struct WrongShape {
  std::string key;
  Shape expected;  // the module's
  Shape file;      // the file's
};

// What a state dict holds compared with a module's state_dict().
struct LoadReport {
  std::vector<std::string> matched;
  std::vector<std::string> missing;     // in the module, not in the file
  std::vector<std::string> unexpected;  // in the file, not in the module
  std::vector<WrongShape> wrong_shape;  // in both, with different shapes
  // True when a load with this strictness would succeed (no wrong shapes; strict: no
  // missing or unexpected keys either).
  bool loadable(bool strict) const;
  // A multi-line summary: counts, then each missing/unexpected/wrong-shape key.
  std::string str() const;
};

// Compares without changing anything.
LoadReport compare_state_dict(nn::Module& module, const nn::StateDict& state_dict);

// A load that failed: the report says why; the module is unchanged.
class LoadError : public nn::StateDictError {
 public:
  LoadError(const nn::StateDictError& error, LoadReport report)
      : nn::StateDictError(error), report(std::move(report)) {}
  LoadReport report;
};

// Copies the matching tensors into the module (dtype converted to the module's), after
// checking everything: a wrong shape always, and missing or unexpected keys when strict,
// throw LoadError and change nothing.
LoadReport load_into(nn::Module& module, const nn::StateDict& state_dict, bool strict);

}  // namespace nns::serialize
