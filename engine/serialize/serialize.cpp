// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/serialize.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "engine/serialize/safetensors.h"
#include "engine/serialize/torch_file.h"
#include "engine/tensor/factories.h"

namespace nns::serialize {

std::string format_name(Format format) {
  return format == Format::TorchZip ? "PyTorch zip (torch.save)" : "safetensors";
}

std::optional<Format> format_from_extension(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return std::nullopt;
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == "pt" || ext == "pth" || ext == "bin") return Format::TorchZip;
  if (ext == "safetensors") return Format::Safetensors;
  return std::nullopt;
}

namespace {

// head: the first bytes of a file of total_size bytes.
std::optional<Format> sniff(const uint8_t* head, size_t head_size, uint64_t total_size) {
  if (head_size >= 4 && std::memcmp(head, "PK\3\4", 4) == 0) return Format::TorchZip;
  if (head_size >= 9) {
    uint64_t n;
    std::memcpy(&n, head, 8);
    const uint8_t c = head[8];
    if (n >= 2 && n <= 100'000'000 && n <= total_size - 8 &&
        (c == '{' || c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      return Format::Safetensors;
    }
  }
  return std::nullopt;
}

FileContents read_source(const ByteSource& src, Format format) {
  FileContents out;
  out.format = format;
  if (format == Format::Safetensors) {
    SafetensorsFile f = read_safetensors(src);
    out.root = state_dict_to_py(f.tensors);
    out.metadata = std::move(f.metadata);
    return out;
  }
  TorchFile f = read_torch_file(src);
  out.root = std::move(f.root);
  out.version = f.version;
  out.byteorder = std::move(f.byteorder);
  return out;
}

const char* extensions_hint = "use .pt, .pth or .bin (PyTorch) or .safetensors";

Format format_for_writing(const std::string& path) {
  const std::optional<Format> format = format_from_extension(path);
  if (!format) {
    throw ValueError("cannot tell the file format of '" + path + "' from its extension; " +
                     extensions_hint);
  }
  return *format;
}

}  // namespace

std::optional<Format> sniff_format(const uint8_t* data, size_t size) {
  return sniff(data, size, size);
}

FileContents read_file(const std::string& path) {
  FileSource src(path);
  uint8_t head[16] = {};
  const size_t head_size = static_cast<size_t>(std::min<uint64_t>(src.size(), sizeof head));
  src.read(0, head, head_size, "the header");
  const std::optional<Format> by_content = sniff(head, head_size, src.size());
  const std::optional<Format> by_name = format_from_extension(path);
  if (by_name && by_content && *by_name != *by_content) {
    throw FileError(path + ": the extension says " + format_name(*by_name) +
                    ", but the content is a " + format_name(*by_content) + " file; rename it to " +
                    (*by_content == Format::TorchZip ? ".pt" : ".safetensors"));
  }
  // Without a recognizable content the extension's reader says what is wrong (a legacy
  // torch.save file, a truncated header, ...); the torch reader also names foreign formats.
  return read_source(src, by_name ? *by_name : by_content ? *by_content : Format::TorchZip);
}

FileContents read_bytes(const uint8_t* data, size_t size, Format format, const std::string& name) {
  return read_source(MemorySource(data, size, name), format);
}

// ---- State dicts ------------------------------------------------------------------------------

PyValue state_dict_to_py(const nn::StateDict& state_dict) {
  PyValue::Pairs pairs;
  pairs.reserve(state_dict.size());
  for (const auto& item : state_dict) pairs.emplace_back(item.key(), item.value());
  return PyValue::ordered_dict(std::move(pairs));
}

nn::StateDict state_dict_from_py(const PyValue& value, const std::string& where) {
  if (!value.is_mapping()) {
    throw FileError(where + ": expected a state dict (a dict of name -> tensor), got a " +
                    PyValue::kind_name(value.kind()));
  }
  nn::StateDict out;
  for (const auto& [key, tensor] : value.pairs()) {
    if (!key.is(PyValue::Kind::String)) {
      throw FileError(where + ": a state dict key is a " +
                      std::string(PyValue::kind_name(key.kind())) + " (" + key.repr() +
                      "), not a str");
    }
    if (!tensor.is(PyValue::Kind::Tensor)) {
      throw FileError(where + ": state dict entry '" + key.as_string() + "' is a " +
                      PyValue::kind_name(tensor.kind()) + ", not a tensor");
    }
    out.insert(key.as_string(), tensor.as_tensor());
  }
  return out;
}

nn::StateDict load_state_dict_file(const std::string& path) {
  FileContents contents = read_file(path);
  const PyValue& root = contents.root;
  if (root.is(PyValue::Kind::Dict) && root.find("model_state_dict")) {
    throw FileError(path +
                    ": a checkpoint (a dict with model_state_dict), not a plain state dict; "
                    "load it as a checkpoint");
  }
  return state_dict_from_py(root, path);
}

void save_state_dict_file(const nn::StateDict& state_dict, const std::string& path) {
  const Format format = format_for_writing(path);
  write_file_atomically(path, [&](ByteSink& sink) {
    if (format == Format::Safetensors) {
      write_safetensors(state_dict, {}, sink);
    } else {
      write_torch_file(state_dict_to_py(state_dict), file_stem(path), sink);
    }
  });
}

// ---- Checkpoints ------------------------------------------------------------------------------

namespace {

constexpr const char* kModelKey = "model_state_dict";
constexpr const char* kOptimizerKey = "optimizer_state_dict";

PyValue option_to_py(const optim::OptionValue& value) {
  if (const bool* b = std::get_if<bool>(&value)) return PyValue(*b);
  if (const double* d = std::get_if<double>(&value)) return PyValue(*d);
  if (std::holds_alternative<std::monostate>(value)) return PyValue();
  PyValue::Items items;
  for (double d : std::get<std::vector<double>>(value)) items.emplace_back(d);
  return PyValue::tuple(std::move(items));
}

// "a dict with keys 'a', 'b'" or "a list": what a file holds instead of what was expected.
std::string top_level_summary(const PyValue& root) {
  std::string s = std::string("a ") + PyValue::kind_name(root.kind());
  if (!root.is_mapping()) return s;
  std::string keys;
  for (const auto& [k, v] : root.pairs()) keys += (keys.empty() ? "" : ", ") + k.repr();
  return s + (keys.empty() ? " with no keys" : " with keys " + keys);
}

bool is_number(const PyValue& v) {
  return v.is(PyValue::Kind::Int) || v.is(PyValue::Kind::Float);
}

}  // namespace

const PyValue* Checkpoint::find(const std::string& key) const {
  for (const auto& [k, v] : extra) {
    if (k == key) return &v;
  }
  return nullptr;
}

PyValue optimizer_state_to_py(const optim::OptimizerStateDict& state) {
  PyValue::Pairs per_param;
  for (const auto& [index, param_state] : state.state) {
    PyValue::Pairs entries;
    for (const auto& item : param_state) entries.emplace_back(item.key(), item.value());
    per_param.emplace_back(index, PyValue::dict(std::move(entries)));
  }
  PyValue::Items groups;
  for (const auto& group : state.param_groups) {
    PyValue::Pairs g;
    for (const auto& [name, value] : group.options) g.emplace_back(name, option_to_py(value));
    PyValue::Items params;
    for (int64_t p : group.params) params.emplace_back(p);
    g.emplace_back("params", PyValue::list(std::move(params)));
    groups.push_back(PyValue::dict(std::move(g)));
  }
  return PyValue::dict({{"state", PyValue::dict(std::move(per_param))},
                        {"param_groups", PyValue::list(std::move(groups))}});
}

optim::OptimizerStateDict optimizer_state_from_py(const PyValue& value, const std::string& where) {
  auto bad = [&](const std::string& what) -> FileError {
    return FileError(where + ": optimizer state dict: " + what);
  };
  const PyValue* state = value.find("state");
  const PyValue* groups = value.find("param_groups");
  if (!state || !groups || !state->is_mapping() || !groups->is_sequence()) {
    throw bad("expected {'state': {...}, 'param_groups': [...]}");
  }
  optim::OptimizerStateDict out;
  for (const auto& [index, entries] : state->pairs()) {
    if (!index.is(PyValue::Kind::Int)) throw bad("a state key is " + index.repr() + ", not an int");
    if (!entries.is_mapping())
      throw bad("the state of parameter " + index.repr() + " is not a dict");
    optim::ParamState ps("State");
    for (const auto& [name, v] : entries.pairs()) {
      if (!name.is(PyValue::Kind::String))
        throw bad("a state name is " + name.repr() + ", not a str");
      if (v.is(PyValue::Kind::Tensor)) {
        ps.insert(name.as_string(), v.as_tensor());
      } else if (is_number(v)) {
        // Before PyTorch 1.12 Adam's step was a number; it is a float32 scalar tensor since.
        ps.insert(name.as_string(), scalar_tensor(v.as_float()));
      } else {
        throw bad("state '" + name.as_string() + "' of parameter " + index.repr() + " is a " +
                  PyValue::kind_name(v.kind()) + ", not a tensor");
      }
    }
    if (!out.state.emplace(index.as_int(), std::move(ps)).second) {
      throw bad("parameter " + index.repr() + " has two states");
    }
  }
  for (const PyValue& g : groups->items()) {
    if (!g.is_mapping()) throw bad("a param group is not a dict");
    optim::OptimizerStateDict::Group group;
    bool has_params = false;
    for (const auto& [key, v] : g.pairs()) {
      if (!key.is(PyValue::Kind::String)) throw bad("a param group key is " + key.repr());
      const std::string& name = key.as_string();
      if (name == "params") {
        if (!v.is_sequence()) throw bad("a param group's params is not a list");
        for (const PyValue& p : v.items()) {
          if (!p.is(PyValue::Kind::Int)) throw bad("a param group's params holds " + p.repr());
          group.params.push_back(p.as_int());
        }
        has_params = true;
      } else if (v.is_none()) {
        group.options.emplace_back(name, std::monostate{});
      } else if (v.is(PyValue::Kind::Bool)) {
        group.options.emplace_back(name, v.as_bool());
      } else if (is_number(v)) {
        group.options.emplace_back(name, v.as_float());
      } else if (v.is_sequence() && std::all_of(v.items().begin(), v.items().end(), is_number)) {
        std::vector<double> numbers;
        for (const PyValue& x : v.items()) numbers.push_back(x.as_float());
        group.options.emplace_back(name, std::move(numbers));
      } else {
        throw bad("param group option '" + name + "' is " + v.repr() +
                  " (a flag, a number, a tuple of numbers or None was expected)");
      }
    }
    if (!has_params) throw bad("a param group has no 'params'");
    out.param_groups.push_back(std::move(group));
  }
  return out;
}

void save_checkpoint(const Checkpoint& checkpoint, const std::string& path) {
  if (format_for_writing(path) != Format::TorchZip) {
    throw ValueError("save_checkpoint: '" + path +
                     "': a checkpoint holds more than tensors; save it as .pt or .pth "
                     "(safetensors holds a state dict only)");
  }
  PyValue::Pairs pairs;
  pairs.emplace_back(kModelKey, state_dict_to_py(checkpoint.model));
  if (checkpoint.optimizer) {
    pairs.emplace_back(kOptimizerKey, optimizer_state_to_py(*checkpoint.optimizer));
  }
  for (const auto& [key, value] : checkpoint.extra) {
    if (key == kModelKey || key == kOptimizerKey) {
      throw ValueError("save_checkpoint: extra entry '" + key +
                       "' would replace the checkpoint's own entry of that name");
    }
    pairs.emplace_back(key, value);
  }
  const PyValue root = PyValue::dict(std::move(pairs));
  write_file_atomically(path,
                        [&](ByteSink& sink) { write_torch_file(root, file_stem(path), sink); });
}

Checkpoint load_checkpoint(const std::string& path) {
  FileContents contents = read_file(path);
  const PyValue& root = contents.root;
  Checkpoint out;
  const PyValue* model = root.find(kModelKey);
  if (!model) {
    const bool flat = root.is_mapping() &&
                      std::all_of(root.pairs().begin(), root.pairs().end(),
                                  [](const auto& p) { return p.second.is(PyValue::Kind::Tensor); });
    if (!flat) {
      throw FileError(path + ": neither a state dict nor a checkpoint with '" + kModelKey +
                      "' (it holds " + top_level_summary(root) + ")");
    }
    out.model = state_dict_from_py(root, path);
    return out;
  }
  out.model = state_dict_from_py(*model, path + " [" + kModelKey + "]");
  for (const auto& [key, value] : root.pairs()) {
    if (!key.is(PyValue::Kind::String)) {
      throw FileError(path + ": a checkpoint key is " + key.repr() + ", not a str");
    }
    const std::string& k = key.as_string();
    if (k == kModelKey) continue;
    if (k == kOptimizerKey && !value.is_none()) {
      out.optimizer = optimizer_state_from_py(value, path + " [" + kOptimizerKey + "]");
      continue;
    }
    out.extra.emplace_back(k, value);
  }
  return out;
}

// ---- Loading into a module --------------------------------------------------------------------

bool LoadReport::loadable(bool strict) const {
  return wrong_shape.empty() && (!strict || (missing.empty() && unexpected.empty()));
}

std::string LoadReport::str() const {
  std::string s = std::to_string(matched.size()) + " matched, " + std::to_string(missing.size()) +
                  " missing, " + std::to_string(unexpected.size()) + " unexpected, " +
                  std::to_string(wrong_shape.size()) + " of the wrong shape\n";
  for (const std::string& k : missing) s += "  missing: " + k + "\n";
  for (const std::string& k : unexpected) s += "  unexpected: " + k + "\n";
  for (const WrongShape& w : wrong_shape) {
    s += "  wrong shape: " + w.key + ": the module has " + shape_str(w.expected) +
         ", the file has " + shape_str(w.file) + "\n";
  }
  return s;
}

LoadReport compare_state_dict(nn::Module& module, const nn::StateDict& state_dict) {
  const nn::StateDict own = module.state_dict();
  LoadReport report;
  for (const auto& item : own) {
    const Tensor* theirs = state_dict.find(item.key());
    if (!theirs) {
      report.missing.push_back(item.key());
    } else if (theirs->sizes() != item.value().sizes()) {
      report.wrong_shape.push_back({item.key(), item.value().sizes(), theirs->sizes()});
    } else {
      report.matched.push_back(item.key());
    }
  }
  for (const auto& item : state_dict) {
    if (!own.contains(item.key())) report.unexpected.push_back(item.key());
  }
  return report;
}

LoadReport load_into(nn::Module& module, const nn::StateDict& state_dict, bool strict) {
  LoadReport report = compare_state_dict(module, state_dict);
  try {
    module.load_state_dict(state_dict, strict);
  } catch (const nn::StateDictError& e) {
    throw LoadError(e, std::move(report));
  }
  return report;
}

}  // namespace nns::serialize
