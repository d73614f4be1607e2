// SPDX-License-Identifier: GPL-3.0-or-later
// The importer's free helpers: attributes, names and scopes, the weight blocks.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "engine/onnx/import/importer.h"

namespace nns::onnx::detail {

const AttributeProto* find_attribute(const NodeProto& node, const std::string& name) {
  for (const AttributeProto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t attr_int(const NodeProto& node, const std::string& name, int64_t fallback) {
  const AttributeProto* a = find_attribute(node, name);
  return a ? a->i() : fallback;
}

// A float32 as the double with the shortest decimal form that rounds to it: an epsilon stored
// as 9.99999975e-06 reads as 1e-05, as the PyTorch code that wrote it said.
double shortest(double value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, static_cast<float>(value)).ptr;
  return std::strtod(std::string(buffer, end).c_str(), nullptr);
}

double attr_float(const NodeProto& node, const std::string& name, double fallback) {
  const AttributeProto* a = find_attribute(node, name);
  if (a && !std::isfinite(a->f()))
    throw ValueError("node '" + node.name() + "': its attribute " + name +
                     " is not a finite number");
  return a ? shortest(a->f()) : fallback;
}

std::string attr_string(const NodeProto& node, const std::string& name,
                        const std::string& fallback) {
  const AttributeProto* a = find_attribute(node, name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<int64_t>> attr_ints(const NodeProto& node, const std::string& name) {
  const AttributeProto* a = find_attribute(node, name);
  if (!a) return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

Json json_list(const std::vector<int64_t>& v) {
  Json out = Json::array();
  for (int64_t x : v) out.push_back(x);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A name usable as a node's (an attribute or a ModuleDict key): no '.', no odd characters.
std::string sanitized(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  while (!out.empty() && out.front() == '_') out.erase(out.begin());
  return out.empty() ? "node" : out;
}

bool is_index(const std::string& s) {
  return !s.empty() && s.size() < 10 &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         (s == "0" || s[0] != '0');
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// A module path PyTorch would write (features.0, block.conv1): dot-separated identifiers or
// indices.
bool is_module_path(const std::string& path) {
  if (path.empty()) return false;
  for (const std::string& part : split(path, '.')) {
    if (part.empty()) return false;
    if (is_index(part)) continue;
    if (!(std::isalpha(static_cast<unsigned char>(part[0])) || part[0] == '_')) return false;
    for (char c : part) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    }
  }
  return true;
}

// The module an initializer belongs to: "features.0.weight" -> "features.0"; none for names
// an exporter made up ("onnx::Conv_12", "weight").
std::string module_of_initializer(const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return "";
  const std::string path = name.substr(0, dot);
  return is_module_path(path) ? path : "";
}

namespace {

// The payloads of the length-delimited fields `number` of a message's bytes (protobuf's wire
// format: a varint key, field number and wire type, then the value); empty when malformed.
std::vector<std::string_view> length_delimited(std::string_view bytes, uint64_t number) {
  std::vector<std::string_view> out;
  size_t at = 0;
  auto varint = [&](uint64_t& v) {
    v = 0;
    for (int shift = 0; at < bytes.size() && shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(bytes[at++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  while (at < bytes.size()) {
    uint64_t key = 0, value = 0;
    if (!varint(key)) return {};
    const uint64_t type = key & 7;
    if (type == 0) {
      if (!varint(value)) return {};
    } else if (type == 1 || type == 5) {
      at += type == 1 ? 8 : 4;
    } else if (type == 2) {
      if (!varint(value) || value > bytes.size() - at) return {};
      if (key >> 3 == number) out.push_back(bytes.substr(at, value));
      at += value;
    } else {
      return {};  // groups, long deprecated, or not a message
    }
  }
  return out;
}

// A node's metadata_props entry, or "". The field (NodeProto's 9, from ONNX 1.16) is newer
// than Debian's libonnx, whose classes keep it as an unknown field: it is read from the node's
// bytes, which hold it whatever the library knows.
std::string node_metadata(const NodeProto& node, const std::string& key) {
  constexpr uint64_t kMetadataProps = 9;
  const std::string bytes = node.SerializeAsString();
  for (std::string_view field : length_delimited(bytes, kMetadataProps)) {
    ::onnx::StringStringEntryProto entry;
    if (entry.ParseFromArray(field.data(), static_cast<int>(field.size())) && entry.key() == key)
      return entry.value();
  }
  return "";
}

// The module torch 2.x's exporter (torch.export) records in a node's metadata: its
// pkg.torch.onnx.name_scopes, the repr of a list of module paths from the model's "" to the
// node's own name ("['', 'features', 'features.2', 'relu_3']" -> features.2); a second call's
// "@1" dropped. None for a node of the model itself or without the entry.
std::string scope_of_metadata(const NodeProto& node) {
  const std::string scopes = node_metadata(node, "pkg.torch.onnx.name_scopes");
  std::vector<std::string> items;
  for (size_t at = 0; at < scopes.size(); ++at) {
    const char quote = scopes[at];
    if (quote != '\'' && quote != '"') continue;
    const size_t end = scopes.find(quote, at + 1);
    if (end == std::string::npos) return "";
    items.push_back(scopes.substr(at + 1, end - at - 1));
    at = end;
  }
  if (items.size() < 2) return "";
  std::string path = items[items.size() - 2];
  if (const size_t call = path.rfind('@');
      call != std::string::npos && is_index(path.substr(call + 1)))
    path.erase(call);
  return is_module_path(path) ? path : "";
}

}  // namespace

// The module scope an exporter records for a node, as a module path. torch.onnx.export (torch
// 1.x, and torch 2.x's TorchScript exporter) puts it in the node's name: each scope is a
// module's name in its parent, or already its path below the parent for a container's member
// ("/features/features.2/Relu" -> features.2, "/layer1/layer1.0/relu/Relu" ->
// layer1.0.relu); torch 2.x's default exporter names nodes after torch.export's ("relu_3") and
// keeps the scope in the node's metadata. None for a top-level function ("/Add") or a node
// without scopes.
std::string scope_of_node(const NodeProto& node) {
  const std::string& name = node.name();
  if (name.empty() || name[0] != '/') return scope_of_metadata(node);
  const std::vector<std::string> parts = split(name.substr(1), '/');
  std::string path;
  for (size_t k = 0; k + 1 < parts.size(); ++k) {
    if (!is_module_path(parts[k])) return "";
    path = path.empty() || parts[k].rfind(path + ".", 0) == 0 ? parts[k] : path + "." + parts[k];
  }
  return path;
}

// The scope of the module a second call comes from: torch names the n-th call of `relu`
// "relu_n" ("layer1.0.relu_1" -> "layer1.0.relu"); the scope itself otherwise.
std::string first_call_scope(const std::string& scope) {
  const size_t underscore = scope.rfind('_');
  if (underscore == std::string::npos || underscore + 1 == scope.size()) return scope;
  for (size_t k = underscore + 1; k < scope.size(); ++k) {
    if (scope[k] < '0' || scope[k] > '9') return scope;
  }
  return scope.substr(0, underscore);
}

// The definition of the block kWeightBiasBlock (bias) or kWeightBlock names (importer.h).
graph::BlockDef weight_block(bool bias) {
  graph::BlockDef b;
  b.name = bias ? kWeightBiasBlock : kWeightBlock;
  b.description = bias ? "(input @ weight) + bias, the weight [in_features, out_features]"
                       : "input @ weight, the weight [in_features, out_features]";
  b.arguments = {{"in_features", 1}, {"out_features", 1}};
  graph::Graph& g = b.graph;
  double y = 0;
  auto add = [&g, &y](const std::string& type, const std::string& name, Json options) {
    const NodeId id = g.add_node(type, name, std::move(options), 0, y);
    y += 74;
    return id;
  };
  const NodeId in =
      add("Input", "in", {{"shape", Json::array({"$in_features"})}, {"dtype", "float32"}});
  const NodeId weight = add("Parameter", "weight",
                            {{"shape", Json::array({"$in_features", "$out_features"})},
                             {"init", "kaiming_uniform"},
                             {"requires_grad", true}});
  NodeId last = add("MatMul", "matmul", Json::object());
  g.connect({in, "out"}, {last, "in0"});
  g.connect({weight, "out"}, {last, "in1"});
  if (bias) {
    const NodeId b_node = add(
        "Parameter", "bias",
        {{"shape", Json::array({"$out_features"})}, {"init", "zeros"}, {"requires_grad", true}});
    const NodeId sum = add("Add", "add", {{"inputs", 2}});
    g.connect({last, "out"}, {sum, "in0"});
    g.connect({b_node, "out"}, {sum, "in1"});
    last = sum;
  }
  const NodeId out = add("Output", "out", Json::object());
  g.connect({last, "out"}, {out, "in"});
  return b;
}

}  // namespace nns::onnx::detail
