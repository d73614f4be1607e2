// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The GEMM of a device backend: every matrix product of the engine (mm, bmm, addmm, matmul,
// linear, conv2d) goes through these two functions, so that one place decides how products
// run (on the CPU: Eigen, which hands them to OpenBLAS when built with NNS_USE_BLAS).
//
//   // C[2x4] = A[2x3] @ B[3x4], all row-major and contiguous:
//   k.gemm_f32(false, false, 2, 4, 3, 1.0f, a, 3, b, 4, 0.0f, c, 4);
#include <cstdint>
#include <type_traits>

#include "engine/tensor/device.h"

namespace nns {

// Row-major GEMM: C = alpha * op(A) @ op(B) + beta * C, where op(X) is X or its transpose.
// C is m x n, op(A) is m x k, op(B) is k x n. A stored untransposed is m x k, transposed it
// is k x m; lda is the distance between its rows in elements (likewise ldb, ldc), and must be
// at least its number of columns. beta == 0 overwrites C, so NaNs in C do not propagate.
template <class T>
using GemmFn = void (*)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                        const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                        int64_t ldc);

// `batch` GEMMs at once: the i-th reads A at a + i * stride_a and B at b + i * stride_b and
// writes C at c + i * stride_c (a stride of 0 shares one matrix). bmm and batched matmul go
// through it, so that a device runs a batch of small products as one launch.
template <class T>
using GemmBatchedFn = void (*)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                               const T* a, int64_t lda, int64_t stride_a, const T* b, int64_t ldb,
                               int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                               int64_t batch);

// C = op(A) @ op(B) + bias, bias (n elements, contiguous) added to every row, in the product's
// epilogue (one launch where a copy of the bias and a GEMM were two: addmm with a 1-D bias,
// which is how nn.Linear runs, as PyTorch's CUDA addmm does through cuBLASLt). false when it
// cannot (the library has no such product for these operands): nothing was written then.
template <class T>
using GemmBiasFn = bool (*)(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                            int64_t lda, const T* b, int64_t ldb, const T* bias, T* c, int64_t ldc);

struct LinalgKernels {
  GemmFn<float> gemm_f32;
  GemmFn<double> gemm_f64;
  GemmBatchedFn<float> gemm_batched_f32;
  GemmBatchedFn<double> gemm_batched_f64;
  GemmBiasFn<float> gemm_bias_f32;  // nullptr where there is none (the CPU)

  template <class T>
  GemmFn<T> gemm() const {
    if constexpr (std::is_same_v<T, float>) {
      return gemm_f32;
    } else {
      return gemm_f64;
    }
  }
  template <class T>
  GemmBatchedFn<T> gemm_batched() const {
    if constexpr (std::is_same_v<T, float>) {
      return gemm_batched_f32;
    } else {
      return gemm_batched_f64;
    }
  }
  static const LinalgKernels* for_device(DeviceType type);
};

}  // namespace nns
