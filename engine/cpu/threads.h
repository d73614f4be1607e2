// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// torch.set_num_threads / torch.get_num_threads: the threads one op may use. The engine's ops
// run on the thread that calls them; only the matrix products split over threads. With oneDNN
// (NNS_USE_ONEDNN) those are oneDNN's OpenMP threads, and a product takes them only when it is
// large enough to gain (use_threads_for_gemm); OpenBLAS, which then multiplies only float64 and
// the shapes oneDNN does slower, stays on one thread. Without oneDNN, OpenBLAS's own threads.
//
// Why a window sets 1: OpenBLAS's idle threads wait for work by spinning in sched_yield. On a
// 2-core machine, while a session trains, that spinning took a third of the CPU time of
// bench_ui_latency's process and left the GUI thread and the X server short of a core (the
// window ran at 67% of the headless speed, with timer lateness p99 19 ms), while one BLAS
// thread trains the large MLP as fast as two (121 vs 131 steps/s, within the noise).
#include <cstdint>

namespace nns {

// Sets the count (at least 1) for every thread's later products. Returns false when no library
// can use more than one thread: then every product runs on the calling thread.
bool set_num_threads(int threads);

// The count set, or else the BLAS's default (OPENBLAS_NUM_THREADS, else the cores); 1 when no
// library can use more than one thread.
int get_num_threads();

// Before a product of m x n x k on the calling thread: sets that thread's OpenMP count (oneDNN's)
// to get_num_threads() when the product is large enough for a second thread to pay (see
// threads.cpp), else to one.
void use_threads_for_gemm(int64_t m, int64_t n, int64_t k);

}  // namespace nns
