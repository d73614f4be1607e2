// SPDX-License-Identifier: GPL-3.0-or-later
// The weight-file readers and writers on hand-built byte streams: every safetensors
// validation rule, the restricted unpickler against hostile pickles, the zip layer (Zip64,
// prefixes, bounds, CRCs, foreign formats), truncation at every length, round trips of every
// dtype, and the engine API (atomic saves, checkpoints, load reports). PyTorch-made files
// are checked in serialize_fixtures_test.cpp.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "engine/nn/batchnorm.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/serialize/safetensors.h"
#include "engine/serialize/serialize.h"
#include "engine/serialize/torch_file.h"
#include "support/test_util.h"

namespace nns {
namespace {

using serialize::FileError;
using serialize::Format;
using serialize::PyValue;
using test::error_of;
using namespace std::string_literals;  // "...\0..."s keeps its NUL bytes

const uint8_t* bytes_of(const std::string& s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

serialize::FileContents read(const std::string& bytes, Format format) {
  return serialize::read_bytes(bytes_of(bytes), bytes.size(), format, "test.file");
}

std::string read_error(const std::string& bytes, Format format) {
  return error_of<FileError>([&] { read(bytes, format); });
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Same dtype, shape and bytes.
void expect_identical(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.dtype(), b.dtype());
  ASSERT_EQ(a.sizes(), b.sizes());
  const Tensor ca = a.contiguous();
  const Tensor cb = b.contiguous();
  EXPECT_EQ(std::memcmp(ca.raw_data(), cb.raw_data(), ca.numel() * ca.element_size()), 0);
}

// One tensor of each dtype, a scalar and an empty one.
nn::StateDict every_dtype() {
  nn::StateDict sd;
  sd.insert("f32", from_vector(std::vector<float>{1.5f, -2.f, 3.25f, 0.f, -0.f, 1e-30f}, {2, 3}));
  sd.insert("f64", from_vector(std::vector<double>{3.141592653589793, -1e300}, {2}));
  sd.insert("f16", tensor({0.5, -1, 65504, 1e-7}).to(kFloat16));
  sd.insert("bf16", tensor({0.5, -1, 3e38, 1e-30}).to(kBFloat16));
  sd.insert("i64", from_vector(std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX}, {2, 2}));
  sd.insert("bool", from_vector(std::vector<bool>{true, false, true}, {3}));
  sd.insert("scalar", scalar_tensor(7.0));
  sd.insert("empty", zeros({0, 3}));
  return sd;
}

void expect_same_state_dict(const nn::StateDict& got, const nn::StateDict& want, bool same_order) {
  ASSERT_EQ(got.size(), want.size());
  if (same_order) {
    EXPECT_EQ(got.keys(), want.keys());
  }
  for (const auto& item : want) {
    const Tensor* t = got.find(item.key());
    ASSERT_NE(t, nullptr) << item.key();
    expect_identical(*t, item.value());
  }
}

// ---- safetensors ------------------------------------------------------------------------------

std::string safetensors_bytes(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string safetensors_of(const nn::StateDict& sd, const serialize::Metadata& metadata = {}) {
  serialize::StringSink sink;
  serialize::write_safetensors(sd, metadata, sink);
  return sink.bytes;
}

TEST(SerializeSafetensors, WriterMatchesTheReferenceBytes) {
  // STATE_DICT_FORMATS.md A.2/A.4: same dtype, so name order puts bias first; N = 0x78.
  nn::StateDict sd;
  sd.insert("weight", arange(6).view({2, 3}));
  sd.insert("bias", tensor({0.5, -1, 2}));
  const std::string file = safetensors_of(sd);
  ASSERT_EQ(file.size(), 164u);
  EXPECT_EQ(file.substr(0, 8), std::string("\x78\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(file.substr(8, 120),
            "{\"bias\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},\"weight\":{"
            "\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[12,36]}}");
  // Dtype rank first (I64 before F32 before BOOL), metadata first in the header.
  nn::StateDict mixed;
  mixed.insert("a_bool", from_vector(std::vector<bool>{true}, {1}));
  mixed.insert("b_f32", tensor({1}));
  mixed.insert("c_i64", from_vector(std::vector<int64_t>{1}, {1}));
  const std::string m = safetensors_of(mixed, {{"format", "pt"}});
  const std::string header = m.substr(8, m.find("}}", 8) - 8);
  EXPECT_EQ(header.rfind("{\"__metadata__\":{\"format\":\"pt\"},\"c_i64\"", 0), 0u) << header;
  EXPECT_LT(header.find("b_f32"), header.find("a_bool"));
  uint64_t n = 0;
  std::memcpy(&n, m.data(), 8);
  EXPECT_EQ(n % 8, 0u);
}

TEST(SerializeSafetensors, EveryDtypeRoundTrips) {
  const nn::StateDict sd = every_dtype();
  const serialize::FileContents back = read(safetensors_of(sd, {{"k", "v"}}), Format::Safetensors);
  expect_same_state_dict(serialize::state_dict_from_py(back.root, "test"), sd, false);
  EXPECT_EQ(back.metadata, (serialize::Metadata{{"k", "v"}}));
}

TEST(SerializeSafetensors, ViewsAreWrittenContiguous) {
  nn::StateDict sd;
  const Tensor base = arange(12).view({3, 4});
  sd.insert("t", base.t());
  sd.insert("slice", base.slice(1, 1, 3));
  const nn::StateDict back =
      serialize::state_dict_from_py(read(safetensors_of(sd), Format::Safetensors).root, "test");
  EXPECT_EQ(test::values(*back.find("t")), test::values(base.t()));
  EXPECT_EQ(test::values(*back.find("slice")), test::values(base.slice(1, 1, 3)));
}

TEST(SerializeSafetensors, EveryValidationRuleRefuses) {
  const std::string four(4, '\0');
  const auto one = [](const std::string& fields) { return "{\"a\":{" + fields + "}}"; };
  const std::string ok_fields = "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]";
  // A valid file first, so each case below differs by one thing.
  EXPECT_NO_THROW(read(safetensors_bytes(one(ok_fields), four), Format::Safetensors));

  struct Case {
    std::string name, bytes, message;
  };
  std::string huge(8, '\0');
  const uint64_t too_large = 100'000'001;
  std::memcpy(huge.data(), &too_large, 8);
  std::string past_end(8, '\0');
  past_end[0] = 50;
  const std::vector<Case> cases = {
      {"too small", std::string(7, '\0'), "too small for the 8-byte header length"},
      {"header too large", huge + "{}", "exceeds the format's limit of 100000000"},
      {"header past end", past_end + "{}", "runs past the end of the file"},
      {"not utf-8", safetensors_bytes("{\"\xff\":1}", ""), "not UTF-8 JSON"},
      {"not json", safetensors_bytes("{\"a\":", ""), "not UTF-8 JSON"},
      {"not an object", safetensors_bytes("[1, 2]", ""), "not a JSON object"},
      {"unknown dtype",
       safetensors_bytes(one("\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]"), four),
       "unknown dtype \"F33\""},
      {"metadata not string", safetensors_bytes("{\"__metadata__\":{\"x\":1}}", ""),
       "__metadata__ value of 'x' is not a string"},
      {"negative shape",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), four),
       "shape must be a non-negative integer, got -1"},
      {"float shape",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]"), four),
       "shape must be a non-negative integer, got 1.0"},
      {"missing field", safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[1]"), four),
       "needs dtype, shape and data_offsets"},
      {"unknown field",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":0"),
                         four),
       "tensor 'a' has an unknown field 'x'"},
      {"three offsets",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]"), four),
       "data_offsets must be [begin, end]"},
      {"hole",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]"),
                         four + four),
       "should begin at 0"},
      {"overlap",
       safetensors_bytes(
           "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":"
           "\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
           four + four),
       "tensor 'b' has data_offsets [4, 8]"},
      {"end before begin",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}"
                             ",\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}"
                             ",\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]"),
                         four),
       "has data_offsets [4, 0]"},
      {"size mismatch",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), four),
       "needs 8 bytes, but its data_offsets span 4"},
      {"shape overflow",
       safetensors_bytes(
           one("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]"), four),
       "overflows"},
      {"empty shape overflow",
       safetensors_bytes(one("\"dtype\":\"F32\",\"shape\":[0,4611686018427387904,"
                             "4611686018427387904],\"data_offsets\":[0,0]"),
                         ""),
       "overflows"},
      {"trailing bytes", safetensors_bytes(one(ok_fields), four + "x"),
       "the tensors end at byte 66 but the file has 67 bytes"},
      {"truncated data", safetensors_bytes(one(ok_fields), "ab"),
       "the tensors end at byte 66 but the file has 64 bytes"},
      {"duplicate key",
       safetensors_bytes("{\"a\":{" + ok_fields + "},\"a\":{" + ok_fields + "}}", four),
       "the key 'a' appears twice"},
      {"duplicate metadata key",
       safetensors_bytes("{\"__metadata__\":{\"x\":\"1\",\"x\":\"2\"}}", ""),
       "the key 'x' appears twice"},
      {"unsupported dtype",
       safetensors_bytes(one("\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]"), four),
       "tensor 'a' has dtype I32, which NN Studio does not support"},
      {"sub-byte dtype",
       safetensors_bytes(one("\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,1]"), "x"),
       "does not fill whole bytes"},
  };
  for (const Case& c : cases) {
    const std::string message = read_error(c.bytes, Format::Safetensors);
    EXPECT_TRUE(contains(message, c.message)) << c.name << ": " << message;
    EXPECT_TRUE(contains(message, "test.file")) << c.name << ": " << message;
  }
}

TEST(SerializeSafetensors, AcceptsWhitespacePaddingAndNullMetadata) {
  const std::string t = "\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}";
  const std::string four("\0\0\x80\x3f", 4);
  const auto contents =
      read(safetensors_bytes("  {\"__metadata__\":null," + t + "}   ", four), Format::Safetensors);
  EXPECT_EQ(contents.root.find("a")->as_tensor().item(), 1.0);
  EXPECT_TRUE(contents.metadata.empty());
}

TEST(SerializeSafetensors, TruncatedAtEveryLengthIsAnError) {
  nn::StateDict sd;
  sd.insert("w", tensor({1, 2, 3}));
  sd.insert("b", from_vector(std::vector<int64_t>{4}, {1}));
  const std::string file = safetensors_of(sd, {{"m", "n"}});
  for (size_t len = 0; len < file.size(); ++len) {
    EXPECT_THROW(read(file.substr(0, len), Format::Safetensors), FileError) << len;
  }
}

// ---- pickles ----------------------------------------------------------------------------------

// Opcode spellers for hand-built pickles.
std::string global(const std::string& module, const std::string& name) {
  return "c" + module + "\n" + name + "\n";
}
std::string unicode(const std::string& s) {
  std::string out = "X";
  const uint32_t n = static_cast<uint32_t>(s.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  return out + s;
}
std::string int1(uint8_t v) {
  return std::string("K") + static_cast<char>(v);
}
const std::string kProto = "\x80\x02";
const std::string kOrderedDict = global("collections", "OrderedDict") + ")R";
// ('storage', torch.<cls>, key, 'cpu', numel) BINPERSID
std::string persid(const std::string& cls, const std::string& key, uint8_t numel) {
  return "(" + unicode("storage") + global("torch", cls) + unicode(key) + unicode("cpu") +
         int1(numel) + "tQ";
}
// _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())
std::string tensor_op(const std::string& cls, const std::string& key, uint8_t numel, uint8_t offset,
                      const std::string& size, const std::string& stride) {
  return global("torch._utils", "_rebuild_tensor_v2") + "(" + persid(cls, key, numel) +
         int1(offset) + size + stride + "\x89" + kOrderedDict + "tR";
}
// (1, 1, ..., 1), n ones.
std::string ones_tuple(size_t n) {
  std::string out = "(";
  for (size_t i = 0; i < n; ++i) out += int1(1);
  return out + "t";
}
std::string tuple_of(std::initializer_list<uint8_t> v) {
  std::string out = "(";
  for (uint8_t x : v) out += int1(x);
  return out + "t";
}

PyValue unpickle_plain(const std::string& pickle, serialize::PickleLimits limits = {}) {
  return serialize::unpickle(
      bytes_of(pickle), pickle.size(),
      [](const std::string& key, Dtype, int64_t) -> std::shared_ptr<Storage> {
        throw FileError("no storage '" + key + "' here");
      },
      "test.pkl", limits);
}

std::string unpickle_error(const std::string& pickle) {
  return error_of<FileError>([&] { unpickle_plain(pickle); });
}

// A storage loader over float32 storages 0, 1, 2, ... holding 0, 1, 2, ...
struct Storages {
  std::map<std::string, std::shared_ptr<Storage>> made;
  int calls = 0;
  serialize::StorageLoader loader() {
    return [this](const std::string& key, Dtype dtype, int64_t numel) {
      ++calls;
      auto it = made.find(key);
      if (it != made.end()) return it->second;
      Tensor t = arange(static_cast<double>(numel), dtype);
      made.emplace(key, t.storage());
      return t.storage();
    };
  }
};

PyValue unpickle_with(const std::string& pickle, Storages& storages) {
  return serialize::unpickle(bytes_of(pickle), pickle.size(), storages.loader(), "test.pkl");
}

TEST(SerializePickle, RefusesEveryGlobalOutsideTheAllowlistBeforeRunningAnything) {
  for (const auto& [module, name] :
       std::vector<std::pair<std::string, std::string>>{{"os", "system"},
                                                        {"posix", "system"},
                                                        {"builtins", "eval"},
                                                        {"__builtin__", "eval"},
                                                        {"subprocess", "Popen"},
                                                        {"torch", "load"},
                                                        {"torch._utils", "_rebuild_qtensor"},
                                                        {"collections", "defaultdict"}}) {
    // A storage is loaded first in the stream: the scan must refuse before that happens.
    Storages storages;
    const std::string pickle = kProto + "(" +
                               tensor_op("FloatStorage", "0", 1, 0, "(K\1t", "(K\1t") +
                               global(module, name) + unicode("echo hacked") + "\x85R" + "t.";
    const std::string message = error_of<FileError>([&] { unpickle_with(pickle, storages); });
    EXPECT_TRUE(contains(message, "refusing to load")) << message;
    EXPECT_TRUE(contains(message, "'" + module + "." + name + "'")) << message;
    EXPECT_TRUE(contains(message, "test.pkl")) << message;
    EXPECT_EQ(storages.calls, 0) << module << "." << name;
  }
}

TEST(SerializePickle, BoundsChecksLengthsMemoAndStack) {
  struct Case {
    std::string name, pickle, message;
  };
  const std::vector<Case> cases = {
      {"huge string length", kProto + "X\xf0\xff\xff\xff" + "abc.", "runs past the end"},
      {"memo index out of range", kProto + "]q\x00h\x05."s, "memo index 5, which was never stored"},
      {"long memo index", kProto + "]j\xff\xff\xff\x7f.", "memo index 2147483647"},
      {"no STOP", kProto + "]", "no STOP opcode"},
      {"empty", "", "no STOP opcode"},
      {"stack underflow", kProto + "K\1\x86.", "TUPLE2 with too few values"},
      {"pop through a mark", kProto + "K\1(K\2\x86.", "TUPLE2 with too few values"},
      {"append to an int", kProto + "K\1K\2a.", "APPEND on a value that is not a list"},
      {"setitem on a list", kProto + "]K\1K\2s.", "SETITEM on a value that is not a dict"},
      {"odd setitems", kProto + "}(K\1u.", "SETITEMS with an odd number of values"},
      {"unbalanced mark", kProto + "(K\1.", "STOP with an unclosed MARK"},
      {"two results", kProto + "K\1K\2.", "STOP with 2 values on the stack"},
      {"appends without mark", kProto + "]e.", "APPENDS without a MARK"},
      {"unknown opcode", kProto + "\xff.", "unsupported pickle opcode 0xff"},
      {"protocol 4 opcode", kProto + "\x8c\x01x.", "0x8c (SHORT_BINUNICODE (protocol 4))"},
      {"protocol 4", "\x80\x04N.", "pickle protocol 4"},
      {"integer too large", kProto + "\x8a\x09" + std::string(9, '\1') + ".",
       "does not fit in int64"},
      {"unhashable key", kProto + "}]K\1s.", "a dict key must be a str"},
      {"reduce of a non-callable", kProto + "K\1)R.", "REDUCE on a value that is not a callable"},
      {"OrderedDict with arguments", kProto + global("collections", "OrderedDict") + "K\1\x85R.",
       "OrderedDict must be called with no arguments"},
      {"storage class called", kProto + global("torch", "FloatStorage") + ")R.",
       "torch.FloatStorage can only appear in a persistent id"},
      {"persid not a storage", kProto + unicode("x") + "Q.", "a persistent id must be a tuple"},
      {"persid of the wrong kind", kProto + "(" + unicode("module") + "K\1K\1K\1K\1tQ.",
       "a persistent id of kind 'module'"},
      {"build on a list", kProto + "]}b.", "BUILD is only supported"},
      {"bare global", kProto + global("collections", "OrderedDict") + ".", "holds a bare global"},
      {"non-printable global", kProto + "cos\x01\nsystem\n.", "non-printable"},
  };
  for (const Case& c : cases) {
    const std::string message = unpickle_error(c.pickle);
    EXPECT_TRUE(contains(message, c.message)) << c.name << ": " << message;
    EXPECT_TRUE(contains(message, "test.pkl")) << c.name << ": " << message;
  }
}

TEST(SerializePickle, NestingSelfReferenceAndExpansionAreCapped) {
  // 150 lists inside each other (the cap is 100 levels).
  std::string deep = kProto + std::string(150, ']') + std::string(149, 'a') + ".";
  EXPECT_TRUE(contains(unpickle_error(deep), "nest deeper than 100 levels"))
      << unpickle_error(deep);
  std::string ok = kProto + std::string(50, ']') + std::string(49, 'a') + ".";
  EXPECT_NO_THROW(unpickle_plain(ok));
  // A list that contains itself.
  EXPECT_TRUE(contains(unpickle_error(kProto + "]q\x00h\x00"s + "a."), "contain themselves"));
  // a = [], b = [a, a], c = [b, b], ...: 2^60 values from a few hundred bytes.
  std::string laughs = kProto + "(]q\x00"s;
  for (int i = 1; i <= 60; ++i) {
    laughs += "](h" + std::string(1, static_cast<char>(i - 1)) + "h" +
              std::string(1, static_cast<char>(i - 1)) + "eq" +
              std::string(1, static_cast<char>(i));
  }
  laughs += "t.";
  serialize::PickleLimits limits;
  limits.max_depth = 1000;
  const std::string message = error_of<FileError>([&] { unpickle_plain(laughs, limits); });
  EXPECT_TRUE(contains(message, "expands to too many values")) << message;
}

TEST(SerializePickle, ReadsTheScalarsPythonWrites) {
  // 2**40 as LONG1 (spec C.9), -1 as BININT, 0.25 big-endian, a 0-byte LONG1.
  const PyValue v = unpickle_plain(kProto + "(\x8a\x06\0\0\0\0\0\x01J\xff\xff\xff\xff"s +
                                   "G\x3f\xd0\0\0\0\0\0\0\x8a\x00M\x00\x01\x8a\x02\x00\x80N"s +
                                   "\x88" + unicode("\xc3\xa9t\xc3\xa9") + "t.");
  ASSERT_EQ(v.items().size(), 9u);
  EXPECT_EQ(v.items()[0].as_int(), int64_t{1} << 40);
  EXPECT_EQ(v.items()[1].as_int(), -1);
  EXPECT_EQ(v.items()[2].as_float(), 0.25);
  EXPECT_EQ(v.items()[3].as_int(), 0);
  EXPECT_EQ(v.items()[4].as_int(), 256);
  EXPECT_EQ(v.items()[5].as_int(), -32768);
  EXPECT_TRUE(v.items()[6].is_none());
  EXPECT_TRUE(v.items()[7].as_bool());
  EXPECT_EQ(v.items()[8].as_string(), "\xc3\xa9t\xc3\xa9");
}

TEST(SerializePickle, DictsKeepOrderAndTheLastValueOfARepeatedKey) {
  const PyValue v = unpickle_plain(kProto + "}(" + unicode("b") + "K\1" + unicode("a") + "K\2" +
                                   unicode("b") + "K\3" + "K\1K\4\x88K\5u.");
  ASSERT_EQ(v.pairs().size(), 3u);
  EXPECT_EQ(v.pairs()[0].first.as_string(), "b");
  EXPECT_EQ(v.pairs()[0].second.as_int(), 3);
  EXPECT_EQ(v.pairs()[1].first.as_string(), "a");
  // True == 1 as a Python dict key: the second assignment replaces the first.
  EXPECT_EQ(v.pairs()[2].first.as_int(), 1);
  EXPECT_EQ(v.pairs()[2].second.as_int(), 5);
  EXPECT_EQ(v.repr(), "{'b': 3, 'a': 2, 1: 5}");
}

TEST(SerializePickle, OrderedDictAttributesAreKeptApartFromItems) {
  // OrderedDict(k=7), then BUILD with {'_metadata': OrderedDict({'': {'version': 1}})}.
  const PyValue v =
      unpickle_plain(kProto + kOrderedDict + unicode("k") + "K\7s" + "}" + unicode("_metadata") +
                     kOrderedDict + unicode("") + "}" + unicode("version") + "K\1sss" + "b.");
  ASSERT_TRUE(v.is(PyValue::Kind::OrderedDict));
  ASSERT_EQ(v.pairs().size(), 1u);
  EXPECT_EQ(v.find("_metadata"), nullptr);
  ASSERT_EQ(v.attributes().size(), 1u);
  EXPECT_EQ(v.attributes()[0].first.as_string(), "_metadata");
  EXPECT_EQ(v.attributes()[0].second.find("")->find("version")->as_int(), 1);
}

TEST(SerializePickle, RebuildsViewsWithOffsetsStridesAndSharedStorages) {
  Storages storages;
  // Storage "0" holds 0..11. A transposed 3x2 view, a view at offset 5, a stride-0 expand.
  const std::string pickle =
      kProto + "(" + tensor_op("FloatStorage", "0", 12, 0, tuple_of({3, 2}), tuple_of({1, 3})) +
      tensor_op("FloatStorage", "0", 12, 5, tuple_of({2}), tuple_of({2})) +
      tensor_op("FloatStorage", "0", 12, 11, tuple_of({2, 2}), tuple_of({0, 0})) +
      tensor_op("FloatStorage", "0", 12, 12, tuple_of({0}), tuple_of({1})) + "t.";
  const PyValue v = unpickle_with(pickle, storages);
  const Tensor& t = v.items()[0].as_tensor();
  EXPECT_EQ(test::values(t), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(test::values(v.items()[1].as_tensor()), (std::vector<double>{5, 7}));
  EXPECT_EQ(test::values(v.items()[2].as_tensor()), (std::vector<double>{11, 11, 11, 11}));
  EXPECT_EQ(v.items()[3].as_tensor().numel(), 0);
  EXPECT_EQ(v.items()[1].as_tensor().storage(), t.storage());
  EXPECT_EQ(v.items()[1].as_tensor().storage_offset(), 5);
}

TEST(SerializePickle, RefusesViewsPastTheirStorageAndBadTensorArguments) {
  struct Case {
    std::string name, pickle, message;
  };
  const std::string rebuild = global("torch._utils", "_rebuild_tensor_v2");
  const std::vector<Case> cases = {
      {"past the end", tensor_op("FloatStorage", "0", 6, 0, tuple_of({3, 3}), tuple_of({3, 1})),
       "reaches past its storage of 6 elements"},
      {"offset past the end", tensor_op("FloatStorage", "0", 6, 6, tuple_of({1}), tuple_of({1})),
       "reaches past"},
      {"size and stride lengths",
       tensor_op("FloatStorage", "0", 6, 0, tuple_of({2, 3}), tuple_of({1})),
       "have different lengths"},
      {"negative size", tensor_op("FloatStorage", "0", 6, 0, "(J\xff\xff\xff\xfft", tuple_of({1})),
       "holds a negative value -1"},
      {"unsupported storage", tensor_op("IntStorage", "0", 6, 0, tuple_of({6}), tuple_of({1})),
       "torch.IntStorage (torch.int32), a dtype NN Studio does not support"},
      {"five arguments", rebuild + "(" + persid("FloatStorage", "0", 1) + "K\0(K\1t(K\1t\x89tR"s,
       "_rebuild_tensor_v2 takes 6 arguments, got 5"},
      {"conj metadata",
       rebuild + "(" + persid("FloatStorage", "0", 1) + "K\0(K\1t(K\1t\x89"s + kOrderedDict + "}" +
           unicode("conj") + "\x88stR",
       "tensor with metadata (conjugate or negative bit)"},
      {"grad on an int tensor",
       rebuild + "(" + persid("LongStorage", "0", 1) + "K\0(K\1t(K\1t\x88"s + kOrderedDict + "tR",
       "cannot require grad"},
      {"empty shape overflow",
       tensor_op("FloatStorage", "0", 6, 0,
                 "(K\0\x8a\x08\0\0\0\0\0\0\0\x40\x8a\x08\0\0\0\0\0\0\0\x40t"s, tuple_of({1, 1, 1})),
       "a tensor's element count overflows"},
      {"too many dims", tensor_op("FloatStorage", "0", 1, 0, ones_tuple(65), ones_tuple(65)),
       "has 65 dims"},
  };
  for (const Case& c : cases) {
    Storages storages;
    const std::string message =
        error_of<FileError>([&] { unpickle_with(kProto + c.pickle + ".", storages); });
    EXPECT_TRUE(contains(message, c.message)) << c.name << ": " << message;
  }
}

TEST(SerializePickle, RebuildParameterGivesALeafThatRequiresGrad) {
  Storages storages;
  const PyValue v =
      unpickle_with(kProto + global("torch._utils", "_rebuild_parameter") + "(" +
                        tensor_op("DoubleStorage", "0", 3, 0, tuple_of({3}), tuple_of({1})) +
                        "\x88" + kOrderedDict + "tR.",
                    storages);
  const Tensor& p = v.as_tensor();
  EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(p.is_leaf());
  EXPECT_EQ(p.dtype(), kFloat64);
  EXPECT_EQ(test::values(p), (std::vector<double>{0, 1, 2}));
}

std::string pickled(const PyValue& v) {
  std::vector<serialize::PickledStorage> storages;
  return serialize::pickle(v, storages);
}

TEST(SerializePickle, WritesThePythonEncodings) {
  // Ints pick the smallest opcode, as Python's save_long does.
  EXPECT_EQ(pickled(PyValue(5)), kProto + "K\x05.");
  EXPECT_EQ(pickled(PyValue(300)), kProto + "M\x2c\x01.");
  EXPECT_EQ(pickled(PyValue(-1)), kProto + std::string("J\xff\xff\xff\xff.", 6));
  EXPECT_EQ(pickled(PyValue(int64_t{1} << 40)), kProto + std::string("\x8a\x06\0\0\0\0\0\x01.", 9));
  EXPECT_EQ(pickled(PyValue(int64_t{-1} << 40)),
            kProto + std::string("\x8a\x06\0\0\0\0\0\xff.", 9));
  EXPECT_EQ(pickled(PyValue(0.25)), kProto + std::string("G\x3f\xd0\0\0\0\0\0\0.", 10));
  EXPECT_EQ(pickled(PyValue::tuple({})), kProto + ").");
  EXPECT_EQ(pickled(PyValue::tuple({1, 2})), kProto + "K\1K\2\x86.");
  EXPECT_EQ(pickled(PyValue::tuple({1, 2, 3, 4})), kProto + "(K\1K\2K\3K\4t.");
  EXPECT_EQ(pickled(PyValue::list({1})), kProto + "]K\1a.");
  EXPECT_EQ(pickled(PyValue::dict({{"a", PyValue()}})), kProto + "}" + unicode("a") + "Ns.");
  // Batches of 1000: 1001 items are one APPENDS and one APPEND.
  PyValue::Items many(1001, PyValue(true));
  const std::string list = pickled(PyValue::list(many));
  EXPECT_EQ(list, kProto + "](" + std::string(1000, '\x88') + "e\x88" + "a.");
  // Bytes go through _codecs.encode(str, 'latin1'), the protocol-2 way.
  const std::string b("\x00\xff", 2);
  EXPECT_EQ(unpickle_plain(pickled(PyValue::bytes(b))).as_bytes(), b);
}

TEST(SerializePickle, CheckpointTreesRoundTrip) {
  PyValue::Pairs metadata{{"", PyValue::dict({{"version", 1}})}};
  const PyValue tree = PyValue::dict({
      {"epoch", 5},
      {"loss", 0.25},
      {"nan", std::nan("")},
      {"name", "r\xc3\xa9seau"},
      {"flags", PyValue::list({true, false, PyValue()})},
      {"betas", PyValue::tuple({0.9, 0.999})},
      {"by_int", PyValue::dict({{0, "zero"}, {int64_t{1} << 40, "big"}})},
      {"od", PyValue::ordered_dict({{"x", 1}}, {{"_metadata", PyValue::ordered_dict(metadata)}})},
      {"raw", PyValue::bytes("ab\x80")},
  });
  const PyValue back = unpickle_plain(pickled(tree));
  EXPECT_EQ(back.repr(), tree.repr());
  EXPECT_EQ(back.repr(),
            "{'epoch': 5, 'loss': 0.25, 'nan': nan, 'name': 'r\xc3\xa9seau', 'flags': [True, "
            "False, None], 'betas': (0.9, 0.999), 'by_int': {0: 'zero', 1099511627776: 'big'}, "
            "'od': OrderedDict([('x', 1)]), 'raw': b'ab\\x80'}");
  EXPECT_EQ(back.find("od")->attributes().size(), 1u);
}

// ---- zip and torch files ----------------------------------------------------------------------

std::string torch_bytes(const PyValue& root, const std::string& archive = "archive") {
  serialize::StringSink sink;
  serialize::write_torch_file(root, archive, sink);
  return sink.bytes;
}

// A zip of the given records as PyTorch writes it.
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& records) {
  serialize::StringSink sink;
  serialize::ZipWriter zip(sink);
  for (const auto& [name, data] : records) zip.add(name, data.data(), data.size());
  zip.finish();
  return sink.bytes;
}

TEST(SerializeZip, Crc32OfTheCheckString) {
  EXPECT_EQ(serialize::crc32("123456789", 9), 0xCBF43926u);
  EXPECT_EQ(serialize::crc32("", 0), 0u);
  // In pieces, across the 8-byte fast path.
  const std::string s = "The quick brown fox jumps over the lazy dog";
  EXPECT_EQ(serialize::crc32(s.data() + 5, s.size() - 5, serialize::crc32(s.data(), 5)),
            0x414FA339u);
}

TEST(SerializeZip, WriterAlignsEveryRecordTo64Bytes) {
  const std::string zip =
      zip_of({{"a/data.pkl", "xyz"}, {"a/data/0", std::string(100, 'q')}, {"a/version", "3\n"}});
  const serialize::MemorySource src(bytes_of(zip), zip.size(), "z");
  const auto entries = serialize::read_zip_directory(src);
  ASSERT_EQ(entries.size(), 3u);
  for (const auto& e : entries) EXPECT_EQ(e.data_offset % 64, 0u) << e.name;
  EXPECT_EQ(entries[1].size, 100u);
  EXPECT_EQ(zip.substr(entries[1].data_offset, 100), std::string(100, 'q'));
  EXPECT_EQ(entries[2].crc, serialize::crc32("3\n", 2));
}

// A classic zip whose central entry and end record use the Zip64 forms, as a writer must for
// an entry at or past 4 GiB; small here, with the 64-bit values in the extra fields.
std::string zip64_of(const std::string& name, const std::string& data) {
  serialize::StringSink s;
  s.u32(0x04034b50);
  s.u16(45);
  s.u16(0);
  s.u16(0);
  s.u32(0);
  s.u32(serialize::crc32(data.data(), data.size()));
  s.u32(0xFFFFFFFF);
  s.u32(0xFFFFFFFF);
  s.u16(static_cast<uint16_t>(name.size()));
  s.u16(20);
  s.write(name);
  s.u16(1);
  s.u16(16);
  s.u64(data.size());
  s.u64(data.size());
  s.write(data);
  const uint64_t cd = s.offset();
  s.u32(0x02014b50);
  s.u16(45);
  s.u16(45);
  s.u16(0);
  s.u16(0);
  s.u32(0);
  s.u32(serialize::crc32(data.data(), data.size()));
  s.u32(0xFFFFFFFF);
  s.u32(0xFFFFFFFF);
  s.u16(static_cast<uint16_t>(name.size()));
  s.u16(28);
  s.u16(0);
  s.u16(0);
  s.u16(0);
  s.u32(0);
  s.u32(0xFFFFFFFF);
  s.write(name);
  s.u16(1);
  s.u16(24);
  s.u64(data.size());
  s.u64(data.size());
  s.u64(0);
  const uint64_t cd_size = s.offset() - cd;
  const uint64_t z64 = s.offset();
  s.u32(0x06064b50);
  s.u64(44);
  s.u16(45);
  s.u16(45);
  s.u32(0);
  s.u32(0);
  s.u64(1);
  s.u64(1);
  s.u64(cd_size);
  s.u64(cd);
  s.u32(0x07064b50);
  s.u32(0);
  s.u64(z64);
  s.u32(1);
  s.u32(0x06054b50);
  s.u16(0);
  s.u16(0);
  s.u16(0xFFFF);
  s.u16(0xFFFF);
  s.u32(0xFFFFFFFF);
  s.u32(0xFFFFFFFF);
  s.u16(0);
  return s.bytes;
}

TEST(SerializeZip, ReadsZip64Entries) {
  const std::string zip = zip64_of("a/data.pkl", "hello");
  const serialize::MemorySource src(bytes_of(zip), zip.size(), "z64");
  const auto entries = serialize::read_zip_directory(src);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].name, "a/data.pkl");
  EXPECT_EQ(entries[0].size, 5u);
  EXPECT_EQ(zip.substr(entries[0].data_offset, 5), "hello");
}

// The byte offset of the first central directory entry of a zip made by ZipWriter.
size_t central_of(const std::string& zip) {
  return zip.find("PK\1\2");
}

TEST(SerializeZip, RefusesCorruptDirectories) {
  const std::string good = zip_of({{"a/data.pkl", "xyz"}});
  const size_t cd = central_of(good);
  auto patched = [&](size_t at, uint32_t value) {
    std::string z = good;
    std::memcpy(z.data() + at, &value, 4);
    return z;
  };
  auto error = [](const std::string& zip) {
    return error_of<FileError>([&] {
      const serialize::MemorySource src(bytes_of(zip), zip.size(), "z");
      serialize::read_zip_directory(src);
    });
  };
  EXPECT_TRUE(contains(error(patched(cd + 20, 5000)), "different compressed and uncompressed"));
  std::string past = patched(cd + 20, 5000);
  std::memcpy(past.data() + cd + 24, "\x88\x13\0\0", 4);
  EXPECT_TRUE(contains(error(past), "runs past the entries")) << error(past);
  EXPECT_TRUE(contains(error(patched(cd + 42, 9999)), "lies outside the file's entries"));
  EXPECT_TRUE(contains(error(patched(cd + 42, 1)), "no local header for 'a/data.pkl'"));
  std::string deflate = good;
  deflate[cd + 10] = 8;
  EXPECT_TRUE(contains(error(deflate), "disagree on the compression method")) << error(deflate);
  // With the local header agreeing, DEFLATE is a zip entry (.npz files) but no torch.save record.
  deflate[8] = 8;
  const serialize::MemorySource deflated(bytes_of(deflate), deflate.size(), "z");
  EXPECT_EQ(serialize::read_zip_directory(deflated).at(0).method, 8);
  EXPECT_TRUE(contains(read_error(deflate, Format::TorchZip), "DEFLATE-compressed"));
  std::string encrypted = good;
  encrypted[cd + 8] |= 1;
  EXPECT_TRUE(contains(error(encrypted), "is encrypted"));
  std::string renamed = good;
  renamed[cd + 46] = 'b';
  EXPECT_TRUE(contains(error(renamed), "disagree on the name")) << error(renamed);
  EXPECT_TRUE(contains(error("PK\3\4" + std::string(30, '\0')), "no end of central directory"));
  EXPECT_TRUE(contains(error("PK"), "too small to be a zip archive"));
  // The end record claims more entries than its directory can hold.
  std::string many = good;
  const size_t eocd = many.rfind("PK\5\6");
  many[eocd + 10] = 100;
  EXPECT_TRUE(contains(error(many), "100 entries cannot fit")) << error(many);
}

TEST(SerializeTorchFile, EveryDtypeRoundTripsAndRecordsArePyTorchs) {
  const nn::StateDict sd = every_dtype();
  const std::string file = torch_bytes(serialize::state_dict_to_py(sd), "model");
  const serialize::FileContents back = read(file, Format::TorchZip);
  EXPECT_EQ(back.version, 3);
  EXPECT_EQ(back.byteorder, "little");
  expect_same_state_dict(serialize::state_dict_from_py(back.root, "t"), sd, true);
  const serialize::MemorySource src(bytes_of(file), file.size(), "m");
  std::vector<std::string> names;
  for (const auto& e : serialize::read_zip_directory(src)) names.push_back(e.name);
  EXPECT_EQ(names.front(), "model/data.pkl");
  EXPECT_EQ(names[1], "model/byteorder");
  EXPECT_EQ(names.back(), "model/version");
  EXPECT_EQ(names.size(), 3 + sd.size());
}

TEST(SerializeTorchFile, SharedStoragesAndViewsAreWrittenAsTheyAre) {
  const Tensor base = arange(12).view({3, 4});
  nn::StateDict sd;
  sd.insert("base", base);
  sd.insert("t", base.t());
  sd.insert("row", base[2]);
  const std::string file = torch_bytes(serialize::state_dict_to_py(sd));
  const nn::StateDict back = serialize::state_dict_from_py(read(file, Format::TorchZip).root, "t");
  EXPECT_EQ(back.find("t")->storage(), back.find("base")->storage());
  EXPECT_EQ(back.find("row")->storage(), back.find("base")->storage());
  EXPECT_EQ(back.find("row")->storage_offset(), 8);
  EXPECT_EQ(back.find("t")->strides(), (Shape{1, 4}));
  EXPECT_EQ(test::values(*back.find("t")), test::values(base.t()));
  // One storage record for the three tensors.
  const serialize::MemorySource src(bytes_of(file), file.size(), "m");
  EXPECT_EQ(serialize::read_zip_directory(src).size(), 4u);
}

TEST(SerializeTorchFile, TruncatedAtEveryLengthIsAnError) {
  nn::StateDict sd;
  sd.insert("w", tensor({{1, 2}, {3, 4}}));
  sd.insert("n", from_vector(std::vector<int64_t>{7}, {}));
  const std::string file = torch_bytes(serialize::state_dict_to_py(sd));
  for (size_t len = 0; len < file.size(); ++len) {
    EXPECT_THROW(read(file.substr(0, len), Format::TorchZip), FileError) << len;
  }
}

TEST(SerializeTorchFile, FlippingAnyByteGivesTheTensorOrAFileError) {
  nn::StateDict sd;
  sd.insert("w", tensor({1, 2, 3}));
  const std::string file = torch_bytes(serialize::state_dict_to_py(sd));
  for (size_t at = 0; at < file.size(); ++at) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x5A);
    try {
      const serialize::FileContents c = read(bad, Format::TorchZip);
      // Only bytes no reader looks at (padding, unchecked header fields) may change.
      EXPECT_EQ(test::values(c.root.find("w")->as_tensor()), (std::vector<double>{1, 2, 3})) << at;
    } catch (const FileError&) {
    }
  }
}

std::string storage_record(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

TEST(SerializeTorchFile, RefusesBadArchives) {
  const std::string pkl = kProto + kOrderedDict + unicode("w") +
                          tensor_op("FloatStorage", "0", 2, 0, tuple_of({2}), tuple_of({1})) + "s.";
  const std::string data = storage_record({1, 2});
  struct Case {
    std::string name;
    std::vector<std::pair<std::string, std::string>> records;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"prefix not from the first entry",
       {{"a/data.pkl", pkl}, {"b/data/0", data}, {"a/version", "3\n"}},
       "entry 'b/data/0' is outside the archive folder 'a/' of the first entry"},
      {"no folder", {{"data.pkl", pkl}}, "is not inside an archive folder"},
      {"no data.pkl", {{"a/data/0", data}, {"a/version", "3\n"}}, "no 'data.pkl' record"},
      {"no version", {{"a/data.pkl", pkl}, {"a/data/0", data}}, "no 'version' record"},
      {"bad version",
       {{"a/data.pkl", pkl}, {"a/data/0", data}, {"a/version", "11\n"}},
       "unsupported torch.save file version '11\n'"},
      {"bad byteorder",
       {{"a/data.pkl", pkl}, {"a/data/0", data}, {"a/version", "3\n"}, {"a/byteorder", "middle"}},
       "unknown byte order 'middle'"},
      {"missing storage",
       {{"a/data.pkl", pkl}, {"a/version", "3\n"}},
       "refers to storage '0', but there is no record data/0"},
      {"short storage",
       {{"a/data.pkl", pkl}, {"a/data/0", data.substr(0, 4)}, {"a/version", "3\n"}},
       "should hold 2 elements of torch.float32, but data/0 is 4 bytes"},
      {"duplicate record",
       {{"a/data.pkl", pkl}, {"a/data/0", data}, {"a/data/0", data}, {"a/version", "3\n"}},
       "appears twice"},
      {"torchscript",
       {{"a/data.pkl", pkl}, {"a/constants.pkl", pkl}, {"a/version", "3\n"}},
       "TorchScript archive"},
  };
  for (const Case& c : cases) {
    const std::string message = read_error(zip_of(c.records), Format::TorchZip);
    EXPECT_TRUE(contains(message, c.message)) << c.name << ": " << message;
  }
  EXPECT_NO_THROW(read(zip_of({{"a/data.pkl", pkl}, {"a/data/0", data}, {"a/version", "3\n"}}),
                       Format::TorchZip));
  // A CRC that does not match is refused; a CRC of 0 means "not computed" (compute_crc32=False).
  std::string bad_crc = zip_of({{"a/data.pkl", pkl}, {"a/data/0", data}, {"a/version", "3\n"}});
  const size_t second = bad_crc.find("PK\1\2", central_of(bad_crc) + 4);
  bad_crc[second + 16] ^= 1;
  EXPECT_TRUE(
      contains(read_error(bad_crc, Format::TorchZip), "the CRC of 'a/data/0' does not match"));
  std::memset(bad_crc.data() + second + 16, 0, 4);
  EXPECT_NO_THROW(read(bad_crc, Format::TorchZip));
}

TEST(SerializeTorchFile, BigEndianStoragesAreSwapped) {
  const std::string pkl = kProto + kOrderedDict + "(" + unicode("w") +
                          tensor_op("DoubleStorage", "0", 2, 0, tuple_of({2}), tuple_of({1})) +
                          unicode("b") +
                          tensor_op("BoolStorage", "1", 2, 0, tuple_of({2}), tuple_of({1})) + "u.";
  const std::string data = "\x3f\xf0\0\0\0\0\0\0\xc0\0\0\0\0\0\0\0"s;  // 1.0, -2.0
  const auto contents = read(zip_of({{"a/data.pkl", pkl},
                                     {"a/byteorder", "big"},
                                     {"a/data/0", data},
                                     {"a/data/1", "\x00\x07"s},
                                     {"a/version", "3\n"}}),
                             Format::TorchZip);
  EXPECT_EQ(contents.byteorder, "big");
  EXPECT_EQ(test::values(contents.root.find("w")->as_tensor()), (std::vector<double>{1, -2}));
  // A bool byte other than 0 and 1 reads as True.
  EXPECT_EQ(test::values(contents.root.find("b")->as_tensor()), (std::vector<double>{0, 1}));
}

TEST(SerializeTorchFile, RecognizesForeignFormatsAndSaysHowToResave) {
  const std::string legacy("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e", 15);
  std::string message = read_error(legacy + "more", Format::TorchZip);
  EXPECT_TRUE(contains(message, "legacy torch.save file")) << message;
  EXPECT_TRUE(contains(message, "torch.save(model.state_dict(), path)")) << message;
  message = read_error("PYTORCH1 and more", Format::TorchZip);
  EXPECT_TRUE(contains(message, "PYTORCH1")) << message;
  std::string tar(600, '\0');
  tar.replace(257, 5, "ustar");
  EXPECT_TRUE(contains(read_error(tar, Format::TorchZip), "tar archive"));
  EXPECT_TRUE(contains(read_error("hello world", Format::TorchZip), "not a PyTorch file"));
  message = read_error(zip_of({{"m/data.pkl", kProto + "N."}, {"m/constants.pkl", "x"}}),
                       Format::TorchZip);
  EXPECT_TRUE(contains(message, "torch.jit.load(path).state_dict()")) << message;
}

// ---- the engine API ---------------------------------------------------------------------------

class SerializeApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("nns_serialize_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> folder() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  std::filesystem::path dir_;
};

std::shared_ptr<nn::Sequential> small_net() {
  manual_seed(0);
  return std::make_shared<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::BatchNorm1d>(3),
      std::make_shared<nn::Linear>(3, 2)});
}

TEST_F(SerializeApi, StateDictFilesRoundTripInBothFormats) {
  auto net = small_net();
  for (const std::string name : {"net.pt", "net.pth", "net.bin", "net.safetensors"}) {
    serialize::save_state_dict_file(net->state_dict(), path(name));
    expect_same_state_dict(serialize::load_state_dict_file(path(name)), net->state_dict(),
                           name != "net.safetensors");
  }
  EXPECT_EQ(folder(),
            (std::vector<std::string>{"net.bin", "net.pt", "net.pth", "net.safetensors"}));
  // The archive folder inside a .pt file is the file's stem, as torch.save names it.
  const serialize::FileSource src(path("net.pt"));
  EXPECT_EQ(serialize::read_zip_directory(src).front().name, "net/data.pkl");
}

TEST_F(SerializeApi, AFailedSaveLeavesTheTargetUntouchedAndNoTemporary) {
  serialize::save_state_dict_file(small_net()->state_dict(), path("net.safetensors"));
  std::ifstream before_in(path("net.safetensors"), std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(before_in)), {});
  nn::StateDict bad;
  bad.insert("w", tensor({1}));
  bad.insert("undefined", Tensor());
  EXPECT_THROW(serialize::save_state_dict_file(bad, path("net.safetensors")), ValueError);
  std::ifstream after_in(path("net.safetensors"), std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(after_in)), {});
  EXPECT_EQ(before, after);
  EXPECT_EQ(folder(), std::vector<std::string>{"net.safetensors"});
  EXPECT_TRUE(contains(error_of<FileError>([&] {
                         serialize::save_state_dict_file(bad, path("no/such/folder/x.pt"));
                       }),
                       "cannot create a temporary file"));
  EXPECT_TRUE(
      contains(error_of<ValueError>([&] { serialize::save_state_dict_file(bad, path("x.onnx")); }),
               "cannot tell the file format of"));
}

TEST_F(SerializeApi, TheContentMustMatchTheExtension) {
  serialize::save_state_dict_file(small_net()->state_dict(), path("a.safetensors"));
  std::filesystem::copy_file(path("a.safetensors"), path("a.pt"));
  std::string message = error_of<FileError>([&] { serialize::load_state_dict_file(path("a.pt")); });
  EXPECT_TRUE(contains(message,
                       "the extension says PyTorch zip (torch.save), but the content is "
                       "a safetensors file; rename it to .safetensors"))
      << message;
  // Other extensions are read by their content.
  std::filesystem::copy_file(path("a.safetensors"), path("a.weights"));
  EXPECT_EQ(serialize::load_state_dict_file(path("a.weights")).size(), 9u);
  message = error_of<FileError>([&] { serialize::load_state_dict_file(path("missing.pt")); });
  EXPECT_TRUE(contains(message, "missing.pt: cannot open")) << message;
}

TEST_F(SerializeApi, CheckpointsKeepModelOptimizerAndExtraEntries) {
  auto net = small_net();
  optim::SGDOptions options(0.1);
  options.momentum = 0.9;
  optim::SGD sgd(net->parameters(), options);
  const Tensor x = randn({5, 4});
  (*net)(x).sum().backward();
  sgd.step();

  serialize::Checkpoint ckpt{net->state_dict(), sgd.state_dict(), {}};
  ckpt.extra.emplace_back("epoch", PyValue(5));
  ckpt.extra.emplace_back("loss", PyValue(0.25));
  serialize::save_checkpoint(ckpt, path("ckpt.pt"));

  const serialize::Checkpoint back = serialize::load_checkpoint(path("ckpt.pt"));
  expect_same_state_dict(back.model, net->state_dict(), true);
  ASSERT_TRUE(back.optimizer.has_value());
  EXPECT_EQ(back.find("epoch")->as_int(), 5);
  EXPECT_EQ(back.find("loss")->as_float(), 0.25);
  EXPECT_EQ(back.find("missing"), nullptr);

  // A fresh optimizer resumes from the file with the same momentum buffers.
  auto net2 = small_net();
  serialize::load_into(*net2, back.model, true);
  optim::SGD sgd2(net2->parameters(), optim::SGDOptions(0.5));
  sgd2.load_state_dict(*back.optimizer);
  EXPECT_EQ(sgd2.param_groups()[0].options().get_lr(), 0.1);
  const auto params = net->parameters();
  const auto params2 = net2->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    expect_identical(*sgd2.state(params2[i]).find("momentum_buffer"),
                     *sgd.state(params[i]).find("momentum_buffer"));
  }
  // The file holds PyTorch's layout: {'state': {0: {...}}, 'param_groups': [{..., 'params'}]}.
  const PyValue root = serialize::read_file(path("ckpt.pt")).root;
  const PyValue* groups = root.find("optimizer_state_dict")->find("param_groups");
  EXPECT_EQ(groups->items()[0].pairs().back().first.as_string(), "params");
  EXPECT_EQ(groups->items()[0].find("params")->repr(), "[0, 1, 2, 3, 4, 5]");
  EXPECT_TRUE(
      root.find("optimizer_state_dict")->find("state")->pairs()[0].first.is(PyValue::Kind::Int));

  // A checkpoint is not a plain state dict, nor a safetensors file.
  EXPECT_TRUE(
      contains(error_of<FileError>([&] { serialize::load_state_dict_file(path("ckpt.pt")); }),
               "a checkpoint (a dict with model_state_dict)"));
  EXPECT_THROW(serialize::save_checkpoint(ckpt, path("ckpt.safetensors")), ValueError);
  // A plain state dict file loads as a checkpoint with the model alone.
  serialize::save_state_dict_file(net->state_dict(), path("plain.safetensors"));
  const serialize::Checkpoint plain = serialize::load_checkpoint(path("plain.safetensors"));
  EXPECT_EQ(plain.model.size(), net->state_dict().size());
  EXPECT_FALSE(plain.optimizer.has_value());
}

TEST(SerializeOptimizerState, PyTorchsGroupsLoadInTheirOrder) {
  // SGD's group as PyTorch 2.x writes it, plus Adam's betas: every entry is kept, None too.
  const PyValue group = PyValue::dict({{"lr", 0.01},
                                       {"momentum", 0.9},
                                       {"dampening", 0},
                                       {"nesterov", false},
                                       {"foreach", PyValue()},
                                       {"betas", PyValue::tuple({0.9, 0.999})},
                                       {"params", PyValue::list({0, 1})}});
  const PyValue state =
      PyValue::dict({{0, PyValue::dict({{"momentum_buffer", tensor({1})}, {"step", 3}})}});
  const PyValue py = PyValue::dict({{"state", state}, {"param_groups", PyValue::list({group})}});
  const optim::OptimizerStateDict sd = serialize::optimizer_state_from_py(py, "t");
  ASSERT_EQ(sd.param_groups.size(), 1u);
  const optim::OptionList& options = sd.param_groups[0].options;
  std::vector<std::string> names;
  for (const auto& [name, value] : options) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"lr", "momentum", "dampening", "nesterov", "foreach",
                                             "betas"}));
  EXPECT_EQ(std::get<double>(options[2].second), 0.0);
  EXPECT_FALSE(std::get<bool>(options[3].second));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(options[4].second));
  EXPECT_EQ(std::get<std::vector<double>>(options[5].second), (std::vector<double>{0.9, 0.999}));
  // And back: the same tree, ints as floats (PyTorch reads 0.0 where it wrote 0).
  EXPECT_EQ(serialize::optimizer_state_to_py(sd).find("param_groups")->repr(),
            "[{'lr': 0.01, 'momentum': 0.9, 'dampening': 0.0, 'nesterov': False, 'foreach': None, "
            "'betas': (0.9, 0.999), 'params': [0, 1]}]");
  EXPECT_EQ(sd.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(sd.state.at(0).find("step")->item(), 3.0);

  const std::string message = error_of<FileError>([&] {
    serialize::optimizer_state_from_py(
        PyValue::dict({{"state", PyValue::dict({})},
                       {"param_groups", PyValue::list({PyValue::dict({{"lr", "fast"}})})}}),
        "ckpt.pt");
  });
  EXPECT_TRUE(contains(message, "param group option 'lr' is 'fast'")) << message;
}

TEST(SerializeLoadInto, ReportsAndChangesNothingWhenTheLoadFails) {
  auto net = small_net();
  nn::StateDict sd = small_net()->state_dict();
  // Another seed's weights, one key missing, one unexpected, one of the wrong shape.
  nn::StateDict file;
  for (const auto& item : sd) {
    if (item.key() == "2.bias") continue;
    const Tensor& t = item.value();
    file.insert(item.key(), t.is_floating_point() ? t + 1.0 : t);
  }
  file.insert("extra.weight", tensor({1}));

  serialize::LoadReport report = serialize::compare_state_dict(*net, file);
  EXPECT_EQ(report.missing, std::vector<std::string>{"2.bias"});
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"extra.weight"});
  EXPECT_TRUE(report.wrong_shape.empty());
  EXPECT_EQ(report.matched.size(), sd.size() - 1);
  EXPECT_FALSE(report.loadable(true));
  EXPECT_TRUE(report.loadable(false));

  const std::vector<double> before = test::values(*net->state_dict().find("0.weight"));
  try {
    serialize::load_into(*net, file, true);
    ADD_FAILURE() << "strict load succeeded";
  } catch (const serialize::LoadError& e) {
    EXPECT_EQ(e.report.missing, std::vector<std::string>{"2.bias"});
    EXPECT_TRUE(contains(e.what(), "Missing key(s) in state_dict: \"2.bias\"")) << e.what();
  }
  EXPECT_EQ(test::values(*net->state_dict().find("0.weight")), before);

  report = serialize::load_into(*net, file, false);
  EXPECT_EQ(report.unexpected, std::vector<std::string>{"extra.weight"});
  EXPECT_EQ(test::values(*net->state_dict().find("0.weight")),
            test::values(file.find("0.weight")->to(kFloat64)));

  // A wrong shape fails even when not strict, and names both shapes.
  file.insert_or_assign("0.weight", zeros({4, 3}));
  const std::vector<double> now = test::values(*net->state_dict().find("0.bias"));
  try {
    serialize::load_into(*net, file, false);
    ADD_FAILURE() << "load with a wrong shape succeeded";
  } catch (const serialize::LoadError& e) {
    ASSERT_EQ(e.report.wrong_shape.size(), 1u);
    EXPECT_EQ(e.report.wrong_shape[0].key, "0.weight");
    EXPECT_EQ(e.report.wrong_shape[0].expected, (Shape{3, 4}));
    EXPECT_EQ(e.report.wrong_shape[0].file, (Shape{4, 3}));
    EXPECT_TRUE(contains(e.report.str(),
                         "wrong shape: 0.weight: the module has [3, 4], the file has [4, 3]"))
        << e.report.str();
  }
  EXPECT_EQ(test::values(*net->state_dict().find("0.bias")), now);
}

}  // namespace
}  // namespace nns
