// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CUDA backend as the engine sees it. The kernels live in a library of their own,
// libnnstudio-cuda.so (engine/cuda, built with nvcc, linking cudart and cuBLAS), which the
// engine opens with dlopen the first time a CUDA device is asked for. So the engine and the
// programs never link libcudart: they run on any machine, and where the library, the NVIDIA
// driver or a GPU is missing, unavailable_reason() says which.
//
// The library has one C entry point, nnstudio_cuda_backend_v1(abi), which hands back a
// CudaBackendTables: the kernel tables that dispatch.cpp returns for DeviceType::CUDA, and
// the device functions below. The ABI number changes whenever the tables or any kernel
// family struct changes; a library built for another number is refused with the reason.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/dispatch.h"
#include "engine/backend/elementwise_kernels.h"
#include "engine/backend/indexing_kernels.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/linalg_kernels.h"
#include "engine/backend/nn_kernels.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/backend/reduction_kernels.h"

namespace nns {

// 2: LinalgKernels has the batched GEMM, and the tables the optimizers' kernels.
// 3: CUDA graphs; SGD, RMSprop and the non-finite check as optimizer kernels, which (and Adam)
//    take their scalars from device memory in a graph; Philox dropout masks; the product with
//    a bias in cuBLASLt's epilogue.
// 4: events on a device's compute stream (timing, waits), pinned host memory, and host-to-device
//    copies on a copy stream of their own that the compute stream waits for.
inline constexpr uint32_t kCudaBackendAbi = 4;

struct CudaDeviceProperties {
  int index = 0;
  std::string name;
  size_t total_memory = 0;   // bytes
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
};

// The caching allocator's figures for one device, in bytes (PyTorch's memory_allocated and
// memory_reserved).
struct CudaMemoryStats {
  size_t allocated = 0;       // handed out to tensors now
  size_t reserved = 0;        // held from the driver: allocated + cached
  size_t peak_allocated = 0;  // the most allocated at once
};

// What the backend library hands back. Plain data and function pointers: its layout is the
// ABI (with kCudaBackendAbi). Kernel functions throw nns::DeviceError on a CUDA failure.
struct CudaBackendTables {
  uint32_t abi;
  uint32_t struct_size;  // sizeof(CudaBackendTables) as the library was built

  const AllocatorKernels* allocator;
  const CopyKernels* copy;
  const ElementwiseKernels* elementwise;
  const ReductionKernels* reduction;
  const LinalgKernels* linalg;
  const IndexingKernels* indexing;    // nullptr where the library has no such kernels yet
  const NNKernels* nn;                // likewise
  const OptimizerKernels* optimizer;  // likewise

  // The number of devices, or -1 with the reason written to reason (the driver is missing
  // or too old, no GPU, ...).
  int (*device_count)(char* reason, size_t reason_size);
  // Fills props (name up to name_size - 1 characters); false when index is out of range.
  bool (*device_properties)(int index, char* name, size_t name_size, size_t* total_memory,
                            int* major, int* minor, int* multiprocessors);
  // Contiguous copies between host memory and device index's memory; they return once the
  // data has arrived (the device's compute stream is ordered before them).
  void (*copy_host_to_device)(void* dst, const void* src, size_t nbytes, int index);
  void (*copy_device_to_host)(void* dst, const void* src, size_t nbytes, int index);
  // Waits until every kernel queued on the device has finished.
  void (*synchronize)(int index);
  // PyTorch's torch.backends.cuda.matmul.allow_tf32 (off by default).
  void (*set_allow_tf32)(bool allow);
  bool (*allow_tf32)();
  void (*memory_stats)(int index, size_t* allocated, size_t* reserved, size_t* peak_allocated);
  // Hands the cached blocks no tensor uses back to the driver (torch.cuda.empty_cache).
  void (*empty_cache)();

  // CUDA graphs (engine/backend/cuda_graph.h wraps them). graph_begin starts capturing what
  // this thread queues on the device, allocating from a private pool, and hands back a block
  // of scalar_bytes of device memory and its pinned host mirror; graph_end(keep) instantiates
  // the graph and counts its nodes (or, without keep, drops the capture); graph_replay copies the
  // first scalar_bytes of the mirror to the device, then launches the graph, on the compute stream;
  // graph_wait_scalars waits until the last replay's copy was made (before the mirror is
  // written again); graph_destroy frees it all. DeviceError on a CUDA failure.
  void* (*graph_begin)(int device, size_t scalar_bytes, void** scalars_device, void** scalars_host);
  size_t (*graph_end)(void* graph, bool keep);  // the graph's nodes (kernels, copies, ...)
  void (*graph_replay)(void* graph, size_t scalar_bytes);
  void (*graph_wait_scalars)(void* graph);
  void (*graph_destroy)(void* graph);

  // Events (engine/backend/cuda_event.h wraps the timing ones). event_create makes a timed event
  // of a device; event_record records it on that device's compute stream (a DeviceError during
  // a graph capture on this thread); event_elapsed_ms waits for `end`, then gives the device
  // time between the two records; event_synchronize waits on the host until the work before
  // the event's last record has finished (at once when it was never recorded);
  // event_destroy frees it (the work it marks may still be running).
  void* (*event_create)(int device);
  void (*event_record)(void* event);
  float (*event_elapsed_ms)(void* start, void* end);
  void (*event_synchronize)(void* event);
  void (*event_destroy)(void* event);

  // Page-locked host memory (cudaHostAlloc, usable by every device): a copy from it to a GPU
  // runs without the host, so it can overlap kernels. Not cached: its users keep their buffers
  // (engine/data/device_batches.h). nullptr when the driver refuses it; free with
  // host_free_pinned, which waits for the device.
  void* (*host_alloc_pinned)(size_t nbytes);
  void (*host_free_pinned)(void* p);
  // Queues a copy of nbytes from host memory src (pinned, for it to be asynchronous) to device
  // memory dst on the copy stream of `done`'s device, after the work queued on the compute
  // stream so far (dst comes from the caching allocator, which may have handed over a block
  // that queued kernels still use), then records `done` on the copy stream. It returns at once:
  // src must stay unchanged until event_synchronize(done) returns. A DeviceError during a graph
  // capture on this thread.
  void (*copy_host_to_device_async)(void* dst, const void* src, size_t nbytes, void* done);
  // Makes the compute stream of the event's device wait for the event's last record (the
  // kernels queued after this call see the copy's data); the host does not wait.
  void (*compute_wait_event)(void* event);
};

namespace cuda {

// The environment variable that names the backend library to load in place of the one
// beside the engine library.
inline constexpr const char* kBackendEnv = "NNSTUDIO_CUDA_BACKEND";
inline constexpr const char* kBackendFile = "libnnstudio-cuda.so";

// The loaded backend, or nullptr when it cannot be loaded (the first call tries, once).
const CudaBackendTables* backend();
// The path it was (or would be) loaded from.
std::string backend_path();
// The number of usable CUDA devices; 0 when there is no backend, driver or GPU.
int device_count();
// Why there is no usable CUDA device, in words ("" when there is at least one), e.g.
// "the CUDA backend library /usr/lib/.../libnnstudio-cuda.so is not there (this build has
// no CUDA backend)" or "no NVIDIA driver: ...".
std::string unavailable_reason();
// Each device's properties; empty when there is none.
std::vector<CudaDeviceProperties> devices();
// The caching allocator's figures for a device; zeros without a backend.
CudaMemoryStats memory_stats(int index = 0);
// Waits for the device's queued work; nothing without a backend.
void synchronize(int index = 0);
// TF32 in float32 products (off by default, as in PyTorch); a DeviceError without a backend
// when turning it on.
void set_allow_tf32(bool allow);
bool allow_tf32();
void empty_cache();

}  // namespace cuda
}  // namespace nns

// The library's entry point. It always hands back its tables; the loader compares their abi
// and struct_size (the first two fields, whatever the version) with its own before it uses
// anything else.
extern "C" {
using NnsCudaBackendEntry = const nns::CudaBackendTables* (*)(uint32_t engine_abi);
const nns::CudaBackendTables* nnstudio_cuda_backend_v1(uint32_t engine_abi);
}
