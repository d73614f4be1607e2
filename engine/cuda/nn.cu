// SPDX-License-Identifier: GPL-3.0-or-later
// The neural-network family's table on CUDA: the launchers of each op family's file
// (engine/cuda/nn_common.cuh lists them).
#include "engine/cuda/nn_common.cuh"

namespace nns::cuda {

const NNKernels nn_kernels{&conv2d_forward,
                           &conv2d_backward,
                           &max_pool2d_forward,
                           &max_pool2d_backward,
                           &avg_pool2d_forward,
                           &avg_pool2d_backward,
                           &batch_norm_stats,
                           &batch_norm_invstd,
                           &batch_norm_apply,
                           &batch_norm_backward,
                           &layer_norm_forward,
                           &layer_norm_backward,
                           &adaptive_avg_pool2d_forward,
                           &adaptive_avg_pool2d_backward,
                           &nll_loss_forward,
                           &nll_loss_backward,
                           &lstm_cell_forward,
                           &lstm_cell_backward,
                           &bernoulli_philox};

}  // namespace nns::cuda
