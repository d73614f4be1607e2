// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A project's model as PyTorch code (model.py): one nn.Module class per custom block and one
// for the model, named as the project, that registers its submodules, parameters and buffers
// in the builder's order under the builder's names (nn.Sequential, nn.ModuleList,
// nn.ModuleDict included), so that its state_dict() has the keys, in the order, of the model
// nnstudio builds (engine/graph/builder.h), and the files NN Studio saves load into it with
// strict=True. forward is the graph in the order the builder runs it, one line per node.
//
//   const std::string code = nns::exporting::pytorch_model_code(project);
//
// The code runs on PyTorch 1.13 and 2.x.
#include <string>

#include "engine/graph/project.h"
#include "engine/nn/module.h"

namespace nns::exporting {

// A GraphError with the builder's message when the project does not build; a ValueError
// naming the node for a plugin type (a plugin has no PyTorch code).
std::string pytorch_model_code(const graph::Project& project);

// train.py: trains the model class of model.py as NN Studio's session does (the project's loss,
// optimizer, scheduler, batch size, epochs, seed and clipping) on data.pt's tensors, in one
// process or under torchrun with DistributedDataParallel; `classification`: the targets are
// class indices.
std::string pytorch_train_code(const graph::Project& project, bool classification);

// Writes the export folder `dir`: model.py, train.py, data.pt, README.md and, with `weights`
// (checked against the model: strict, every key and shape), weights.pt. data.pt holds the
// project's data and its train/test split (a CSV path is relative to base_dir), except for a
// user's images or arrays ("files": an image folder, MNIST, CIFAR, NumPy; engine/data/sources.h):
// train.py reads those from where they are (base_dir joined with the dataset's path, made
// absolute; its --data PATH reads another copy), images as torchvision does (ImageFolder, or a
// Dataset of MNIST's or CIFAR's files giving PIL images) through the project's transforms, the
// test set through test_transforms(); data.pt then holds the session's split as int64 indices,
// train_indices into the source's train split and test_indices into its test split (or, without
// one, into the train split too), images NN Studio could not read left out. Everything is made
// before anything is written, in a folder beside `dir` that is renamed into place, so a failure
// leaves no half folder. An existing `dir` is a ValueError unless `replace`.
void write_pytorch_export(const graph::Project& project, const std::string& dir,
                          const std::string& base_dir, const nn::StateDict* weights, bool replace);

}  // namespace nns::exporting
