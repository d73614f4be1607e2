// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CUDA backend's kernel tables, one per family, each defined in that family's .cu file,
// and the device functions of runtime.cpp; backend.cpp gathers them for the engine.
#include "engine/backend/cuda_backend.h"

namespace nns::cuda {

extern const AllocatorKernels allocator_kernels;      // copy.cu
extern const CopyKernels copy_kernels;                // copy.cu
extern const ElementwiseKernels elementwise_kernels;  // elementwise.cu
extern const ReductionKernels reduction_kernels;      // reduction.cu
extern const LinalgKernels linalg_kernels;            // linalg.cu
extern const IndexingKernels indexing_kernels;        // indexing.cu
extern const NNKernels nn_kernels;                    // nn.cu (nn_common.cuh)
extern const OptimizerKernels optimizer_kernels;      // optimizer.cu

// runtime.cpp
int backend_device_count(char* reason, size_t reason_size);
bool backend_device_properties(int index, char* name, size_t name_size, size_t* total_memory,
                               int* major, int* minor, int* multiprocessors);
void backend_copy_host_to_device(void* dst, const void* src, size_t nbytes, int index);
void backend_copy_device_to_host(void* dst, const void* src, size_t nbytes, int index);
void backend_synchronize(int index);
// graph.cpp
void* backend_graph_begin(int device, size_t scalar_bytes, void** scalars_device,
                          void** scalars_host);
size_t backend_graph_end(void* graph, bool keep);
void backend_graph_replay(void* graph, size_t scalar_bytes);
void backend_graph_wait_scalars(void* graph);
void backend_graph_destroy(void* graph);
// events.cpp
void* backend_event_create(int device);
void backend_event_record(void* event);
float backend_event_elapsed_ms(void* start, void* end);
void backend_event_synchronize(void* event);
void backend_event_destroy(void* event);
void* backend_host_alloc_pinned(size_t nbytes);
void backend_host_free_pinned(void* p);
void backend_copy_host_to_device_async(void* dst, const void* src, size_t nbytes, void* done);
void backend_compute_wait_event(void* event);
// linalg.cu
void backend_set_allow_tf32(bool allow);
bool backend_allow_tf32();

}  // namespace nns::cuda
