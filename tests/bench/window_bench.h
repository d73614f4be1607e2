// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the window benchmarks (bench_ui_latency, bench_soak) share: the real window's spirals
// example, set to train until paused.
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"

namespace nns::bench {

// Opens the example in `window` and makes its training run until paused (epochs 0), as an undoable
// settings change; returns the window's document.
inline ui::ProjectDocument* open_example_until_paused(ui::MainWindow& window) {
  window.openExample();
  ui::ProjectDocument* doc = window.document();
  graph::TrainingSettings settings = doc->project().training;
  settings.epochs = 0;  // until paused
  doc->setTrainingSettings(settings, "Run until paused");
  return doc;
}

}  // namespace nns::bench
