// SPDX-License-Identifier: GPL-3.0-or-later
// The public API; the importer itself is engine/onnx/import/, one op family per file.
#include "engine/onnx/onnx_import.h"

#include <onnx/onnx_pb.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "engine/graph/project.h"
#include "engine/onnx/import/importer.h"
#include "engine/tensor/error.h"

namespace nns::onnx {

graph::ImportedProject import_model(std::string_view bytes, const std::string& source) {
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

graph::ImportedProject import_model_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw ValueError("cannot open '" + path + "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return import_model(bytes.str(), path);
}

}  // namespace nns::onnx
