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
#include <Eigen/Core>
#include <algorithm>
#include <limits>

#include "engine/cpu/cpu_kernels.h"

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

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  if (m == 0 || n == 0) return;
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

}  // namespace

const LinalgKernels linalg_kernels{&gemm<float>, &gemm<double>};

}  // namespace nns::cpu
