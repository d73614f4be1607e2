// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the safetensors reader on arbitrary bytes. A bad file must be a
// FileError (or another nns::Error); anything else (a crash, a sanitizer report, another
// exception, a hang, a huge allocation) is a finding.
#include <cstddef>
#include <cstdint>

#include "engine/serialize/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nns::serialize::read_bytes(data, size, nns::serialize::Format::Safetensors, "fuzz");
  } catch (const nns::Error&) {
  }
  return 0;
}
