// SPDX-License-Identifier: GPL-3.0-or-later
// The GEMM of the CUDA backend: cuBLAS, one handle per device bound to the device's compute
// stream. The engine's products are row-major and cuBLAS's column-major; a row-major C = A B
// is the column-major C^T = B^T A^T, so A and B swap places and nothing is transposed in
// memory. float32 products use TF32 tensor cores only when allowed (off by default, as
// PyTorch's torch.backends.cuda.matmul.allow_tf32).
#include <cublasLt.h>
#include <cublas_v2.h>

#include <atomic>
#include <climits>
#include <map>
#include <mutex>
#include <tuple>

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

// ---- cuBLASLt: the product with its bias in the epilogue ------------------------------------

// One product's cuBLASLt descriptors and the algorithm its heuristic chose, kept per shape,
// layout, pointer alignment and TF32 setting: making them costs more than a small product.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool usable = false;
};
using LtKey =
    std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool>;

struct LtState {
  cublasLtHandle_t handle = nullptr;
  std::map<LtKey, LtPlan> plans;
};
LtState* lt_states() {
  static LtState* s = new LtState[kMaxDevices];  // never destroyed (see runtime.cpp)
  return s;
}

// The largest power of two up to 256 that divides the address (cuBLASLt's kernels need their
// operands aligned as the heuristic was told).
int alignment_of(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && v % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

// Row-major C = op(A) op(B) + bias is column-major C^T = op(B)^T op(A)^T + bias, the bias along
// C^T's rows: cuBLASLt's BIAS epilogue.
bool gemm_bias(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
               int64_t lda, const float* b, int64_t ldb, const float* bias, float* c, int64_t ldc) {
  if (m == 0 || n == 0 || k == 0 || m > INT_MAX || n > INT_MAX || k > INT_MAX) return false;
  const int device = device_of(c);
  set_device(device);
  std::lock_guard<std::mutex> lock(handle_mutex());
  const cudaStream_t s = stream(device);
  Handle& h = handles()[device];
  (void)handle_for(device);  // the workspace
  LtState& lt = lt_states()[device];
  if (lt.handle == nullptr && cublasLtCreate(&lt.handle) != CUBLAS_STATUS_SUCCESS) return false;
  const bool tf32 = g_allow_tf32.load(std::memory_order_relaxed);
  const int align =
      std::min({alignment_of(a), alignment_of(b), alignment_of(c), alignment_of(bias)});
  const LtKey key{align, trans_a, trans_b, m, n, k, lda, ldb, ldc, tf32};
  LtPlan& plan = lt.plans[key];
  if (plan.op == nullptr) {
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    bool ok =
        cublasLtMatmulDescCreate(&plan.op, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                                 CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b,
                                              sizeof op_b) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a,
                                              sizeof op_a) == CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof epilogue) == CUBLAS_STATUS_SUCCESS;
    // The stored operands as column-major matrices (rows x columns, leading dimension), in
    // the swapped order of gemm_batched's cublasSgemm call.
    const uint64_t b_rows = trans_b ? k : n, b_cols = trans_b ? n : k;
    const uint64_t a_rows = trans_a ? m : k, a_cols = trans_a ? k : m;
    ok = ok && cublasLtMatrixLayoutCreate(&plan.a, CUDA_R_32F, b_rows, b_cols, ldb) ==
                   CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&plan.b, CUDA_R_32F, a_rows, a_cols, lda) ==
                   CUBLAS_STATUS_SUCCESS;
    ok = ok && cublasLtMatrixLayoutCreate(&plan.c, CUDA_R_32F, n, m, ldc) == CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulPreference_t pref = nullptr;
    ok = ok && cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS;
    const uint64_t workspace = kWorkspaceBytes;
    const uint32_t alignment = static_cast<uint32_t>(align);
    ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace,
                                                    sizeof workspace) == CUBLAS_STATUS_SUCCESS;
    for (const auto attr :
         {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
          CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      ok = ok && cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignment, sizeof alignment) ==
                     CUBLAS_STATUS_SUCCESS;
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    ok = ok && cublasLtMatmulAlgoGetHeuristic(lt.handle, plan.op, plan.a, plan.b, plan.c, plan.c,
                                              pref, 1, &result, &found) == CUBLAS_STATUS_SUCCESS;
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    plan.usable = ok && found > 0;
    if (plan.usable) plan.algo = result.algo;
  }
  if (!plan.usable) return false;
  if (cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                     sizeof bias) != CUBLAS_STATUS_SUCCESS)
    return false;
  const float one = 1.0f, zero = 0.0f;
  check_cublas(cublasLtMatmul(lt.handle, plan.op, &one, b, plan.a, a, plan.b, &zero, c, plan.c, c,
                              plan.c, &plan.algo, h.workspace, kWorkspaceBytes, s),
               "gemm with bias (cuBLASLt)");
  return true;
}

}  // namespace

void backend_set_allow_tf32(bool allow) {
  g_allow_tf32.store(allow);
}
bool backend_allow_tf32() {
  return g_allow_tf32.load();
}

const LinalgKernels linalg_kernels{&gemm<float>, &gemm<double>, &gemm_batched<float>,
                                   &gemm_batched<double>, &gemm_bias};

}  // namespace nns::cuda
