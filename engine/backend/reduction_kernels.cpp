#include "engine/backend/reduction_kernels.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

const ReductionKernels* ReductionKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return &cpu::reduction_kernels;
    case DeviceType::CUDA:
      return nullptr;
  }
  return nullptr;
}

}  // namespace nns
