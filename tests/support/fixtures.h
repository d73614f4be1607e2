// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Fixtures made by real PyTorch (tests/fixtures/make_fixtures.py), loaded by area:
//
//   const auto& fx = nns::test::Fixtures::load("random");
//   const nns::test::FixtureTensor& want = fx.tensor("rand.f32.seed0.n7");
//   nns::manual_seed(0);
//   EXPECT_TRUE(nns::test::exactly_equal(nns::rand({7}), want));
//
// A missing file or name throws std::runtime_error naming it and the command that makes it.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns::test {

// A tensor as PyTorch recorded it: shape, dtype and the elements in row-major order as
// float64 (exact for every float32/float64 value, and for integers up to 2^53).
struct FixtureTensor {
  std::string name;
  Shape shape;
  Dtype dtype = kFloat32;
  std::vector<double> data;

  // The values as an engine tensor of the recorded dtype.
  Tensor to_tensor() const;
};

class Fixtures {
 public:
  // Loads NNS_FIXTURE_DIR/<area>.json once per process; later calls return the same object.
  static const Fixtures& load(const std::string& area);

  const std::string& area() const { return area_; }
  const FixtureTensor& tensor(const std::string& name) const;
  double scalar(const std::string& name) const;
  const std::string& string(const std::string& name) const;
  bool has_tensor(const std::string& name) const { return tensors_.count(name) != 0; }
  // The tensor names that start with prefix, sorted, for tests that loop over cases.
  std::vector<std::string> tensor_names(const std::string& prefix = "") const;

 private:
  [[noreturn]] void missing(const char* kind, const std::string& name) const;

  std::string area_;
  std::string path_;
  std::map<std::string, FixtureTensor> tensors_;
  std::map<std::string, double> scalars_;
  std::map<std::string, std::string> strings_;
};

// Same dtype, same shape and every element bit for bit (NaN equal to NaN); the failure
// message names the first differing elements.
::testing::AssertionResult exactly_equal(const Tensor& actual, const FixtureTensor& expected);

// Same dtype and shape, and |actual - expected| <= atol + rtol * |expected| elementwise, as
// torch.allclose (NaN equal to NaN).
::testing::AssertionResult all_close(const Tensor& actual, const FixtureTensor& expected,
                                     double rtol = 1e-5, double atol = 1e-8);

// The position-sensitive hash of a tensor's bytes that make_fixtures.py's checksum() writes,
// for tensors too large to store.
int64_t checksum(const Tensor& t);

}  // namespace nns::test
