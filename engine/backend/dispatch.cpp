// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/backend/dispatch.h"

#include "engine/cpu/cpu_kernels.h"
#ifdef NNS_WITH_CUDA
#include "engine/cuda/cuda_runtime.h"
#endif

namespace nns {

void throw_no_backend(Device device, const char* op) {
  std::string msg = std::string(op) + ": no kernels for device " + device.str();
  if (device.is_cuda()) {
    msg +=
        " (this build has no CUDA backend or the machine has no CUDA device); move the "
        "tensors to the CPU with .to(nns::kCPU)";
  }
  throw DeviceError(msg);
}

// Which kernel tables each device has: the one place a backend is plugged in. A CUDA build
// adds its tables in the CUDA column; a family it does not implement yet stays nullptr and
// ops on CUDA tensors of that family raise DeviceError.
namespace {
template <class Family>
const Family* table_for(DeviceType type, const Family* cpu, const Family* cuda) {
  switch (type) {
    case DeviceType::CPU:
      return cpu;
    case DeviceType::CUDA:
      return cuda;
  }
  return nullptr;
}

#ifdef NNS_WITH_CUDA
const AllocatorKernels* const kCudaAllocator = &cuda::allocator_kernels;
#else
const AllocatorKernels* const kCudaAllocator = nullptr;
#endif
}  // namespace

const AllocatorKernels* AllocatorKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::allocator_kernels, kCudaAllocator);
}
const CopyKernels* CopyKernels::for_device(DeviceType type) {
  return table_for<CopyKernels>(type, &cpu::copy_kernels, nullptr);
}
const ElementwiseKernels* ElementwiseKernels::for_device(DeviceType type) {
  return table_for<ElementwiseKernels>(type, &cpu::elementwise_kernels, nullptr);
}
const ReductionKernels* ReductionKernels::for_device(DeviceType type) {
  return table_for<ReductionKernels>(type, &cpu::reduction_kernels, nullptr);
}
const LinalgKernels* LinalgKernels::for_device(DeviceType type) {
  return table_for<LinalgKernels>(type, &cpu::linalg_kernels, nullptr);
}
const IndexingKernels* IndexingKernels::for_device(DeviceType type) {
  return table_for<IndexingKernels>(type, &cpu::indexing_kernels, nullptr);
}
const NNKernels* NNKernels::for_device(DeviceType type) {
  return table_for<NNKernels>(type, &cpu::nn_kernels, nullptr);
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
