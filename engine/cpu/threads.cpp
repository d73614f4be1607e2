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

}  // namespace

bool set_num_threads(int threads) {
  threads = std::max(threads, 1);
  auto set = openblas_entry<void (*)(int)>("openblas_set_num_threads");
  if (set) set(threads);
#ifdef NNS_USE_ONEDNN
  g_num_threads = threads;
  return true;
#else
  if (set) g_num_threads = threads;
  return set != nullptr;
#endif
}

int get_num_threads() {
  if (const int set = g_num_threads.load(); set > 0) return set;
  auto get = openblas_entry<int (*)()>("openblas_get_num_threads");
  if (get) return get();
#ifdef NNS_USE_ONEDNN
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void use_threads_for_gemm(int64_t m, int64_t n, int64_t k) {
#ifdef NNS_USE_ONEDNN
  // Below this many multiply-adds a second thread costs more than it saves. oneDNN's sgemm on
  // one / two threads, wall time on this 2-core machine (2026-11-26): 64x64x64 2.8 / 6.2 us,
  // 256x64x64 11.0 / 13.7, 128x128x128 21.2 / 24.4, 128x256x128 42.9 / 33.1, 16x4096x72 (the
  // digits CNN's second convolution) 69.9 / 43.7, 512x784x128 547 / 292.
  constexpr int64_t kParallelGemm = int64_t{1} << 22;
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
