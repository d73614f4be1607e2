// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/backend/dispatch.h"

#include "engine/backend/cuda_backend.h"
#include "engine/cpu/cpu_kernels.h"

namespace nns {

void throw_no_backend(Device device, const char* op) {
  std::string msg = std::string(op) + ": no kernels for device " + device.str();
  if (device.is_cuda()) {
    const std::string why = cuda::unavailable_reason();
    if (!why.empty()) {
      msg += " (" + why + ")";
    } else if (device.index >= cuda::device_count()) {
      msg += " (this machine has " + std::to_string(cuda::device_count()) + " CUDA device" +
             (cuda::device_count() == 1 ? "" : "s") + ")";
    } else {
      msg += " (the CUDA backend has no kernels of this family yet)";
    }
    msg += "; move the tensors to the CPU with .to(nns::kCPU)";
  }
  throw DeviceError(msg);
}

// Which kernel tables each device has: the one place a backend is plugged in. The CUDA
// column comes from libnnstudio-cuda.so, loaded at the first CUDA request (cuda_loader.cpp);
// a family the library does not implement is nullptr, and ops on CUDA tensors of that
// family raise DeviceError.
namespace {
template <class Family>
const Family* table_for(DeviceType type, const Family* cpu,
                        const Family* CudaBackendTables::*cuda_member) {
  switch (type) {
    case DeviceType::CPU:
      return cpu;
    case DeviceType::CUDA: {
      const CudaBackendTables* t = cuda::backend();
      return t != nullptr ? t->*cuda_member : nullptr;
    }
  }
  return nullptr;
}
}  // namespace

const AllocatorKernels* AllocatorKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::allocator_kernels, &CudaBackendTables::allocator);
}
const CopyKernels* CopyKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::copy_kernels, &CudaBackendTables::copy);
}
const ElementwiseKernels* ElementwiseKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::elementwise_kernels, &CudaBackendTables::elementwise);
}
const ReductionKernels* ReductionKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::reduction_kernels, &CudaBackendTables::reduction);
}
const LinalgKernels* LinalgKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::linalg_kernels, &CudaBackendTables::linalg);
}
const IndexingKernels* IndexingKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::indexing_kernels, &CudaBackendTables::indexing);
}
const NNKernels* NNKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::nn_kernels, &CudaBackendTables::nn);
}
const OptimizerKernels* OptimizerKernels::for_device(DeviceType type) {
  return table_for(type, &cpu::optimizer_kernels, &CudaBackendTables::optimizer);
}

bool device_available(Device device) {
  if (device.is_cpu()) return true;
  return device.index >= 0 && device.index < cuda::device_count();
}

void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes) {
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    cpu::allocator_kernels.copy_bytes(dst, src, nbytes);
    return;
  }
  const CudaBackendTables* t = cuda::backend();
  const Device cuda_side = dst_device.is_cpu() ? src_device : dst_device;
  if (t == nullptr || !device_available(cuda_side)) throw_no_backend(cuda_side, "to");
  if (dst_device.is_cuda() && src_device.is_cpu()) {
    t->copy_host_to_device(dst, src, nbytes, dst_device.index);
  } else if (dst_device.is_cpu() && src_device.is_cuda()) {
    t->copy_device_to_host(dst, src, nbytes, src_device.index);
  } else if (dst_device == src_device) {
    t->allocator->copy_bytes(dst, src, nbytes);
  } else {
    // Between two GPUs: through the host (peer access is not set up).
    std::string staging(nbytes, '\0');
    t->copy_device_to_host(staging.data(), src, nbytes, src_device.index);
    t->copy_host_to_device(dst, staging.data(), nbytes, dst_device.index);
  }
}

}  // namespace nns
