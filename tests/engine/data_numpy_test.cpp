// SPDX-License-Identifier: GPL-3.0-or-later
// NumPy's .npy and .npz files: .npy bytes built here as np.save writes them (every dtype, byte
// order, Fortran order, scalars, format versions, header spelling, and hostile or foreign
// headers), and .npz files made by real NumPy (tests/fixtures/numpy/make_numpy_fixtures.py),
// read as they are and with their zip directories corrupted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/data/numpy.h"
#include "engine/serialize/zip.h"
#include "support/test_util.h"

namespace nns {
namespace {

using serialize::FileError;
using test::expect_error;
using test::values;
using namespace std::string_literals;

const std::string kDir = std::string(NNS_FIXTURE_DIR) + "/numpy/";

// A .npy file as np.save writes it (format 1.0): the header dict padded with spaces so that the
// data starts at a multiple of 64, ending in a newline.
std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                bool fortran = false) {
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  return "\x93NUMPY\x01\x00"s + char(header.size() & 0xFF) + char(header.size() >> 8) + header +
         data;
}

// The bytes of values of type T, native (little-endian) order.
template <class T>
std::string raw(std::initializer_list<T> v) {
  return std::string(reinterpret_cast<const char*>(v.begin()), v.size() * sizeof(T));
}

// Each item of `bytes` reversed: little-endian data made big-endian.
std::string big_endian(std::string bytes, size_t item) {
  for (size_t i = 0; i < bytes.size(); i += item) std::reverse(&bytes[i], &bytes[i] + item);
  return bytes;
}

Tensor load(const std::string& bytes) {
  const serialize::MemorySource src(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                    "x.npy");
  return data::read_npy(src);
}

void expect_load_error(const std::string& bytes, const std::vector<std::string>& parts) {
  expect_error<FileError>([&] { load(bytes); }, parts);
}

TEST(DataNumpy, EveryDtypeLoads) {
  struct Case {
    std::string descr, data;
    Dtype dtype;
    std::vector<double> expect;
  };
  const std::vector<Case> cases = {
      {"<f4", raw<float>({1.5f, -2, 1e-3f}), kFloat32, {1.5, -2, double(1e-3f)}},
      {"<f8", raw<double>({0.1, -1e300, 3}), kFloat64, {0.1, -1e300, 3}},
      {"<f2", raw<uint16_t>({0x3C00, 0xC000, 0x3800}), kFloat16, {1, -2, 0.5}},
      {"|b1", "\0\1\2"s, kBool, {0, 1, 1}},  // any non-zero byte is True
      {"|i1", raw<int8_t>({-1, 127, -128}), kInt64, {-1, 127, -128}},
      {"<i2", raw<int16_t>({-300, 32767, -32768}), kInt64, {-300, 32767, -32768}},
      {"<i4", raw<int32_t>({-70000, INT32_MAX, INT32_MIN}), kInt64, {-70000, INT32_MAX, INT32_MIN}},
      {"<i8", raw<int64_t>({-1, int64_t{1} << 40, 5}), kInt64, {-1, double(int64_t{1} << 40), 5}},
      {"|u1", raw<uint8_t>({0, 200, 255}), kInt64, {0, 200, 255}},
      {"<u2", raw<uint16_t>({1, 40000, 65535}), kInt64, {1, 40000, 65535}},
      {"=u4", raw<uint32_t>({2, 3000000000u, UINT32_MAX}), kInt64, {2, 3e9, UINT32_MAX}},
      {"<u8", raw<uint64_t>({7, 0, 1u << 20}), kInt64, {7, 0, 1 << 20}},
  };
  for (const Case& c : cases) {
    const Tensor t = load(npy(c.descr, "(3,)", c.data));
    EXPECT_EQ(t.dtype(), c.dtype) << c.descr;
    EXPECT_EQ(t.sizes(), Shape{3}) << c.descr;
    EXPECT_EQ(values(t), c.expect) << c.descr;
  }
  // int64's extremes survive exactly.
  const Tensor wide = load(npy("<u8", "(1,)", raw<uint64_t>({uint64_t{INT64_MAX}})));
  EXPECT_EQ(wide.to_vector<int64_t>(), std::vector<int64_t>{INT64_MAX});
}

TEST(DataNumpy, BigEndianDataIsSwapped) {
  EXPECT_EQ(values(load(npy(">f4", "(2,)", big_endian(raw<float>({1.5f, -8}), 4)))),
            (std::vector<double>{1.5, -8}));
  EXPECT_EQ(values(load(npy(">f8", "(2,)", big_endian(raw<double>({0.1, 2e10}), 8)))),
            (std::vector<double>{0.1, 2e10}));
  EXPECT_EQ(values(load(npy(">f2", "(1,)", big_endian(raw<uint16_t>({0xC000}), 2)))),
            (std::vector<double>{-2}));
  EXPECT_EQ(values(load(npy(">i2", "(2,)", big_endian(raw<int16_t>({-2, 513}), 2)))),
            (std::vector<double>{-2, 513}));
  EXPECT_EQ(values(load(npy(">u4", "(1,)", big_endian(raw<uint32_t>({4000000000u}), 4)))),
            (std::vector<double>{4e9}));
  EXPECT_EQ(values(load(npy(">i8", "(1,)", big_endian(raw<int64_t>({-5}), 8)))),
            (std::vector<double>{-5}));
}

TEST(DataNumpy, FortranOrderBecomesRowMajor) {
  // [[1, 2, 3], [4, 5, 6]] column by column.
  const Tensor t = load(npy("<f4", "(2, 3)", raw<float>({1, 4, 2, 5, 3, 6}), true));
  EXPECT_EQ(t.sizes(), (Shape{2, 3}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // [2, 3, 4]: element (i, j, k) is stored at i + 2j + 6k and holds 12i + 4j + k.
  std::vector<int64_t> column_major(24);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) column_major[i + 2 * j + 6 * k] = 12 * i + 4 * j + k;
  const std::string bytes(reinterpret_cast<const char*>(column_major.data()), 24 * 8);
  const Tensor u = load(npy("<i8", "(2, 3, 4)", bytes, true));
  EXPECT_EQ(u.sizes(), (Shape{2, 3, 4}));
  std::vector<double> expect(24);
  for (int i = 0; i < 24; ++i) expect[i] = i;
  EXPECT_EQ(values(u), expect);
}

TEST(DataNumpy, ScalarsEmptyArraysVersionsAndSpelling) {
  const Tensor s = load(npy("<f8", "()", raw<double>({2.5})));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(values(s), std::vector<double>{2.5});
  const Tensor empty = load(npy("<f4", "(0, 3)", ""));
  EXPECT_EQ(empty.sizes(), (Shape{0, 3}));
  // Versions 2.0 and 3.0 have a 4-byte header length.
  const std::string v1 = npy("<i2", "(2,)", raw<int16_t>({7, -7}));
  for (char major : {'\2', '\3'}) {
    const std::string v = "\x93NUMPY"s + major + '\0' + v1.substr(8, 2) + "\0\0"s + v1.substr(10);
    EXPECT_EQ(values(load(v)), (std::vector<double>{7, -7})) << int(major);
  }
  // Any key order, double quotes, no spaces, no trailing comma; Python 2's long sizes.
  const std::string header = "{\"shape\":(2L,),\"fortran_order\":False,\"descr\":\"<u2\"}\n";
  const std::string odd =
      "\x93NUMPY\x01\x00"s + char(header.size()) + '\0' + header + raw<uint16_t>({3, 4});
  EXPECT_EQ(values(load(odd)), (std::vector<double>{3, 4}));
}

TEST(DataNumpy, RefusesForeignDtypes) {
  const std::string eight(8, '\0');
  expect_load_error(npy("<c16", "(1,)", std::string(16, '\0')),
                    {"x.npy", "dtype complex128", "cannot use", "floating point or integer"});
  expect_load_error(npy("|O", "(1,)", eight), {"x.npy", "dtype object", "cannot use"});
  expect_load_error(npy("<U2", "(1,)", eight), {"dtype str", "cannot use"});
  expect_load_error(npy("|S8", "(1,)", eight), {"dtype bytes", "cannot use"});
  expect_load_error(npy("<M8[ns]", "(1,)", eight), {"dtype datetime64", "cannot use"});
  expect_load_error(npy("<f16", "(1,)", eight + eight), {"dtype float128", "cannot use"});
  expect_load_error(npy("<c99999999999999", "(1,)", eight), {"dtype complex", "cannot use"});
  const std::string structured =
      "{'descr': [('x', '<f4'), ('y', '<i8')], 'fortran_order': "
      "False, 'shape': (1,), }\n";
  expect_load_error(
      "\x93NUMPY\x01\x00"s + char(structured.size()) + '\0' + structured + eight + "1234",
      {"x.npy", "structured dtype", "cannot use"});
  expect_load_error(npy("<u8", "(2,)", raw<uint64_t>({1, uint64_t{INT64_MAX} + 1})),
                    {"element 1", "9223372036854775808", "does not fit in int64"});
}

TEST(DataNumpy, RefusesCorruptFiles) {
  const std::string good = npy("<f4", "(2, 3)", std::string(24, '\0'));
  ASSERT_EQ(load(good).numel(), 6);
  std::string magic = good;
  magic[1] = 'n';
  expect_load_error(magic, {"x.npy", "not a NumPy .npy file"});
  expect_load_error("\x93NUMPY", {"not a NumPy .npy file"});
  std::string v4 = good;
  v4[6] = 4;
  expect_load_error(v4, {"format version 4.0", "1.0, 2.0 and 3.0"});
  // Truncated data, and headers that claim more or fewer elements than the data holds.
  expect_load_error(good.substr(0, good.size() - 4),
                    {"x.npy", "(2, 3) of float32 needs 24 bytes", "holds 20", "truncated"});
  expect_load_error(npy("<f4", "(2, 4)", std::string(24, '\0')), {"needs 32 bytes", "holds 24"});
  expect_load_error(npy("<f4", "(5,)", std::string(24, '\0')), {"needs 20 bytes", "holds 24"});
  expect_load_error(npy("<f8", "(4611686018427387904, 4)", ""), {"shape", "is too large"});
  expect_load_error(npy("<f8", "(99999999999999999999,)", ""), {"corrupt .npy header", "large"});
  expect_load_error(npy("<f8", "(-1,)", ""), {"corrupt .npy header", "non-negative integer"});
  // A header length past the end of the file.
  std::string long_header = good;
  long_header[8] = '\xFF';
  expect_load_error(long_header, {"x.npy", "past the end of the file"});
  // Broken dict literals.
  for (const std::string& h :
       {"{'descr': '<f4', 'shape': (1,), }"s, "{'descr': '<f4', 'fortran_order': Maybe, "s,
        "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}"s,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1}"s,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} junk"s, "{'descr: "s, ""s}) {
    const std::string bytes = "\x93NUMPY\x01\x00"s + char(h.size()) + '\0' + h + "1234";
    expect_load_error(bytes, {"x.npy", "corrupt .npy header"});
  }
}

// A fixture's bytes.
std::string fixture(const std::string& name) {
  std::ifstream in(kDir + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::pair<std::string, Tensor>> load_npz(const std::string& bytes) {
  const serialize::MemorySource src(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                                    "x.npz");
  return data::read_npz(src);
}

TEST(DataNumpy, NpzFilesFromSavezAndSavezCompressed) {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    SCOPED_TRACE(name);
    const auto arrays = data::read_npz_file(kDir + name);
    ASSERT_EQ(arrays.size(), 5u);
    std::vector<std::string> names;
    for (const auto& [n, t] : arrays) names.push_back(n);
    EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "f", "zeros", "arr_0"}));
    const std::vector<double> six = {0, 1, 2, 3, 4, 5};
    EXPECT_EQ(arrays[0].second.dtype(), kFloat32);
    EXPECT_EQ(arrays[0].second.sizes(), (Shape{2, 3}));
    EXPECT_EQ(values(arrays[0].second), six);
    EXPECT_EQ(arrays[1].second.dtype(), kInt64);
    EXPECT_EQ(values(arrays[1].second), (std::vector<double>{-3, 0, 7}));
    EXPECT_EQ(arrays[2].second.sizes(), (Shape{2, 3}));  // Fortran order in the file
    EXPECT_EQ(values(arrays[2].second), six);
    EXPECT_EQ(arrays[3].second.dtype(), kFloat64);
    EXPECT_EQ(values(arrays[3].second), std::vector<double>(1024, 0));
    EXPECT_EQ(arrays[4].second.dtype(), kBool);
    EXPECT_EQ(arrays[4].second.dim(), 0);
    EXPECT_EQ(values(arrays[4].second), std::vector<double>{1});
  }
  const serialize::FileSource src(kDir + "savez_compressed.npz");
  for (const serialize::ZipEntry& e : serialize::read_zip_directory(src)) {
    EXPECT_EQ(e.method, 8) << e.name;
    EXPECT_LT(e.compressed_size, e.size) << e.name;
  }
}

// The offset of the central directory entry of `name` in a zip.
size_t central_entry(const std::string& zip, const std::string& name) {
  for (size_t at = zip.find("PK\1\2"); at != std::string::npos; at = zip.find("PK\1\2", at + 1)) {
    if (zip.compare(at + 46, name.size(), name) == 0) return at;
  }
  ADD_FAILURE() << name << " is not in the zip";
  return 0;
}

TEST(DataNumpy, NpzRefusesBadCrcsSizesAndBombs) {
  for (const char* name : {"savez.npz", "savez_compressed.npz"}) {
    std::string bad_crc = fixture(name);
    bad_crc[central_entry(bad_crc, "a.npy") + 16] ^= 1;
    expect_error<FileError>([&] { load_npz(bad_crc); },
                            {"x.npz", "the CRC of 'a.npy' does not match"});
  }
  const std::string good = fixture("savez_compressed.npz");
  const size_t zeros = central_entry(good, "zeros.npy");
  auto with_size = [&](uint32_t size) {
    std::string z = good;
    std::memcpy(&z[zeros + 24], &size, 4);
    return z;
  };
  // 8320 bytes inflated from 108: recorded as far more than DEFLATE can give, as less, as more.
  expect_error<FileError>([&] { load_npz(with_size(2000000000)); },
                          {"x.npz", "'zeros.npy' claims 2000000000 bytes", "more than DEFLATE"});
  expect_error<FileError>([&] { load_npz(with_size(8000)); },
                          {"x.npz", "'zeros.npy' inflates to more than the 8000 bytes"});
  expect_error<FileError>([&] { load_npz(with_size(9000)); },
                          {"'zeros.npy' inflates to 8320 bytes", "records 9000"});
  // Damaged compressed data.
  std::string damaged = good;
  const serialize::MemorySource src(reinterpret_cast<const uint8_t*>(good.data()), good.size(),
                                    "x.npz");
  const serialize::ZipEntry entry = serialize::read_zip_directory(src).at(3);
  std::fill_n(&damaged[entry.data_offset], 8, '\xFF');
  expect_error<FileError>([&] { load_npz(damaged); }, {"x.npz", "'zeros.npy'", "DEFLATE data"});
  // A bad array inside names the archive and the array.
  std::string complex = fixture("savez.npz");
  const serialize::MemorySource stored(reinterpret_cast<const uint8_t*>(complex.data()),
                                       complex.size(), "x.npz");
  const serialize::ZipEntry a = serialize::read_zip_directory(stored).at(0);
  complex.replace(complex.find("'<f4'"), 5, "'<c8'");
  const uint32_t crc = serialize::crc32(&complex[a.data_offset], a.size);
  std::memcpy(&complex[central_entry(complex, "a.npy") + 16], &crc, 4);
  expect_error<FileError>([&] { load_npz(complex); },
                          {"x.npz, array 'a'", "dtype complex64", "cannot use"});
}

}  // namespace
}  // namespace nns
