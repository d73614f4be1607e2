// SPDX-License-Identifier: GPL-3.0-or-later
// Dropout's keep mask on CUDA: Bernoulli draws from Philox, reproducible from the seed.
#include <curand_kernel.h>

#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

// Four elements a draw: curand_uniform4 gives four uniforms of one Philox counter, each thread
// on its own subsequence (as PyTorch's fused dropout).
template <class T>
__global__ void bernoulli_philox_kernel(T* out, int64_t n, float p_keep, uint64_t seed,
                                        const uint64_t* device_seed) {
  const uint64_t key = device_seed != nullptr ? *device_seed : seed;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x * 4;
  curandStatePhilox4_32_10_t state;
  curand_init(key, static_cast<unsigned long long>(thread), 0, &state);
  for (int64_t base = thread * 4; base < n; base += stride) {
    const float4 r = curand_uniform4(&state);
    const float draws[4] = {r.x, r.y, r.z, r.w};
    for (int j = 0; j < 4 && base + j < n; ++j) out[base + j] = draws[j] <= p_keep ? T(1) : T(0);
  }
}

}  // namespace

void bernoulli_philox(const TensorView& out, double p_keep, uint64_t seed,
                      const uint64_t* device_seed) {
  const int64_t n = out.numel();
  if (n == 0) return;
  dispatch_floating(out.dtype, "dropout", [&](auto tag) {
    using T = decltype(tag);
    bernoulli_philox_kernel<T><<<blocks_for((n + 3) / 4), kThreads, 0, stream_for(out.data)>>>(
        out.ptr<T>(), n, static_cast<float>(p_keep), seed, device_seed);
  });
  check_launch("dropout");
}

}  // namespace nns::cuda
