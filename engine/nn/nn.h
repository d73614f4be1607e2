#pragma once
// Everything of nns::nn in one include: Module, containers, layers, init.
#include "engine/nn/batchnorm.h"
#include "engine/nn/container.h"
#include "engine/nn/conv.h"
#include "engine/nn/init.h"
#include "engine/nn/layers.h"
#include "engine/nn/module.h"
#include "engine/nn/ordered_dict.h"
