// SPDX-License-Identifier: GPL-3.0-or-later
// Finds, opens and checks libnnstudio-cuda.so (see cuda_backend.h). Everything here is plain
// C++ and dlopen: the engine has no CUDA dependency, so a build without CUDA, or a machine
// without the NVIDIA driver, loads no CUDA code and says why.
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "engine/backend/cuda_backend.h"

namespace nns::cuda {
namespace {
namespace fs = std::filesystem;

struct LoadState {
  std::string path;
  const CudaBackendTables* tables = nullptr;
  std::string reason;  // why tables is null
  // The device count and its reason, asked once: cudaGetDeviceCount is slow on a machine
  // without a driver, and the answer does not change while the program runs.
  int count = 0;
  std::string count_reason;
};

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// The folder of the engine library itself (dladdr on one of its functions): the backend
// library is installed and built beside it.
fs::path engine_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&engine_folder), &info) == 0 || info.dli_fname == nullptr)
    return {};
  std::error_code ec;
  fs::path file = fs::canonical(info.dli_fname, ec);
  if (ec) file = info.dli_fname;
  return file.parent_path();
}

LoadState load() {
  LoadState s;
  const char* env = std::getenv(kBackendEnv);
  const bool from_env = env != nullptr && *env != '\0';
  s.path = from_env ? std::string(env) : (engine_folder() / kBackendFile).string();
  std::error_code ec;
  if (!fs::exists(s.path, ec)) {
    s.reason = from_env ? std::string("the CUDA backend library ") + s.path + " named by " +
                              kBackendEnv + " does not exist"
                        : "the CUDA backend library " + s.path +
                              " is not there (this build of NN Studio has no CUDA backend; "
                              "build it with the CUDA toolkit, or set " +
                              kBackendEnv + ")";
    return s;
  }
  // RTLD_LOCAL: cudart's and cuBLAS's symbols stay the backend's own. RTLD_NOW: a missing
  // library or symbol is reported here, not at the first kernel.
  void* handle = dlopen(s.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    s.reason = "the CUDA backend library " + s.path +
               " cannot be loaded: " + one_line(e ? e : "unknown error") +
               " (the CUDA 13 runtime and cuBLAS must be installed, e.g. in /usr/local/cuda, "
               "and on the library path)";
    return s;
  }
  dlerror();
  auto entry = reinterpret_cast<NnsCudaBackendEntry>(dlsym(handle, "nnstudio_cuda_backend_v1"));
  if (entry == nullptr) {
    s.reason = "the CUDA backend library " + s.path +
               " has no entry point nnstudio_cuda_backend_v1: not an NN Studio CUDA backend";
    dlclose(handle);
    return s;
  }
  const CudaBackendTables* t = entry(kCudaBackendAbi);
  if (t == nullptr || t->abi != kCudaBackendAbi || t->struct_size != sizeof(CudaBackendTables)) {
    s.reason = "the CUDA backend library " + s.path + " was built for backend ABI " +
               (t ? std::to_string(t->abi) : std::string("(none)")) + "; this engine loads ABI " +
               std::to_string(kCudaBackendAbi) + ": install the library of the same NN Studio";
    dlclose(handle);
    return s;
  }
  // The library stays loaded for the life of the program (its kernels may be queued, and
  // storages free through it until exit).
  s.tables = t;
  char reason[512] = {0};
  s.count = t->device_count(reason, sizeof reason);
  if (s.count < 0) {
    s.count = 0;
    s.count_reason = one_line(reason);
  } else if (s.count == 0) {
    s.count_reason = "no CUDA GPU found";
  }
  return s;
}

const LoadState& state() {
  static const LoadState s = load();
  return s;
}

}  // namespace

const CudaBackendTables* backend() {
  return state().tables;
}
std::string backend_path() {
  return state().path;
}
int device_count() {
  return state().count;
}

std::string unavailable_reason() {
  const LoadState& s = state();
  if (s.tables == nullptr) return s.reason;
  return s.count_reason;
}

std::vector<CudaDeviceProperties> devices() {
  std::vector<CudaDeviceProperties> out;
  const LoadState& s = state();
  for (int i = 0; i < s.count; ++i) {
    CudaDeviceProperties p;
    p.index = i;
    char name[256] = {0};
    if (!s.tables->device_properties(i, name, sizeof name, &p.total_memory, &p.major, &p.minor,
                                     &p.multiprocessors))
      continue;
    p.name = name;
    out.push_back(std::move(p));
  }
  return out;
}

CudaMemoryStats memory_stats(int index) {
  CudaMemoryStats m;
  if (const CudaBackendTables* t = backend(); t != nullptr && index >= 0 && index < device_count())
    t->memory_stats(index, &m.allocated, &m.reserved, &m.peak_allocated);
  return m;
}

void synchronize(int index) {
  if (const CudaBackendTables* t = backend(); t != nullptr && index >= 0 && index < device_count())
    t->synchronize(index);
}

void set_allow_tf32(bool allow) {
  const CudaBackendTables* t = backend();
  if (t == nullptr) {
    if (!allow) return;
    throw DeviceError("set_allow_tf32: no CUDA backend: " + unavailable_reason());
  }
  t->set_allow_tf32(allow);
}

bool allow_tf32() {
  const CudaBackendTables* t = backend();
  return t != nullptr && t->allow_tf32();
}

void empty_cache() {
  if (const CudaBackendTables* t = backend()) t->empty_cache();
}

}  // namespace nns::cuda
