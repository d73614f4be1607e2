#pragma once
// Everything of nns::nn in one include: Module, containers, layers, losses, init.
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
