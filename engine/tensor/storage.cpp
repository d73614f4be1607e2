// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/tensor/storage.h"

#include "engine/backend/dispatch.h"

namespace nns {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  const auto& alloc = kernels<AllocatorKernels>(device, "Storage::allocate");
  void* data = alloc.allocate(nbytes, device.index);
  return std::shared_ptr<Storage>(new Storage(data, nbytes, device));
}

Storage::~Storage() {
  if (const AllocatorKernels* alloc = AllocatorKernels::for_device(device_.type)) {
    alloc->deallocate(data_, device_.index);
  }
}

}  // namespace nns
