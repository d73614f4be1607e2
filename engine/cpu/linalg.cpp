// SPDX-License-Identifier: GPL-3.0-or-later
// The CPU GEMM. With EIGEN_USE_BLAS (NNS_USE_BLAS) it calls the BLAS's sgemm/dgemm directly,
// transposes as flags and beta passed through (Eigen's own BLAS path first zero-fills the
// output and then accumulates into it: one needless pass over C per product). Without a BLAS,
// Eigen maps over the caller's row-major buffers (transposed operands are Eigen transpose
// expressions, which its product kernels read in place).
// Eigen's own kernel (-march=native, AVX-512, one thread) is no faster than OpenBLAS at the small
// benchmark model's shapes (about equal on the 64-wide products, slower on the thin ones), so every
// size goes to the BLAS. Per product, OpenBLAS / Eigen: 256x64x64 19.6 / 18.2 us (nt),
// 64x64x256 18.7 / 20.6 (tn), 256x64x64 17.0 / 17.5 (nn), 256x64x2 3.2 / 5.7, 64x2x256 0.9 / 5.5; a
// step's eight products 64 / 79 us (2026-11-22).
//
// With oneDNN (NNS_USE_ONEDNN) float32 products go to dnnl_sgemm, its JIT AVX-512 kernel: Debian's
// OpenBLAS 0.3.21 does not know this machine's Zen 4 and runs its Haswell (AVX2) kernel, at about
// half the speed. Per product, OpenBLAS / oneDNN, one thread (2026-11-26): 256x64x64 22.3 / 13.3
// us (nt), 64x64x256 22.8 / 13.5 (tn), 256x64x64 21.9 / 11.0 (nn), 128x512x784 1071 / 557 (nt),
// 512x784x128 1032 / 531 (tn), 128x512x512 680 / 379 (nn). The exception is a transposed B with
// a long inner dimension (k over 4x the larger of m and n) and m and n both 16 or more, where
// oneDNN's kernel is up to 4x slower: 16x72x4096 146 / 639, 16x72x1024 40 / 159, 32x32x4096
// 127 / 244, 16x16x4096 41 / 73; those stay on OpenBLAS (but 8x9x16384 94 / 27 and 8x72x4096
// 120 / 74 do not). Double products always do (oneDNN has no dgemm).
#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <type_traits>

#include "engine/cpu/cpu_kernels.h"
#include "engine/cpu/threads.h"

#ifdef NNS_USE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

namespace nns::cpu {

namespace {

#ifdef EIGEN_USE_BLAS
// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a row-major buffer read
// column-major is its transpose, so the operands swap and each keeps its own flag.
void blas_gemm(char ta, char tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
  sgemm_(&tb, &ta, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}
void blas_gemm(char ta, char tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
  dgemm_(&tb, &ta, &n, &m, &k, &alpha, b, &ldb, a, &lda, &beta, c, &ldc);
}
#endif

#ifdef NNS_USE_ONEDNN
// See the top of this file: where oneDNN's kernel is the faster, by measurement.
bool onednn_is_faster(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
  return !(trans_b && !trans_a && k > 4 * std::max(m, n) && std::min(m, n) >= 16);
}

// dnnl_sgemm is row-major, as the engine's buffers are; it runs on as many OpenMP threads as
// the calling thread's omp_get_max_threads (set per product by use_threads_for_gemm, which gemm
// calls first).
bool onednn_gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc) {
  if (!onednn_is_faster(trans_a, trans_b, m, n, k)) return false;
  return dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta,
                    c, ldc) == dnnl_success;
}
#endif

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  if (m == 0 || n == 0) return;
#ifdef NNS_USE_ONEDNN
  use_threads_for_gemm(m, n, k);  // and OpenBLAS pinned to one thread (engine/cpu/threads.cpp)
  if constexpr (std::is_same_v<T, float>) {
    if (k > 0 && alpha != T(0) &&
        onednn_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) {
      return;
    }
  }
#endif
#ifdef EIGEN_USE_BLAS
  // The BLAS's Fortran interface takes 32-bit sizes; larger products stay on Eigen.
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  if (k > 0 && alpha != T(0) && std::max({m, n, k, lda, ldb, ldc}) <= kIntMax) {
    blas_gemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
    return;
  }
#endif
  Eigen::Map<Matrix, 0, Stride> out(c, m, n, Stride(ldc));
  if (beta == T(0)) {
    out.setZero();
  } else if (beta != T(1)) {
    out *= beta;
  }
  // As in BLAS, A and B are not read when they cannot contribute.
  if (k == 0 || alpha == T(0)) return;
  Eigen::Map<const Matrix, 0, Stride> A(a, trans_a ? k : m, trans_a ? m : k, Stride(lda));
  Eigen::Map<const Matrix, 0, Stride> B(b, trans_b ? n : k, trans_b ? k : n, Stride(ldb));
  if (!trans_a && !trans_b) {
    out.noalias() += alpha * A * B;
  } else if (trans_a && !trans_b) {
    out.noalias() += alpha * A.transpose() * B;
  } else if (!trans_a && trans_b) {
    out.noalias() += alpha * A * B.transpose();
  } else {
    out.noalias() += alpha * A.transpose() * B.transpose();
  }
}

// On the CPU a batch is the GEMMs one after another (each large enough to use the cores).
template <class T>
void gemm_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                  int64_t lda, int64_t stride_a, const T* b, int64_t ldb, int64_t stride_b, T beta,
                  T* c, int64_t ldc, int64_t stride_c, int64_t batch) {
  for (int64_t i = 0; i < batch; ++i) {
    gemm<T>(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
            c + i * stride_c, ldc);
  }
}

}  // namespace

const LinalgKernels linalg_kernels{&gemm<float>, &gemm<double>, &gemm_batched<float>,
                                   &gemm_batched<double>, nullptr};

}  // namespace nns::cpu
