// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the CUDA backend's files share: error checks, the one compute stream of each device,
// the device a pointer lives on, the caching allocator. Only the backend library
// (libnnstudio-cuda.so) includes this; the engine sees the backend through
// engine/backend/cuda_backend.h alone.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/tensor/error.h"

namespace nns::cuda {

// Throws DeviceError "<what>: CUDA error <name>: <text>" when status is not success (and
// clears the error, so that later calls are not poisoned by a non-sticky one).
void check(cudaError_t status, const char* what);
// After a kernel launch: a launch error (bad configuration, no kernel image for this GPU).
void check_launch(const char* what);

// The number of devices (0 on any error); cached after the first call.
int device_count_cached();
// The device that owns memory at p: 0 on a one-GPU machine (no query), otherwise asked of
// the driver.
int device_of(const void* p);
// Makes device the current one for this thread (skips the call when it already is).
void set_device(int device);
// The compute stream of a device: every kernel, copy and cuBLAS call of the backend is
// queued on it, so they run in order, and the caching allocator may hand a freed block to the
// next request at once.
cudaStream_t stream(int device);

// A CUDA graph capture this thread is making (graph.cpp): while it lasts, stream(device) is the
// capture's own stream (so another thread's kernels on the compute stream stay out of the
// graph) and the caching allocator serves this thread from the capture's private pool (so no
// block the graph uses is handed to a tensor outside it).
struct ThreadCapture {
  int device = -1;
  cudaStream_t stream = nullptr;
  uint64_t pool = 0;  // 0: none
};
ThreadCapture& thread_capture();
// Whether this thread is capturing a graph on device (what waits for the GPU, or joins work of
// another stream, must then be refused by name).
bool capturing_on(int device);
// The copy stream of a device (events.cpp): host-to-device copies that overlap the compute
// stream's kernels; the compute stream waits for them through events.
cudaStream_t copy_stream(int device);

// The caching allocator (allocator.cpp).
void* cached_allocate(size_t nbytes, int device);
void cached_free(void* p, int device);
// A private pool (PyTorch's graph memory pool): blocks allocated while this thread captures
// into it come from its own segments, and return to it when freed, whenever that is; a
// released pool's free blocks, and later its blocks as they are freed, go to the common cache.
void begin_private_pool(int device, uint64_t pool);
void release_private_pool(int device, uint64_t pool);
void cached_memory_stats(int device, size_t* allocated, size_t* reserved, size_t* peak);
void cached_empty();

// "1.50 GiB", "512 bytes": sizes in the out-of-memory message.
std::string format_bytes(size_t n);

}  // namespace nns::cuda
