// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/zip.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace nns::serialize {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint32_t k32 = 0xFFFFFFFF;
constexpr size_t kEndSize = 22;
constexpr size_t kCentralSize = 46;
constexpr size_t kLocalSize = 30;
// DEFLATE's best ratio: a 258-byte match costs at least 2 bits, so 1032:1 at most.
constexpr uint64_t kMaxDeflateRatio = 1032;

uint16_t le16(const std::string& b, size_t at) {
  uint16_t v;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}
uint32_t le32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}
uint64_t le64(const std::string& b, size_t at) {
  uint64_t v;
  std::memcpy(&v, b.data() + at, 8);
  return v;
}

// The offset of the end of central directory record; it sits within the last 22 + 65535
// (comment) bytes and is searched backwards.
uint64_t find_end_record(const ByteSource& src) {
  const std::string& file = src.name();
  const uint64_t size = src.size();
  if (size < kEndSize) throw FileError(file + ": too small to be a zip archive");
  const uint64_t tail_len = std::min<uint64_t>(size, kEndSize + 0xFFFF);
  const std::string tail = src.read_string(size - tail_len, tail_len, "the zip end record");
  for (size_t i = tail_len - kEndSize + 1; i-- > 0;) {
    if (le32(tail, i) == kEndSig && i + kEndSize + le16(tail, i + 20) <= tail_len) {
      return size - tail_len + i;
    }
  }
  throw FileError(file + ": corrupt zip archive: no end of central directory record");
}

struct CentralDirectory {
  uint64_t count;
  uint64_t size;
  uint64_t offset;
  uint64_t limit;  // it ends before the end records
};

// Replaces dir's saturated fields with those of the Zip64 end record that the locator just
// before the end record at eocd points to.
void read_zip64_end(const ByteSource& src, uint64_t eocd, CentralDirectory& dir) {
  const std::string& file = src.name();
  if (eocd < 20) throw FileError(file + ": corrupt zip archive: the Zip64 locator is missing");
  const uint64_t locator = eocd - 20;
  if (src.u32(locator, "the Zip64 locator") != kZip64LocatorSig) {
    throw FileError(file + ": corrupt zip archive: the Zip64 locator is missing");
  }
  const uint64_t z64 = src.u64(locator + 8, "the Zip64 locator");
  if (z64 > locator || locator - z64 < 56) {
    throw FileError(file + ": corrupt zip archive: the Zip64 end record lies outside the file");
  }
  const std::string rec = src.read_string(z64, 56, "the Zip64 end record");
  if (le32(rec, 0) != kZip64EndSig) {
    throw FileError(file + ": corrupt zip archive: no Zip64 end record where the locator points");
  }
  dir.count = le64(rec, 32);
  dir.size = le64(rec, 40);
  dir.offset = le64(rec, 48);
  dir.limit = z64;
}

// The central directory that the end record at eocd describes, checked to lie inside the
// file and to have room for its entries.
CentralDirectory read_end_records(const ByteSource& src, uint64_t eocd) {
  const std::string& file = src.name();
  const std::string end = src.read_string(eocd, kEndSize, "the zip end record");
  if (le16(end, 4) != 0 || le16(end, 6) != 0) {
    throw FileError(file + ": multi-disk zip archives are not supported");
  }
  CentralDirectory dir{le16(end, 10), le32(end, 12), le32(end, 16), eocd};
  if (dir.count == 0xFFFF || dir.size == k32 || dir.offset == k32) read_zip64_end(src, eocd, dir);
  if (dir.offset > dir.limit || dir.size > dir.limit - dir.offset) {
    throw FileError(file + ": corrupt zip archive: the central directory (offset " +
                    std::to_string(dir.offset) + ", " + std::to_string(dir.size) +
                    " bytes) lies outside the file");
  }
  if (dir.count > dir.size / kCentralSize) {
    throw FileError(file + ": corrupt zip archive: " + std::to_string(dir.count) +
                    " entries cannot fit in a central directory of " + std::to_string(dir.size) +
                    " bytes");
  }
  return dir;
}

// The fields of a central directory entry that the reader uses.
struct CentralEntry {
  std::string name;
  uint16_t flags;
  uint16_t method;
  uint32_t crc;
  uint64_t csize;
  uint64_t usize;
  uint64_t lho;  // the offset of its local header
};

// Zip64 extra field: the 64-bit values of the fields saturated at 0xFFFFFFFF, in order. The
// extra fields are the elen bytes of cd at x.
void read_zip64_extra(const std::string& cd, size_t x, size_t elen, const std::string& file,
                      CentralEntry& entry) {
  const size_t xend = x + elen;
  while (xend - x >= 4) {
    const uint16_t id = le16(cd, x);
    const size_t len = le16(cd, x + 2);
    if (xend - x - 4 < len) {
      throw FileError(file + ": corrupt zip archive: an extra field of '" + entry.name +
                      "' runs past its entry");
    }
    if (id == 0x0001) {
      size_t f = x + 4;
      for (uint64_t* v : {&entry.usize, &entry.csize, &entry.lho}) {
        if (*v != k32) continue;
        if (f + 8 > x + 4 + len) {
          throw FileError(file + ": corrupt zip archive: the Zip64 field of '" + entry.name +
                          "' is too short");
        }
        *v = le64(cd, f);
        f += 8;
      }
    }
    x += 4 + len;
  }
}

// Central directory entry number `index`, which starts at cd[at]; at moves past it.
CentralEntry read_central_entry(const std::string& cd, size_t& at, uint64_t index,
                                const std::string& file) {
  if (cd.size() - at < kCentralSize || le32(cd, at) != kCentralSig) {
    throw FileError(file + ": corrupt zip archive: central directory entry " +
                    std::to_string(index) + " is damaged");
  }
  CentralEntry entry{{},
                     le16(cd, at + 8),
                     le16(cd, at + 10),
                     le32(cd, at + 16),
                     le32(cd, at + 20),
                     le32(cd, at + 24),
                     le32(cd, at + 42)};
  const size_t nlen = le16(cd, at + 28);
  const size_t elen = le16(cd, at + 30);
  const size_t clen = le16(cd, at + 32);
  if (cd.size() - at - kCentralSize < nlen + elen + clen) {
    throw FileError(file + ": corrupt zip archive: central directory entry " +
                    std::to_string(index) + " runs past the directory");
  }
  entry.name = cd.substr(at + kCentralSize, nlen);
  read_zip64_extra(cd, at + kCentralSize + nlen, elen, file, entry);
  at += kCentralSize + nlen + elen + clen;
  return entry;
}

// Throws unless the entry is unencrypted and STORED or DEFLATE-compressed.
void check_method(const CentralEntry& entry, const std::string& file) {
  if (entry.flags & 1) throw FileError(file + ": '" + entry.name + "' is encrypted");
  if (entry.method != 0 && entry.method != 8) {
    throw FileError(file + ": '" + entry.name + "' uses zip compression method " +
                    std::to_string(entry.method) +
                    "; only uncompressed (STORED) and DEFLATE entries are read");
  }
  if (entry.method == 0 && entry.csize != entry.usize) {
    throw FileError(file + ": corrupt zip archive: stored entry '" + entry.name +
                    "' has different compressed and uncompressed sizes");
  }
}

// Where the entry's data starts, after its local header, which must agree with the central
// one; the data must end before the central directory at cd_offset.
uint64_t locate_data(const ByteSource& src, const CentralEntry& entry, uint64_t cd_offset) {
  const std::string& file = src.name();
  // Data starts after the *local* header's name and extra field, whose length differs
  // from the central one (PyTorch pads there).
  if (entry.lho > cd_offset || cd_offset - entry.lho < kLocalSize) {
    throw FileError(file + ": corrupt zip archive: the local header of '" + entry.name +
                    "' lies outside the file's entries");
  }
  const std::string local = src.read_string(entry.lho, kLocalSize, "a zip local header");
  if (le32(local, 0) != kLocalSig) {
    throw FileError(file + ": corrupt zip archive: no local header for '" + entry.name +
                    "' at offset " + std::to_string(entry.lho));
  }
  const uint64_t lnlen = le16(local, 26);
  const uint64_t lelen = le16(local, 28);
  if (le16(local, 8) != entry.method) {
    throw FileError(file + ": corrupt zip archive: the local and central headers of '" +
                    entry.name + "' disagree on the compression method");
  }
  if (lnlen != entry.name.size() ||
      src.read_string(entry.lho + kLocalSize, lnlen, "a zip local header's name") != entry.name) {
    throw FileError(file + ": corrupt zip archive: the local and central headers of '" +
                    entry.name + "' disagree on the name");
  }
  const uint64_t offset = entry.lho + kLocalSize + lnlen + lelen;
  if (offset > cd_offset || entry.csize > cd_offset - offset) {
    throw FileError(file + ": corrupt zip archive: the data of '" + entry.name + "' (" +
                    std::to_string(entry.csize) + " bytes at offset " + std::to_string(offset) +
                    ") runs past the entries into the central directory or past the end");
  }
  return offset;
}

}  // namespace

std::vector<ZipEntry> read_zip_directory(const ByteSource& src) {
  const std::string& file = src.name();
  const CentralDirectory dir = read_end_records(src, find_end_record(src));
  const std::string cd = src.read_string(dir.offset, dir.size, "the zip central directory");
  std::vector<ZipEntry> entries;
  entries.reserve(dir.count);
  size_t at = 0;
  for (uint64_t e = 0; e < dir.count; ++e) {
    CentralEntry central = read_central_entry(cd, at, e, file);
    check_method(central, file);
    ZipEntry entry;
    entry.data_offset = locate_data(src, central, dir.offset);
    entry.size = central.usize;
    entry.compressed_size = central.csize;
    entry.method = central.method;
    entry.crc = central.crc;
    entry.name = std::move(central.name);
    entries.push_back(std::move(entry));
  }
  return entries;
}

namespace {

// Inflates entry's raw DEFLATE stream `in` into exactly entry.size bytes. The output grows as
// inflate fills it, so a stream that ends early costs no more memory than it produced.
std::vector<uint8_t> inflate_entry(const std::vector<uint8_t>& in, const ZipEntry& entry,
                                   const std::string& file) {
  const std::string what = file + ": '" + entry.name + "'";
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw FileError(what + ": cannot start zlib");
  struct End {
    z_stream* zs;
    ~End() { inflateEnd(zs); }
  } end{&zs};
  constexpr uint64_t kChunk = uint64_t{1} << 30;  // avail_in/out are 32-bit
  std::vector<uint8_t> out(std::min<uint64_t>(entry.size, in.size() * 4 + 65536));
  uint8_t past = 0;  // room for one byte more than recorded, to notice a longer stream
  uint64_t in_at = 0;
  for (;;) {
    if (zs.avail_in == 0 && in_at < in.size()) {
      zs.next_in = const_cast<uint8_t*>(in.data() + in_at);
      zs.avail_in = static_cast<uInt>(std::min<uint64_t>(in.size() - in_at, kChunk));
      in_at += zs.avail_in;
    }
    if (zs.avail_out == 0) {
      const uint64_t done = zs.total_out;
      if (done == out.size() && done < entry.size) {
        out.resize(std::min<uint64_t>(entry.size, out.size() * 2));
      }
      if (done < out.size()) {
        zs.next_out = out.data() + done;
        zs.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size() - done, kChunk));
      } else {
        zs.next_out = &past;
        zs.avail_out = 1;
      }
    }
    const int rc = inflate(&zs, Z_NO_FLUSH);
    if (zs.total_out > entry.size) {
      throw FileError(what + " inflates to more than the " + std::to_string(entry.size) +
                      " bytes its directory entry records");
    }
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR) {
      throw FileError(what + ": truncated DEFLATE data (it ends after " +
                      std::to_string(zs.total_out) + " of " + std::to_string(entry.size) +
                      " bytes)");
    }
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc != Z_OK) {
      throw FileError(what + ": corrupt DEFLATE data (" + (zs.msg ? zs.msg : "zlib error") + ")");
    }
  }
  if (zs.total_out != entry.size) {
    throw FileError(what + " inflates to " + std::to_string(zs.total_out) +
                    " bytes, but its directory entry records " + std::to_string(entry.size));
  }
  return out;
}

}  // namespace

std::vector<uint8_t> read_zip_entry(const ByteSource& src, const ZipEntry& entry) {
  const std::string& file = src.name();
  if (entry.method != 0 && entry.method != 8) {
    throw FileError(file + ": '" + entry.name + "' uses zip compression method " +
                    std::to_string(entry.method) + ", which cannot be read");
  }
  if (entry.method == 0 && entry.size != entry.compressed_size) {
    throw FileError(file + ": corrupt zip archive: stored entry '" + entry.name +
                    "' has different compressed and uncompressed sizes");
  }
  // Checked before anything is allocated, so a few bytes cannot claim terabytes.
  if (entry.method == 8 && entry.size / kMaxDeflateRatio > entry.compressed_size) {
    throw FileError(file + ": corrupt or hostile zip archive: '" + entry.name + "' claims " +
                    std::to_string(entry.size) + " bytes from " +
                    std::to_string(entry.compressed_size) +
                    " compressed ones, more than DEFLATE can expand");
  }
  if (entry.compressed_size > SIZE_MAX || entry.size > SIZE_MAX) {
    throw FileError(file + ": '" + entry.name + "' is too large for this computer");
  }
  src.check(entry.data_offset, entry.compressed_size, entry.name.c_str());
  std::vector<uint8_t> data(entry.compressed_size);
  src.read(entry.data_offset, data.data(), data.size(), entry.name.c_str());
  if (entry.method == 8) data = inflate_entry(data, entry, file);
  if (entry.crc != 0 && crc32(data.data(), data.size()) != entry.crc) {
    throw FileError(file + ": corrupt zip archive: the CRC of '" + entry.name +
                    "' does not match its data");
  }
  return data;
}

void ZipWriter::add(const std::string& name, const void* data, uint64_t size) {
  const uint64_t offset = sink_.offset();
  const uint32_t crc = crc32(data, size);
  // Local Zip64 extra (miniz's layout): the sizes when they do not fit, then the offset.
  std::string z64;
  if (size >= k32 || offset >= k32) {
    StringSink f;
    f.u16(0x0001);
    f.u16(static_cast<uint16_t>((size >= k32 ? 16 : 0) + (offset >= k32 ? 8 : 0)));
    if (size >= k32) {
      f.u64(size);
      f.u64(size);
    }
    if (offset >= k32) f.u64(offset);
    z64 = std::move(f.bytes);
  }
  // PyTorch pads with an "FB" extra field so that every record's data is 64-byte aligned
  // (tensors can then be mapped straight from the file).
  const uint64_t start = offset + kLocalSize + name.size() + 4 + z64.size();
  const uint16_t pad = static_cast<uint16_t>((64 - start % 64) % 64);
  sink_.u32(kLocalSig);
  sink_.u16(0);       // version needed
  sink_.u16(0x0808);  // data descriptor follows; UTF-8 names
  sink_.u16(0);       // STORED
  sink_.u32(0);       // time, date
  sink_.u32(0);       // CRC, sizes: in the descriptor
  sink_.u32(0);
  sink_.u32(0);
  sink_.u16(static_cast<uint16_t>(name.size()));
  sink_.u16(static_cast<uint16_t>(z64.size() + 4 + pad));
  sink_.write(name);
  sink_.write(z64);
  sink_.write("FB", 2);
  sink_.u16(pad);
  sink_.write(std::string(pad, 'Z'));
  sink_.write(data, size);
  sink_.u32(kDescriptorSig);
  sink_.u32(crc);
  if (size >= k32) {
    sink_.u64(size);
    sink_.u64(size);
  } else {
    sink_.u32(static_cast<uint32_t>(size));
    sink_.u32(static_cast<uint32_t>(size));
  }
  written_.push_back({name, offset, size, crc});
}

void ZipWriter::finish() {
  const uint64_t cd_offset = sink_.offset();
  for (const Written& w : written_) {
    const bool big = w.size >= k32;
    const bool far = w.header_offset >= k32;
    sink_.u32(kCentralSig);
    sink_.u16(0);  // made by
    sink_.u16(0);  // needed
    sink_.u16(0x0808);
    sink_.u16(0);
    sink_.u32(0);
    sink_.u32(w.crc);
    sink_.u32(big ? k32 : static_cast<uint32_t>(w.size));
    sink_.u32(big ? k32 : static_cast<uint32_t>(w.size));
    sink_.u16(static_cast<uint16_t>(w.name.size()));
    const uint16_t extra =
        (big || far) ? static_cast<uint16_t>(4 + (big ? 16 : 0) + (far ? 8 : 0)) : 0;
    sink_.u16(extra);
    sink_.u16(0);  // comment
    sink_.u16(0);  // disk
    sink_.u16(0);  // internal attributes
    sink_.u32(0);  // external attributes
    sink_.u32(far ? k32 : static_cast<uint32_t>(w.header_offset));
    sink_.write(w.name);
    if (extra) {
      sink_.u16(0x0001);
      sink_.u16(static_cast<uint16_t>(extra - 4));
      if (big) {
        sink_.u64(w.size);
        sink_.u64(w.size);
      }
      if (far) sink_.u64(w.header_offset);
    }
  }
  const uint64_t cd_size = sink_.offset() - cd_offset;
  const uint64_t z64 = sink_.offset();
  const uint64_t n = written_.size();
  sink_.u32(kZip64EndSig);
  sink_.u64(44);
  sink_.u16(0x031E);  // made by
  sink_.u16(45);      // needed: Zip64
  sink_.u32(0);
  sink_.u32(0);
  sink_.u64(n);
  sink_.u64(n);
  sink_.u64(cd_size);
  sink_.u64(cd_offset);
  sink_.u32(kZip64LocatorSig);
  sink_.u32(0);
  sink_.u64(z64);
  sink_.u32(1);
  sink_.u32(kEndSig);
  sink_.u16(0);
  sink_.u16(0);
  const uint16_t n16 = n >= 0xFFFF ? 0xFFFF : static_cast<uint16_t>(n);
  sink_.u16(n16);
  sink_.u16(n16);
  sink_.u32(cd_size >= k32 ? k32 : static_cast<uint32_t>(cd_size));
  sink_.u32(cd_offset >= k32 ? k32 : static_cast<uint32_t>(cd_offset));
  sink_.u16(0);
}

}  // namespace nns::serialize
