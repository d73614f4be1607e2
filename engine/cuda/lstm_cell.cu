// SPDX-License-Identifier: GPL-3.0-or-later
// The LSTM cell's pointwise step on CUDA: the gates through the elementwise sigmoid and tanh,
// then the cell and hidden state, and the gates' gradients in one kernel.
#include "engine/backend/elementwise_kernels.h"
#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {
namespace {

template <class T>
__global__ void lstm_c_kernel(const T* act, const T* c_prev, int64_t n, int64_t hidden, T* c) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, h = j % hidden;
    const T* a = act + r * 4 * hidden;
    const T i = a[h], f = a[hidden + h], g = a[2 * hidden + h];
    // Two products, then their sum, as the separate ops round f * c_prev + i * g.
    c[j] = c_prev ? f * c_prev[j] + i * g : i * g;
  }
}

template <class T>
__global__ void lstm_h_kernel(const T* act, const T* tanh_c, int64_t n, int64_t hidden, T* h) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, k = j % hidden;
    h[j] = act[r * 4 * hidden + 3 * hidden + k] * tanh_c[j];
  }
}

template <class T>
__global__ void lstm_backward_kernel(const T* grad_h, const T* grad_c, const T* act,
                                     const T* c_prev, const T* tanh_c, int64_t n, int64_t hidden,
                                     T* gg_all, T* grad_c_prev) {
  NNS_GRID_STRIDE_LOOP(j, n * hidden) {
    const int64_t r = j / hidden, k = j % hidden;
    const T* a = act + r * 4 * hidden;
    const T i = a[k], f = a[hidden + k], g = a[2 * hidden + k], o = a[3 * hidden + k];
    const T tc = tanh_c[j];
    T* gg = gg_all + r * 4 * hidden;
    T dc = 0;
    if (grad_h) {
      const T gh = grad_h[j];
      dc = gh * o * (T(1) - tc * tc);
      gg[3 * hidden + k] = gh * tc * o * (T(1) - o);
    } else {
      gg[3 * hidden + k] = 0;
    }
    if (grad_c) dc += grad_c[j];
    gg[k] = dc * g * i * (T(1) - i);
    gg[hidden + k] = c_prev ? dc * c_prev[j] * f * (T(1) - f) : T(0);
    gg[2 * hidden + k] = dc * i * (T(1) - g * g);
    if (grad_c_prev) grad_c_prev[j] = dc * f;
  }
}

}  // namespace

void lstm_cell_forward(const TensorView& gates, const TensorView& c_prev, int64_t n, int64_t hidden,
                       const TensorView& act, const TensorView& c, const TensorView& tanh_c,
                       const TensorView& h) {
  if (n * hidden == 0) return;
  const int64_t width = 4 * hidden;
  elementwise_kernels.unary(UnaryOp::Sigmoid, act, gates, 0, 0);
  const int64_t sizes[2] = {n, hidden};
  const int64_t strides[2] = {width, 1};
  elementwise_kernels.unary(UnaryOp::Tanh, column_block(act, 2 * hidden, sizes, strides),
                            column_block(gates, 2 * hidden, sizes, strides), 0, 0);
  cudaStream_t st = stream_for(c.data);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_c_kernel<T><<<blocks_for(n * hidden), kThreads, 0, st>>>(
        act.ptr<const T>(), static_cast<const T*>(c_prev.data), n, hidden, c.ptr<T>());
  });
  check_launch("lstm_cell");
  elementwise_kernels.unary(UnaryOp::Tanh, tanh_c, c, 0, 0);
  dispatch_floating(gates.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    lstm_h_kernel<T><<<blocks_for(n * hidden), kThreads, 0, st>>>(
        act.ptr<const T>(), tanh_c.ptr<const T>(), n, hidden, h.ptr<T>());
  });
  check_launch("lstm_cell");
}

void lstm_cell_backward(const TensorView& grad_h, const TensorView& grad_c, const TensorView& act,
                        const TensorView& c_prev, const TensorView& tanh_c, int64_t n,
                        int64_t hidden, const TensorView& grad_gates,
                        const TensorView& grad_c_prev) {
  if (n * hidden == 0) return;
  dispatch_floating(act.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    lstm_backward_kernel<T><<<blocks_for(n * hidden), kThreads, 0, stream_for(grad_gates.data)>>>(
        static_cast<const T*>(grad_h.data), static_cast<const T*>(grad_c.data), act.ptr<const T>(),
        static_cast<const T*>(c_prev.data), tanh_c.ptr<const T>(), n, hidden, grad_gates.ptr<T>(),
        static_cast<T*>(grad_c_prev.data));
  });
  check_launch("lstm_cell_backward");
}

}  // namespace nns::cuda
