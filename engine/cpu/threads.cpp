// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/cpu/threads.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>

#ifdef NNS_USE_ONEDNN
#include <omp.h>
#endif

namespace nns {

namespace {

// Looked up at run time: the BLAS is chosen by Debian's alternatives, and only OpenBLAS has
// these entry points (a reference BLAS or none at all is single-threaded anyway).
template <class Fn>
Fn openblas_entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// 0 until set_num_threads: then the libraries' own defaults hold.
std::atomic<int> g_num_threads{0};

// The count before anyone set one: OpenBLAS's default (OPENBLAS_NUM_THREADS, else the cores),
// read before pin_openblas may change it.
int default_num_threads() {
  static const int threads = [] {
    auto get = openblas_entry<int (*)()>("openblas_get_num_threads");
    if (get) return get();
#ifdef NNS_USE_ONEDNN
    return omp_get_max_threads();
#else
    return 1;
#endif
  }();
  return threads;
}

#ifdef NNS_USE_ONEDNN
// With oneDNN, OpenBLAS multiplies only what oneDNN does slower (and float64), on one thread:
// oneDNN's OpenMP threads are the parallel ones. Two pools whose idle threads both spin fought
// over the two cores: nnstudio-cli trained the digits CNN at 143-262 steps/s with both
// threaded, against 505 on one thread.
void pin_openblas() {
  static const bool pinned = [] {
    default_num_threads();
    if (auto set = openblas_entry<void (*)(int)>("openblas_set_num_threads")) set(1);
    return true;
  }();
  (void)pinned;
}
#endif

}  // namespace

bool set_num_threads(int threads) {
  threads = std::max(threads, 1);
#ifdef NNS_USE_ONEDNN
  pin_openblas();
  g_num_threads = threads;
  return true;
#else
  auto set = openblas_entry<void (*)(int)>("openblas_set_num_threads");
  if (!set) return false;
  set(threads);
  g_num_threads = threads;
  return true;
#endif
}

int get_num_threads() {
  if (const int set = g_num_threads.load(); set > 0) return set;
  return default_num_threads();
}

void use_threads_for_gemm(int64_t m, int64_t n, int64_t k) {
#ifdef NNS_USE_ONEDNN
  pin_openblas();
  // Below this many multiply-adds a second thread costs more than it saves. Alone, oneDNN's
  // sgemm on one / two threads (wall, this 2-core machine, 2026-11-26): 256x64x64 11.0 / 13.7
  // us, 128x256x128 42.9 / 33.1, 16x4096x72 69.9 / 43.7, 128x512x256 179 / 134, 512x784x128
  // 547 / 292. But inside a training step the second OpenMP thread has gone to sleep between
  // products, and waking it costs tens of microseconds: with the line at 4M the digits CNN
  // trained at 601 steps/s on two threads against 846 on one (bench_train, wall); at 16M, 900
  // against 906, while the large MLP gains (490 against 410).
  constexpr int64_t kParallelGemm = int64_t{1} << 24;
  const int want = m * n * k < kParallelGemm ? 1 : get_num_threads();
  // OpenMP's count is the calling thread's own (an ICV): set it only when it changes.
  thread_local int applied = 0;
  if (want != applied) {
    omp_set_num_threads(want);
    applied = want;
  }
#else
  (void)m, (void)n, (void)k;
#endif
}

}  // namespace nns
