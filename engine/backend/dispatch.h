// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The device-dispatch seam. Operations never call a device's code directly: they ask for
// the kernel table of a family (allocator, elementwise, linalg, ...) for the tensor's
// device. The CPU tables (engine/cpu, Eigen) are always built; a CUDA build adds its own
// tables (engine/cuda) and nothing above this seam changes.
//
//   const auto& k = kernels<ElementwiseKernels>(a.device(), "add");
//   k.binary(BinaryOp::Add, ...);
//
// A family is a struct of function pointers with a static member
// `static const Family* for_device(DeviceType)` that returns nullptr where the device has
// no implementation; all of them are defined in dispatch.cpp, side by side.
#include <cstddef>
#include <string>

#include "engine/tensor/device.h"
#include "engine/tensor/error.h"

namespace nns {

// Throws DeviceError naming the operation and the device when there is no backend for it.
[[noreturn]] void throw_no_backend(Device device, const char* op);

template <class Family>
const Family& kernels(Device device, const char* op) {
  const Family* table = Family::for_device(device.type);
  if (table == nullptr) throw_no_backend(device, op);
  return *table;
}

// Memory of one device type.
struct AllocatorKernels {
  void* (*allocate)(size_t nbytes, int device_index);
  void (*deallocate)(void* data, int device_index);
  // Copies nbytes between two buffers of this device type (same device index or peer).
  void (*copy_bytes)(void* dst, const void* src, size_t nbytes);
  static const AllocatorKernels* for_device(DeviceType type);
};

// Whether a device exists at run time (a CUDA build on a machine without a GPU has none).
bool device_available(Device device);

// Copies nbytes of contiguous memory from one device to another (host <-> device, or within
// one device); throws DeviceError when the build or the machine has no such device.
void copy_between_devices(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t nbytes);

}  // namespace nns
