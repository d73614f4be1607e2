// SPDX-License-Identifier: GPL-3.0-or-later
// Trace one sample in the window (issue 18): a test point clicked in the Output panel goes
// through the model once; every layer on the canvas shows its output for it as bars and the
// gradient of its loss as a tint and a figure; a double-click clears it.
#include <gtest/gtest.h>

#include <QMouseEvent>

#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/document/project_document.h"
#include "ui/probes/sample_trace.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

TEST(SampleTraceUi, ATestPointTracedShowsEachLayersOutputAndGradient) {
  MainWindow window;
  window.openExample();
  window.resize(1400, 900);
  window.show();
  TrainingController* controller = window.training();
  controller->stepOnce();
  ASSERT_TRUE(test::waitFor([&] { return controller->status().step == 1; }));
  DecisionBoundaryWidget* boundary = window.boundary();
  ASSERT_TRUE(
      test::waitFor([&] { return boundary->mode() == DecisionBoundaryWidget::Mode::Heatmap; }));
  ASSERT_TRUE(boundary->traceTestSample(3));
  GraphScene* scene = window.scene();
  ASSERT_TRUE(test::waitFor([&] { return scene->hasNodeBadges(); }));
  int layers = 0;
  for (const graph::Node& n : window.document()->project().graph.nodes) {
    const GraphScene::NodeBadge* badge = scene->nodeBadge(n.id);
    if (n.type == "Input" || n.type == "Output") {
      EXPECT_EQ(badge, nullptr) << n.name;
      continue;
    }
    ASSERT_NE(badge, nullptr) << n.name;
    ++layers;
    // Up to kTraceBars of the output's values, scaled into [-1, 1] with the largest at 1.
    ASSERT_FALSE(badge->bars.empty()) << n.name;
    EXPECT_LE(badge->bars.size(), kTraceBars);
    float largest = 0;
    for (float v : badge->bars) largest = std::max(largest, std::abs(v));
    EXPECT_TRUE(largest == 1.0f || largest == 0.0f) << n.name;
    EXPECT_TRUE(badge->text.startsWith("∇ ")) << badge->text.toStdString();
    EXPECT_TRUE(badge->tooltip.contains("Traced sample")) << n.name;
  }
  EXPECT_EQ(layers, 5);  // fc1, relu1, fc2, relu2, fc3
  EXPECT_EQ(boundary->tracedSample(), 3);
  // Step Through walks the forward pass in the order the layers ran, then starts again.
  std::vector<std::string> walked;
  for (int i = 0; i < 6; ++i) {
    const graph::NodeId id = window.stepThroughTrace();
    ASSERT_NE(id, 0);
    EXPECT_EQ(window.document()->selection(), std::vector<graph::NodeId>{id});
    walked.push_back(window.document()->project().graph.at(id).name);
  }
  EXPECT_EQ(walked, (std::vector<std::string>{"fc1", "relu1", "fc2", "relu2", "fc3", "fc1"}));
  // A double-click on the Output panel clears it.
  QMouseEvent click(QEvent::MouseButtonDblClick, QPointF(10, 10), QPointF(10, 10), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(boundary, &click);
  EXPECT_FALSE(scene->hasNodeBadges());
  EXPECT_EQ(boundary->tracedSample(), -1);
  EXPECT_EQ(window.stepThroughTrace(), 0);
  window.document()->undoStack()->setClean();
}

}  // namespace
}  // namespace nns::ui
