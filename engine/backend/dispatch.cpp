#include "engine/backend/dispatch.h"

#include "engine/cpu/cpu_kernels.h"
#ifdef NNS_WITH_CUDA
#include "engine/cuda/cuda_runtime.h"
#endif

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
#ifdef NNS_WITH_CUDA
    case DeviceType::CUDA: return &cuda::allocator_kernels;
#else
    case DeviceType::CUDA: return nullptr;
#endif
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

bool device_available(Device device) {
  if (device.is_cpu()) return true;
#ifdef NNS_WITH_CUDA
  return device.index >= 0 && device.index < cuda::device_count();
#else
  return false;
#endif
}

void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    cpu::allocator_kernels.copy_bytes(dst, src, nbytes);
    return;
  }
#ifdef NNS_WITH_CUDA
  if (dst_device.is_cuda() && src_device.is_cpu()) {
    cuda::copy_host_to_device(dst, src, nbytes, dst_device.index);
    return;
  }
  if (dst_device.is_cpu() && src_device.is_cuda()) {
    cuda::copy_device_to_host(dst, src, nbytes, src_device.index);
    return;
  }
  if (dst_device == src_device) {
    cuda::allocator_kernels.copy_bytes(dst, src, nbytes);
    return;
  }
#endif
  throw_no_backend(dst_device.is_cpu() ? src_device : dst_device, "to");
}

}  // namespace nns
