// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The canvas's picture of one traced sample (TrainingSession::trace, asked for by clicking a
// test point in the Output panel): each node with a module shows its output for that sample
// as a strip of bars (up to kBars values, scaled by the largest magnitude) and is tinted by
// the size of the loss's gradient w.r.t. that output (blue, log scale from 1e-6 to 1), whose
// RMS is the figure on the node; the tooltip lists the first values of both.
#include <map>

#include "engine/graph/spec.h"
#include "engine/train/session.h"
#include "ui/canvas/graph_scene.h"

namespace nns::ui {

class TrainingController;

constexpr size_t kTraceBars = 24;

// The colour of a gradient's RMS (pale below 1e-6, deep at 1 and above).
QColor gradientColour(double rms);

// "input [1, 2] 0.3, -0.7 → output [1, 64] 0.12, … ; gradient RMS 0.0011": one module's
// step of a traced forward pass, for the status bar.
QString describeTraceStep(const train::ModuleTrace& module);

std::map<graph::NodeId, GraphScene::NodeBadge> traceBadges(const train::SampleTrace& trace,
                                                           const TrainingController& controller,
                                                           const graph::Graph& graph);

}  // namespace nns::ui
