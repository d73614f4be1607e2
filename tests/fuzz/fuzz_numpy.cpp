// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: NumPy's .npy and .npz readers (engine/data/numpy.h) on arbitrary bytes, the
// zip directory and DEFLATE entries of an .npz included. A user's arrays can come from anywhere,
// so a bad file must be an nns::Error (FileError, ValueError) naming it; anything else (a crash,
// an allocation the file cannot back, a hang) is a finding.
#include <cstddef>
#include <cstdint>

#include "engine/data/numpy.h"
#include "engine/serialize/bytes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nns::serialize::MemorySource source(data, size, "fuzz.npz");
  try {
    nns::data::read_npz(source);
  } catch (const nns::Error&) {
  }
  try {
    nns::data::read_npy(source);
  } catch (const nns::Error&) {
  }
  return 0;
}
