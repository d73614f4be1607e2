// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The run store's schema, its records' layouts, the snapshot schedule and the constants the
// PyTorch recorder shares with the engine, in one file both read:
// resources/python/nnstudio_runs_schema.json. The engine has it compiled in; nnstudio_runs.py
// reads it beside itself (in the source tree, an install's share/nnstudio/python and every
// PyTorch export, which writes it there). engine/CMakeLists.txt makes the text a C++ string.
#include "engine/graph/spec.h"

namespace nns::train {

// The file's text, as the export writes it beside nnstudio_runs.py.
extern const char* const kRunStoreSchemaText;
// The file's contents, parsed once.
const graph::Json& run_store_schema();

}  // namespace nns::train
