// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the project-file (.nns) reader on arbitrary text. A bad file must be an
// nns::Error (a ValueError naming the field); anything else is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "engine/graph/project.h"
#include "engine/tensor/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nns::graph::parse_project(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const nns::Error&) {
  }
  return 0;
}
