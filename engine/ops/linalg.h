// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Matrix products. Large products go to the GEMM of the device backend (Eigen on the CPU,
// which can hand them to OpenBLAS: see NNS_USE_BLAS).
#include "engine/tensor/tensor.h"

namespace nns {

// torch.matmul: 1-D dot, 2-D mm, batched with broadcasting of the batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);   // [n,k] x [k,m]
Tensor bmm(const Tensor& a, const Tensor& b);  // [B,n,k] x [B,k,m]
// beta * input + alpha * (a @ b); input broadcasts to [n, m].
Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, double beta = 1,
             double alpha = 1);
// torch.nn.functional.linear: x @ weight^T + bias, any leading dims on x.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());

}  // namespace nns
