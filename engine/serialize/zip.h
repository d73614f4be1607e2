// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Zip archives: torch.save files (STORED records, STATE_DICT_FORMATS.md B) and NumPy's .npz
// files (np.savez writes STORED entries, np.savez_compressed DEFLATE ones). The reader takes
// sizes and offsets from the central directory (Zip64 included), checks each local header
// against it and every entry's data against the file, and verifies CRCs; inflating is bounded
// by the recorded size, so a hostile archive cannot make it allocate more than it claims.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/serialize/bytes.h"

namespace nns::serialize {

// One record of a zip archive, located through the central directory.
struct ZipEntry {
  std::string name;          // full name, prefix included
  uint64_t data_offset = 0;  // where the stored (or compressed) bytes start
  uint64_t size = 0;         // uncompressed
  uint64_t compressed_size = 0;
  uint32_t crc = 0;     // 0: not recorded (PyTorch's compute_crc32=False)
  uint16_t method = 0;  // 0: STORED, 8: DEFLATE
};

// The entries of a zip archive, in central-directory order. STORED and DEFLATE entries are
// accepted, encrypted ones and other methods refused; every entry's data lies inside the
// file, before the central directory.
std::vector<ZipEntry> read_zip_directory(const ByteSource& source);

// The entry's uncompressed bytes (DEFLATE inflated), checked against its recorded size and,
// when recorded, its CRC. FileError names the file and the entry.
std::vector<uint8_t> read_zip_entry(const ByteSource& source, const ZipEntry& entry);

// Writes a zip as PyTorch's writer does: each record's data 64-byte aligned (an "FB" padding
// extra field), a data descriptor after it, a central directory, then the Zip64 end records
// and the classic end record. Records are STORED.
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

}  // namespace nns::serialize
