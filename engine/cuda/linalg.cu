// SPDX-License-Identifier: GPL-3.0-or-later
// The GEMM of the CUDA backend: cuBLAS, one handle per device bound to the device's compute
// stream. The engine's products are row-major and cuBLAS's column-major; a row-major C = A B
// is the column-major C^T = B^T A^T, so A and B swap places and nothing is transposed in
// memory. float32 products use TF32 tensor cores only when allowed (off by default, as
// PyTorch's torch.backends.cuda.matmul.allow_tf32).
#include <cublas_v2.h>

#include <atomic>
#include <climits>
#include <mutex>

#include "engine/backend/linalg_kernels.h"
#include "engine/cuda/backend.h"
#include "engine/cuda/loops.cuh"

namespace nns::cuda {
namespace {

constexpr int kMaxDevices = 64;
std::atomic<bool> g_allow_tf32{false};

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED (out of GPU memory)";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "a cuBLAS error";
  }
}

void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw DeviceError(std::string(what) + ": cuBLAS failed: " + cublas_status_name(s));
}

struct Handle {
  std::once_flag once;
  cublasHandle_t handle = nullptr;
  bool tf32 = false;             // the math mode the handle has now
  cudaStream_t bound = nullptr;  // the stream it queues on now
  void* workspace = nullptr;     // kWorkspaceBytes of device memory, the handle's own
};
// cuBLAS's workspace, given to the handle rather than left to cuBLAS, so that no product
// allocates inside a CUDA graph capture (as PyTorch does; its default size on Hopper). Every
// product runs on the compute stream, captured ones replayed there too, so one is enough.
constexpr size_t kWorkspaceBytes = size_t{32} << 20;
Handle* handles() {
  static Handle* h = new Handle[kMaxDevices];  // never destroyed (see runtime.cpp)
  return h;
}

// The device's handle on its compute stream, in the math mode the TF32 setting asks for.
// cuBLAS handles are not to be shared by threads at once; the engine calls kernels from one
// training thread at a time, and the mutex makes other uses safe.
std::mutex& handle_mutex() {
  static std::mutex m;
  return m;
}

cublasHandle_t handle_for(int device) {
  Handle& h = handles()[device];
  std::call_once(h.once, [&] {
    set_device(device);
    check_cublas(cublasCreate(&h.handle), "cublasCreate");
    check_cublas(cublasSetMathMode(h.handle, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    check(cudaMalloc(&h.workspace, kWorkspaceBytes), "cuBLAS workspace");
  });
  // The compute stream, or this thread's CUDA graph capture stream while it captures.
  if (cudaStream_t s = stream(device); s != h.bound) {
    check_cublas(cublasSetStream(h.handle, s), "cublasSetStream");
    check_cublas(cublasSetWorkspace(h.handle, h.workspace, kWorkspaceBytes), "cublasSetWorkspace");
    h.bound = s;
  }
  const bool tf32 = g_allow_tf32.load(std::memory_order_relaxed);
  if (tf32 != h.tf32) {
    check_cublas(
        cublasSetMathMode(h.handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
        "cublasSetMathMode");
    h.tf32 = tf32;
  }
  return h.handle;
}

// C = beta * C over an m x n row-major block with leading dimension ldc (a product with k = 0).
template <class T>
__global__ void scale_kernel(T* c, int64_t m, int64_t n, int64_t ldc, T beta) {
  NNS_GRID_STRIDE_LOOP(i, m * n) {
    T& x = c[(i / n) * ldc + i % n];
    x = beta == T(0) ? T(0) : beta * x;
  }
}

// `batch` products C_i = alpha op(A_i) op(B_i) + beta C_i, the i-th at a + i * stride_a (and
// b, c likewise): one cublasXgemm, or one strided-batched launch for several (attention's
// per-head products, bmm).
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T beta,
                  T* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0) return;
  const int device = device_of(c);
  set_device(device);
  if (k == 0) {
    for (int64_t i = 0; i < batch; ++i) {
      scale_kernel<T>
          <<<blocks_for(m * n), kThreads, 0, stream(device)>>>(c + i * stride_c, m, n, ldc, beta);
      check_launch("gemm");
    }
    return;
  }
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
      ldc > INT_MAX || batch > INT_MAX)
    throw DeviceError("gemm (CUDA): a side of " + std::to_string(std::max({m, n, k, batch})) +
                      " is beyond cuBLAS's 32-bit sizes");
  std::lock_guard<std::mutex> lock(handle_mutex());
  cublasHandle_t h = handle_for(device);
  // Column-major: C^T (n x m) = op(B)^T (n x k) op(A)^T (k x m).
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int rows = static_cast<int>(n), cols = static_cast<int>(m), depth = static_cast<int>(k);
  const int ld_a = static_cast<int>(std::max<int64_t>(lda, 1));
  const int ld_b = static_cast<int>(std::max<int64_t>(ldb, 1));
  const int ld_c = static_cast<int>(std::max<int64_t>(ldc, 1));
  const int count = static_cast<int>(batch);
  if constexpr (std::is_same_v<T, float>) {
    check_cublas(batch == 1 ? cublasSgemm(h, op_b, op_a, rows, cols, depth, &alpha, b, ld_b, a,
                                          ld_a, &beta, c, ld_c)
                            : cublasSgemmStridedBatched(h, op_b, op_a, rows, cols, depth, &alpha, b,
                                                        ld_b, stride_b, a, ld_a, stride_a, &beta, c,
                                                        ld_c, stride_c, count),
                 "gemm");
  } else {
    check_cublas(batch == 1 ? cublasDgemm(h, op_b, op_a, rows, cols, depth, &alpha, b, ld_b, a,
                                          ld_a, &beta, c, ld_c)
                            : cublasDgemmStridedBatched(h, op_b, op_a, rows, cols, depth, &alpha, b,
                                                        ld_b, stride_b, a, ld_a, stride_a, &beta, c,
                                                        ld_c, stride_c, count),
                 "gemm");
  }
}

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  gemm_batched<T>(trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
}

}  // namespace

void backend_set_allow_tf32(bool allow) {
  g_allow_tf32.store(allow);
}
bool backend_allow_tf32() {
  return g_allow_tf32.load();
}

const LinalgKernels linalg_kernels{&gemm<float>, &gemm<double>, &gemm_batched<float>,
                                   &gemm_batched<double>};

}  // namespace nns::cuda
