// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: a whole torch.save file (zip directory, records, version, byteorder and
// the pickle) on arbitrary bytes. Bad input must be an nns::Error; anything else is a finding.
#include <cstddef>
#include <cstdint>

#include "engine/serialize/serialize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    nns::serialize::read_bytes(data, size, nns::serialize::Format::TorchZip, "fuzz");
  } catch (const nns::Error&) {
  }
  return 0;
}
