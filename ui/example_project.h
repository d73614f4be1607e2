#pragma once
// The project the window opens with: resources/examples/spirals.nns when it is installed or in
// the source tree, else the same spirals MLP built here (x -> Linear 2-64 -> ReLU -> Linear
// 64-64 -> ReLU -> Linear 64-3 -> y), laid out left to right.
#include <QString>

#include "engine/graph/project.h"

namespace nns::ui {

// Where the example file is looked for, first match wins: next to the program
// (../share/nnstudio/examples), then the source tree's resources/examples.
QString findExampleFile(const QString& fileName);
graph::Project spiralsExample();

}  // namespace nns::ui
