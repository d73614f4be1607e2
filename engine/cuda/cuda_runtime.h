// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CUDA runtime pieces of the CUDA backend: devices, memory, transfers. Built only with
// NNS_WITH_CUDA; this header has no CUDA types, so the rest of the engine never sees CUDA.
#include <cstddef>

#include "engine/backend/dispatch.h"

namespace nns::cuda {

// Number of usable devices; 0 when the driver is missing or there is no GPU (a CUDA build on
// a machine without one answers cudaErrorInsufficientDriver or cudaErrorNoDevice).
int device_count();

extern const AllocatorKernels allocator_kernels;

// Host <-> device copies of nbytes; device_index is the CUDA side.
void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device_index);
void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device_index);

}  // namespace nns::cuda
