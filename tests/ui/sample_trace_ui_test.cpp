// SPDX-License-Identifier: GPL-3.0-or-later
// Trace one sample in the window (issue 18): a test point clicked in the Output panel goes
// through the model once; every layer on the canvas shows its output for it as bars and the
// gradient of its loss as a tint and a figure; a double-click clears it.
#include <gtest/gtest.h>

#include <QAction>
#include <QMouseEvent>
#include <QSignalSpy>

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
  QSignalSpy traces(controller, &TrainingController::traceArrived);
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
  ASSERT_GE(traces.count(), 1);
  const auto trace = traces.back()[0].value<train::SampleTrace>();
  auto traced = [&](const std::string& module) {
    for (const train::ModuleTrace& m : trace.modules) {
      if (m.module == module) return m;
    }
    return train::ModuleTrace{};
  };
  auto valuesOf = [](const Tensor& t) {
    const std::vector<float> v = t.contiguous().to_vector<float>();
    return std::vector<double>(v.begin(), v.end());
  };
  // Step Through walks the forward pass in the order the layers ran, then starts again; each
  // step draws the node's input, output and gradient for the sample in the Traced Sample view
  // (bars for these vectors), from the F11 action as from the call.
  TraceStepView* view = window.traceView();
  ASSERT_NE(view, nullptr);
  EXPECT_TRUE(view->panels().empty());
  QAction* stepAction = nullptr;
  for (QAction* a : window.findChildren<QAction*>()) {
    if (a->shortcut() == QKeySequence(Qt::Key_F11)) stepAction = a;
  }
  ASSERT_NE(stepAction, nullptr);
  ASSERT_TRUE(stepAction->isEnabled());
  std::vector<std::string> walked;
  for (int i = 0; i < 6; ++i) {
    graph::NodeId id = 0;
    if (i == 0) {
      stepAction->trigger();
      ASSERT_EQ(window.document()->selection().size(), 1u);
      id = window.document()->selection().front();
    } else {
      id = window.stepThroughTrace();
    }
    ASSERT_NE(id, 0);
    EXPECT_EQ(window.document()->selection(), std::vector<graph::NodeId>{id});
    const std::string name = window.document()->project().graph.at(id).name;
    walked.push_back(name);
    EXPECT_TRUE(view->title().startsWith(QString::fromStdString(name))) << name;
    ASSERT_EQ(view->panels().size(), 3u) << name;
    const train::ModuleTrace m = traced(name);
    const TraceStepView::Panel& input = view->panels()[0];
    const TraceStepView::Panel& output = view->panels()[1];
    const TraceStepView::Panel& gradient = view->panels()[2];
    EXPECT_EQ(input.shape, m.input.sizes()) << name;
    EXPECT_EQ(output.shape, m.output.sizes()) << name;
    EXPECT_EQ(gradient.shape, m.grad_output.sizes()) << name;
    EXPECT_FALSE(output.heatmap);
    EXPECT_EQ(output.cells, valuesOf(m.output)) << name;
    EXPECT_EQ(gradient.cells, valuesOf(m.grad_output)) << name;
    if (name == "fc1") {
      // The sample itself: test point 3's two coordinates.
      EXPECT_EQ(input.cols, 2);
      EXPECT_EQ(input.cells, valuesOf(m.input));
    }
  }
  EXPECT_EQ(walked, (std::vector<std::string>{"fc1", "relu1", "fc2", "relu2", "fc3", "fc1"}));
  // A double-click on the Output panel clears it.
  QMouseEvent click(QEvent::MouseButtonDblClick, QPointF(10, 10), QPointF(10, 10), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(boundary, &click);
  EXPECT_FALSE(scene->hasNodeBadges());
  EXPECT_EQ(boundary->tracedSample(), -1);
  EXPECT_EQ(window.stepThroughTrace(), 0);
  EXPECT_TRUE(view->panels().empty());
  window.document()->undoStack()->setClean();
}

// The digits grid and the sequence view trace a clicked test sample too (issue 28): the image
// or the sequence goes through the model once, the canvas shows each node's output for it, and
// Step Through draws an image's input as a heatmap.
TEST(SampleTraceUi, ATestImageOrSequenceClickedIsTraced) {
  for (const QString example : {"digits.nns", "reverse_transformer.nns"}) {
    SCOPED_TRACE(example.toStdString());
    MainWindow window;
    ASSERT_TRUE(window.openFile(QString(NNS_SOURCE_DIR) + "/resources/examples/" + example));
    window.resize(1400, 900);
    window.show();
    test::settle();
    const bool images = example == "digits.nns";
    DecisionBoundaryWidget* boundary = window.boundary();
    ASSERT_TRUE(test::waitFor([&] {
      return boundary->mode() == (images ? DecisionBoundaryWidget::Mode::Images
                                         : DecisionBoundaryWidget::Mode::Sequence);
    }));
    // Drawn: each shown sample has its place to click.
    ASSERT_TRUE(test::waitFor([&] { return !boundary->sampleRect(2).isNull(); }));
    if (images) {
      // The model's class on each image once it answers.
      ASSERT_TRUE(test::waitFor([&] {
        return boundary->predictedClasses().size() ==
               static_cast<size_t>(DecisionBoundaryWidget::kShownImages);
      }));
    }
    QSignalSpy traces(window.training(), &TrainingController::traceArrived);
    const QPointF at = boundary->sampleRect(2).center();
    QMouseEvent press(QEvent::MouseButtonPress, at, boundary->mapToGlobal(at), Qt::LeftButton,
                      Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(boundary, &press);
    EXPECT_EQ(boundary->tracedSample(), 2);
    ASSERT_TRUE(test::waitFor([&] { return window.scene()->hasNodeBadges(); }));
    ASSERT_GE(traces.count(), 1);
    const auto trace = traces.back()[0].value<train::SampleTrace>();
    EXPECT_TRUE(trace.error.empty()) << trace.error;
    ASSERT_FALSE(trace.modules.empty());
    // The traced sample is test sample 2 as the model takes it.
    train::TrainingSession* session = window.training()->session();
    const data::Dataset& set =
        session->test_set().size() > 0 ? session->test_set() : session->train_set();
    const Tensor sample = set.inputs.narrow(0, 2, 1).contiguous();
    const train::ModuleTrace& first = trace.modules.front();
    ASSERT_TRUE(first.input.defined());
    EXPECT_EQ(first.input.sizes(), sample.sizes());
    EXPECT_EQ(first.input.to(kFloat32).to_vector<float>(), sample.to(kFloat32).to_vector<float>());
    ASSERT_NE(window.stepThroughTrace(), 0);
    TraceStepView* view = window.traceView();
    ASSERT_EQ(view->panels().size(), 3u);
    if (images) {
      // The first layer's input, the image: a heatmap of its 16 x 16 values.
      const TraceStepView::Panel& input = view->panels()[0];
      EXPECT_TRUE(input.heatmap);
      EXPECT_EQ(input.cols, 16);
      EXPECT_EQ(input.rows, 16);
    }
    window.document()->undoStack()->setClean();
  }
}

}  // namespace
}  // namespace nns::ui
