// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Optimizers and LR schedulers by name, with their options by name, as the project file and
// the training session give them:
//
//   auto optimizer = nns::optim::make_optimizer(
//       "Adam", {nns::optim::ParamGroup(net->parameters())}, {{"lr", 0.01}, {"amsgrad", true}});
//   auto scheduler = nns::optim::make_scheduler(
//       "StepLR", *optimizer, {{"step_size", int64_t{10}}, {"gamma", 0.5}});
//
// Names are PyTorch's ("SGD", "Adam", "AdamW", "RMSprop"; "StepLR", "CosineAnnealingLR",
// "OneCycleLR"), matched without regard to case ("adamw" is AdamW). An unknown name or option
// is a KeyError listing the known ones; a value of the wrong kind or out of range a
// ValueError.
#include <memory>
#include <string>
#include <vector>

#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"

namespace nns::optim {

// The optimizers' names, in PyTorch's spelling.
const std::vector<std::string>& optimizer_names();
const std::vector<std::string>& scheduler_names();
// `name` in PyTorch's spelling ("adamw" -> "AdamW"); a KeyError listing the optimizers when
// unknown.
const std::string& canonical_optimizer_name(const std::string& name);

// The options of the optimizer `name`: its defaults, then each of `options` set by name (SGD
// has no default lr, as in PyTorch: it must be given). For groups with their own options.
std::unique_ptr<OptimizerOptions> make_optimizer_options(const std::string& name,
                                                         const OptionList& options);

// The optimizer `name` over `groups` (groups without options take the defaults made from
// `options`).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, std::vector<ParamGroup> groups,
                                          const OptionList& options);

// The scheduler `name` for `optimizer`, which must outlive it. Options are the constructor's
// arguments by PyTorch's names: StepLR step_size (required), gamma; CosineAnnealingLR T_max
// (required), eta_min; OneCycleLR max_lr (required, a number or one per group), total_steps
// (or epochs and steps_per_epoch), pct_start, anneal_strategy, cycle_momentum,
// base_momentum, max_momentum, div_factor, final_div_factor, three_phase.
std::unique_ptr<LRScheduler> make_scheduler(const std::string& name, Optimizer& optimizer,
                                            const SchedulerValues& options);

}  // namespace nns::optim
