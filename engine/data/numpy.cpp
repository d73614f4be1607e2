// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/numpy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <set>
#include <string_view>

#include "engine/serialize/zip.h"
#include "engine/tensor/factories.h"

namespace nns::data {

namespace {

using serialize::FileError;

// Data is copied straight into tensors; '<' and '=' mean no swap.
static_assert(std::endian::native == std::endian::little);

// np.load refuses headers over 10000 bytes by default; this is looser but still bounded.
constexpr uint32_t kMaxHeader = 1 << 20;
constexpr size_t kMaxDims = 64;  // NumPy 2's NPY_MAXDIMS

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The header's Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False,
// 'shape': (2, 3), }: exactly these three keys in any order, any spacing, an optional trailing
// comma. Strings have no escapes in the headers NumPy writes, so a backslash is refused.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  Header parse() {
    Header h;
    std::set<std::string> seen;
    expect('{');
    while (!eat('}')) {
      const std::string key = string_literal();
      expect(':');
      if (!seen.insert(key).second) fail("the key '" + key + "' appears twice");
      if (key == "descr") {
        if (peek() == '[') {
          throw FileError(file_ +
                          ": a structured dtype (record fields), which NN Studio cannot use; "
                          "save each field as its own floating point or integer array");
        }
        h.descr = string_literal();
      } else if (key == "fortran_order") {
        h.fortran_order = word_is("True");
        if (!h.fortran_order && !word_is("False")) fail("fortran_order is not True or False");
      } else if (key == "shape") {
        h.shape = shape();
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (at_ != text_.size()) fail("text after the dict");
    if (seen.size() != 3) fail("it lacks 'descr', 'fortran_order' or 'shape'");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw FileError(file_ + ": corrupt .npy header: " + why + " (at character " +
                    std::to_string(at_) + ")");
  }
  void skip_space() {
    while (at_ < text_.size() && std::strchr(" \t\r\n", text_[at_]) && text_[at_]) ++at_;
  }
  char peek() {
    skip_space();
    return at_ < text_.size() ? text_[at_] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++at_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  bool word_is(const char* word) {
    const size_t n = std::strlen(word);
    if (peek() == '\0' || text_.compare(at_, n, word) != 0) return false;
    at_ += n;
    return true;
  }
  std::string string_literal() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a string");
    const size_t end = text_.find(quote, at_ + 1);
    if (end == std::string::npos) fail("an unterminated string");
    std::string s = text_.substr(at_ + 1, end - at_ - 1);
    if (s.find_first_of("\\\n") != std::string::npos) fail("an escape in a string");
    at_ = end + 1;
    return s;
  }
  // A tuple of non-negative integers: (), (3,), (2, 3); Python 2's (3L,) too.
  Shape shape() {
    Shape dims;
    expect('(');
    while (!eat(')')) {
      if (peek() < '0' || peek() > '9') fail("a size in the shape is not a non-negative integer");
      int64_t v = 0;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
        if (v > (INT64_MAX - 9) / 10) fail("a size in the shape is too large");
        v = v * 10 + (text_[at_++] - '0');
      }
      if (at_ < text_.size() && text_[at_] == 'L') ++at_;
      if (dims.size() == kMaxDims) fail("the shape has more than 64 dimensions");
      dims.push_back(v);
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  const std::string& text_;
  const std::string& file_;
  size_t at_ = 0;
};

// NumPy's name of the dtype a descr such as '<c16' or '|O' describes, for messages.
std::string numpy_name(const std::string& descr) {
  const char kind = descr.size() > 1 ? descr[1] : '?';
  int bytes = 0;
  for (size_t i = 2; i < std::min<size_t>(descr.size(), 5) && std::isdigit(descr[i] & 0xFF); ++i) {
    bytes = bytes * 10 + (descr[i] - '0');
  }
  const std::string bits = bytes ? std::to_string(bytes * 8) : "";
  switch (kind) {
    case 'f':
      return "float" + bits;
    case 'c':
      return "complex" + bits;
    case 'i':
      return "int" + bits;
    case 'u':
      return "uint" + bits;
    case 'b':
      return "bool";
    case 'O':
      return "object";
    case 'U':
      return "str";
    case 'S':
    case 'a':
      return "bytes";
    case 'V':
      return "void (raw or structured)";
    case 'M':
      return "datetime64";
    case 'm':
      return "timedelta64";
    default:
      return "'" + descr + "'";
  }
}

std::string shape_text(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

Tensor read_npy(const serialize::ByteSource& src) {
  const std::string& file = src.name();
  if (src.size() < 10 || src.read_string(0, 6, "the magic") != "\x93NUMPY") {
    throw FileError(file + ": not a NumPy .npy file (it does not start with \\x93NUMPY)");
  }
  const std::string version = src.read_string(6, 2, "the version");
  const int major = static_cast<uint8_t>(version[0]);
  if (major < 1 || major > 3 || version[1] != 0) {
    throw FileError(file + ": .npy format version " + std::to_string(major) + "." +
                    std::to_string(static_cast<uint8_t>(version[1])) +
                    ", which NN Studio does not read (versions 1.0, 2.0 and 3.0 are read)");
  }
  const uint64_t header_at = major == 1 ? 10 : 12;
  const uint32_t header_len =
      major == 1 ? src.u16(8, "the header length") : src.u32(8, "the header length");
  if (header_len > kMaxHeader) {
    throw FileError(file + ": corrupt .npy file: a header of " + std::to_string(header_len) +
                    " bytes");
  }
  const std::string text = src.read_string(header_at, header_len, "the .npy header");
  const Header h = HeaderParser(text, file).parse();

  // '|' is for one-byte types; NumPy writes '<' or '>' for the others.
  const std::string& d = h.descr;
  const char order = d.empty() ? '?' : d[0];
  const char kind = d.size() == 3 ? d[1] : '?';
  const size_t item = d.size() == 3 && d[2] >= '1' && d[2] <= '8' ? d[2] - '0' : 0;
  const bool is_float = kind == 'f' && (item == 2 || item == 4 || item == 8);
  const bool is_int = (kind == 'i' || kind == 'u') && std::has_single_bit(item);
  if (std::string_view("<>|=").find(order) == std::string_view::npos ||
      !(is_float || is_int || (kind == 'b' && item == 1))) {
    throw FileError(file + ": dtype " + numpy_name(d) + " ('" + d +
                    "'), which NN Studio cannot use; save the array as floating point or "
                    "integer (e.g. a.astype(np.float32))");
  }
  const bool swap = order == '>' && item > 1;

  uint64_t numel = 1;
  for (int64_t n : h.shape) {
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(n), &numel) || numel > INT64_MAX) {
      throw FileError(file + ": the shape " + shape_text(h.shape) + " is too large");
    }
  }
  const uint64_t data_at = header_at + header_len;
  const uint64_t present = src.size() - data_at;
  uint64_t nbytes = 0;
  const bool too_many = __builtin_mul_overflow(numel, item, &nbytes);
  if (too_many || nbytes != present) {
    throw FileError(file + ": the header's shape " + shape_text(h.shape) + " of " + numpy_name(d) +
                    " needs " + (too_many ? "too many" : std::to_string(nbytes)) +
                    " bytes of data, but the file holds " + std::to_string(present) +
                    " (truncated or corrupt)");
  }

  // A Fortran-ordered array's data is that of its transpose in C order.
  Shape stored = h.shape;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  const Dtype dtype = is_int        ? kInt64
                      : kind == 'b' ? kBool
                      : item == 2   ? kFloat16
                      : item == 4   ? kFloat32
                                    : kFloat64;
  Tensor t = empty(stored, dtype);
  if (is_int) {
    std::vector<uint8_t> raw(nbytes);
    src.read(data_at, raw.data(), nbytes, "the array data");
    int64_t* out = t.data_ptr<int64_t>();
    const unsigned bits = 8 * item;
    for (uint64_t i = 0; i < numel; ++i) {
      uint8_t b[8] = {};
      std::memcpy(b, raw.data() + i * item, item);
      if (swap) std::reverse(b, b + item);
      uint64_t u;
      std::memcpy(&u, b, 8);
      if (kind == 'i' && bits < 64 && (u >> (bits - 1)) & 1) u |= ~uint64_t{0} << bits;
      if (kind == 'u' && u > INT64_MAX) {
        throw FileError(file + ": element " + std::to_string(i) + " of the uint64 array, " +
                        std::to_string(u) + ", does not fit in int64 (NN Studio's integer type)");
      }
      out[i] = static_cast<int64_t>(u);
    }
  } else {
    auto* p = static_cast<uint8_t*>(t.raw_data());
    src.read(data_at, p, nbytes, "the array data");
    if (swap) {
      for (uint64_t i = 0; i < nbytes; i += item) std::reverse(p + i, p + i + item);
    }
    if (dtype == kBool) {
      // The kernels rely on bools being 0 or 1.
      for (uint64_t i = 0; i < nbytes; ++i) p[i] = p[i] != 0;
    }
  }
  if (h.fortran_order && stored.size() > 1) {
    Shape dims(stored.size());
    for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(dims.size() - 1 - i);
    t = t.permute(dims).contiguous();
  }
  return t;
}

Tensor read_npy_file(const std::string& path) {
  const serialize::FileSource src(path);
  return read_npy(src);
}

std::vector<std::pair<std::string, Tensor>> read_npz(const serialize::ByteSource& src) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  std::set<std::string> names;
  for (const serialize::ZipEntry& e : serialize::read_zip_directory(src)) {
    if (e.name.size() < 4 || e.name.compare(e.name.size() - 4, 4, ".npy") != 0) {
      throw FileError(src.name() + ": '" + e.name +
                      "' is not a .npy array; an .npz file holds only .npy files");
    }
    std::string name = e.name.substr(0, e.name.size() - 4);
    if (!names.insert(name).second) {
      throw FileError(src.name() + ": the array '" + name + "' appears twice");
    }
    const std::vector<uint8_t> bytes = serialize::read_zip_entry(src, e);
    const serialize::MemorySource member(bytes.data(), bytes.size(),
                                         src.name() + ", array '" + name + "'");
    arrays.emplace_back(std::move(name), read_npy(member));
  }
  return arrays;
}

std::vector<std::pair<std::string, Tensor>> read_npz_file(const std::string& path) {
  const serialize::FileSource src(path);
  return read_npz(src);
}

}  // namespace nns::data
