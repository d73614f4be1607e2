// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli layout PROJECT [--direction TB|LR]: the canvas's layout of a project as JSON, the
// one the window makes (engine/graph/layout.h): a box per node drawn, in scene units, y growing
// downwards. Groups are laid out as the file has them, open unless marked collapsed (then
// their members are left out).
#include <iostream>

#include "app/cli/commands.h"
#include "engine/graph/layout.h"

namespace nns::cli {
namespace {

int run_layout(const Options& options) {
  const graph::Project project = graph::load_project(options.positional(0));
  const std::string direction =
      options.has("direction") ? options.choice("direction", {"TB", "LR"}) : "";
  const graph::Layout layout = graph::layout_graph(project, direction);
  std::cout << graph::layout_to_json(project, layout).dump(1) << "\n";
  return 0;
}

}  // namespace

Command layout_command() {
  return {"layout",
          "print the canvas's layout of a project (one box per node) as JSON",
          {{"PROJECT", "the project file (.nns)"}},
          {{"direction", "TB|LR", "",
            "TB: top to bottom, LR: left to right (default: the project's own, TB unless set)"}},
          run_layout};
}

}  // namespace nns::cli
