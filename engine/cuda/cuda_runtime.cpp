// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/cuda/cuda_runtime.h"

#include <cuda_runtime.h>

#include <string>

namespace nns::cuda {

namespace {
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so that later calls are not poisoned
    throw DeviceError(std::string(what) + ": CUDA error " + cudaGetErrorString(status));
  }
}

void* allocate(size_t nbytes, int device_index) {
  check(cudaSetDevice(device_index), "Storage::allocate");
  void* p = nullptr;
  check(cudaMalloc(&p, nbytes == 0 ? 1 : nbytes), "Storage::allocate");
  return p;
}

void deallocate(void* data, int device_index) {
  cudaSetDevice(device_index);
  cudaFree(data);
}

void copy_bytes(void* dst, const void* src, size_t nbytes) {
  if (nbytes) check(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToDevice), "copy");
}
}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

const AllocatorKernels allocator_kernels{&allocate, &deallocate, &copy_bytes};

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device_index) {
  check(cudaSetDevice(device_index), "to");
  if (nbytes) check(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice), "to");
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device_index) {
  check(cudaSetDevice(device_index), "to");
  if (nbytes) check(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost), "to");
}

}  // namespace nns::cuda
