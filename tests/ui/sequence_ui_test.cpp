// SPDX-License-Identifier: GPL-3.0-or-later
// Sequence tasks in the window (issue 17): the reverse transformer example trains from the
// window; the Output panel shows test sequences with the model's answers and the accuracy per
// position; the Probe tab of a probed Transformer layer shows its attention maps per head for
// the chosen test sequence, with the tokens on the axes; a forecast set shows its windows.
// Waits are bounded polls of the event loop.
#include <gtest/gtest.h>

#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>
#include <numeric>
#include <optional>

#include "reverse_example.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/probes/attention_view.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/curves_widget.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

TEST(SequenceUi, OutputPanelAndAttentionMapsFollowTheTraining) {
  MainWindow window;
  ASSERT_NE(test::openReverseWithProbedLayer(window), 0);
  ProjectDocument* doc = window.document();
  DecisionBoundaryWidget* output = window.boundary();
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return output->mode() == DecisionBoundaryWidget::Mode::Sequence; }, 5000));
  AttentionView* attention = window.probePanel()->attentionView();
  ASSERT_TRUE(QTest::qWaitFor([&] { return attention->isVisible(); }, 5000));
  EXPECT_EQ(attention->module(), "encoder.0");
  // The chosen test sequence's digits label the axes.
  EXPECT_EQ(attention->tokens().size(), 8);
  window.training()->start();
  ASSERT_TRUE(QTest::qWaitFor([&] { return window.training()->status().epoch >= 2; }, 60000));
  window.training()->pause();
  ASSERT_TRUE(QTest::qWaitFor([&] { return !window.training()->isRunning(); }, 10000));
  // Both views catch up with the paused run (the status the window polls may be a step behind
  // when the pause lands).
  int64_t step = 0;
  ASSERT_TRUE(QTest::qWaitFor(
      [&] {
        step = window.training()->status().step;
        return attention->shownStep() == step && output->shownStep() == step;
      },
      10000));
  // One map per head of encoder.0's self_attn, 8 x 8, each query's row summing to 1.
  const std::vector<train::AttentionMap>& maps = attention->maps();
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0].module, "encoder.0.self_attn");
  ASSERT_EQ(maps[0].heads, 4);
  ASSERT_EQ(maps[0].queries, 8);
  for (int64_t row = 0; row < 4 * 8; ++row) {
    const float* w = maps[0].weights.data() + row * 8;
    EXPECT_NEAR(std::accumulate(w, w + 8, 0.0), 1.0, 1e-4);
  }
  // Another sequence: its tokens on the axes, and its maps (choosing drops the old ones).
  // Chosen twice before the first answer comes: the answer for sequence 2 is still out when 3
  // is chosen, and must not be drawn as 3's (it was, at the step 3 waits for).
  const QStringList firstTokens = attention->tokens();
  attention->sequenceBox()->setValue(2);
  attention->sequenceBox()->setValue(3);
  EXPECT_NE(attention->tokens(), firstTokens);
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return attention->shownStep() == step && !attention->maps().empty(); }, 10000));
  // The maps are sequence 3's: the session's own answer for it, at the same step.
  {
    train::TrainingSession* session = window.training()->session();
    const data::Dataset& set =
        session->test_set().size() > 0 ? session->test_set() : session->train_set();
    QSignalSpy answers(window.training(), &TrainingController::predictionArrived);
    const uint64_t id =
        window.training()->requestPrediction(set.inputs.narrow(0, 3, 1).contiguous());
    std::optional<train::Prediction> own;
    ASSERT_TRUE(QTest::qWaitFor(
        [&] {
          for (const QList<QVariant>& a : answers) {
            const auto p = a[0].value<train::Prediction>();
            if (p.id == id) own = p;
          }
          return own.has_value();
        },
        10000));
    ASSERT_EQ(own->step, step);
    ASSERT_FALSE(own->attention.empty());
    EXPECT_EQ(own->attention[0].weights, attention->maps()[0].weights);
  }
  // The Output panel: an answer per position of the shown sequences, and after two epochs the
  // model reverses them (the per-position accuracy of the last evaluation is high).
  EXPECT_EQ(output->predictedTokens().size(), 6u * 8);
  // The Curves panel plots the share of whole test sequences right, one point per epoch (or
  // evaluation) at least.
  EXPECT_GE(window.curves()->testSequencePoints(), 2);
  ASSERT_EQ(output->positionAccuracy().size(), 8u);
  for (double a : output->positionAccuracy()) EXPECT_GT(a, 0.9);
  doc->undoStack()->setClean();
}

TEST(SequenceUi, ForecastShowsWindowsAndTheirForecasts) {
  MainWindow window;
  ASSERT_TRUE(window.openFile(QString(NNS_SOURCE_DIR) + "/resources/examples/sine_lstm.nns"));
  window.resize(1400, 900);
  window.show();
  test::settle();
  DecisionBoundaryWidget* output = window.boundary();
  ASSERT_TRUE(QTest::qWaitFor(
      [&] { return output->mode() == DecisionBoundaryWidget::Mode::Forecast; }, 5000));
  window.training()->stepOnce();
  ASSERT_TRUE(QTest::qWaitFor([&] { return output->shownStep() >= 1; }, 10000));
  EXPECT_TRUE(output->message().isEmpty()) << output->message().toStdString();
  window.document()->undoStack()->setClean();
}

}  // namespace
}  // namespace nns::ui
