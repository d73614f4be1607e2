// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/plugin/loader.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <system_error>

#include "engine/plugin/plugin.h"

#ifndef NNS_INSTALL_LIBDIR
#define NNS_INSTALL_LIBDIR "lib"
#endif

namespace nns::plugin {
namespace fs = std::filesystem;
namespace {

std::mutex& loader_mutex() {
  static std::mutex m;
  return m;
}

PluginReport& report_state() {
  static PluginReport report;
  return report;
}

// The canonical paths of the files tried so far, loaded or not: each is tried once.
std::set<std::string>& tried_files() {
  static std::set<std::string> files;
  return files;
}

// dlerror()'s text without the file name it starts with (the report names the file).
std::string dl_error_text(const std::string& file) {
  const char* e = dlerror();
  std::string text = e ? e : "unknown error";
  if (text.rfind(file + ": ", 0) == 0) text = text.substr(file.size() + 2);
  return text;
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

// Loads one file into the report; the caller holds the loader's mutex.
void load_file(const fs::path& path, PluginReport& report) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  const std::string file = (ec ? path : canonical).string();
  if (!tried_files().insert(file).second) return;
  auto fail = [&](const std::string& reason) { report.failed.push_back({file, one_line(reason)}); };

  // RTLD_LOCAL: two plugins' own symbols never clash; RTLD_NOW: a missing symbol is an error
  // now, not a crash at the first call.
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return fail("cannot be loaded as a shared library: " + dl_error_text(file));
  // Until its register function runs, a refused library is closed again; the reason is made
  // before, since it may quote the library's own strings.
  auto refuse = [&](const std::string& reason) {
    dlclose(handle);
    fail(reason);
  };
  dlerror();
  auto entry = reinterpret_cast<nns_plugin_v1_fn>(dlsym(handle, NNS_PLUGIN_ENTRY_POINT));
  if (!entry)
    return refuse("not an NN Studio plugin: it has no entry point " NNS_PLUGIN_ENTRY_POINT
                  " (define it with NNS_PLUGIN, engine/plugin/plugin.h)");
  const nns_plugin_v1_info* info = entry();
  if (!info) return refuse(NNS_PLUGIN_ENTRY_POINT "() returned null");
  if (info->abi_version != NNS_PLUGIN_ABI_VERSION)
    return refuse("built for plugin ABI version " + std::to_string(info->abi_version) +
                  "; this NN Studio loads version " + std::to_string(NNS_PLUGIN_ABI_VERSION) +
                  ": rebuild the plugin against this version's SDK");
  const std::string name = info->name ? info->name : "";
  const std::string version = info->version ? info->version : "";
  if (name.empty() || !info->register_types)
    return refuse("its entry point gives no plugin name or no register function");
  for (const LoadedPlugin& other : report.loaded) {
    if (other.name == name)
      return refuse("plugin '" + name + "' " + version + " is already loaded from " + other.file +
                    " (" + other.version + "); this copy is skipped");
  }
  // From here on the plugin's code has run: the library stays loaded even when registering
  // fails, since what it threw or left behind may point into it.
  Registrar registrar;
  try {
    info->register_types(registrar);
  } catch (const std::exception& e) {
    return fail("plugin '" + name + "': registering its types failed: " + e.what());
  } catch (...) {
    return fail("plugin '" + name + "': registering its types threw a non-standard exception");
  }
  LoadedPlugin loaded{name, version, info->description ? info->description : "", file, {}};
  for (graph::NodeType& t : registrar.types()) {
    t.plugin = name;
    t.plugin_version = version;
    loaded.types.push_back(t.name);
  }
  try {
    graph::register_node_types(std::move(registrar.types()));
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  report.loaded.push_back(std::move(loaded));
}

void load_folder(const fs::path& folder, PluginReport& report) {
  if (std::find(report.folders.begin(), report.folders.end(), folder.string()) ==
      report.folders.end())
    report.folders.push_back(folder.string());
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".so" && !it->is_directory(ec)) files.push_back(it->path());
  }
  if (ec) {
    report.failed.push_back({folder.string(), "cannot list the folder: " + ec.message()});
  }
  std::sort(files.begin(), files.end());  // a stable order, whatever the file system's
  for (const fs::path& f : files) load_file(f, report);
}

}  // namespace

std::vector<fs::path> plugin_folders(const fs::path& executable) {
  std::vector<fs::path> folders;
  if (const char* env = std::getenv("NNS_PLUGIN_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      const size_t end = std::min(list.find(':', start), list.size());
      if (end > start) folders.emplace_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  if (const char* data = std::getenv("XDG_DATA_HOME"); data && *data) {
    folders.push_back(fs::path(data) / "nnstudio" / "plugins");
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    folders.push_back(fs::path(home) / ".local" / "share" / "nnstudio" / "plugins");
  }
  if (executable.empty()) return folders;
  std::error_code ec;
  fs::path exe = fs::weakly_canonical(executable, ec);
  if (ec) exe = executable;
  const fs::path prefix = exe.parent_path().parent_path();
  folders.push_back(prefix / NNS_INSTALL_LIBDIR / "nnstudio" / "plugins");
  if (fs::exists(prefix / "CMakeCache.txt", ec)) folders.push_back(prefix / "plugins");
  return folders;
}

const PluginReport& load_plugins(const std::vector<fs::path>& folders) {
  std::lock_guard<std::mutex> lock(loader_mutex());
  for (const fs::path& folder : folders) load_folder(folder, report_state());
  return report_state();
}

const PluginReport& load_installed_plugins() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return load_plugins(plugin_folders(ec ? fs::path() : self));
}

const PluginReport& load_plugin_file(const fs::path& file) {
  std::lock_guard<std::mutex> lock(loader_mutex());
  load_file(file, report_state());
  return report_state();
}

const PluginReport& plugin_report() {
  return report_state();
}

std::string format_report(const PluginReport& report) {
  std::string out;
  if (report.loaded.empty()) out += "No plugins loaded.\n";
  for (const LoadedPlugin& p : report.loaded) {
    out += p.name + " " + p.version + "  " + p.file + "\n";
    if (!p.description.empty()) out += "  " + p.description + "\n";
    out += "  types:";
    for (const std::string& t : p.types) out += " " + t;
    out += "\n";
  }
  if (!report.failed.empty()) out += "\nFailed:\n";
  for (const PluginFailure& f : report.failed) out += f.file + ": " + f.reason + "\n";
  out += "\nSearched:\n";
  for (const std::string& folder : report.folders) out += "  " + folder + "\n";
  return out;
}

}  // namespace nns::plugin
