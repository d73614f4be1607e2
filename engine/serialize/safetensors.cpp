// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/safetensors.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

namespace nns::serialize {

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;  // MAX_HEADER_SIZE: decimal, not MiB

struct DtypeInfo {
  const char* name;
  uint32_t bits;
  int rank;  // the reference writer orders tensors by this, descending
  std::optional<Dtype> dtype;
};

// The reference's enum Dtype with its bit widths; ranks follow its declaration order.
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", 8, 0, kBool},     {"F4", 4, 1, {}},           {"F6_E2M3", 6, 2, {}},
    {"F6_E3M2", 6, 3, {}},     {"U8", 8, 4, {}},           {"I8", 8, 5, {}},
    {"F8_E5M2", 8, 6, {}},     {"F8_E4M3", 8, 7, {}},      {"F8_E8M0", 8, 8, {}},
    {"F8_E4M3FNUZ", 8, 9, {}}, {"F8_E5M2FNUZ", 8, 10, {}}, {"I16", 16, 11, {}},
    {"U16", 16, 12, {}},       {"F16", 16, 13, kFloat16},  {"BF16", 16, 14, kBFloat16},
    {"I32", 32, 15, {}},       {"U32", 32, 16, {}},        {"F32", 32, 17, kFloat32},
    {"C64", 64, 18, {}},       {"F64", 64, 19, kFloat64},  {"I64", 64, 20, kInt64},
    {"U64", 64, 21, {}},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo& info_of(Dtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d;
  }
  throw ValueError("safetensors: no dtype for " + dtype_name(dtype));
}

struct Entry {
  std::string name;
  const DtypeInfo* dtype;
  Shape shape;
  uint64_t begin, end;
};

uint64_t unsigned_field(const nlohmann::json& v, const std::string& file, const std::string& what) {
  if (!v.is_number_unsigned()) {
    throw FileError(file + ": invalid safetensors header: " + what +
                    " must be a non-negative integer, got " + v.dump());
  }
  return v.get<uint64_t>();
}

// The header's length n from the first 8 bytes, checked to fit the format's limit and the file.
uint64_t header_length(const ByteSource& src) {
  const std::string& file = src.name();
  const uint64_t len = src.size();
  if (len < 8) {
    throw FileError(file + ": not a safetensors file: " + std::to_string(len) +
                    " bytes, too small for the 8-byte header length");
  }
  const uint64_t n = src.u64(0, "the header length");
  if (n > kMaxHeader) {
    throw FileError(file + ": not a safetensors file: header length " + std::to_string(n) +
                    " exceeds the format's limit of 100000000 bytes");
  }
  if (8 + n > len) {
    throw FileError(file + ": truncated or not a safetensors file: the header length " +
                    std::to_string(n) + " runs past the end of the file (" + std::to_string(len) +
                    " bytes)");
  }
  return n;
}

// The header as a JSON object, refusing duplicate keys at any depth.
nlohmann::json parse_header(const std::string& header, const std::string& file) {
  // Duplicate keys are forbidden by the format but most JSON parsers keep the last one; the
  // callback sees each key and remembers those of every open object.
  std::vector<std::unordered_set<std::string>> open_keys;
  std::string duplicate;
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(
        header, [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
          using E = nlohmann::json::parse_event_t;
          if (event == E::object_start) open_keys.emplace_back();
          if (event == E::object_end && !open_keys.empty()) open_keys.pop_back();
          if (event == E::key && !open_keys.empty() &&
              !open_keys.back().insert(parsed.get<std::string>()).second && duplicate.empty()) {
            duplicate = parsed.get<std::string>();
          }
          return true;
        });
  } catch (const nlohmann::json::exception& e) {
    throw FileError(file + ": invalid safetensors header (not UTF-8 JSON): " + e.what());
  }
  if (!duplicate.empty()) {
    throw FileError(file + ": invalid safetensors header: the key '" + duplicate +
                    "' appears twice");
  }
  if (!json.is_object()) throw FileError(file + ": invalid safetensors header: not a JSON object");
  return json;
}

// Appends the string pairs of `__metadata__` (null: none) to out.
void read_metadata(const nlohmann::json& v, const std::string& file, Metadata& out) {
  if (v.is_null()) return;
  if (!v.is_object()) {
    throw FileError(file + ": invalid safetensors header: __metadata__ must be an object");
  }
  for (auto m = v.begin(); m != v.end(); ++m) {
    if (!m.value().is_string()) {
      throw FileError(file + ": invalid safetensors header: __metadata__ value of '" + m.key() +
                      "' is not a string (only strings are allowed)");
    }
    out.emplace_back(m.key(), m.value().get<std::string>());
  }
}

// One tensor's header entry, checked field by field; its byte range is checked later, against
// the others'.
Entry read_entry(const std::string& key, const nlohmann::json& v, const std::string& file) {
  const std::string where = "tensor '" + key + "'";
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
      !v.contains("data_offsets")) {
    throw FileError(file + ": invalid safetensors header: " + where +
                    " needs dtype, shape and data_offsets");
  }
  // The reference parser ignores other fields, but the format's schema forbids them.
  for (auto field = v.begin(); field != v.end(); ++field) {
    if (field.key() != "dtype" && field.key() != "shape" && field.key() != "data_offsets") {
      throw FileError(file + ": invalid safetensors header: " + where + " has an unknown field '" +
                      field.key() + "' (only dtype, shape and data_offsets are allowed)");
    }
  }
  const nlohmann::json& dt = v["dtype"];
  const DtypeInfo* info = dt.is_string() ? find_dtype(dt.get<std::string>()) : nullptr;
  if (!info) {
    throw FileError(file + ": invalid safetensors header: " + where + " has unknown dtype " +
                    dt.dump());
  }
  const nlohmann::json& shape = v["shape"];
  const nlohmann::json& offsets = v["data_offsets"];
  if (!shape.is_array()) {
    throw FileError(file + ": invalid safetensors header: " + where + "'s shape is not a list");
  }
  if (!offsets.is_array() || offsets.size() != 2) {
    throw FileError(file + ": invalid safetensors header: " + where +
                    "'s data_offsets must be [begin, end]");
  }
  Entry e{key,
          info,
          {},
          unsigned_field(offsets[0], file, where + "'s data_offsets"),
          unsigned_field(offsets[1], file, where + "'s data_offsets")};
  for (const nlohmann::json& s : shape) {
    const uint64_t d = unsigned_field(s, file, where + "'s shape");
    if (d > static_cast<uint64_t>(INT64_MAX)) {
      throw FileError(file + ": " + where + ": a dimension of " + std::to_string(d) + " overflows");
    }
    e.shape.push_back(static_cast<int64_t>(d));
  }
  return e;
}

// The header's tensors in its order; `__metadata__` goes to metadata.
std::vector<Entry> read_entries(const nlohmann::json& json, const std::string& file,
                                Metadata& metadata) {
  std::vector<Entry> entries;
  for (auto it = json.begin(); it != json.end(); ++it) {
    if (it.key() == "__metadata__") {
      read_metadata(it.value(), file, metadata);
    } else {
      entries.push_back(read_entry(it.key(), it.value(), file));
    }
  }
  return entries;
}

// Throws unless e's data_offsets span exactly the bytes of its dtype and shape.
void check_size(const Entry& e, const std::string& file) {
  // The bits overflow, or the element count would with its zero dims left out (the
  // strides of an empty tensor still multiply the other dims).
  uint64_t bits = e.dtype->bits;
  int64_t span = 1;
  for (int64_t d : e.shape) {
    if (__builtin_mul_overflow(bits, static_cast<uint64_t>(d), &bits) ||
        __builtin_mul_overflow(span, std::max<int64_t>(d, 1), &span)) {
      throw FileError(file + ": invalid safetensors file: tensor '" + e.name + "' of shape " +
                      shape_str(e.shape) + " overflows");
    }
  }
  if (bits % 8 != 0) {
    throw FileError(file + ": invalid safetensors file: tensor '" + e.name +
                    "' does not fill whole bytes");
  }
  if (e.end - e.begin != bits / 8) {
    throw FileError(file + ": invalid safetensors file: tensor '" + e.name + "' (" + e.dtype->name +
                    ", shape " + shape_str(e.shape) + ") needs " + std::to_string(bits / 8) +
                    " bytes, but its data_offsets span " + std::to_string(e.end - e.begin));
  }
}

// Sorts the entries by data offset and checks that they tile the data section: back to back
// from its start, each of its own size, up to the end of a file of len bytes whose header is
// n bytes long.
void check_layout(std::vector<Entry>& entries, uint64_t n, uint64_t len, const std::string& file) {
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t previous_end = 0;
  for (const Entry& e : entries) {
    if (e.begin != previous_end || e.end < e.begin) {
      throw FileError(file + ": invalid safetensors file: tensor '" + e.name +
                      "' has data_offsets [" + std::to_string(e.begin) + ", " +
                      std::to_string(e.end) +
                      "], but the tensors must be back to back (this "
                      "one should begin at " +
                      std::to_string(previous_end) + ")");
    }
    check_size(e, file);
    previous_end = e.end;
  }
  uint64_t total = 0;
  if (__builtin_add_overflow(previous_end, 8 + n, &total) || total != len) {
    throw FileError(file + ": invalid safetensors file: the tensors end at byte " +
                    std::to_string(previous_end + 8 + n) + " but the file has " +
                    std::to_string(len) + " bytes (truncated, or extra bytes at the end)");
  }
}

void check_supported(const std::vector<Entry>& entries, const std::string& file) {
  for (const Entry& e : entries) {
    if (!e.dtype->dtype) {
      throw FileError(file + ": tensor '" + e.name + "' has dtype " + e.dtype->name +
                      ", which NN Studio does not support (supported: F32, F64, F16, BF16, I64, "
                      "BOOL); convert it in PyTorch and save again");
    }
  }
}

// Reads a validated entry's data, which starts data_start bytes into the file.
Tensor load_tensor(const ByteSource& src, const Entry& e, uint64_t data_start) {
  const uint64_t nbytes = e.end - e.begin;
  auto storage = Storage::allocate(nbytes, kCPU);
  src.read(data_start + e.begin, storage->data(), nbytes, e.name.c_str());
  if (*e.dtype->dtype == kBool) {
    // The kernels rely on bools being 0 or 1.
    auto* b = static_cast<uint8_t*>(storage->data());
    for (uint64_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
  }
  return Tensor(std::make_shared<TensorImpl>(storage, e.shape, contiguous_strides(e.shape), 0,
                                             *e.dtype->dtype));
}

}  // namespace

SafetensorsFile read_safetensors(const ByteSource& src) {
  const std::string& file = src.name();
  const uint64_t n = header_length(src);
  const nlohmann::json json = parse_header(src.read_string(8, n, "the header"), file);
  SafetensorsFile out;
  std::vector<Entry> entries = read_entries(json, file, out.metadata);
  check_layout(entries, n, src.size(), file);
  check_supported(entries, file);
  for (const Entry& e : entries) out.tensors.insert(e.name, load_tensor(src, e, 8 + n));
  return out;
}

void write_safetensors(const nn::StateDict& tensors, const Metadata& metadata, ByteSink& sink) {
  struct Item {
    std::string name;
    Tensor data;  // contiguous, CPU
    const DtypeInfo* dtype;
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  for (const auto& it : tensors) {
    const Tensor& t = it.value();
    if (!t.defined()) throw ValueError("safetensors: '" + it.key() + "' is an undefined tensor");
    items.push_back({it.key(), t.to(kCPU).contiguous(), &info_of(t.dtype())});
  }
  // The reference order: dtype rank descending, then name, so each tensor is naturally
  // aligned after the 8-aligned header.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.dtype->rank != b.dtype->rank ? a.dtype->rank > b.dtype->rank : a.name < b.name;
  });
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata.size(); ++i) {
      if (i) header += ",";
      header += nlohmann::json(metadata[i].first).dump() + ":" +
                nlohmann::json(metadata[i].second).dump();
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const Item& it : items) {
    const uint64_t nbytes = static_cast<uint64_t>(it.data.numel()) * it.data.element_size();
    if (header.size() > 1) header += ",";
    header += nlohmann::json(it.name).dump() + ":{\"dtype\":\"" + it.dtype->name + "\",\"shape\":[";
    for (size_t d = 0; d < it.data.sizes().size(); ++d) {
      if (d) header += ",";
      header += std::to_string(it.data.sizes()[d]);
    }
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
  }
  header += "}";
  header.resize((header.size() + 7) / 8 * 8, ' ');
  if (header.size() > kMaxHeader) {
    throw ValueError("safetensors: the header would be " + std::to_string(header.size()) +
                     " bytes, more than the format's limit of 100000000");
  }
  sink.u64(header.size());
  sink.write(header);
  for (const Item& it : items) {
    sink.write(it.data.raw_data(), static_cast<size_t>(it.data.numel()) * it.data.element_size());
  }
}

}  // namespace nns::serialize
