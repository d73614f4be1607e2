#include "engine/backend/elementwise_kernels.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

const ElementwiseKernels* ElementwiseKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return &cpu::elementwise_kernels;
    case DeviceType::CUDA:
      return nullptr;
  }
  return nullptr;
}

}  // namespace nns
