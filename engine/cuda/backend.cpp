// SPDX-License-Identifier: GPL-3.0-or-later
// The one entry point of libnnstudio-cuda.so: the tables the engine's loader
// (engine/backend/cuda_loader.cpp) plugs in behind the dispatch seam.
#include "engine/cuda/backend.h"

#include "engine/cuda/runtime.h"

namespace nns::cuda {
namespace {

void memory_stats(int index, size_t* allocated, size_t* reserved, size_t* peak) {
  cached_memory_stats(index, allocated, reserved, peak);
}

const CudaBackendTables kTables{
    kCudaBackendAbi,
    sizeof(CudaBackendTables),
    &allocator_kernels,
    &copy_kernels,
    &elementwise_kernels,
    &reduction_kernels,
    &linalg_kernels,
    &indexing_kernels,
    &nn_kernels,
    &optimizer_kernels,
    &backend_device_count,
    &backend_device_properties,
    &backend_copy_host_to_device,
    &backend_copy_device_to_host,
    &backend_synchronize,
    &backend_set_allow_tf32,
    &backend_allow_tf32,
    &memory_stats,
    &cached_empty,
    &backend_graph_begin,
    &backend_graph_end,
    &backend_graph_replay,
    &backend_graph_wait_scalars,
    &backend_graph_destroy,
    &backend_event_create,
    &backend_event_record,
    &backend_event_elapsed_ms,
    &backend_event_synchronize,
    &backend_event_destroy,
    &backend_host_alloc_pinned,
    &backend_host_free_pinned,
    &backend_copy_host_to_device_async,
    &backend_compute_wait_event,
};

}  // namespace
}  // namespace nns::cuda

extern "C" __attribute__((visibility("default"))) const nns::CudaBackendTables*
nnstudio_cuda_backend_v1(uint32_t /*engine_abi*/) {
  return &nns::cuda::kTables;
}
