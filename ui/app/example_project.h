// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The example projects of resources/examples, built into the window as Qt resources
// (":/examples/<name>.nns"; ui/CMakeLists.txt), so that the window opens the same example
// wherever it runs. spirals.nns is the one a new window opens: a 2-64-64-3 MLP on the spirals
// with a probe on every layer.
#include <QString>

#include "engine/graph/project.h"

namespace nns::ui {

// The example's file on disk, for what needs a path (a benchmark handing it to nnstudio-cli):
// next to the program (../share/nnstudio/examples), then the source tree's resources/examples,
// first match wins; empty when neither has it.
QString findExampleFile(const QString& fileName);
// The built-in example project of that name ("spirals.nns").
graph::Project exampleProject(const QString& fileName);
// exampleProject("spirals.nns").
graph::Project spiralsExample();

}  // namespace nns::ui
