// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.save's zip format (STATE_DICT_FORMATS.md B): a zip of STORED records
// <archive>/data.pkl (the pickled object), <archive>/data/<key> (raw storages),
// <archive>/version and <archive>/byteorder. The zip reader takes sizes and offsets from the
// central directory (Zip64 included), checks each local header against it, and verifies
// CRCs; legacy torch.save files and TorchScript archives are recognized and refused with
// the way to re-save them.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/serialize/bytes.h"
#include "engine/serialize/pickle.h"

namespace nns::serialize {

// One record of a zip archive, located through the central directory.
struct ZipEntry {
  std::string name;          // full name, prefix included
  uint64_t data_offset = 0;  // where the stored bytes start
  uint64_t size = 0;
  uint32_t crc = 0;  // 0: not recorded (PyTorch's compute_crc32=False)
};

// The entries of a zip archive, in central-directory order. Only STORED, unencrypted
// entries are accepted (DEFLATE is refused with a message); every entry's data lies inside
// the file, before the central directory.
std::vector<ZipEntry> read_zip_directory(const ByteSource& source);

// Writes a zip as PyTorch's writer does: each record's data 64-byte aligned (an "FB" padding
// extra field), a data descriptor after it, a central directory, then the Zip64 end records
// and the classic end record.
class ZipWriter {
 public:
  explicit ZipWriter(ByteSink& sink) : sink_(sink) {}
  void add(const std::string& name, const void* data, uint64_t size);
  // Writes the central directory and end records; nothing may be added after.
  void finish();

 private:
  struct Written {
    std::string name;
    uint64_t header_offset;
    uint64_t size;
    uint32_t crc;
  };
  ByteSink& sink_;
  std::vector<Written> written_;
};

struct TorchFile {
  PyValue root;
  int64_t version = 0;
  std::string byteorder;  // "little" or "big" (storages are swapped to native on load)
};

TorchFile read_torch_file(const ByteSource& source);
// archive: the records' folder name (PyTorch uses the file's stem).
void write_torch_file(const PyValue& root, const std::string& archive, ByteSink& sink);

}  // namespace nns::serialize
