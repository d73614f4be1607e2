// SPDX-License-Identifier: GPL-3.0-or-later
// Events, pinned host memory and asynchronous host-to-device copies of the CUDA backend (ABI 4).
//
// An event remembers its device, so that recording it, or making the compute stream wait for
// it, needs no other argument. Copies run on a copy stream of their own (runtime.cpp), so that a
// batch crosses to the GPU while the compute stream runs the step before it; the compute stream
// waits for the copy's event before the kernels that read it.
#include "engine/cuda/backend.h"
#include "engine/cuda/runtime.h"

namespace nns::cuda {
namespace {

struct Event {
  int device = 0;
  cudaEvent_t event = nullptr;
};

Event* as_event(void* handle) {
  if (handle == nullptr) throw DeviceError("CUDA event: a null event");
  return static_cast<Event*>(handle);
}

// Recording on the compute stream during a capture would put the event into the graph (it
// would then be recorded at every replay, not now), and a wait would join another stream's
// work into it: both are refused by name rather than with a bare capture error.
void refuse_during_capture(const char* what, int device) {
  if (capturing_on(device)) {
    throw DeviceError(std::string(what) +
                      " cannot be part of a CUDA graph capture (this thread is capturing on "
                      "cuda:" +
                      std::to_string(device) + ")");
  }
}

}  // namespace

void* backend_event_create(int device) {
  if (device < 0 || device >= device_count_cached())
    throw DeviceError("CUDA event: no device cuda:" + std::to_string(device));
  refuse_during_capture("making a CUDA event", device);  // as cuda_event.h promises
  set_device(device);
  auto* e = new Event;
  e->device = device;
  const cudaError_t status = cudaEventCreateWithFlags(&e->event, cudaEventDefault);
  if (status != cudaSuccess) {
    delete e;
    check(status, "CUDA event: cudaEventCreate");
  }
  return e;
}

void backend_event_record(void* handle) {
  Event* e = as_event(handle);
  refuse_during_capture("recording a CUDA event", e->device);
  set_device(e->device);
  check(cudaEventRecord(e->event, stream(e->device)), "CUDA event: cudaEventRecord");
}

float backend_event_elapsed_ms(void* start, void* end) {
  Event* s = as_event(start);
  Event* e = as_event(end);
  check(cudaEventSynchronize(e->event), "CUDA event: cudaEventSynchronize");
  float ms = 0.0f;
  check(cudaEventElapsedTime(&ms, s->event, e->event), "CUDA event: cudaEventElapsedTime");
  return ms;
}

void backend_event_synchronize(void* handle) {
  check(cudaEventSynchronize(as_event(handle)->event), "CUDA event: cudaEventSynchronize");
}

void backend_event_destroy(void* handle) {
  auto* e = static_cast<Event*>(handle);
  if (e == nullptr) return;
  if (e->event) cudaEventDestroy(e->event);
  cudaGetLastError();
  delete e;
}

// Portable: the memory is page-locked for every device's context, not only the current one's.
void* backend_host_alloc_pinned(size_t nbytes) {
  void* p = nullptr;
  if (cudaHostAlloc(&p, nbytes == 0 ? 1 : nbytes, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return p;
}

void backend_host_free_pinned(void* p) {
  if (p == nullptr) return;
  cudaFreeHost(p);
  cudaGetLastError();
}

void backend_copy_host_to_device_async(void* dst, const void* src, size_t nbytes, void* done) {
  Event* e = as_event(done);
  refuse_during_capture("an asynchronous copy to the GPU", e->device);
  set_device(e->device);
  cudaStream_t copies = copy_stream(e->device);
  // dst is a block of the caching allocator, which is ordered by the compute stream alone: a
  // block freed by a tensor whose kernels are still queued there may be handed out again at
  // once. The copy stream first waits for what the compute stream holds now (`done`, recorded
  // there, is recorded again on the copy stream below: a wait takes the record it sees).
  check(cudaEventRecord(e->event, stream(e->device)), "to(cuda) async: cudaEventRecord");
  check(cudaStreamWaitEvent(copies, e->event, 0), "to(cuda) async: cudaStreamWaitEvent");
  if (nbytes > 0) {
    check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, copies),
          "to(cuda) async: cudaMemcpyAsync");
  }
  check(cudaEventRecord(e->event, copies), "to(cuda) async: cudaEventRecord");
}

void backend_compute_wait_event(void* handle) {
  Event* e = as_event(handle);
  refuse_during_capture("waiting for a copy on the compute stream", e->device);
  set_device(e->device);
  check(cudaStreamWaitEvent(stream(e->device), e->event, 0), "CUDA event: cudaStreamWaitEvent");
}

}  // namespace nns::cuda
