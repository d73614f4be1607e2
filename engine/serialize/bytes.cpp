// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/serialize/bytes.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <random>
#include <vector>

namespace nns::serialize {

// Files are little-endian and tensors are copied to and from them as raw bytes.
static_assert(std::endian::native == std::endian::little,
              "the state dict readers and writers assume a little-endian host");

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

}  // namespace

void ByteSource::check(uint64_t offset, uint64_t n, const char* what) const {
  if (offset > size() || n > size() - offset) {
    throw FileError(name_ + ": truncated or corrupt file: " + what + " (bytes " +
                    std::to_string(offset) + ".." + std::to_string(offset + n) +
                    ") lies past the end of the file (" + std::to_string(size()) + " bytes)");
  }
}

void ByteSource::read(uint64_t offset, void* dst, size_t n, const char* what) const {
  check(offset, n, what);
  read_unchecked(offset, dst, n);
}

std::string ByteSource::read_string(uint64_t offset, size_t n, const char* what) const {
  check(offset, n, what);
  std::string s(n, '\0');
  read_unchecked(offset, s.data(), n);
  return s;
}

uint16_t ByteSource::u16(uint64_t offset, const char* what) const {
  uint16_t v;
  read(offset, &v, 2, what);
  return v;
}

uint32_t ByteSource::u32(uint64_t offset, const char* what) const {
  uint32_t v;
  read(offset, &v, 4, what);
  return v;
}

uint64_t ByteSource::u64(uint64_t offset, const char* what) const {
  uint64_t v;
  read(offset, &v, 8, what);
  return v;
}

FileSource::FileSource(const std::string& path) : ByteSource(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw FileError(path + ": cannot open: " + errno_text());
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw FileError(path + ": not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

FileSource::~FileSource() {
  ::close(fd_);
}

void FileSource::read_unchecked(uint64_t offset, void* dst, size_t n) const {
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw FileError(name() + ": read failed at byte " + std::to_string(offset) + ": " +
                      (got == 0 ? std::string("the file shrank while reading") : errno_text()));
    }
    out += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
}

namespace {

// Buffers writes to a file descriptor (tensors arrive in large pieces, headers in tiny ones).
class FdSink : public ByteSink {
 public:
  FdSink(int fd, std::string path) : fd_(fd), path_(std::move(path)) { buffer_.reserve(kBuffer); }
  void flush() {
    write_all(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  static constexpr size_t kBuffer = size_t{1} << 20;
  void write_bytes(const void* data, size_t n) override {
    if (buffer_.size() + n <= kBuffer) {
      const auto* p = static_cast<const char*>(data);
      buffer_.insert(buffer_.end(), p, p + n);
      return;
    }
    flush();
    write_all(static_cast<const char*>(data), n);
  }
  void write_all(const char* p, size_t n) {
    while (n > 0) {
      const ssize_t put = ::write(fd_, p, n);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) throw FileError(path_ + ": write failed: " + errno_text());
      p += put;
      n -= static_cast<size_t>(put);
    }
  }
  int fd_;
  std::string path_;
  std::vector<char> buffer_;
};

std::string parent_folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string file_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

constexpr size_t kTempSuffix = 6;  // the random characters after ".tmp-"

// Creates path.tmp-XXXXXX, a name no other file has. Not mkstemp: it makes the file 0600, and a
// new file should get the permissions any program's new file gets (0666 less the umask), which
// only open() applies; reading the umask means setting it, which races with other threads.
int create_temporary(const std::string& path, std::string& temp) {
  static constexpr char kLetters[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 random{std::random_device{}()};
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp = path + ".tmp-";
    for (size_t i = 0; i < kTempSuffix; ++i) temp += kLetters[random() % (sizeof kLetters - 1)];
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// A save that was killed (SIGKILL, a power cut) leaves its temporary behind, as large as the
// file. The next save of the same file removes the ones nothing has written to for an hour; a
// save still running in another process writes to its temporary all the time.
void remove_stale_temporaries(const std::string& path) {
  constexpr time_t kStaleSeconds = 60 * 60;
  DIR* folder = ::opendir(parent_folder(path).c_str());
  if (!folder) return;
  const std::string prefix = file_name(path) + ".tmp-";
  const time_t now = ::time(nullptr);
  while (const dirent* entry = ::readdir(folder)) {
    const std::string name = entry->d_name;
    if (name.size() != prefix.size() + kTempSuffix || name.compare(0, prefix.size(), prefix) != 0) {
      continue;
    }
    struct stat st {};
    if (::fstatat(::dirfd(folder), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode) && now - st.st_mtime >= kStaleSeconds) {
      ::unlinkat(::dirfd(folder), entry->d_name, 0);
    }
  }
  ::closedir(folder);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(ByteSink&)>& fill) {
  // Saving through a symbolic link replaces the file it points to, not the link.
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    }
  }
  const bool replacing = ::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  remove_stale_temporaries(target);
  std::string temp;
  int fd = create_temporary(target, temp);
  if (fd < 0) {
    throw FileError(path + ": cannot create a temporary file next to it: " + errno_text());
  }
  try {
    // The replaced file's permissions stay (a private 0600 file stays private). Best effort: a
    // filesystem without Unix permissions (FAT, some network shares) refuses chmod, and that is
    // no reason to fail the save.
    if (replacing) (void)::fchmod(fd, st.st_mode & 0777);
    FdSink sink(fd, path);
    fill(sink);
    sink.flush();
    if (::fsync(fd) != 0) {
      throw FileError(path + ": cannot flush the written data: " + errno_text());
    }
    // close() frees the descriptor even when it fails: closing it again could close a file
    // another thread has opened since.
    const int closing = fd;
    fd = -1;
    if (::close(closing) != 0) throw FileError(path + ": cannot close: " + errno_text());
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(temp.c_str());
    throw FileError(path + ": cannot replace the file: " + why);
  }
  // The rename itself is durable only once the folder is synced.
  const int dir = ::open(parent_folder(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

namespace {

// Slicing-by-8 tables: eight bytes per step, several times faster than a byte at a time on
// multi-gigabyte storages.
std::array<std::array<uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
  return t;
}

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  static const auto t = make_crc_tables();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n >= 8) {
    uint32_t lo;
    uint32_t hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

}  // namespace nns::serialize
