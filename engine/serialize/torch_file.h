// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.save's zip format (STATE_DICT_FORMATS.md B): a zip of STORED records
// <archive>/data.pkl (the pickled object), <archive>/data/<key> (raw storages),
// <archive>/version and <archive>/byteorder, read and written with zip.h (DEFLATE records are
// refused: torch.save never compresses); legacy torch.save files and TorchScript archives are
// recognized and refused with the way to re-save them.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/serialize/bytes.h"
#include "engine/serialize/pickle.h"
#include "engine/serialize/zip.h"

namespace nns::serialize {

struct TorchFile {
  PyValue root;
  int64_t version = 0;
  std::string byteorder;  // "little" or "big" (storages are swapped to native on load)
};

TorchFile read_torch_file(const ByteSource& source);
// archive: the records' folder name (PyTorch uses the file's stem).
void write_torch_file(const PyValue& root, const std::string& archive, ByteSink& sink);

}  // namespace nns::serialize
