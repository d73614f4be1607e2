// SPDX-License-Identifier: GPL-3.0-or-later
// Devices, streams and host <-> device copies of the CUDA backend.
#include "engine/cuda/runtime.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

namespace nns::cuda {

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  cudaGetLastError();
  throw DeviceError(std::string(what) + ": CUDA error " + cudaGetErrorName(status) + ": " +
                    cudaGetErrorString(status));
}

void check_launch(const char* what) {
  check(cudaGetLastError(), what);
}

int device_count_cached() {
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

int device_of(const void* p) {
  if (device_count_cached() <= 1 || p == nullptr) return 0;
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return attr.device < 0 ? 0 : attr.device;
}

void set_device(int device) {
  thread_local int current = -1;
  if (current == device) return;
  check(cudaSetDevice(device), "cudaSetDevice");
  current = device;
}

namespace {
constexpr int kMaxDevices = 64;

struct Streams {
  std::once_flag once[kMaxDevices];
  cudaStream_t stream[kMaxDevices] = {};
};
Streams& streams() {
  static Streams* s = new Streams;  // never destroyed: storages free through it until exit
  return *s;
}

// A pinned host buffer per device for copies up to kPinnedLimit: the copy from pageable
// memory would otherwise stage through the driver's own buffer in small pieces.
constexpr size_t kPinnedLimit = size_t{16} << 20;
struct Pinned {
  std::mutex mutex;
  void* data = nullptr;
  size_t size = 0;
};
Pinned& pinned(int device) {
  static std::array<Pinned, kMaxDevices>* p = new std::array<Pinned, kMaxDevices>;
  return (*p)[device];
}
// Grows a device's pinned buffer to at least n bytes (the caller holds its mutex); false
// when pinned memory cannot be had (the copy then goes from pageable memory).
bool reserve_pinned(Pinned& buf, size_t n) {
  if (buf.size >= n) return true;
  if (buf.data) cudaFreeHost(buf.data);
  buf.data = nullptr;
  buf.size = 0;
  size_t want = size_t{1} << 20;
  while (want < n) want <<= 1;
  if (cudaHostAlloc(&buf.data, want, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    buf.data = nullptr;
    return false;
  }
  buf.size = want;
  return true;
}
}  // namespace

ThreadCapture& thread_capture() {
  thread_local ThreadCapture capture;
  return capture;
}

bool capturing_on(int device) {
  const ThreadCapture& c = thread_capture();
  return c.stream != nullptr && c.device == device;
}

namespace {
cudaStream_t device_stream(Streams& s, int device) {
  if (device < 0 || device >= kMaxDevices)
    throw DeviceError("CUDA device " + std::to_string(device) + " is out of range");
  std::call_once(s.once[device], [&] {
    set_device(device);
    check(cudaStreamCreateWithFlags(&s.stream[device], cudaStreamNonBlocking), "cudaStreamCreate");
  });
  return s.stream[device];
}
}  // namespace

cudaStream_t stream(int device) {
  if (capturing_on(device)) return thread_capture().stream;
  return device_stream(streams(), device);
}

cudaStream_t copy_stream(int device) {
  static Streams* s = new Streams;  // never destroyed, as the compute streams
  return device_stream(*s, device);
}

std::string format_bytes(size_t n) {
  char buf[64];
  if (n >= (size_t{1} << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1 << 30));
  } else if (n >= (size_t{1} << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%zu bytes", n);
  }
  return buf;
}

// ---- the functions of CudaBackendTables (backend.cpp) -----------------------------------

int backend_device_count(char* reason, size_t reason_size) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess) return count;
  cudaGetLastError();
  std::string why;
  switch (status) {
    case cudaErrorInsufficientDriver:
      why =
          "no usable NVIDIA driver: the CUDA runtime found no driver (libcuda.so.1) or one "
          "older than CUDA " +
          std::to_string(CUDART_VERSION / 1000) + " needs";
      break;
    case cudaErrorNoDevice:
      why = "no CUDA GPU found (the NVIDIA driver is there but sees no device)";
      break;
    default:
      why = std::string("the CUDA runtime cannot count the devices: ") + cudaGetErrorName(status) +
            ": " + cudaGetErrorString(status);
  }
  if (reason != nullptr && reason_size > 0) {
    std::strncpy(reason, why.c_str(), reason_size - 1);
    reason[reason_size - 1] = '\0';
  }
  return -1;
}

bool backend_device_properties(int index, char* name, size_t name_size, size_t* total_memory,
                               int* major, int* minor, int* multiprocessors) {
  cudaDeviceProp prop{};
  if (index < 0 || index >= device_count_cached() ||
      cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  if (name != nullptr && name_size > 0) {
    std::strncpy(name, prop.name, name_size - 1);
    name[name_size - 1] = '\0';
  }
  *total_memory = prop.totalGlobalMem;
  *major = prop.major;
  *minor = prop.minor;
  *multiprocessors = prop.multiProcessorCount;
  return true;
}

namespace {
// A copy between host and device returns once the data has arrived, and a synchronize waits
// for the device: neither can be part of a graph (the capture would be invalidated with a
// bare cudaErrorStreamCaptureUnsupported), so they are refused by name.
void refuse_during_capture(const char* what, int index) {
  if (capturing_on(index)) {
    throw DeviceError(std::string(what) +
                      " waits for the GPU, which a CUDA graph capture cannot hold "
                      "(the step reads a value back to the host)");
  }
}

// One host <-> device copy on the device's stream. A small one goes through the device's pinned
// buffer (a pageable copy is staged by the driver anyway); the buffer is reused by the next
// copy, so each copy waits until it is done.
void copy_with_host(void* dst, const void* src, size_t nbytes, int index, bool to_device) {
  if (nbytes == 0) return;
  refuse_during_capture(to_device ? "a copy to the GPU" : "a copy from the GPU", index);
  set_device(index);
  cudaStream_t s = stream(index);
  const cudaMemcpyKind kind = to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  const char* what = to_device ? "to(cuda)" : "to(cpu)";
  Pinned& buf = pinned(index);
  if (nbytes <= kPinnedLimit) {
    std::lock_guard<std::mutex> lock(buf.mutex);
    if (reserve_pinned(buf, nbytes)) {
      if (to_device) std::memcpy(buf.data, src, nbytes);
      check(
          cudaMemcpyAsync(to_device ? dst : buf.data, to_device ? buf.data : src, nbytes, kind, s),
          what);
      check(cudaStreamSynchronize(s), what);
      if (!to_device) std::memcpy(dst, buf.data, nbytes);
      return;
    }
  }
  check(cudaMemcpyAsync(dst, src, nbytes, kind, s), what);
  check(cudaStreamSynchronize(s), what);
}
}  // namespace

void backend_copy_host_to_device(void* dst, const void* src, size_t nbytes, int index) {
  copy_with_host(dst, src, nbytes, index, true);
}

void backend_copy_device_to_host(void* dst, const void* src, size_t nbytes, int index) {
  copy_with_host(dst, src, nbytes, index, false);
}

void backend_synchronize(int index) {
  refuse_during_capture("synchronize", index);
  set_device(index);
  check(cudaStreamSynchronize(stream(index)), "synchronize");
}

}  // namespace nns::cuda
