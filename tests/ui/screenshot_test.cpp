// Screenshots of the window with the example project, saved as PNGs (the test artifacts) in
// NNS_SCREENSHOT_DIR (the build's screenshots/ folder). ctest runs them under Xvfb when
// xvfb-run is installed, on the offscreen platform otherwise.
#include <gtest/gtest.h>

#include <QDir>
#include <QImage>
#include <QPixmap>
#include <QTabWidget>
#include <set>

#include "ui/example_project.h"
#include "ui/graph_view.h"
#include "ui/inspector_widget.h"
#include "ui/main_window.h"
#include "ui/project_document.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

QString shotPath(const QString& name) {
  QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = QDir::tempPath() + "/nnstudio-screenshots";
  QDir().mkpath(dir);
  return QDir(dir).filePath(name);
}

// A blank or one-colour grab means nothing was drawn.
size_t colourCount(const QImage& image) {
  std::set<QRgb> colours;
  for (int y = 0; y < image.height(); y += 7) {
    for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
  }
  return colours.size();
}

void shoot(MainWindow& window, const QString& name) {
  window.resize(1600, 1000);
  window.show();
  test::settle();
  window.view()->frameAll();
  test::settle();
  const QImage image = window.grab().toImage();
  const QString path = shotPath(name);
  ASSERT_TRUE(image.save(path)) << path.toStdString();
  EXPECT_EQ(image.width(), 1600);
  EXPECT_GT(colourCount(image), 50u) << path.toStdString();
}

TEST(Screenshot, ExampleProject) {
  MainWindow window;
  window.openExample();
  window.document()->setSelection({window.document()->project().graph.nodes.at(1).id});
  shoot(window, "main_window.png");
}

TEST(Screenshot, GroupsProblemsAndTheParameterTable) {
  MainWindow window;
  window.openExample();
  ProjectDocument* doc = window.document();
  const graph::Graph& g = doc->project().graph;
  // Group the middle layers, then wire in a layer of the wrong size, to show both.
  std::vector<graph::NodeId> middle;
  for (const graph::Node& n : g.nodes) {
    if (n.type == "Linear" || n.type == "ReLU") middle.push_back(n.id);
  }
  ASSERT_GE(middle.size(), 3u);
  doc->groupNodes({middle[1], middle[2]}, "Sequential");
  doc->autoLayout();
  const graph::NodeId wrong = doc->addNode("Linear", {0, 260});
  doc->connectPorts({g.nodes.front().id, "out"}, {wrong, "in"});
  doc->setSelection({middle[0]});
  window.inspector()->setCurrentIndex(2);
  shoot(window, "main_window_groups_problems.png");
  doc->undoStack()->setClean();
}

TEST(Screenshot, DynamicNetWithBlocksAndContainers) {
  const QString path = findExampleFile("dynamic_net.nns");
  if (path.isEmpty()) GTEST_SKIP() << "resources/examples/dynamic_net.nns is not there";
  MainWindow window;
  ASSERT_TRUE(window.openFile(path));
  window.inspector()->setCurrentIndex(1);
  shoot(window, "main_window_dynamic_net.png");
}

}  // namespace
}  // namespace nns::ui
