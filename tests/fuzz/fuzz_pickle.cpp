// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the restricted unpickler alone, on arbitrary bytes (a zip around them
// would hide most mutations behind its CRCs). Storages come from a loader that hands out
// zeroed storages up to a small size, one per key as the torch reader does, so tensor
// rebuilding (offsets, strides, aliasing) is reached; larger ones are refused as a bad
// record would be.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "engine/serialize/pickle.h"
#include "engine/tensor/dtype.h"
#include "engine/tensor/storage.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::map<std::string, std::shared_ptr<nns::Storage>> storages;
  auto load = [&](const std::string& key, nns::Dtype dtype, int64_t numel) {
    auto found = storages.find(key);
    if (found != storages.end()) return found->second;
    if (numel < 0 || numel > 4096)
      throw nns::serialize::FileError("fuzz: storage '" + key + "' is too large");
    const size_t nbytes = static_cast<size_t>(numel) * nns::element_size(dtype);
    auto storage = nns::Storage::allocate(nbytes, nns::kCPU);
    if (nbytes) std::memset(storage->data(), 0, nbytes);
    storages.emplace(key, storage);
    return storage;
  };
  try {
    nns::serialize::unpickle(data, size, load, "fuzz");
  } catch (const nns::Error&) {
  }
  return 0;
}
