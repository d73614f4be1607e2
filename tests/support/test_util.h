// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small helpers shared by the engine's test files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace nns::test {

// The elements of t in row-major order, as doubles.
inline std::vector<double> values(const Tensor& t) {
  return t.to_vector<double>();
}

// The message of the error E that fn throws; a test failure if it throws nothing.
template <class E, class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

// A message check that shows the message when it fails: fn throws E, whose message holds every
// one of `parts`.
template <class E, class Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  const std::string message = error_of<E>(fn);
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

// A fresh folder for each test (below gtest's TempDir, named after the suite and the test),
// removed after it, and files written into it.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("nns_" + std::string(info->test_suite_name()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` (bytes as they are) to the file `name` in the folder; its path.
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::filesystem::path dir_;
};

}  // namespace nns::test
