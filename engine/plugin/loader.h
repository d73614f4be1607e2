// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Finds and loads plugin libraries (plugin.h) at start, and reports what each file gave:
//
//   const nns::plugin::PluginReport& report = nns::plugin::load_plugins(
//       nns::plugin::plugin_folders(argv[0]));
//   for (const auto& failure : report.failed) std::cerr << failure.file << ": " << failure.reason;
//
// Each `*.so` in each folder is opened (dlopen), its entry point checked (the ABI version
// first) and its types registered, all or none. A file that fails (not a shared library, no
// entry point, another ABI version, a register function that throws, a type name already
// taken, a plugin already loaded from another file) is a line in the report; the rest load.
// Plugins run in-process: a plugin that crashes or corrupts memory takes the program with it;
// only the failures above are caught. Libraries stay loaded until the program exits, since
// the registered types hold their code.
#include <filesystem>
#include <string>
#include <vector>

namespace nns::plugin {

struct LoadedPlugin {
  std::string name;
  std::string version;
  std::string description;
  std::string file;
  std::vector<std::string> types;  // the node types it registered, in its order
};

struct PluginFailure {
  std::string file;
  std::string reason;  // one line: "not a shared library: invalid ELF header"
};

struct PluginReport {
  std::vector<std::string> folders;  // searched, in order (missing ones included)
  std::vector<LoadedPlugin> loaded;
  std::vector<PluginFailure> failed;
};

// Where plugins are looked for, in this order (an earlier folder's plugin wins when two have
// one name): each folder of NNS_PLUGIN_PATH (':'-separated), the user's data folder
// ($XDG_DATA_HOME or ~/.local/share, then nnstudio/plugins), the install's folder
// (<executable>/../<libdir>/nnstudio/plugins), and, for an executable in a build tree (its
// parent folder holds CMakeCache.txt), the build's plugins/ folder with the example plugins.
std::vector<std::filesystem::path> plugin_folders(const std::filesystem::path& executable);

// Loads the plugins of these folders (the folders that do not exist are skipped) and adds
// what it found to the report plugin_report() returns; a file already loaded is skipped.
// Never throws for a bad plugin.
const PluginReport& load_plugins(const std::vector<std::filesystem::path>& folders);

// load_plugins(plugin_folders(this program's file)): what the programs call at start.
const PluginReport& load_installed_plugins();

// Loads one file; for tests and for a file named on a command line.
const PluginReport& load_plugin_file(const std::filesystem::path& file);

// Everything loaded and failed so far in this process.
const PluginReport& plugin_report();

// The report as text, for `nnstudio-cli plugins`: each plugin (name, version, file, types),
// then each failed file and why.
std::string format_report(const PluginReport& report);

}  // namespace nns::plugin
