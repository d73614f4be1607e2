// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli plugins [--json]: the plugins loaded at start (name, version, file, node types),
// each plugin file that failed and why, and the folders searched (engine/plugin/loader.h).
// Broken plugins are reported, never fatal: the exit code is 0 either way.
#include <iostream>

#include "app/cli/commands.h"
#include "engine/graph/spec.h"
#include "engine/plugin/loader.h"

namespace nns::cli {
namespace {

graph::Json report_json(const plugin::PluginReport& report) {
  graph::Json out = {{"plugins", graph::Json::array()},
                     {"failed", graph::Json::array()},
                     {"folders", report.folders}};
  for (const plugin::LoadedPlugin& p : report.loaded) {
    out["plugins"].push_back({{"name", p.name},
                              {"version", p.version},
                              {"description", p.description},
                              {"file", p.file},
                              {"types", p.types}});
  }
  for (const plugin::PluginFailure& f : report.failed)
    out["failed"].push_back({{"file", f.file}, {"reason", f.reason}});
  return out;
}

int run_plugins(const Options& options) {
  const plugin::PluginReport& report = plugin::plugin_report();
  if (options.flag("json")) {
    std::cout << report_json(report).dump(1) << "\n";
  } else {
    std::cout << plugin::format_report(report);
  }
  return 0;
}

}  // namespace

Command plugins_command() {
  return {"plugins",
          "list the plugins loaded, the plugin files that failed and why",
          {},
          {{"json", "", "", "print the list as JSON"}},
          run_plugins};
}

}  // namespace nns::cli
