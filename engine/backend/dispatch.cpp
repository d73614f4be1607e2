#include "engine/backend/dispatch.h"

#include "engine/cpu/cpu_kernels.h"

namespace nns {

void throw_no_backend(Device device, const char* op) {
  std::string msg = std::string(op) + ": no kernels for device " + device.str();
  if (device.is_cuda()) {
    msg += " (this build has no CUDA backend or the machine has no CUDA device); move the "
           "tensors to the CPU with .to(nns::kCPU)";
  }
  throw DeviceError(msg);
}

const AllocatorKernels* AllocatorKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU: return &cpu::allocator_kernels;
    case DeviceType::CUDA: return nullptr;
  }
  return nullptr;
}

const CopyKernels* CopyKernels::for_device(DeviceType type) {
  switch (type) {
    case DeviceType::CPU: return &cpu::copy_kernels;
    case DeviceType::CUDA: return nullptr;
  }
  return nullptr;
}

bool device_available(Device device) { return device.is_cpu(); }

}  // namespace nns
