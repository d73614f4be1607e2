// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/graph/imported_project.h"

#include <filesystem>

#include "engine/serialize/serialize.h"

namespace nns::graph {

std::string weights_path_for(const std::string& project_path) {
  return std::filesystem::path(project_path).replace_extension(".safetensors").string();
}

void write_imported(const ImportedProject& imported, const std::string& project_path) {
  serialize::save_state_dict_file(imported.weights, weights_path_for(project_path));
  save_project(imported.project, project_path);
}

}  // namespace nns::graph
