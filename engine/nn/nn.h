// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Everything of nns::nn in one include: Module, containers, layers, recurrent layers, losses, init.
#include "engine/nn/attention.h"
#include "engine/nn/batchnorm.h"
#include "engine/nn/clip_grad.h"
#include "engine/nn/container.h"
#include "engine/nn/conv.h"
#include "engine/nn/embedding.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/nn/module.h"
#include "engine/nn/normalization.h"
#include "engine/nn/ordered_dict.h"
#include "engine/nn/pooling.h"
#include "engine/nn/positional.h"
#include "engine/nn/rnn.h"
#include "engine/nn/transformer.h"
