// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The template of the exported train.py (train_template.cpp) and the recorder it imports.

namespace nns::exporting {

extern const char* const kTrainTemplate;
// resources/python/nnstudio_runs.py, written beside train.py: it records the run into a run
// store `nnstudio-cli runs` and the window read (generated from the file by CMake).
extern const char* const kRecorderModule;

}  // namespace nns::exporting
