// SPDX-License-Identifier: GPL-3.0-or-later
// The public API; the importer itself is engine/onnx/import/, one op family per file.
#include "engine/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/graph/project.h"
#include "engine/onnx/import/importer.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/error.h"

namespace nns::onnx {

Imported import_model(std::string_view bytes, const std::string& source) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ValueError(source +
                     ": not an ONNX model (the file is not a readable ModelProto; is it "
                     "truncated?)");
  if (!model.has_graph() || model.ir_version() <= 0)
    throw ValueError(source + ": not an ONNX model (it has no graph or no IR version)");
  return detail::Importer(model, source).run();
}

Imported import_model_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ValueError("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return import_model(bytes.str(), path);
}

std::string weights_path_for(const std::string& project_path) {
  return std::filesystem::path(project_path).replace_extension(".safetensors").string();
}

void write_imported(const Imported& imported, const std::string& project_path) {
  serialize::save_state_dict_file(imported.weights, weights_path_for(project_path));
  graph::save_project(imported.project, project_path);
}

}  // namespace nns::onnx
