// SPDX-License-Identifier: GPL-3.0-or-later
// The engine is plain C++: no file under engine/ may include a Qt header.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

namespace {

TEST(EngineHasNoQt, NoFileIncludesAQtHeader) {
  const std::filesystem::path engine = std::filesystem::path(NNS_SOURCE_DIR) / "engine";
  ASSERT_TRUE(std::filesystem::is_directory(engine)) << engine;
  const std::regex qt_include(R"(^\s*#\s*include\s*[<"](Q[A-Za-z]|Qt[A-Za-z]*/))");
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(engine)) {
    if (!entry.is_regular_file()) continue;
    const auto ext = entry.path().extension();
    if (ext != ".h" && ext != ".cpp" && ext != ".cu" && ext != ".cuh") continue;
    ++files;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      EXPECT_FALSE(std::regex_search(line, qt_include))
          << entry.path().string() << ":" << number << " includes Qt: " << line;
    }
  }
  EXPECT_GT(files, 10);
}

}  // namespace
