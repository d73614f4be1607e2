#include "engine/backend/indexing_kernels.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

const IndexingKernels* IndexingKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU:
      return &cpu::indexing_kernels;
    case DeviceType::CUDA:
      return nullptr;
  }
  return nullptr;
}

}  // namespace nns
