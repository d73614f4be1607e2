// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything a user of the tensor engine needs, in one include.
#include "engine/autograd/autograd.h"
#include "engine/ops/elementwise.h"
#include "engine/ops/indexing.h"
#include "engine/ops/linalg.h"
#include "engine/ops/loss_ops.h"
#include "engine/ops/nn_ops.h"
#include "engine/ops/reduction.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/tensor.h"
