#include "ui/example_project.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

#include "ui/auto_layout.h"

namespace nns::ui {

QString findExampleFile(const QString& fileName) {
  const QStringList dirs = {
      QCoreApplication::applicationDirPath() + "/../share/nnstudio/examples",
      QStringLiteral(NNS_RESOURCE_DIR) + "/examples",
  };
  for (const QString& dir : dirs) {
    const QString path = QDir(dir).filePath(fileName);
    if (QFileInfo::exists(path)) return QDir::cleanPath(path);
  }
  return {};
}

graph::Project spiralsExample() {
  graph::Project p;
  p.name = "Net";
  graph::Graph& g = p.graph;
  const graph::NodeId x = g.add_node("Input", "x", {{"shape", {2}}});
  const graph::NodeId fc1 = g.add_node("Linear", "fc1", {{"in_features", 2}, {"out_features", 64}});
  const graph::NodeId act1 = g.add_node("ReLU", "act1");
  const graph::NodeId fc2 =
      g.add_node("Linear", "fc2", {{"in_features", 64}, {"out_features", 64}});
  const graph::NodeId act2 = g.add_node("ReLU", "act2");
  const graph::NodeId fc3 = g.add_node("Linear", "fc3", {{"in_features", 64}, {"out_features", 3}});
  const graph::NodeId y = g.add_node("Output", "y");
  const graph::NodeId chain[] = {x, fc1, act1, fc2, act2, fc3, y};
  for (size_t i = 1; i < std::size(chain); ++i) g.connect({chain[i - 1], "out"}, {chain[i], "in"});
  p.training.optimizer_options = {{"lr", 0.1}, {"momentum", 0.9}};
  for (const auto& [id, pos] : layeredLayout(p)) {
    g.at(id).x = pos.x();
    g.at(id).y = pos.y();
  }
  return p;
}

}  // namespace nns::ui
