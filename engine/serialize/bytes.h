// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Byte-level plumbing shared by the file readers and writers: the error type for bad files,
// random-access sources (a file or memory) whose every read is bounds-checked, sinks, and
// CRC-32. Everything is little-endian on disk unless a reader says otherwise.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include "engine/tensor/error.h"

namespace nns::serialize {

// A file that cannot be read or written, or whose content is truncated, corrupt, hostile or
// of a kind NN Studio does not load. The message names the file and the place in it.
class FileError : public Error {
 public:
  using Error::Error;
};

// Random access to the bytes of a file or a buffer. read() throws FileError (naming the
// source and `what`) when [offset, offset + n) is not inside the source.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  const std::string& name() const { return name_; }
  // Throws unless [offset, offset + n) lies inside the source.
  void check(uint64_t offset, uint64_t n, const char* what) const;
  void read(uint64_t offset, void* dst, size_t n, const char* what) const;
  std::string read_string(uint64_t offset, size_t n, const char* what) const;
  uint16_t u16(uint64_t offset, const char* what) const;
  uint32_t u32(uint64_t offset, const char* what) const;
  uint64_t u64(uint64_t offset, const char* what) const;

 protected:
  explicit ByteSource(std::string name) : name_(std::move(name)) {}
  virtual void read_unchecked(uint64_t offset, void* dst, size_t n) const = 0;

 private:
  std::string name_;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size, std::string name)
      : ByteSource(std::move(name)), data_(data), size_(size) {}
  uint64_t size() const override { return size_; }

 private:
  void read_unchecked(uint64_t offset, void* dst, size_t n) const override {
    if (n) std::memcpy(dst, data_ + offset, n);
  }
  const uint8_t* data_;
  size_t size_;
};

// A regular file opened read-only; FileError when it cannot be opened or is not a file.
class FileSource : public ByteSource {
 public:
  explicit FileSource(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }

 private:
  void read_unchecked(uint64_t offset, void* dst, size_t n) const override;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Where a writer's bytes go; it counts them, so a writer knows its offsets.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  void write(const void* data, size_t n) {
    if (n == 0) return;
    write_bytes(data, n);
    offset_ += n;
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  void u16(uint16_t v) { write(&v, 2); }
  void u32(uint32_t v) { write(&v, 4); }
  void u64(uint64_t v) { write(&v, 8); }
  uint64_t offset() const { return offset_; }

 protected:
  virtual void write_bytes(const void* data, size_t n) = 0;

 private:
  uint64_t offset_ = 0;
};

class StringSink : public ByteSink {
 public:
  std::string bytes;

 private:
  void write_bytes(const void* data, size_t n) override {
    bytes.append(static_cast<const char*>(data), n);
  }
};

// Writes path atomically: fill(sink) writes into a temporary file in the same folder
// (path.tmp-XXXXXX), which is flushed, fsynced and renamed over path. If fill or any file
// operation throws, the temporary is removed, path is untouched and the error goes on (file
// errors as FileError, the message starting with path and ending with the system's reason).
// A replaced file keeps its permissions, a new one gets 0666 less the umask; a symbolic link
// keeps pointing at the file, which is replaced. Temporaries of path that a killed save left
// behind are removed once nothing has written to them for an hour.
void write_file_atomically(const std::string& path, const std::function<void(ByteSink&)>& fill);

// CRC-32 (the zip / IEEE 802.3 polynomial), continued from crc (0 to start).
uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

// The file name without folders and without the last extension: "/a/b/model.pt" -> "model".
std::string file_stem(const std::string& path);

}  // namespace nns::serialize
