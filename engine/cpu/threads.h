#pragma once
// torch.set_num_threads / torch.get_num_threads: the threads one op may use. The engine's ops
// run on the thread that calls them; only the BLAS (OpenBLAS on Debian) splits a large matrix
// product over threads of its own, so this sets the BLAS's thread count.
//
// Why a window sets 1: OpenBLAS's idle threads wait for work by spinning in sched_yield. On a
// 2-core machine, while a session trains, that spinning took a third of the CPU time of
// bench_ui_latency's process and left the GUI thread and the X server short of a core (the
// window ran at 67% of the headless speed, with timer lateness p99 19 ms), while one BLAS
// thread trains the large MLP as fast as two (121 vs 131 steps/s, within the noise).
namespace nns {

// Returns false (and changes nothing) when the process's BLAS is not OpenBLAS or there is no
// BLAS: then every product already runs on the calling thread.
bool set_num_threads(int threads);

// The BLAS's thread count; 1 without OpenBLAS.
int get_num_threads();

}  // namespace nns
