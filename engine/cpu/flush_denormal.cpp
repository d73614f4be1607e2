// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/cpu/flush_denormal.h"

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define NNS_HAVE_MXCSR 1
#endif

namespace nns {

#ifdef NNS_HAVE_MXCSR
namespace {
// MXCSR bit 15 flushes denormal results to zero (FTZ); bit 6 reads denormal inputs as zero
// (DAZ). Both are needed: FTZ alone still pays for denormals already in memory.
constexpr unsigned kFlushToZero = 1u << 15;
constexpr unsigned kDenormalsAreZero = 1u << 6;
constexpr unsigned kBoth = kFlushToZero | kDenormalsAreZero;
}  // namespace

bool set_flush_denormal(bool mode) {
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(mode ? (csr | kBoth) : (csr & ~kBoth));
  return true;
}

bool flush_denormal() {
  return (_mm_getcsr() & kBoth) == kBoth;
}
#else
bool set_flush_denormal(bool) {
  return false;
}

bool flush_denormal() {
  return false;
}
#endif

}  // namespace nns
