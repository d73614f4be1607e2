#include "engine/backend/nn_kernels.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

const NNKernels* NNKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return &cpu::nn_kernels;
    case DeviceType::CUDA:
      return nullptr;
  }
  return nullptr;
}

}  // namespace nns
