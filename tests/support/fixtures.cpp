// SPDX-License-Identifier: GPL-3.0-or-later
#include "support/fixtures.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "engine/tensor/factories.h"

namespace nns::test {
namespace {

const char* kRegenerate = "/usr/bin/python3 tests/fixtures/make_fixtures.py";

Dtype parse_dtype(const std::string& name, const std::string& where) {
  if (name == "float32") return kFloat32;
  if (name == "float64") return kFloat64;
  if (name == "float16") return kFloat16;
  if (name == "bfloat16") return kBFloat16;
  if (name == "int64") return kInt64;
  if (name == "bool") return kBool;
  throw std::runtime_error(where + ": unknown dtype \"" + name + "\"");
}

// Numbers, or the strings make_fixtures.py writes for the values JSON cannot hold.
double parse_number(const nlohmann::json& v, const std::string& where) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  throw std::runtime_error(where + ": expected a number, got " + v.dump());
}

bool same_value(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// Shared checks of exactly_equal and all_close; fills `got` with the actual values.
::testing::AssertionResult same_layout(const Tensor& actual, const FixtureTensor& expected,
                                       std::vector<double>& got) {
  if (!actual.defined()) return ::testing::AssertionFailure() << expected.name << ": undefined";
  if (actual.dtype() != expected.dtype) {
    return ::testing::AssertionFailure()
           << expected.name << ": dtype " << dtype_name(actual.dtype()) << ", expected "
           << dtype_name(expected.dtype);
  }
  if (actual.sizes() != expected.shape) {
    return ::testing::AssertionFailure() << expected.name << ": shape " << shape_str(actual.sizes())
                                         << ", expected " << shape_str(expected.shape);
  }
  got = actual.to_vector<double>();
  return ::testing::AssertionSuccess();
}

template <class Match>
::testing::AssertionResult compare(const Tensor& actual, const FixtureTensor& expected,
                                   Match match) {
  std::vector<double> got;
  ::testing::AssertionResult layout = same_layout(actual, expected, got);
  if (!layout) return layout;
  size_t bad = 0;
  std::ostringstream detail;
  for (size_t i = 0; i < got.size(); ++i) {
    if (match(got[i], expected.data[i])) continue;
    if (bad < 5) {
      detail << "\n  [" << i << "] " << fmt(got[i]) << ", expected " << fmt(expected.data[i]);
    }
    ++bad;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expected.name << ": " << bad << " of " << got.size()
                                       << " elements differ" << detail.str();
}

}  // namespace

Tensor FixtureTensor::to_tensor() const {
  return from_vector(data, shape, kFloat64).to(dtype);
}

const Fixtures& Fixtures::load(const std::string& area) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Fixtures>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = cache.find(area);
  if (found != cache.end()) return *found->second;

  auto fx = std::make_unique<Fixtures>();
  fx->area_ = area;
  fx->path_ = std::string(NNS_FIXTURE_DIR) + "/" + area + ".json";
  std::ifstream in(fx->path_);
  if (!in) {
    throw std::runtime_error("fixtures: cannot open " + fx->path_ + "; make it with `" +
                             kRegenerate + " --only " + area + "`");
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("fixtures: " + fx->path_ + " is not valid JSON (" + e.what() +
                             "); regenerate it with `" + kRegenerate + "`");
  }
  // Named locals: a range-for over items() of a temporary would dangle.
  const nlohmann::json tensors = doc.value("tensors", nlohmann::json::object());
  const nlohmann::json scalars = doc.value("scalars", nlohmann::json::object());
  const nlohmann::json strings = doc.value("strings", nlohmann::json::object());
  for (const auto& [name, entry] : tensors.items()) {
    const std::string where = fx->path_ + ": tensor \"" + name + "\"";
    FixtureTensor t;
    t.name = name;
    t.shape = entry.at("shape").get<Shape>();
    t.dtype = parse_dtype(entry.at("dtype").get<std::string>(), where);
    for (const auto& v : entry.at("data")) t.data.push_back(parse_number(v, where));
    if (static_cast<int64_t>(t.data.size()) != shape_numel(t.shape)) {
      throw std::runtime_error(where + ": " + std::to_string(t.data.size()) + " values for shape " +
                               shape_str(t.shape));
    }
    fx->tensors_.emplace(name, std::move(t));
  }
  for (const auto& [name, v] : scalars.items()) {
    fx->scalars_[name] = parse_number(v, fx->path_ + ": scalar \"" + name + "\"");
  }
  for (const auto& [name, v] : strings.items()) {
    fx->strings_[name] = v.get<std::string>();
  }
  return *cache.emplace(area, std::move(fx)).first->second;
}

void Fixtures::missing(const char* kind, const std::string& name) const {
  throw std::runtime_error("fixtures: no " + std::string(kind) + " \"" + name + "\" in " + path_ +
                           "; add it to make_fixtures.py and run `" + kRegenerate + " --only " +
                           area_ + "`");
}

const FixtureTensor& Fixtures::tensor(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) missing("tensor", name);
  return it->second;
}

double Fixtures::scalar(const std::string& name) const {
  auto it = scalars_.find(name);
  if (it == scalars_.end()) missing("scalar", name);
  return it->second;
}

const std::string& Fixtures::string(const std::string& name) const {
  auto it = strings_.find(name);
  if (it == strings_.end()) missing("string", name);
  return it->second;
}

std::vector<std::string> Fixtures::tensor_names(const std::string& prefix) const {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors_) {
    if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
  }
  return names;
}

::testing::AssertionResult exactly_equal(const Tensor& actual, const FixtureTensor& expected) {
  return compare(actual, expected, same_value);
}

::testing::AssertionResult all_close(const Tensor& actual, const FixtureTensor& expected,
                                     double rtol, double atol) {
  return compare(actual, expected, [&](double a, double e) {
    if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
    if (a == e) return true;  // equal infinities
    return std::abs(a - e) <= atol + rtol * std::abs(e);
  });
}

int64_t checksum(const Tensor& t) {
  const Tensor c = t.contiguous();
  const size_t nbytes = static_cast<size_t>(c.numel()) * c.element_size();
  std::vector<unsigned char> bytes(static_cast<const unsigned char*>(c.raw_data()),
                                   static_cast<const unsigned char*>(c.raw_data()) + nbytes);
  bytes.resize((nbytes + 3) / 4 * 4, 0);
  constexpr uint64_t kModulus = (uint64_t{1} << 31) - 1;
  uint64_t h = 0;
  for (size_t i = 0; i < bytes.size(); i += 4) {
    const uint64_t word = uint64_t{bytes[i]} | uint64_t{bytes[i + 1]} << 8 |
                          uint64_t{bytes[i + 2]} << 16 | uint64_t{bytes[i + 3]} << 24;
    h = (h * 31 + word) % kModulus;
  }
  return static_cast<int64_t>(h);
}

}  // namespace nns::test
