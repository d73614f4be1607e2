// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TrainingState: everything a run continues from, bit for bit: the weights, the optimizer's
// and scheduler's state, where the run is (step, epoch, batch of the epoch, batch size, the
// shuffling seed), the default generator's state (dropout's masks) and the current epoch's
// running sums (so the epoch's train loss comes out as in the run that was not interrupted).
// TrainingSession::training_state() takes one and restore() continues from one.
//
// On disk it is a PyTorch-style checkpoint (.pt, torch.load reads it):
//   {"model_state_dict": ..., "optimizer_state_dict": ..., "epoch": E, "step": S,
//    "nnstudio": {"batch": B, "batch_size": N, "seed": ..., "generator": b"...",
//                 "scheduler": {...}, "epoch_sums": {...}}}
// A checkpoint written by PyTorch (or by hand) without the "nnstudio" entry loads too: the
// run then goes on from the start of epoch E + 1 with the generator as it is.
//
// A run store's snapshot (run_store.h) is the same state in two files: the weights as
// .safetensors (what any tool loads) and the rest as a .pt whose model_state_dict is empty.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/nn/module.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"
#include "engine/train/accuracy.h"

namespace nns::train {

struct TrainingState {
  nn::StateDict model;
  std::optional<optim::OptimizerStateDict> optimizer;
  std::optional<optim::SchedulerValues> scheduler;
  int64_t step = 0;        // steps taken
  int64_t epoch = 0;       // epochs completed
  int64_t batch = 0;       // batches taken in the current epoch
  int64_t batch_size = 0;  // 0: the session's own
  uint64_t seed = 0;       // the shuffling seed (DataLoader)
  bool has_seed = false;   // false: the session's own
  std::string generator;   // Generator::get_state(); empty: leave the generator as it is
  // The current epoch's sums so far, and the smoothed loss.
  double epoch_loss_sum = 0;
  int64_t epoch_samples = 0;
  double epoch_seconds = 0;
  Accuracy epoch_accuracy;
  double smoothed = 0;
  int64_t smoothed_count = 0;
};

// Atomic (a temporary file renamed over path).
void save_checkpoint(const TrainingState& state, const std::string& path);
// A checkpoint or a plain state dict file (then only `model`); FileError naming the file and
// what is wrong.
TrainingState load_checkpoint(const std::string& path);

// A snapshot's two files (see the top); each written atomically.
void save_snapshot(const TrainingState& state, const std::string& weights_path,
                   const std::string& state_path);
TrainingState load_snapshot(const std::string& weights_path, const std::string& state_path);

}  // namespace nns::train
