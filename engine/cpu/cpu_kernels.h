#pragma once
// The CPU backend's kernel tables (Eigen). Each family's table is defined in the file of
// that family under engine/cpu/ and returned by Family::for_device(DeviceType::CPU).
#include "engine/backend/dispatch.h"
#include "engine/backend/kernel_types.h"

namespace nns::cpu {

extern const AllocatorKernels allocator_kernels;
extern const CopyKernels copy_kernels;

}  // namespace nns::cpu
