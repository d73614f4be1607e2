// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What the window's process sets up once, where it makes its QApplication: the window
// (app/gui_main.cpp) and its tests (tests/ui/ui_test_main.cpp) alike, so that the tests drive
// the application a user runs.
//
//   QApplication app(argc, argv);
//   nns::ui::setUpApplication(app);
class QApplication;

namespace nns::ui {

// The wheel guard (ui/widgets/wheel_guard.h) on every widget, and one BLAS thread: OpenBLAS's
// idle threads spin and take the core the window and the X server need while the training
// worker runs (engine/cpu/threads.h has the figures). A user's OPENBLAS_NUM_THREADS wins.
void setUpApplication(QApplication& app);

}  // namespace nns::ui
