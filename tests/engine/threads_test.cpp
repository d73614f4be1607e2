// SPDX-License-Identifier: GPL-3.0-or-later
// set_num_threads / get_num_threads: the count every later product may use (oneDNN's OpenMP
// threads, per product by size) and OpenBLAS's when the process's BLAS is OpenBLAS (as on Debian
// with libopenblas0-pthread, what the test command installs).
#include <gtest/gtest.h>

#include "engine/cpu/threads.h"

namespace nns {
namespace {

TEST(Threads, SetNumThreadsReachesTheLibrariesOrSaysItCannot) {
  const int before = get_num_threads();
  ASSERT_GE(before, 1);
  if (!set_num_threads(1)) {
    // Neither oneDNN nor OpenBLAS: every product runs on the calling thread, and the count
    // says so.
    EXPECT_EQ(get_num_threads(), 1);
    GTEST_SKIP() << "no library here multiplies on more than one thread";
  }
  EXPECT_EQ(get_num_threads(), 1);
  // Never below one.
  ASSERT_TRUE(set_num_threads(0));
  EXPECT_EQ(get_num_threads(), 1);
  ASSERT_TRUE(set_num_threads(before));
  EXPECT_EQ(get_num_threads(), before);
}

}  // namespace
}  // namespace nns
