// The CPU GEMM: Eigen maps over the caller's row-major buffers (no copies; transposed
// operands are Eigen transpose expressions, which its product kernels read in place). With
// EIGEN_USE_BLAS (NNS_USE_BLAS) Eigen forwards these products to the BLAS.
#include <Eigen/Core>

#include "engine/cpu/cpu_kernels.h"

namespace nns::cpu {

namespace {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  if (m == 0 || n == 0) return;
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
