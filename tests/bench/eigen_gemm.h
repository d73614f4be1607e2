// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Eigen's own single-precision GEMM (no BLAS behind it), compiled in eigen_gemm.cpp.

namespace nns::bench {

// c = a * b for row-major n x n matrices.
void eigen_sgemm(int n, const float* a, const float* b, float* c);
// The number of threads Eigen's GEMM may use (more than 1 only when built with OpenMP).
int eigen_max_threads();
void eigen_set_threads(int threads);

}  // namespace nns::bench
