// SPDX-License-Identifier: GPL-3.0-or-later
#include "eigen_gemm.h"

#include <Eigen/Core>

#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef EIGEN_USE_BLAS
#error "eigen_gemm.cpp measures Eigen's own GEMM: it must be compiled without EIGEN_USE_BLAS"
#endif

namespace nns::bench {

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

void eigen_sgemm(int n, const float* a, const float* b, float* c) {
  Eigen::Map<const RowMajor> ma(a, n, n), mb(b, n, n);
  Eigen::Map<RowMajor> mc(c, n, n);
  mc.noalias() = ma * mb;
}

int eigen_max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void eigen_set_threads(int threads) {
  Eigen::setNbThreads(threads);
}

}  // namespace nns::bench
