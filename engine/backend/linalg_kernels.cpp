#include "engine/backend/linalg_kernels.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

const LinalgKernels* LinalgKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return &cpu::linalg_kernels;
    case DeviceType::CUDA:
      return nullptr;
  }
  return nullptr;
}

}  // namespace nns
