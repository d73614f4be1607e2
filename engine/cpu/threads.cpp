#include "engine/cpu/threads.h"

#include <dlfcn.h>

#include <algorithm>

namespace nns {

namespace {

// Looked up at run time: the BLAS is chosen by Debian's alternatives, and only OpenBLAS has
// these entry points (a reference BLAS or none at all is single-threaded anyway).
template <class Fn>
Fn openblas_entry(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

bool set_num_threads(int threads) {
  auto set = openblas_entry<void (*)(int)>("openblas_set_num_threads");
  if (!set) return false;
  set(std::max(threads, 1));
  return true;
}

int get_num_threads() {
  auto get = openblas_entry<int (*)()>("openblas_get_num_threads");
  return get ? get() : 1;
}

}  // namespace nns
