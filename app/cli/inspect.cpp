// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli inspect FILE: what a weight file holds, without loading it into a model: the
// format, every tensor (key, dtype, shape, element count, bytes), a checkpoint's other
// entries (epoch, loss, the optimizer's param groups) and safetensors metadata.
#include <algorithm>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "app/cli/commands.h"
#include "engine/serialize/serialize.h"

namespace nns::cli {
namespace {

using serialize::PyValue;
using Rows = std::vector<std::pair<std::string, Tensor>>;

struct Totals {
  int64_t tensors = 0;
  int64_t elements = 0;
  int64_t bytes = 0;
};

std::string key_text(const PyValue& key) {
  return key.is(PyValue::Kind::String) ? key.as_string() : key.repr();
}

// Every tensor inside v, with its path of keys / indices below prefix.
void collect(const PyValue& v, const std::string& prefix, Rows& rows) {
  const auto join = [&](const std::string& part) {
    return prefix.empty() ? part : prefix + "." + part;
  };
  if (v.is(PyValue::Kind::Tensor)) {
    rows.emplace_back(prefix, v.as_tensor());
  } else if (v.is_mapping()) {
    for (const auto& [key, value] : v.pairs()) collect(value, join(key_text(key)), rows);
  } else if (v.is_sequence()) {
    for (size_t i = 0; i < v.items().size(); ++i)
      collect(v.items()[i], join(std::to_string(i)), rows);
  }
}

bool holds_tensors(const PyValue& v) {
  Rows rows;
  collect(v, "", rows);
  return !rows.empty();
}

std::string short_repr(const PyValue& v) {
  std::string s = v.repr();
  constexpr size_t kMax = 400;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

void print_tensors(const Rows& rows, const std::string& indent, Totals& totals) {
  std::vector<std::vector<std::string>> cells{{"key", "dtype", "shape", "numel", "bytes"}};
  for (const auto& [key, t] : rows) {
    const std::string dtype = dtype_name(t.dtype());
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    cells.push_back({key, dtype.substr(dtype.find('.') + 1), shape_str(t.sizes()),
                     std::to_string(t.numel()), std::to_string(bytes)});
    totals.tensors += 1;
    totals.elements += t.numel();
    totals.bytes += bytes;
  }
  print_table(cells, /*left=*/3, indent, /*gap=*/"  ");
}

// One top-level entry of a checkpoint: its non-tensor parts by repr, its tensors as a table.
void print_entry(const std::string& name, const PyValue& value, Totals& totals) {
  if (!holds_tensors(value)) {
    std::cout << name << ": " << short_repr(value) << "\n";
    return;
  }
  Rows rows;
  collect(value, "", rows);
  std::cout << name << ": " << PyValue::kind_name(value.kind()) << " with " << rows.size()
            << (rows.size() == 1 ? " tensor" : " tensors") << "\n";
  if (value.is_mapping()) {
    for (const auto& [key, sub] : value.pairs()) {
      if (!holds_tensors(sub))
        std::cout << "  " << key_text(key) << ": " << short_repr(sub) << "\n";
    }
  }
  print_tensors(rows, "  ", totals);
}

int run_inspect(const Options& options) {
  const std::string& path = options.positional(0);
  const serialize::FileContents contents = serialize::read_file(path);
  const PyValue& root = contents.root;
  std::cout << path << ": " << serialize::format_name(contents.format);
  if (contents.format == serialize::Format::TorchZip) {
    std::cout << ", version " << contents.version << ", " << contents.byteorder << "-endian";
  }
  std::cout << "\n";
  for (const auto& [key, value] : contents.metadata) {
    std::cout << "metadata: " << key << " = " << value << "\n";
  }
  Totals totals;
  const bool state_dict =
      root.is_mapping() && std::all_of(root.pairs().begin(), root.pairs().end(), [](const auto& p) {
        return p.second.is(PyValue::Kind::Tensor);
      });
  if (state_dict) {
    std::cout << "state dict with " << root.pairs().size() << " tensors\n";
    Rows rows;
    collect(root, "", rows);
    print_tensors(rows, "  ", totals);
  } else if (root.is_mapping()) {
    std::cout << "checkpoint with " << root.pairs().size() << " entries\n";
    for (const auto& [key, value] : root.pairs()) print_entry(key_text(key), value, totals);
  } else {
    print_entry("content", root, totals);
  }
  std::cout << "total: " << totals.tensors << " tensors, " << totals.elements << " elements, "
            << totals.bytes << " bytes\n";
  return 0;
}

}  // namespace

Command inspect_command() {
  return {"inspect",
          "list the tensors and entries of a weight file (.pt, .pth, .bin, .safetensors)",
          {{"FILE", "a state dict or checkpoint file"}},
          {},
          run_inspect};
}

}  // namespace nns::cli
