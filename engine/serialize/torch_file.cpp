// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/torch_file.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

namespace nns::serialize {

namespace {

// data.pkl of a state dict with a hundred thousand tensors is a few megabytes.
constexpr uint64_t kMaxPickle = uint64_t{64} << 20;

void refuse_foreign(const ByteSource& src) {
  const std::string& file = src.name();
  static const uint8_t kLegacy[] = {0x80, 0x02, 0x8A, 0x0A, 0x6C, 0xFC, 0x9C, 0x46,
                                    0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19, 0x2E};
  const std::string head = src.read_string(0, std::min<uint64_t>(src.size(), 15), "the header");
  if (head.size() == 15 && std::memcmp(head.data(), kLegacy, 15) == 0) {
    throw FileError(file +
                    ": a legacy torch.save file (PyTorch before 1.6, or "
                    "_use_new_zipfile_serialization=False), which NN Studio does not read; load "
                    "it in PyTorch and re-save it with torch.save(model.state_dict(), path) "
                    "(the default zip format)");
  }
  if (head.rfind("PYTORCH1", 0) == 0) {
    throw FileError(file +
                    ": a 2018 PyTorch preview file (PYTORCH1), which NN Studio does not read; "
                    "load it in PyTorch and re-save it with torch.save(model.state_dict(), "
                    "path)");
  }
  if (src.size() >= 262 && src.read_string(257, 5, "the header") == "ustar") {
    throw FileError(file +
                    ": a tar archive (torch.save of PyTorch 0.1), which NN Studio does not "
                    "read; load it in PyTorch and re-save it with torch.save(model.state_dict(), "
                    "path)");
  }
  if (head.size() < 4 || std::memcmp(head.data(), "PK\3\4", 4) != 0) {
    throw FileError(file + ": not a PyTorch file (a torch.save file is a zip archive)");
  }
}

void verify_crc(const ZipEntry& e, const void* data, const std::string& file) {
  if (e.crc != 0 && crc32(data, e.size) != e.crc) {
    throw FileError(file + ": corrupt file: the CRC of '" + e.name + "' does not match its data");
  }
}

void swap_bytes(void* data, size_t nbytes, size_t elem) {
  auto* p = static_cast<uint8_t*>(data);
  for (size_t i = 0; i + elem <= nbytes; i += elem) std::reverse(p + i, p + i + elem);
}

}  // namespace

TorchFile read_torch_file(const ByteSource& src) {
  const std::string& file = src.name();
  refuse_foreign(src);
  const std::vector<ZipEntry> entries = read_zip_directory(src);
  for (const ZipEntry& e : entries) {
    // The records are read in place, uncompressed.
    if (e.method != 0) {
      throw FileError(file + ": '" + e.name +
                      "' is DEFLATE-compressed, which NN Studio does not read (torch.save "
                      "never compresses); re-save the file with torch.save, or re-zip it "
                      "uncompressed (zip -0)");
    }
  }
  if (entries.empty()) throw FileError(file + ": an empty zip archive, not a torch.save file");
  // Records are named <archive>/<record>; the archive folder is the first entry's.
  const size_t slash = entries[0].name.find('/');
  if (slash == std::string::npos) {
    throw FileError(file + ": not a torch.save file: entry '" + entries[0].name +
                    "' is not inside an archive folder");
  }
  const std::string prefix = entries[0].name.substr(0, slash + 1);
  std::map<std::string, const ZipEntry*> records;
  for (const ZipEntry& e : entries) {
    if (e.name.compare(0, prefix.size(), prefix) != 0) {
      throw FileError(file + ": not a torch.save file: entry '" + e.name +
                      "' is outside the archive folder '" + prefix + "' of the first entry");
    }
    if (!records.emplace(e.name.substr(prefix.size()), &e).second) {
      throw FileError(file + ": corrupt file: the record '" + e.name + "' appears twice");
    }
  }
  if (records.count("constants.pkl")) {
    throw FileError(file +
                    ": a TorchScript archive (torch.jit.save), which NN Studio does not read; "
                    "in PyTorch, save its weights with torch.save(torch.jit.load(path)."
                    "state_dict(), new_path)");
  }
  auto record = [&](const std::string& name) -> const ZipEntry* {
    auto it = records.find(name);
    return it == records.end() ? nullptr : it->second;
  };
  auto small_record = [&](const ZipEntry& e) {
    if (e.size > 64)
      throw FileError(file + ": corrupt file: the record '" + e.name + "' is too long");
    std::string s = src.read_string(e.data_offset, e.size, e.name.c_str());
    verify_crc(e, s.data(), file);
    return s;
  };

  TorchFile out;
  const ZipEntry* version = record("version");
  if (!version) version = record(".data/version");
  if (!version) throw FileError(file + ": not a torch.save file: it has no 'version' record");
  {
    const std::string text = small_record(*version);
    size_t k = 0;
    int64_t v = 0;
    while (k < text.size() && text[k] >= '0' && text[k] <= '9' && v < 1000)
      v = v * 10 + (text[k++] - '0');
    while (k < text.size() && (text[k] == '\n' || text[k] == '\r' || text[k] == ' ')) ++k;
    if (k == 0 || k != text.size() || v < 1 || v > 10) {
      throw FileError(file + ": unsupported torch.save file version '" + text +
                      "' (versions 1 to 10 are read)");
    }
    out.version = v;
  }
  out.byteorder = "little";
  if (const ZipEntry* order = record("byteorder")) {
    out.byteorder = small_record(*order);
    if (out.byteorder != "little" && out.byteorder != "big") {
      throw FileError(file + ": unknown byte order '" + out.byteorder +
                      "' in the byteorder record");
    }
  }
  const bool swap = out.byteorder == "big";

  const ZipEntry* pkl = record("data.pkl");
  if (!pkl) throw FileError(file + ": not a torch.save file: it has no 'data.pkl' record");
  if (pkl->size > kMaxPickle) {
    throw FileError(file + ": data.pkl is " + std::to_string(pkl->size) + " bytes, more than the " +
                    std::to_string(kMaxPickle) + " a state dict's pickle needs");
  }
  std::string pickled = src.read_string(pkl->data_offset, pkl->size, "data.pkl");
  verify_crc(*pkl, pickled.data(), file);

  struct Loaded {
    std::shared_ptr<Storage> storage;
    Dtype dtype;
    int64_t numel;
  };
  std::unordered_map<std::string, Loaded> loaded;
  const StorageLoader loader = [&](const std::string& key, Dtype dtype,
                                   int64_t numel) -> std::shared_ptr<Storage> {
    auto it = loaded.find(key);
    if (it != loaded.end()) {
      if (it->second.dtype != dtype || it->second.numel != numel) {
        throw FileError(file + ": storage '" + key +
                        "' is used with two different dtypes or sizes");
      }
      return it->second.storage;
    }
    const ZipEntry* e = record("data/" + key);
    if (!e)
      throw FileError(file + ": the pickle refers to storage '" + key +
                      "', but there is no record data/" + key);
    const size_t elem = element_size(dtype);
    uint64_t nbytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(numel), elem, &nbytes) || nbytes != e->size) {
      throw FileError(file + ": storage '" + key + "' should hold " + std::to_string(numel) +
                      " elements of " + dtype_name(dtype) + ", but data/" + key + " is " +
                      std::to_string(e->size) + " bytes");
    }
    auto storage = Storage::allocate(nbytes, kCPU);
    src.read(e->data_offset, storage->data(), nbytes, e->name.c_str());
    verify_crc(*e, storage->data(), file);
    if (swap && elem > 1) swap_bytes(storage->data(), nbytes, elem);
    if (dtype == kBool) {
      // The kernels rely on bools being 0 or 1.
      auto* b = static_cast<uint8_t*>(storage->data());
      for (uint64_t i = 0; i < nbytes; ++i) b[i] = b[i] != 0;
    }
    loaded.emplace(key, Loaded{storage, dtype, numel});
    return storage;
  };
  out.root = unpickle(reinterpret_cast<const uint8_t*>(pickled.data()), pickled.size(), loader,
                      file + " (data.pkl)");
  return out;
}

void write_torch_file(const PyValue& root, const std::string& archive, ByteSink& sink) {
  std::vector<PickledStorage> storages;
  const std::string pickled = pickle(root, storages);
  ZipWriter zip(sink);
  zip.add(archive + "/data.pkl", pickled.data(), pickled.size());
  zip.add(archive + "/byteorder", "little", 6);
  for (const PickledStorage& s : storages) {
    zip.add(archive + "/data/" + s.key, s.data.raw_data(),
            static_cast<uint64_t>(s.data.numel()) * s.data.element_size());
  }
  zip.add(archive + "/version", "3\n", 2);
  zip.finish();
}

}  // namespace nns::serialize
