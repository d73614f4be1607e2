// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The CPU backend's kernel tables (Eigen). Each family's table is defined in the file of
// that family under engine/cpu/ and returned by Family::for_device(DeviceType::CPU).
#include "engine/backend/dispatch.h"
#include "engine/backend/elementwise_kernels.h"
#include "engine/backend/indexing_kernels.h"
#include "engine/backend/kernel_types.h"
#include "engine/backend/linalg_kernels.h"
#include "engine/backend/nn_kernels.h"
#include "engine/backend/optimizer_kernels.h"
#include "engine/backend/reduction_kernels.h"

namespace nns::cpu {

extern const AllocatorKernels allocator_kernels;
extern const CopyKernels copy_kernels;
extern const LinalgKernels linalg_kernels;            // linalg.cpp
extern const NNKernels nn_kernels;                    // nn.cpp
extern const IndexingKernels indexing_kernels;        // indexing.cpp
extern const ElementwiseKernels elementwise_kernels;  // elementwise.cpp
extern const ReductionKernels reduction_kernels;      // reduction.cpp
extern const OptimizerKernels optimizer_kernels;      // optimizer.cpp

}  // namespace nns::cpu
