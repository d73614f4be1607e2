// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Two models on the same numbers: the other half of a model diff (engine/graph/diff.h has the
// structure). Both models, each with its weights, run forward and backward on the same batch
// (the first `batch` training samples of A's data, in order, with A's loss); hooks on every
// matched module keep its output and the gradient w.r.t. its output, and the weights of each
// matched pair are compared entry by entry.
//
//   graph::ProjectDiff d = graph::diff_projects(a, b);
//   ModelDiff m = diff_models({a, &weights_a, dir_a}, {b, &weights_b, dir_b}, d, 64);
//   m.modules[0].divergence;   // sorted: structural changes first, then the most divergent
//
// `nnstudio-cli diff` prints the structure and these figures; the window tints the union's
// nodes by divergence and lists the modules in its Differences table.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/graph/diff.h"
#include "engine/graph/project.h"
#include "engine/nn/module.h"

namespace nns::train {

// One side of the comparison: a project, the weights its model takes (nullptr: the initial
// weights from its seed, graph::build_initial_model), and the folder its data paths are
// relative to.
struct DiffSide {
  const graph::Project& project;
  const nn::StateDict* weights = nullptr;
  std::string weights_name;  // what ModelDiff::weights_a/b say of them (a file, a run's step)
  std::string base_dir;
};

// The statistics of one tensor (NaN when it is missing: no gradient reached the module).
struct TensorMoments {
  double mean = std::numeric_limits<double>::quiet_NaN();
  double std = std::numeric_limits<double>::quiet_NaN();   // unbiased, as torch.std
  double norm = std::numeric_limits<double>::quiet_NaN();  // L2
};

struct ModuleDiff {
  graph::NodeId a = 0, b = 0;  // the matched nodes (as in graph::NodeDiff)
  std::string path_a, path_b;
  TensorMoments output_a, output_b;  // the module's first output
  TensorMoments grad_a, grad_b;      // d loss / d output
  // Of the two outputs flattened (NaN when their shapes differ).
  double output_cosine = std::numeric_limits<double>::quiet_NaN();
  // ||w_b - w_a|| / ||w_a|| over the module's own parameters that have the same name and shape
  // on both sides (NaN when none: a module without parameters, or every shape changed).
  double weight_change = std::numeric_limits<double>::quiet_NaN();
  // How far apart the pair is, in [0, 1], what the canvas tints by: the larger of 1 - cosine
  // (clamped at 0) and weight_change / (1 + weight_change); 1 for a structural change whose
  // outputs cannot be compared.
  double divergence = 0;
};

struct ModelDiff {
  int64_t batch = 0;      // samples the batch held
  std::string data;       // the data set they came from ("spirals", a source's path)
  std::string weights_a;  // "initial (seed 0)" or the weights' description
  std::string weights_b;
  double loss_a = std::numeric_limits<double>::quiet_NaN();
  double loss_b = std::numeric_limits<double>::quiet_NaN();
  std::vector<ModuleDiff> modules;  // every matched module pair, most divergent first
  std::string error;  // why one side could not run (the structure is still compared); "" if ok
};

// Builds both models, loads the weights (strict: a weights file that does not fit its project
// is an error naming the key), and runs the batch (batch < 1: A's training batch size) in eval
// mode. A model that does not build or load, data that cannot be read, or a forward that fails
// (its input does not fit A's data) fills `error` and leaves `modules` empty; it never throws.
ModelDiff diff_models(const DiffSide& a, const DiffSide& b, const graph::ProjectDiff& diff,
                      int64_t batch);

}  // namespace nns::train
