// SPDX-License-Identifier: GPL-3.0-or-later
// set_flush_denormal: per thread, like torch.set_flush_denormal. Each case runs on a thread of
// its own so that the test process's main thread keeps its default mode.
#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "engine/cpu/flush_denormal.h"
#include "engine/ops/elementwise.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/tensor.h"

namespace nns {
namespace {

template <class F>
void on_a_thread_of_its_own(F body) {
  std::thread thread(body);
  thread.join();
}

TEST(FlushDenormal, FlushesOnTheCallingThreadOnlyAndCanBeCleared) {
  const float denormal = std::numeric_limits<float>::denorm_min() * 1000;
  ASSERT_GT(denormal, 0.0f);
  on_a_thread_of_its_own([&] {
    EXPECT_FALSE(flush_denormal());
    ASSERT_TRUE(set_flush_denormal(true));
    EXPECT_TRUE(flush_denormal());
    // Through the engine's kernels, as torch's test does: the denormal reads as zero.
    Tensor t = tensor({denormal, 1.0f});
    Tensor doubled = mul(t, 2.0);
    EXPECT_EQ(doubled[0].item(), 0.0);
    EXPECT_EQ(doubled[1].item(), 2.0);
    // A thread started from here inherits the mode.
    on_a_thread_of_its_own([] { EXPECT_TRUE(flush_denormal()); });
    ASSERT_TRUE(set_flush_denormal(false));
    EXPECT_FALSE(flush_denormal());
    EXPECT_GT(mul(tensor({denormal}), 2.0).item(), 0.0);
  });
  // The other thread's setting never reached this one.
  EXPECT_FALSE(flush_denormal());
}

}  // namespace
}  // namespace nns
