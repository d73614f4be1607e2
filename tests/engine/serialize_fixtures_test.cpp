// SPDX-License-Identifier: GPL-3.0-or-later
// Every weight file of tests/fixtures/state_dict (made by real PyTorch and by
// make_state_dict_fixtures.py) read as its manifest.json says: keys in order, dtypes, shapes and
// values bit for bit, shared storages still shared, checkpoint trees, metadata; and every
// hostile, corrupt or foreign file refused with an nns::Error whose message names the file
// and the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "engine/serialize/serialize.h"

namespace nns {
namespace {

using json = nlohmann::ordered_json;  // keys in file order
using serialize::PyValue;

const std::string kDir = std::string(NNS_FIXTURE_DIR) + "/state_dict/";

const json& manifest() {
  static const json m = [] {
    std::ifstream in(kDir + "manifest.json");
    if (!in) throw std::runtime_error("cannot read " + kDir + "manifest.json");
    return json::parse(in);
  }();
  return m;
}

std::vector<std::string> files_where(bool (*pred)(const json&)) {
  std::vector<std::string> out;
  for (const auto& [name, entry] : manifest().at("files").items())
    if (pred(entry)) out.push_back(name);
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

Dtype dtype_of(const std::string& name) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  if (name == "float16") return kFloat16;
  if (name == "bfloat16") return kBFloat16;
  if (name == "int64") return kInt64;
  if (name == "bool") return kBool;
  throw std::runtime_error("manifest dtype " + name);
}

double expected_float(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    return s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<double>();
}

// Same dtype, shape and values: floats bit for bit as float64 (NaN equal to NaN, the sign of
// zero kept), int64 and bool exactly.
::testing::AssertionResult matches(const Tensor& t, const json& want) {
  const Dtype dtype = dtype_of(want.at("dtype").get<std::string>());
  if (t.dtype() != dtype)
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(t.dtype()) << ", expected " << dtype_name(dtype);
  const Shape shape = want.at("shape").get<Shape>();
  if (t.sizes() != shape) return ::testing::AssertionFailure() << "shape differs";
  const json& values = want.at("values");
  if (static_cast<size_t>(t.numel()) != values.size())
    return ::testing::AssertionFailure() << "numel " << t.numel() << " vs " << values.size();
  if (dtype == kInt64 || dtype == kBool) {
    const Tensor c = t.to(kInt64).contiguous();
    for (size_t i = 0; i < values.size(); ++i) {
      const int64_t want_i =
          dtype == kBool ? int64_t{values[i].get<bool>()} : values[i].get<int64_t>();
      if (c.data_ptr<int64_t>()[i] != want_i)
        return ::testing::AssertionFailure()
               << "element " << i << ": " << c.data_ptr<int64_t>()[i] << " vs " << want_i;
    }
    return ::testing::AssertionSuccess();
  }
  const Tensor c = t.to(kFloat64).contiguous();
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = c.data_ptr<double>()[i];
    const double want_d = expected_float(values[i]);
    const bool same = std::isnan(want_d)
                          ? std::isnan(got)
                          : got == want_d && std::signbit(got) == std::signbit(want_d);
    if (!same)
      return ::testing::AssertionFailure() << "element " << i << ": " << got << " vs " << want_d;
  }
  return ::testing::AssertionSuccess();
}

void expect_state_dict(const std::string& name, const nn::StateDict& sd, const json& tensors) {
  std::vector<std::string> keys, want_keys;
  for (const auto& item : sd) keys.push_back(item.key());
  for (const auto& [key, _] : tensors.items()) want_keys.push_back(key);
  ASSERT_EQ(keys, want_keys) << name;
  for (const auto& item : sd)
    EXPECT_TRUE(matches(item.value(), tensors.at(item.key()))) << name << ": " << item.key();
}

// A PyValue against the manifest's JSON form of a Python object (make_state_dict_fixtures.py's
// `tree`).
void expect_tree(const PyValue& got, const json& want, const json& tensors,
                 const std::string& where) {
  SCOPED_TRACE(where);
  if (want.is_null()) {
    EXPECT_TRUE(got.is_none());
  } else if (want.is_boolean()) {
    ASSERT_TRUE(got.is(PyValue::Kind::Bool));
    EXPECT_EQ(got.as_bool(), want.get<bool>());
  } else if (want.is_number_integer()) {
    ASSERT_TRUE(got.is(PyValue::Kind::Int)) << PyValue::kind_name(got.kind());
    EXPECT_EQ(got.as_int(), want.get<int64_t>());
  } else if (want.is_number_float() || (want.is_object() && want.contains("float"))) {
    ASSERT_TRUE(got.is(PyValue::Kind::Float)) << PyValue::kind_name(got.kind());
    const double w = expected_float(want.is_object() ? want.at("float") : want);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(got.as_float()));
    } else {
      EXPECT_EQ(got.as_float(), w);
    }
  } else if (want.is_string()) {
    ASSERT_TRUE(got.is(PyValue::Kind::String));
    EXPECT_EQ(got.as_string(), want.get<std::string>());
  } else if (want.is_array() || want.contains("tuple")) {
    const json& items = want.is_array() ? want : want.at("tuple");
    ASSERT_TRUE(got.is(want.is_array() ? PyValue::Kind::List : PyValue::Kind::Tuple))
        << PyValue::kind_name(got.kind());
    ASSERT_EQ(got.items().size(), items.size());
    for (size_t i = 0; i < items.size(); ++i)
      expect_tree(got.items()[i], items[i], tensors, where + "/" + std::to_string(i));
  } else if (want.contains("dict")) {
    ASSERT_TRUE(got.is_mapping()) << PyValue::kind_name(got.kind());
    const json& pairs = want.at("dict");
    ASSERT_EQ(got.pairs().size(), pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) {
      const auto& [key, value] = got.pairs()[i];
      const json& want_key = pairs[i][0];
      std::string key_text;
      if (want_key.is_string()) {
        ASSERT_TRUE(key.is(PyValue::Kind::String));
        EXPECT_EQ(key.as_string(), want_key.get<std::string>());
        key_text = key.as_string();
      } else {
        ASSERT_TRUE(key.is(PyValue::Kind::Int));
        EXPECT_EQ(key.as_int(), want_key.get<int64_t>());
        key_text = std::to_string(key.as_int());
      }
      expect_tree(value, pairs[i][1], tensors, where.empty() ? key_text : where + "/" + key_text);
    }
  } else {
    ASSERT_TRUE(want.contains("tensor"));
    ASSERT_TRUE(got.is(PyValue::Kind::Tensor)) << PyValue::kind_name(got.kind());
    EXPECT_TRUE(matches(got.as_tensor(), tensors.at(want.at("tensor").get<std::string>())));
  }
}

TEST(SerializeFixtures, StateDictFilesGiveTheirTensorsInOrder) {
  const auto names =
      files_where([](const json& e) { return e.at("expect") == "ok" && !e.contains("tree"); });
  ASSERT_GE(names.size(), 20u);
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const json& entry = manifest().at("files").at(name);
    nn::StateDict sd;
    ASSERT_NO_THROW(sd = serialize::load_state_dict_file(kDir + name));
    expect_state_dict(name, sd, entry.at("tensors"));
  }
}

TEST(SerializeFixtures, SharedStoragesStayShared) {
  const auto names = files_where([](const json& e) { return e.contains("aliases"); });
  ASSERT_GE(names.size(), 3u);
  for (const auto& name : names) {
    const nn::StateDict sd = serialize::load_state_dict_file(kDir + name);
    for (const auto& group : manifest().at("files").at(name).at("aliases")) {
      const Tensor& first = *sd.find(group[0].get<std::string>());
      for (const auto& key : group)
        EXPECT_EQ(sd.find(key.get<std::string>())->storage(), first.storage())
            << name << ": " << key;
    }
  }
  // A view keeps its offset into the whole saved storage (spec C.3).
  const nn::StateDict views = serialize::load_state_dict_file(kDir + "view_offset.pt");
  EXPECT_EQ(views.find("slice")->storage_offset(), 2);
  EXPECT_EQ(views.find("element")->storage_offset(), 11);
}

TEST(SerializeFixtures, ModuleMetadataIsAnAttributeNotAKey) {
  for (const std::string name : {"bignet.pt", "features_classifier.pt"}) {
    const serialize::FileContents contents = serialize::read_file(kDir + name);
    ASSERT_TRUE(contents.root.is(PyValue::Kind::OrderedDict)) << name;
    const json& want = manifest().at("files").at(name).at("module_metadata");
    const PyValue* metadata = nullptr;
    for (const auto& [key, value] : contents.root.attributes())
      if (key.is(PyValue::Kind::String) && key.as_string() == "_metadata") metadata = &value;
    ASSERT_NE(metadata, nullptr) << name;
    ASSERT_EQ(metadata->pairs().size(), want.size()) << name;
    for (const auto& [prefix, info] : metadata->pairs())
      EXPECT_EQ(info.find("version")->as_int(),
                want.at(prefix.as_string()).at("version").get<int64_t>());
    EXPECT_EQ(contents.root.find("_metadata"), nullptr) << name;
  }
}

TEST(SerializeFixtures, CheckpointsGiveTheirWholeTree) {
  const auto names = files_where([](const json& e) { return e.contains("tree"); });
  ASSERT_EQ(names.size(), 2u);
  for (const auto& name : names) {
    const json& entry = manifest().at("files").at(name);
    const serialize::FileContents contents = serialize::read_file(kDir + name);
    expect_tree(contents.root, entry.at("tree"), entry.at("tensors"), "");

    const serialize::Checkpoint ckpt = serialize::load_checkpoint(kDir + name);
    EXPECT_EQ(ckpt.model.size(), 4u) << name;
    ASSERT_TRUE(ckpt.optimizer.has_value()) << name;
    EXPECT_EQ(ckpt.optimizer->state.size(), 4u) << name;
    ASSERT_EQ(ckpt.optimizer->param_groups.size(), 1u) << name;
    EXPECT_EQ(ckpt.optimizer->param_groups[0].params, (std::vector<int64_t>{0, 1, 2, 3}));
    ASSERT_NE(ckpt.find("epoch"), nullptr);
    EXPECT_EQ(ckpt.find("epoch")->as_int(), 5);
    EXPECT_EQ(ckpt.find("loss")->as_float(), 0.25);
  }
  const serialize::Checkpoint sgd = serialize::load_checkpoint(kDir + "checkpoint_sgd.pt");
  EXPECT_NE(sgd.optimizer->state.at(0).find("momentum_buffer"), nullptr);
  const serialize::Checkpoint adam = serialize::load_checkpoint(kDir + "checkpoint_adam.pt");
  EXPECT_NE(adam.optimizer->state.at(1).find("exp_avg_sq"), nullptr);
}

TEST(SerializeFixtures, SafetensorsMetadataIsKept) {
  const auto names = files_where(
      [](const json& e) { return e.contains("safetensors_metadata") && e.at("expect") == "ok"; });
  ASSERT_GE(names.size(), 2u);
  for (const auto& name : names) {
    const serialize::FileContents contents = serialize::read_file(kDir + name);
    std::vector<std::pair<std::string, std::string>> want;
    for (const auto& [key, value] :
         manifest().at("files").at(name).at("safetensors_metadata").items())
      want.emplace_back(key, value.get<std::string>());
    EXPECT_EQ(contents.metadata, want) << name;
  }
}

// Each refusal is an nns::Error naming the file and containing the manifest's words.
void expect_refused(const std::string& name, const json& entry) {
  SCOPED_TRACE(name);
  try {
    serialize::load_state_dict_file(kDir + name);
    ADD_FAILURE() << name << " loaded";
  } catch (const Error& e) {
    const std::string message = lower(e.what());
    EXPECT_NE(message.find(lower(name)), std::string::npos) << e.what();
    for (const auto& needle : entry.at("error_contains"))
      EXPECT_NE(message.find(lower(needle.get<std::string>())), std::string::npos)
          << "'" << needle << "' not in: " << e.what();
  }
}

TEST(SerializeFixtures, HostileCorruptAndForeignFilesAreRefused) {
  const auto names = files_where([](const json& e) { return e.at("expect") == "error"; });
  ASSERT_GE(names.size(), 50u);
  for (const auto& name : names) expect_refused(name, manifest().at("files").at(name));
}

TEST(SerializeFixtures, OptionalFeaturesWorkOrAreRefusedClearly) {
  for (const auto& name :
       files_where([](const json& e) { return e.at("expect") == "ok_or_error"; })) {
    const json& entry = manifest().at("files").at(name);
    nn::StateDict sd;
    try {
      sd = serialize::load_state_dict_file(kDir + name);
    } catch (const Error&) {
      expect_refused(name, entry);
      continue;
    }
    expect_state_dict(name, sd, entry.at("tensors"));
  }
}

}  // namespace
}  // namespace nns
