// SPDX-License-Identifier: GPL-3.0-or-later
// Training from the window: the controller over a real TrainingSession on the spirals
// example (no mocks), the dock's controls, the curves and the decision boundary. Waits are
// bounded polls of the event loop (the controller's timer delivers everything).
#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <QUndoStack>
#include <climits>
#include <memory>

#include "engine/data/catalog.h"
#include "engine/graph/builder.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/losses.h"
#include "engine/train/optimizers.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/problems_widget.h"
#include "ui/training/curves_widget.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_dock.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using train::RunState;

using test::waitFor;

std::vector<float> values(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

// A value of a model's state dict, read with its worker idle.
std::vector<float> stateOf(train::TrainingSession* session, const std::string& key) {
  EXPECT_TRUE(session->wait_idle(std::chrono::seconds(10)));
  return values(session->model()->state_dict()[key]);
}

bool anyMessageContains(const QSignalSpy& messages, const QString& text) {
  for (const QList<QVariant>& m : messages) {
    if (m[0].toString().contains(text)) return true;
  }
  return false;
}

class TrainingControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    document = std::make_unique<ProjectDocument>();
    graph::Project project = spiralsExample();
    // Until paused: the example's 40 epochs take well under a second.
    project.training.epochs = 0;
    // Without the example's own probes: the tests place the ones they check.
    project.probes.clear();
    document->setProject(std::move(project), QString());
    controller = std::make_unique<TrainingController>(document.get());
  }
  void TearDown() override {
    controller.reset();
    document.reset();
  }
  graph::NodeId node(const std::string& name) const {
    for (const graph::Node& n : document->project().graph.nodes) {
      if (n.name == name) return n.id;
    }
    return 0;
  }
  // Pauses and waits until the worker is paused.
  void pauseAndSettle() {
    controller->pause();
    ASSERT_TRUE(waitFor([&] { return controller->status().state == RunState::Paused; }));
  }

  std::unique_ptr<ProjectDocument> document;
  std::unique_ptr<TrainingController> controller;
};

TEST_F(TrainingControllerTest, StartDeliversMetricsPauseAndStepOneBatch) {
  QSignalSpy steps(controller.get(), &TrainingController::stepMetricsArrived);
  QSignalSpy epochs(controller.get(), &TrainingController::epochMetricsArrived);
  QSignalSpy evaluations(controller.get(), &TrainingController::evaluationArrived);
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  controller->start();
  EXPECT_TRUE(controller->isRunning());
  ASSERT_TRUE(waitFor([&] { return controller->status().epoch >= 2; }));
  EXPECT_GT(steps.count(), 0);
  EXPECT_GT(epochs.count(), 0);
  EXPECT_GT(evaluations.count(), 0);
  pauseAndSettle();
  EXPECT_FALSE(controller->isRunning());
  const int64_t before = controller->status().step;
  controller->stepOnce();
  ASSERT_TRUE(waitFor([&] { return controller->status().step != before; }));
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(5)));
  test::settle();
  QTest::qWait(2 * TrainingController::kPollMs);
  EXPECT_EQ(controller->status().step, before + 1);
  EXPECT_EQ(controller->status().state, RunState::Paused);
}

// A fast model on a small dataset ends hundreds of epochs a second: the per-epoch curves stay
// bounded (and unmarked once dense), so a replot stays within a frame however long the run.
TEST_F(TrainingControllerTest, CurvesStayBoundedOverManyEpochs) {
  CurvesWidget curves(controller.get());
  auto graphNamed = [&](const QString& name) -> QCPGraph* {
    for (int i = 0; i < curves.plot()->graphCount(); ++i) {
      if (curves.plot()->graph(i)->name() == name) return curves.plot()->graph(i);
    }
    return nullptr;
  };
  QCPGraph* testLoss = graphNamed("test loss");
  QCPGraph* trainAccuracy = graphNamed("train accuracy");
  ASSERT_TRUE(testLoss && trainAccuracy);
  auto epochs = [&](int64_t first, int64_t count) {
    std::vector<train::EpochMetrics> batch;
    for (int64_t e = first; e < first + count; ++e) {
      batch.push_back({.epoch = e,
                       .step = 19 * e,
                       .train_loss = 1.0 / double(e),
                       .train_accuracy = 0.5,
                       .test_loss = 1.0 / double(e),
                       .test_accuracy = 0.6});
    }
    emit controller->epochMetricsArrived(batch);
  };
  epochs(1, 10);
  EXPECT_EQ(curves.testLossPoints(), 10);
  EXPECT_NE(testLoss->scatterStyle().shape(), QCPScatterStyle::ssNone);

  const int64_t total = 50000;
  for (int64_t e = 11; e <= total; e += 500) epochs(e, std::min<int64_t>(500, total + 1 - e));
  for (QCPGraph* g : {testLoss, trainAccuracy}) {
    EXPECT_LE(g->dataCount(), CurvesWidget::kMaxEpochPoints);
    EXPECT_GE(g->dataCount(), CurvesWidget::kMaxEpochPoints / 4);
    // The first epoch and a recent one are kept, in order and evenly thinned.
    EXPECT_EQ(g->data()->begin()->key, 19.0);
    EXPECT_GT((g->data()->end() - 1)->key, 19.0 * total * 0.99);
    double last = 0, smallest = 1e300, largest = 0;
    for (const QCPGraphData& d : *g->data()) {
      if (last > 0) {
        smallest = std::min(smallest, d.key - last);
        largest = std::max(largest, d.key - last);
      }
      last = d.key;
    }
    EXPECT_GT(smallest, 19.0);
    EXPECT_LT(largest, 2 * smallest + 19.0);
  }
  EXPECT_EQ(testLoss->scatterStyle().shape(), QCPScatterStyle::ssNone);
  // An evaluation between two kept epochs does not go back in time.
  const int before = curves.testLossPoints();
  emit controller->evaluationArrived({.step = 19 * total - 1, .loss = 0.1, .accuracy = 0.9});
  EXPECT_EQ(curves.testLossPoints(), before);

  curves.clear();
  epochs(1, 5);
  EXPECT_EQ(curves.testLossPoints(), 5);
  EXPECT_NE(testLoss->scatterStyle().shape(), QCPScatterStyle::ssNone);
}

// An edit of the graph after training keeps what the run learned, node by node (a renamed
// node keeps its weights; a resized one starts fresh); Reset drops it.
TEST_F(TrainingControllerTest, AnEditKeepsWhatTheRunLearnedAndResetDropsIt) {
  const std::vector<float> initial = stateOf(controller->session(), "fc1.weight");
  controller->start();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 30; }));
  pauseAndSettle();
  const int64_t trainedSteps = controller->session()->status().step;
  const std::vector<float> trained = stateOf(controller->session(), "fc1.weight");
  const std::vector<float> fc3Bias = stateOf(controller->session(), "fc3.bias");
  ASSERT_NE(trained, initial);
  // What reads weights (the inspector, Save State Dict, the exporters) reads the session's:
  // the trained values, with the last step's gradients. The document's architecture model
  // never takes them (one owner, nothing copied back at rest).
  const std::optional<nn::StateDict> saved = controller->stateDict();
  ASSERT_TRUE(saved);
  EXPECT_EQ(values((*saved)["fc1.weight"]), trained);
  EXPECT_NE(values(document->model()->state_dict()["fc1.weight"]), trained);
  bool read = false;
  ASSERT_TRUE(controller->withRestingModel([&](graph::GraphModule& model) {
    read = model.get_parameter("fc1.weight").grad().defined();
  }));
  EXPECT_TRUE(read);

  QSignalSpy messages(controller.get(), &TrainingController::message);
  ASSERT_TRUE(document->renameNode(node("fc1"), "first"));
  ASSERT_TRUE(document->setNodeOptions(node("fc2"), {{"in_features", 64}, {"out_features", 32}}));
  ASSERT_TRUE(document->setNodeOptions(node("fc3"), {{"in_features", 32}, {"out_features", 3}}));
  train::TrainingSession* session = controller->session();  // made now, from the edited graph
  ASSERT_NE(session, nullptr) << controller->lastError().toStdString();
  // It continues the run: its steps go on from the old session's last one (the curves too).
  EXPECT_EQ(session->status().step, trainedSteps);
  EXPECT_TRUE(controller->sessionContinues());
  EXPECT_EQ(stateOf(session, "first.weight"), trained);
  EXPECT_EQ(stateOf(session, "fc3.bias"), fc3Bias);  // its weight changed shape, its bias not
  EXPECT_EQ(session->model()->state_dict()["fc2.weight"].sizes(), (Shape{32, 64}));
  EXPECT_TRUE(anyMessageContains(
      messages, "Kept the weights of first; partly kept: fc3; fresh: fc2 (3 tensors)"));
  // The weights read are the new session's (its carried ones).
  EXPECT_EQ(values((*controller->stateDict())["first.weight"]), trained);

  controller->reset();
  ASSERT_TRUE(waitFor([&] { return stateOf(controller->session(), "first.weight") != trained; }));
  // The status the controller polls follows within a poll.
  EXPECT_TRUE(waitFor([&] { return controller->status().step == 0; }));
  EXPECT_FALSE(controller->sessionContinues());
}

// Opening another project ends the run of the one before, and its weights stay with it.
// Every example (blocks, containers, a residual sum, convolutions) keeps its weights across a
// rename of each of its nodes in turn.
TEST(TrainingControllerExamples, EveryExampleKeepsItsWeightsAcrossRenames) {
  for (const QString& file : QDir(":/examples").entryList({"*.nns"})) {
    SCOPED_TRACE(file.toStdString());
    ProjectDocument document;
    graph::Project project = exampleProject(file);
    project.probes.clear();
    document.setProject(std::move(project), QString());
    TrainingController controller(&document);
    ASSERT_NE(controller.session(), nullptr) << controller.lastError().toStdString();
    controller.stepOnce();
    ASSERT_TRUE(waitFor([&] { return controller.status().step == 1; }));
    ASSERT_TRUE(controller.session()->wait_idle(std::chrono::seconds(10)));
    const nn::StateDict trained = controller.session()->model()->state_dict();
    std::map<std::string, std::vector<float>> before;
    for (const auto& entry : trained) {
      if (entry.value().is_floating_point()) before[entry.key()] = values(entry.value());
    }
    QSignalSpy messages(&controller, &TrainingController::message);
    const std::vector<graph::Node> nodes = document.project().graph.nodes;  // renames replace it
    for (const graph::Node& n : nodes) {
      if (n.type == "Input" || n.type == "Output") continue;
      ASSERT_TRUE(document.renameNode(n.id, QString::fromStdString(n.name) + "_x"));
      ASSERT_NE(controller.session(), nullptr) << controller.lastError().toStdString();
      ASSERT_TRUE(document.renameNode(n.id, QString::fromStdString(n.name)));
      ASSERT_NE(controller.session(), nullptr);
    }
    EXPECT_FALSE(anyMessageContains(messages, "not kept"));
    ASSERT_TRUE(controller.session()->wait_idle(std::chrono::seconds(10)));
    for (const auto& entry : controller.session()->model()->state_dict()) {
      if (before.count(entry.key())) {
        EXPECT_EQ(values(entry.value()), before.at(entry.key())) << entry.key();
      }
    }
    EXPECT_EQ(before.size(), [&] {
      size_t n = 0;
      for (const auto& entry : controller.session()->model()->state_dict()) {
        n += entry.value().is_floating_point();
      }
      return n;
    }());
  }
}

TEST_F(TrainingControllerTest, AnotherProjectEndsTheRunAndStartsFromFreshWeights) {
  controller->start();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 30; }));
  QSignalSpy newSessions(controller.get(), &TrainingController::sessionReset);
  graph::Project other = spiralsExample();
  other.probes.clear();
  document->setProject(std::move(other), QString());
  ASSERT_TRUE(waitFor([&] { return newSessions.count() > 0; }));
  EXPECT_FALSE(controller->isRunning());
  EXPECT_EQ(controller->status().step, 0);
  const std::vector<float> fresh = stateOf(controller->session(), "fc1.weight");
  // The seed's weights, as a new window's session has them.
  TrainingController another(document.get());
  EXPECT_EQ(stateOf(another.session(), "fc1.weight"), fresh);
}

// A state dict the user loads is what training goes on from, also after an edit.
TEST_F(TrainingControllerTest, ALoadedStateDictIsWhatTrainingStartsFrom) {
  nn::StateDict state = controller->session()->model()->state_dict();
  nn::StateDict file;
  for (const auto& entry : state) file.insert(entry.key(), full_like(entry.value(), 0.25));
  QTemporaryDir dir;
  const QString path = dir.filePath("quarter.safetensors");
  serialize::save_state_dict_file(file, path.toStdString());
  QSignalSpy messages(controller.get(), &TrainingController::message);
  document->loadStateDict(path, /*strict=*/true);
  EXPECT_EQ(stateOf(controller->session(), "fc2.weight"), std::vector<float>(64 * 64, 0.25f));
  EXPECT_TRUE(anyMessageContains(messages, "Training goes on from the loaded weights"));
  ASSERT_TRUE(document->renameNode(node("fc2"), "middle"));
  EXPECT_EQ(stateOf(controller->session(), "middle.weight"), std::vector<float>(64 * 64, 0.25f));
}

// The plots take the window's palette, and follow a switch between light and dark.
TEST_F(TrainingControllerTest, PlotsFollowThePalette) {
  CurvesWidget curves(controller.get());
  QCustomPlot* plot = curves.plot();
  const QPalette light = QApplication::palette();
  EXPECT_EQ(plot->xAxis->labelColor(), light.color(QPalette::Text));
  QPalette dark = light;
  dark.setColor(QPalette::Window, QColor(40, 40, 40));
  dark.setColor(QPalette::Base, QColor(25, 25, 25));
  dark.setColor(QPalette::Text, QColor(230, 230, 230));
  QApplication::setPalette(dark);
  test::settle();
  EXPECT_EQ(plot->xAxis->labelColor(), QColor(230, 230, 230));
  EXPECT_EQ(plot->xAxis->tickLabelColor(), QColor(230, 230, 230));
  EXPECT_EQ(plot->legend->textColor(), QColor(230, 230, 230));
  QApplication::setPalette(light);
  test::settle();
  EXPECT_EQ(plot->xAxis->labelColor(), light.color(QPalette::Text));
}

TEST_F(TrainingControllerTest, LearningRateChangesMidRunAndBadValuesAreRefused) {
  const double initial = document->project().training.optimizer_options["lr"].get<double>();
  controller->start();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 5; }));
  EXPECT_DOUBLE_EQ(controller->status().lr, initial);
  EXPECT_TRUE(controller->setLearningRate(0.025));
  ASSERT_TRUE(waitFor([&] { return controller->status().lr == 0.025; }));
  EXPECT_TRUE(controller->isRunning());  // no new session: the run goes on
  EXPECT_EQ(document->project().training.optimizer_options["lr"].get<double>(), 0.025);

  QSignalSpy messages(controller.get(), &TrainingController::message);
  EXPECT_FALSE(controller->setLearningRate(-1));
  EXPECT_FALSE(controller->setLearningRate(std::nan("")));
  ASSERT_EQ(messages.count(), 2);
  EXPECT_TRUE(messages[0][0].toString().contains("Learning rate -1 refused"));
  EXPECT_EQ(document->project().training.optimizer_options["lr"].get<double>(), 0.025);

  // Undo puts the project's rate back, and the session follows.
  document->undoStack()->undo();
  ASSERT_TRUE(waitFor([&] { return controller->status().lr == initial; }));
}

TEST_F(TrainingControllerTest, ResetClearsAndStartsFromStepZero) {
  controller->stepOnce();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 1; }));
  QSignalSpy resets(controller.get(), &TrainingController::sessionReset);
  controller->reset();
  ASSERT_TRUE(waitFor([&] { return resets.count() > 0; }));
  EXPECT_EQ(controller->status().step, 0);
  EXPECT_EQ(controller->status().state, RunState::Idle);
}

TEST_F(TrainingControllerTest, CheckpointRoundTrip) {
  QTemporaryDir dir;
  const QString path = dir.filePath("ckpt.pt");
  controller->session()->step(7);
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(10)));
  ASSERT_TRUE(controller->saveCheckpoint(path));
  const nn::StateDict saved = controller->session()->model()->state_dict();

  controller->reset();
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(10)));
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 0; }));
  ASSERT_TRUE(controller->loadCheckpoint(path));
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(10)));
  for (const auto& item : controller->session()->model()->state_dict()) {
    const Tensor* want = saved.find(item.key());
    ASSERT_NE(want, nullptr) << item.key();
    EXPECT_EQ(item.value().to_vector<float>(), want->to_vector<float>()) << item.key();
  }
  // The step count goes on from the file's.
  controller->stepOnce();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 8; }));

  QSignalSpy messages(controller.get(), &TrainingController::message);
  EXPECT_FALSE(controller->loadCheckpoint(dir.filePath("missing.pt")));
  ASSERT_EQ(messages.count(), 1);
  EXPECT_TRUE(messages[0][0].toString().contains("Load checkpoint failed"));
}

TEST_F(TrainingControllerTest, ProbesFollowTheDocument) {
  ASSERT_NE(controller->session(), nullptr);
  const graph::NodeId fc1 = node("fc1");
  ASSERT_TRUE(document->addProbe(fc1, {}));
  const train::ProbeId id = controller->probeOf(fc1);
  ASSERT_NE(id, 0);
  EXPECT_EQ(controller->probeNode(id), fc1);
  controller->stepOnce();
  QSignalSpy samples(controller.get(), &TrainingController::probeSamplesArrived);
  ASSERT_TRUE(waitFor([&] { return samples.count() > 0; }));
  const auto got = samples[0][0].value<std::vector<train::ProbeSample>>();
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(controller->probeNode(got[0].probe), fc1);
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(5)));
  EXPECT_GT(controller->session()->probes().hook_count(id), 0u);

  ASSERT_TRUE(document->removeProbe(fc1));
  EXPECT_EQ(controller->probeOf(fc1), 0);
  // The removal is queued: the hooks are gone once the worker applied it.
  controller->stepOnce();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 2; }));
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(5)));
  EXPECT_EQ(controller->session()->probes().hook_count(id), 0u);
  EXPECT_TRUE(controller->session()->probes().list().empty());

  // Undo brings it back on the same session.
  document->undoStack()->undo();
  EXPECT_NE(controller->probeOf(fc1), 0);
}

TEST_F(TrainingControllerTest, GraphEditsMakeANewSessionWhenNotRunning) {
  train::TrainingSession* first = controller->session();
  ASSERT_NE(first, nullptr);
  QSignalSpy resets(controller.get(), &TrainingController::sessionReset);
  ASSERT_TRUE(document->setNodeOptions(node("fc2"), {{"in_features", 64}, {"out_features", 32}}));
  // fc3 now misfits: the graph has a problem and there is no session.
  EXPECT_EQ(controller->session(), nullptr);
  EXPECT_FALSE(controller->lastError().isEmpty());
  QSignalSpy failed(controller.get(), &TrainingController::runFailed);
  controller->start();
  ASSERT_EQ(failed.count(), 1);
  EXPECT_FALSE(failed[0][1].toString().isEmpty());
  document->undoStack()->undo();
  EXPECT_NE(controller->session(), nullptr);
  EXPECT_GE(resets.count(), 1);
}

// The Output panel's new session after an edit is made on a worker thread (a 10,000-node
// model's takes a tenth of a second): the one made for an edit that another followed is
// dropped, and the session that comes is the latest project's, with the weights its seed
// gives even while the window's thread seeds and builds a model of its own at the same time.
TEST_F(TrainingControllerTest, ASessionMadeInTheBackgroundIsTheLatestEditsWithItsSeedsWeights) {
  ASSERT_NE(controller->session(), nullptr);
  QSignalSpy made(controller.get(), &TrainingController::sessionMade);
  ASSERT_TRUE(document->setNodeOptions(node("fc2"), {{"in_features", 64}, {"out_features", 32}}));
  ASSERT_TRUE(controller->isStale());
  controller->makeSessionInBackground();
  ASSERT_TRUE(document->setNodeOptions(node("fc3"), {{"in_features", 32}, {"out_features", 3}}));
  controller->makeSessionInBackground();  // begun once the one for the first edit is dropped
  // Seeded builds on this thread meanwhile: each the same weights.
  const nn::StateDict initial = graph::build_initial_model(document->project())->state_dict();
  while (controller->isStale()) {
    const nn::StateDict again = graph::build_initial_model(document->project())->state_dict();
    for (const auto& entry : initial) {
      ASSERT_EQ(values(entry.value()), values(again[entry.key()])) << entry.key();
    }
    QCoreApplication::processEvents();
  }
  ASSERT_EQ(made.count(), 1);  // the first edit's session never became the current one
  train::TrainingSession* session = controller->currentSession();
  ASSERT_NE(session, nullptr) << controller->lastError().toStdString();
  EXPECT_EQ(controller->session(), session);  // up to date: not made again
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(10)));
  const nn::StateDict state = session->model()->state_dict();
  ASSERT_EQ(state.size(), initial.size());
  EXPECT_EQ(state["fc3.weight"].sizes(), (Shape{3, 32}));
  for (const auto& entry : initial) {
    EXPECT_EQ(values(state[entry.key()]), values(entry.value())) << entry.key();
  }
}

// The worker hands its session over through the future and wakes the window with nothing
// else: a wake-up that comes after session() took its session already leaves the next edit's,
// still being made, to that one's own wake-up.
TEST_F(TrainingControllerTest, ASessionTakenBeforeItsWakeUpLeavesTheNextOneToItsOwn) {
  ASSERT_NE(controller->session(), nullptr);
  QSignalSpy made(controller.get(), &TrainingController::sessionMade);
  // fc2 and fc3 narrowed to 32, then widened back to 64: each pair of edits a model that builds.
  auto setWidth = [&](int64_t width) {
    ASSERT_TRUE(
        document->setNodeOptions(node("fc2"), {{"in_features", 64}, {"out_features", width}}));
    ASSERT_TRUE(
        document->setNodeOptions(node("fc3"), {{"in_features", width}, {"out_features", 3}}));
  };
  auto fc3Shape = [&] {
    train::TrainingSession* session = controller->currentSession();
    EXPECT_NE(session, nullptr) << controller->lastError().toStdString();
    EXPECT_TRUE(session && session->wait_idle(std::chrono::seconds(10)));
    return session ? session->model()->state_dict()["fc3.weight"].sizes() : Shape{};
  };
  setWidth(32);
  controller->makeSessionInBackground();
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  ASSERT_EQ(made.count(), 1);  // the one made in the background, waited for
  EXPECT_EQ(fc3Shape(), (Shape{3, 32}));
  setWidth(64);
  controller->makeSessionInBackground();
  ASSERT_TRUE(waitFor([&] { return !controller->isStale(); }));
  EXPECT_EQ(made.count(), 2);
  EXPECT_EQ(fc3Shape(), (Shape{3, 64}));
}

TEST_F(TrainingControllerTest, NonFiniteLossFailsTheRunAndNamesTheNode) {
  ASSERT_TRUE(controller->setLearningRate(1e30));
  QSignalSpy failed(controller.get(), &TrainingController::runFailed);
  controller->start();
  ASSERT_TRUE(waitFor([&] { return failed.count() > 0; }));
  EXPECT_EQ(controller->status().state, RunState::Failed);
  EXPECT_FALSE(controller->isRunning());
  const auto failedNode = failed[0][0].value<graph::NodeId>();
  const std::string module = controller->status().failed_module;
  if (!module.empty()) {
    EXPECT_EQ(failedNode, node(module.substr(0, module.find('.'))));
  }
  EXPECT_FALSE(failed[0][1].toString().isEmpty());
}

// The controller's one state: each command and what the session reports move it through the
// table of transition(); an event a phase does not take is refused and changes nothing.
TEST_F(TrainingControllerTest, OnePhaseWithItsTransitionsInOnePlace) {
  using P = TrainingPhase;
  using E = TrainingEvent;
  const P all[] = {P::Idle, P::Running, P::Paused, P::ShowingSnapshot, P::Failed};
  for (P from : all) {
    SCOPED_TRACE(phaseName(from));
    EXPECT_EQ(TrainingController::transition(from, E::Reset), P::Idle);
    EXPECT_EQ(TrainingController::transition(from, E::ShowSnapshot), P::ShowingSnapshot);
    EXPECT_EQ(TrainingController::transition(from, E::Rested),
              from == P::Running ? std::optional<P>(P::Paused) : std::nullopt);
  }
  EXPECT_FALSE(TrainingController::transition(P::Failed, E::Start));
  EXPECT_FALSE(TrainingController::transition(P::Failed, E::Step));
  EXPECT_FALSE(TrainingController::transition(P::Running, E::Start));
  EXPECT_FALSE(TrainingController::transition(P::Running, E::Step));
  EXPECT_FALSE(TrainingController::transition(P::Failed, E::RunFailed));
  EXPECT_FALSE(TrainingController::transition(P::Running, E::FreshSession));
  EXPECT_FALSE(TrainingController::transition(P::Running, E::KeptSession));
  EXPECT_EQ(TrainingController::transition(P::Running, E::LoadWeights), P::Running);
  EXPECT_EQ(TrainingController::transition(P::Idle, E::LoadWeights), P::Paused);

  // Driven through the controller, with a run store (the snapshot phase needs one).
  QTemporaryDir dir;
  document->save(dir.filePath("phases.nns"));
  ASSERT_NE(controller->runStore(), nullptr) << controller->runStoreError().toStdString();
  QSignalSpy phases(controller.get(), &TrainingController::phaseChanged);
  QSignalSpy messages(controller.get(), &TrainingController::message);
  ASSERT_NE(controller->session(), nullptr);
  EXPECT_EQ(controller->phase(), P::Idle);
  controller->stepOnce();
  EXPECT_EQ(controller->phase(), P::Paused);
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 1; }));
  controller->start();
  EXPECT_EQ(controller->phase(), P::Running);
  EXPECT_TRUE(controller->isRunning());
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 20; }));
  controller->stepOnce();  // refused while running
  EXPECT_EQ(controller->phase(), P::Running);
  controller->pause();
  // Running until the worker rests; then the status the window reads has the step it rested
  // at (isRunning() and status() agree).
  ASSERT_TRUE(waitFor([&] { return !controller->isRunning(); }));
  EXPECT_EQ(controller->phase(), P::Paused);
  EXPECT_EQ(controller->status().state, RunState::Paused);
  EXPECT_EQ(controller->status().step, controller->session()->status().step);
  const int64_t run = controller->currentRun();
  ASSERT_GT(run, 0);

  // A snapshot of the run: shown, and the next run branches from it.
  ASSERT_TRUE(controller->showSnapshot(run, 1));
  EXPECT_EQ(controller->phase(), P::ShowingSnapshot);
  ASSERT_TRUE(controller->shownSnapshot());
  EXPECT_EQ(controller->shownSnapshot()->first, run);
  controller->start();
  EXPECT_EQ(controller->phase(), P::Running);
  EXPECT_FALSE(controller->shownSnapshot());
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 5; }));
  controller->pause();
  ASSERT_TRUE(waitFor([&] { return controller->phase() == P::Paused; }));

  // An edit at rest: a new session that keeps what was learned stays Paused; Reset: Idle.
  ASSERT_TRUE(document->renameNode(node("fc1"), "first"));
  EXPECT_TRUE(controller->isStale());
  ASSERT_NE(controller->session(), nullptr);
  EXPECT_EQ(controller->phase(), P::Paused);
  EXPECT_TRUE(controller->sessionContinues());
  controller->reset();
  EXPECT_EQ(controller->phase(), P::Idle);

  // A failure; then start and step are refused (with a message) until a reset.
  ASSERT_TRUE(controller->setLearningRate(1e30));
  QSignalSpy failed(controller.get(), &TrainingController::runFailed);
  controller->start();
  ASSERT_TRUE(waitFor([&] { return controller->phase() == P::Failed; }));
  EXPECT_EQ(controller->status().state, RunState::Failed);
  ASSERT_TRUE(waitFor([&] { return failed.count() == 1; }));
  messages.clear();
  controller->start();
  controller->stepOnce();
  EXPECT_EQ(controller->phase(), P::Failed);
  EXPECT_TRUE(anyMessageContains(messages, "reset it before training again"));
  EXPECT_TRUE(anyMessageContains(messages, "reset it before stepping again"));
  test::settle();
  EXPECT_EQ(failed.count(), 1);  // reported once
  // An edit after a failure starts from fresh weights.
  ASSERT_TRUE(document->renameNode(node("fc2"), "second"));
  ASSERT_NE(controller->session(), nullptr);
  EXPECT_EQ(controller->phase(), P::Idle);
  // Every change came with phaseChanged, each to another phase.
  ASSERT_GE(phases.count(), 8);
  for (int i = 1; i < phases.count(); ++i) {
    EXPECT_NE(phases[i][0].value<P>(), phases[i - 1][0].value<P>());
  }
}

// Edits during a make on a worker thread: the job of an earlier edit never becomes the
// session, and the makes asked for meanwhile lead to exactly one more, once it ended.
TEST(TrainingControllerState, AMakeAskedDuringAnEarlierEditsBeginsOnceWhenThatOneEnds) {
  SessionFreshness<int> freshness;
  EXPECT_TRUE(freshness.stale());  // no session yet
  freshness.edited(100);
  EXPECT_EQ(freshness.lastEditMs(), 100);
  ASSERT_TRUE(freshness.askMake());
  freshness.began(std::make_unique<int>(1));
  EXPECT_TRUE(freshness.jobIsCurrent());
  EXPECT_FALSE(freshness.askMake());  // this edit's is being made: nothing more to make

  freshness.edited(200);
  EXPECT_FALSE(freshness.jobIsCurrent());
  EXPECT_EQ(freshness.takeCurrentJob(), nullptr);  // an earlier edit's job: it goes on
  ASSERT_NE(freshness.job(), nullptr);
  EXPECT_FALSE(freshness.askMake());
  EXPECT_FALSE(freshness.askMake());
  EXPECT_TRUE(freshness.dropEndedJob());  // it ended: the make asked twice begins once
  EXPECT_EQ(freshness.job(), nullptr);
  ASSERT_TRUE(freshness.askMake());
  freshness.began(std::make_unique<int>(2));

  freshness.edited(300);
  EXPECT_FALSE(freshness.dropEndedJob());  // nothing asked since: no further make
  ASSERT_TRUE(freshness.askMake());
  freshness.began(std::make_unique<int>(3));
  const std::unique_ptr<int> job = freshness.takeCurrentJob();
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(*job, 3);
  EXPECT_EQ(freshness.job(), nullptr);
  freshness.madeNow();
  EXPECT_FALSE(freshness.stale());

  // Another project: out of date, and a job begun before is not for it.
  ASSERT_TRUE(freshness.askMake());
  freshness.began(std::make_unique<int>(4));
  freshness.reset();
  EXPECT_TRUE(freshness.stale());
  EXPECT_FALSE(freshness.jobIsCurrent());
  EXPECT_EQ(freshness.lastEditMs(), 300);  // not an edit
  freshness.stopJob();
  EXPECT_EQ(freshness.job(), nullptr);
}

TEST(TrainingControllerState, TheRunLineageForgetsWhatIsGone) {
  QTemporaryDir dir;
  auto watched = std::make_shared<train::RunStore>(dir.filePath("watched").toStdString());
  RunLineage lineage;
  lineage.shown = RunStep{2, 10, nullptr};
  lineage.branchFrom = lineage.shown;
  lineage.forgetRun(3);  // another run
  EXPECT_TRUE(lineage.shown && lineage.branchFrom);
  lineage.forgetRun(2);
  EXPECT_FALSE(lineage.shown);
  EXPECT_FALSE(lineage.branchFrom);

  // A run of a watched store: deleting the project's run of that number leaves it; unwatching
  // its store leaves it shown, but the next run branches from nothing.
  lineage.shown = RunStep{2, 10, watched};
  lineage.branchFrom = lineage.shown;
  lineage.forgetRun(2);
  EXPECT_TRUE(lineage.shown && lineage.branchFrom);
  lineage.forgetStore(nullptr);
  EXPECT_TRUE(lineage.branchFrom);
  lineage.forgetStore(watched.get());
  ASSERT_TRUE(lineage.shown);
  EXPECT_EQ(lineage.shown->runAndStep(), std::make_pair(int64_t{2}, int64_t{10}));
  EXPECT_FALSE(lineage.branchFrom);

  lineage.branchFrom = RunStep{5, 1, nullptr};
  lineage.reset();
  EXPECT_FALSE(lineage.shown);
  EXPECT_FALSE(lineage.branchFrom);
}

// The session's own state as an event of the phase: a failure in any phase, a rest only of a
// run whose worker applied every command.
TEST(TrainingControllerState, TheSessionsStateIsAnEventOfThePhase) {
  using P = TrainingPhase;
  using E = TrainingEvent;
  using S = train::RunState;
  for (P phase : {P::Idle, P::Running, P::Paused, P::ShowingSnapshot, P::Failed}) {
    SCOPED_TRACE(phaseName(phase));
    EXPECT_EQ(TrainingController::sessionEvent(phase, S::Failed, false), E::RunFailed);
    EXPECT_EQ(TrainingController::sessionEvent(phase, S::Failed, true), E::RunFailed);
    for (S state : {S::Idle, S::Paused, S::Stopped}) {
      EXPECT_EQ(TrainingController::sessionEvent(phase, state, true),
                phase == P::Running ? std::optional<E>(E::Rested) : std::nullopt);
      // start() not applied yet, or a prediction still queued: the run goes on.
      EXPECT_FALSE(TrainingController::sessionEvent(phase, state, false));
    }
    EXPECT_FALSE(TrainingController::sessionEvent(phase, S::Running, true));
  }
}

// A state dict loaded while no session can be made waits for the next one, which starts from
// it; once that one took it, it is gone: a later session without one starts from the seed's.
TEST_F(TrainingControllerTest, WeightsLoadedWithoutASessionGoToTheNextOneAndAreThenCleared) {
  const graph::TrainingSettings good = document->project().training;
  ASSERT_NE(controller->session(), nullptr) << controller->lastError().toStdString();
  nn::StateDict file;
  for (const auto& entry : controller->session()->model()->state_dict()) {
    file.insert(entry.key(), full_like(entry.value(), 0.25));
  }
  QTemporaryDir dir;
  const QString path = dir.filePath("quarter.safetensors");
  serialize::save_state_dict_file(file, path.toStdString());

  // An optimizer the engine does not have: the model builds, but no session is made.
  graph::TrainingSettings broken = good;
  broken.optimizer = "NoSuchOptimizer";
  document->setTrainingSettings(broken, "Break");
  ASSERT_EQ(controller->session(), nullptr);
  QSignalSpy messages(controller.get(), &TrainingController::message);
  document->loadStateDict(path, /*strict=*/true);
  ASSERT_GE(messages.count(), 1);
  EXPECT_TRUE(messages.last()[0].toString().startsWith("The loaded weights wait for a session"));
  EXPECT_EQ(controller->phase(), TrainingPhase::Paused);
  const std::vector<float> quarter(64 * 64, 0.25f);
  EXPECT_EQ(values((*controller->stateDict())["fc2.weight"]), quarter);
  bool read = false;
  EXPECT_TRUE(controller->withRestingModel([&](graph::GraphModule& model) {
    read = values(model.get_parameter("fc2.weight")) == quarter;
  }));
  EXPECT_TRUE(read);

  document->setTrainingSettings(good, "Fix");
  train::TrainingSession* session = controller->session();
  ASSERT_NE(session, nullptr) << controller->lastError().toStdString();
  ASSERT_TRUE(session->wait_idle(std::chrono::seconds(10)));
  EXPECT_EQ(values(session->model()->state_dict()["fc2.weight"]), quarter);
  EXPECT_EQ(controller->phase(), TrainingPhase::Paused);

  // A failed run keeps nothing: without a session again, the weights are the architecture's,
  // not the ones loaded before.
  ASSERT_TRUE(controller->setLearningRate(1e30));
  controller->start();
  ASSERT_TRUE(waitFor([&] { return controller->phase() == TrainingPhase::Failed; }));
  document->setTrainingSettings(broken, "Break again");
  ASSERT_EQ(controller->session(), nullptr);
  EXPECT_FALSE(controller->withRestingModel([](graph::GraphModule&) {}));
  const std::optional<nn::StateDict> weights = controller->stateDict();
  ASSERT_TRUE(weights);
  EXPECT_EQ(values((*weights)["fc2.weight"]),
            values(document->model()->state_dict()["fc2.weight"]));
  EXPECT_NE(values((*weights)["fc2.weight"]), quarter);
}

// The window as a user drives it: the dock's buttons and fields, the plots.
class TrainingDockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    window->resize(1500, 920);
    graph::Project project = spiralsExample();
    project.training.epochs = 0;
    window->document()->setProject(std::move(project), QString());
    window->show();
    settle();
    dock = window->trainingDock();
    controller = window->training();
  }
  void TearDown() override { window.reset(); }
  static void settle() { test::settle(); }
  void pauseAndSettle() {
    dock->pauseAction()->trigger();
    ASSERT_TRUE(waitFor([&] { return controller->status().state == RunState::Paused; }));
  }

  std::unique_ptr<MainWindow> window;
  TrainingDock* dock = nullptr;
  TrainingController* controller = nullptr;
};

TEST_F(TrainingDockTest, StartFeedsCurvesAndBoundaryThenPauseAndStepOneBatch) {
  CurvesWidget* curves = window->curves();
  DecisionBoundaryWidget* boundary = window->boundary();
  // The Output panel asks for the project's session once it is shown (it is made on demand).
  ASSERT_TRUE(waitFor([&] { return boundary->mode() == DecisionBoundaryWidget::Mode::Heatmap; }));
  dock->startAction()->trigger();
  ASSERT_TRUE(waitFor([&] {
    return curves->trainLossPoints() > 0 && curves->testLossPoints() > 0 &&
           curves->testAccuracyPoints() > 0 && boundary->shownStep() > 0 &&
           controller->status().step >= TrainingDock::kProbeFigureAfterSteps;
  }));
  EXPECT_FALSE(boundary->heatmap().isNull());
  EXPECT_GT(curves->replots(), 0);
  pauseAndSettle();
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(5)));
  QTest::qWait(2 * TrainingController::kPollMs);
  const int64_t before = controller->status().step;
  EXPECT_TRUE(dock->counters()->text().contains(QString("step %1 ").arg(before)));
  // The example's probes report what they cost.
  EXPECT_TRUE(dock->counters()->text().contains(QRegularExpression(R"(probes \+\d+\.\d%)")))
      << dock->counters()->text().toStdString();
  EXPECT_TRUE(dock->counters()->toolTip().contains("steps sampled"));
  dock->stepAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step != before; }));
  ASSERT_TRUE(controller->session()->wait_idle(std::chrono::seconds(5)));
  QTest::qWait(2 * TrainingController::kPollMs);
  EXPECT_EQ(controller->status().step, before + 1);
  EXPECT_TRUE(dock->counters()->text().contains(QString("step %1 ").arg(before + 1)));
  // The boundary follows a paused model too.
  ASSERT_TRUE(waitFor([&] { return boundary->shownStep() == before + 1; }));

  dock->resetAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return curves->trainLossPoints() == 0; }));
  EXPECT_EQ(curves->testLossPoints(), 0);
  EXPECT_EQ(controller->status().step, 0);
}

TEST_F(TrainingDockTest, LearningRateEditAppliesWhileRunningAndBadInputIsRefused) {
  dock->startAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 3; }));
  QLineEdit* lr = dock->learningRateEdit();
  EXPECT_EQ(lr->text(), "0.01");  // the example's Adam rate
  lr->setText("0.03");
  emit lr->editingFinished();
  ASSERT_TRUE(waitFor([&] { return controller->status().lr == 0.03; }));
  EXPECT_TRUE(controller->isRunning());
  EXPECT_TRUE(dock->inputMessage()->isHidden());

  QSignalSpy log(controller, &TrainingController::message);
  lr->setText("fast");
  emit lr->editingFinished();
  EXPECT_FALSE(dock->inputMessage()->isHidden());
  EXPECT_TRUE(dock->inputMessage()->text().contains("\"fast\" refused"));
  ASSERT_EQ(log.count(), 1);
  lr->setText("0");
  emit lr->editingFinished();
  EXPECT_TRUE(dock->inputMessage()->text().contains("\"0\" refused"));
  QTest::qWait(2 * TrainingController::kPollMs);
  EXPECT_EQ(controller->status().lr, 0.03);
  EXPECT_EQ(window->document()->project().training.optimizer_options["lr"].get<double>(), 0.03);
}

// A model whose Input does not take the data set's samples (the digits CNN with spirals
// chosen): a problem on the Input in the Problems list, the Output panel says so plainly (not
// the engine's shape error), and Train refuses with the same words.
TEST_F(TrainingDockTest, AModelThatDoesNotFitTheDataIsAProblemOnItsInput) {
  graph::Project digits = exampleProject("digits.nns");
  digits.probes.clear();
  window->document()->setProject(std::move(digits), QString());
  settle();
  graph::DatasetSettings spirals = spiralsExample().dataset;
  // Set directly, as a project file can have it (the dock's chooser would refit the Input).
  window->document()->setDatasetSettings(spirals, "Data set");
  ProblemsWidget* problems = window->problems();
  auto mismatchRow = [&]() -> QTreeWidgetItem* {
    for (int i = 0; i < problems->topLevelItemCount(); ++i) {
      if (problems->topLevelItem(i)->text(1) == "data") return problems->topLevelItem(i);
    }
    return nullptr;
  };
  // The Output panel asks for the new session once the edit is over.
  ASSERT_TRUE(waitFor([&] { return mismatchRow() != nullptr; }));
  const QString text = mismatchRow()->text(2);
  EXPECT_EQ(mismatchRow()->text(0), "x");
  EXPECT_TRUE(text.contains("samples of shape [2] (float32)")) << text.toStdString();
  EXPECT_TRUE(text.contains("takes [1, 16, 16] (float32)")) << text.toStdString();
  EXPECT_TRUE(text.contains("choose a data set")) << text.toStdString();
  EXPECT_EQ(controller->dataMismatchNode(),
            window->document()->project().graph.find_by_name("x")->id);
  ASSERT_TRUE(waitFor([&] { return window->boundary()->message().contains("does not fit"); }));
  EXPECT_TRUE(window->boundary()->message().contains("[1, 16, 16]"));
  QSignalSpy failed(controller, &TrainingController::runFailed);
  dock->startAction()->trigger();
  ASSERT_EQ(failed.count(), 1);
  EXPECT_EQ(failed[0][1].toString(), controller->dataMismatch());
  EXPECT_FALSE(controller->isRunning());
  // With no session the weights are those a session would start from: its seed's (the
  // document's model is the structure only, never initialized).
  const std::optional<nn::StateDict> initial = controller->stateDict();
  ASSERT_TRUE(initial);
  const graph::Project& project = window->document()->project();
  const nn::StateDict seeds = with_seed(static_cast<uint64_t>(project.training.seed), [&] {
                                return graph::build_model(project);
                              })->state_dict();
  ASSERT_EQ(initial->size(), seeds.size());
  for (const auto& entry : seeds) {
    EXPECT_EQ(values((*initial)[entry.key()]), values(entry.value())) << entry.key();
  }
  // The data set of the model again: the problem goes.
  window->document()->undoStack()->undo();
  ASSERT_TRUE(waitFor([&] { return mismatchRow() == nullptr; }));
  EXPECT_TRUE(controller->dataMismatch().isEmpty());
  window->document()->undoStack()->setClean();
}

// The inspector's Params tab shows the session's values (it owns the weights): the norms of the
// trained weights and of the last step's gradients, read at rest, the step they are of.
TEST_F(TrainingDockTest, TheInspectorShowsTheSessionsWeights) {
  dock->stepAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 1 && !controller->isRunning(); }));
  double weightNorm = 0, gradNorm = 0;
  ASSERT_TRUE(controller->withRestingModel([&](graph::GraphModule& model) {
    const Tensor w = model.get_parameter("fc1.weight");
    weightNorm = w.detach().to(kFloat64).pow(2).sum().sqrt().item();
    gradNorm = w.grad().to(kFloat64).pow(2).sum().sqrt().item();
  }));
  QTableWidget* table = window->inspector()->parameterTable();
  auto row = [&] {
    for (int r = 0; r < table->rowCount(); ++r) {
      if (table->item(r, 0)->text() == "fc1.weight") return r;
    }
    return -1;
  };
  ASSERT_TRUE(waitFor([&] {
    const int r = window->inspector()->parameterTable()->rowCount() > 0 ? row() : -1;
    return r >= 0 && table->item(r, 5)->text() == QString::number(weightNorm, 'g', 5);
  }));
  EXPECT_EQ(table->item(row(), 6)->text(), QString::number(gradNorm, 'g', 5));
  // Not the architecture's values (the document's model is never trained).
  const double architecture = window->document()
                                  ->model()
                                  ->get_parameter("fc1.weight")
                                  .detach()
                                  .to(kFloat64)
                                  .pow(2)
                                  .sum()
                                  .sqrt()
                                  .item();
  EXPECT_NE(QString::number(architecture, 'g', 5), table->item(row(), 5)->text());
  window->document()->undoStack()->setClean();
}

// Save State Dict writes the weights as trained, not the model as it was built.
TEST_F(TrainingDockTest, SaveStateDictWritesTheTrainedWeights) {
  dock->startAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 30; }));
  QTemporaryDir dir;
  const QString path = dir.filePath("trained.pt");
  // While running: the run pauses for the copy and goes on.
  ASSERT_TRUE(window->saveStateDictTo(path));
  EXPECT_TRUE(controller->isRunning());
  pauseAndSettle();
  ASSERT_TRUE(window->saveStateDictTo(path));
  const nn::StateDict saved = serialize::load_state_dict_file(path.toStdString());
  const nn::StateDict trained = controller->session()->model()->state_dict();
  ASSERT_EQ(saved.size(), trained.size());
  for (const auto& entry : trained) {
    EXPECT_EQ(values(saved[entry.key()]), values(entry.value())) << entry.key();
  }
}

TEST_F(TrainingDockTest, DatasetChooserListsEverySetAndSwitchesTheOutputView) {
  QListWidget* list = dock->datasetList();
  // Every built-in set, then the user's own: CSV, images (folders, MNIST, CIFAR) and NumPy.
  ASSERT_EQ(list->count(), static_cast<int>(data::dataset_catalog().size()) + 3);
  EXPECT_EQ(list->item(list->count() - 2)->text(), "Images…");
  EXPECT_EQ(list->item(list->count() - 1)->text(), "NumPy…");
  for (int i = 0; i < list->count(); ++i) EXPECT_FALSE(list->item(i)->icon().isNull());
  EXPECT_EQ(list->currentItem()->text(), "spirals");
  ProjectDocument* document = window->document();
  const graph::Graph& g = document->project().graph;
  dock->chooseDataset("curve");
  EXPECT_EQ(document->project().dataset.name, "curve");
  // The model's Input follows the data in the same undo step: one number per sample, so fc1
  // (made for 2) no longer fits and says so.
  const graph::Node* x = g.find_by_name("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->options.at("shape"), graph::Json::array({1}));
  EXPECT_EQ(x->options.at("dtype"), "float32");
  ASSERT_TRUE(waitFor([&] { return !controller->lastError().isEmpty(); }));
  EXPECT_TRUE(controller->lastError().contains("fc1")) << controller->lastError().toStdString();
  // Made to fit: a 1-D regression set's output view draws the fitted curve.
  graph::Json fc1 = g.find_by_name("fc1")->options;
  fc1["in_features"] = 1;
  ASSERT_TRUE(document->setNodeOptions(g.find_by_name("fc1")->id, fc1));
  ASSERT_TRUE(waitFor([&] { return controller->session() != nullptr; }));
  EXPECT_EQ(window->boundary()->mode(), DecisionBoundaryWidget::Mode::Curve);
  // Two undo steps: fc1, then the data set with its Input.
  document->undoStack()->undo();
  document->undoStack()->undo();
  EXPECT_EQ(g.find_by_name("x")->options.at("shape"), graph::Json::array({2}));
  ASSERT_TRUE(
      waitFor([&] { return window->boundary()->mode() == DecisionBoundaryWidget::Mode::Heatmap; }));
  EXPECT_EQ(list->currentItem()->text(), "spirals");
}

TEST_F(TrainingDockTest, CheckpointSaveAndLoadFromTheDock) {
  QTemporaryDir dir;
  const QString path = dir.filePath("run.pt");
  dock->startAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 20; }));
  // Saving pauses the run for the moment and resumes it.
  ASSERT_TRUE(dock->saveCheckpointTo(path));
  EXPECT_TRUE(controller->isRunning());
  pauseAndSettle();
  dock->resetAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 0; }));
  ASSERT_TRUE(dock->loadCheckpointFrom(path));
  dock->stepAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step > 20; }));
}

// A checkpoint that the exported train.py wrote with PyTorch (tests/fixtures/state_dict/
// make_exported_train_checkpoint.py: the spirals example, 5 steps) opens in the window and
// training goes on from its step.
TEST_F(TrainingDockTest, ACheckpointFromTheExportedTrainScriptOpensAndTrainsOn) {
  const QString path =
      QString(NNS_SOURCE_DIR) + "/tests/fixtures/state_dict/exported_train_spirals.pt";
  ASSERT_TRUE(dock->loadCheckpointFrom(path));
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 5; }));
  const serialize::Checkpoint ckpt = serialize::load_checkpoint(path.toStdString());
  const nn::StateDict loaded = ckpt.model;
  for (const auto& item : loaded) {
    EXPECT_EQ(stateOf(controller->session(), item.key()), values(item.value())) << item.key();
  }
  dock->stepAction()->trigger();
  ASSERT_TRUE(waitFor([&] { return controller->status().step == 6; }));
}

// What a field of the data section shows, as the project stores it.
graph::Json fieldValue(QWidget* field) {
  if (auto* box = qobject_cast<QSpinBox*>(field)) return box->value();
  if (auto* box = qobject_cast<QDoubleSpinBox*>(field)) return box->value();
  if (auto* box = qobject_cast<QComboBox*>(field)) return box->currentText().toStdString();
  // A file's row: its path in a line edit beside a chooser button.
  if (auto* edit = field->findChild<QLineEdit*>()) return edit->text().toStdString();
  ADD_FAILURE() << "not an option field: " << field->metaObject()->className();
  return nullptr;
}

// Changes a field as a user would (a spin box step, a pick from the list) to another value in
// its range; returns the value it now holds.
graph::Json changeField(QWidget* field) {
  if (auto* box = qobject_cast<QSpinBox*>(field)) {
    box->value() < box->maximum() ? box->stepUp() : box->stepDown();
    return box->value();
  }
  if (auto* box = qobject_cast<QDoubleSpinBox*>(field)) {
    box->value() + box->singleStep() <= box->maximum() ? box->stepUp() : box->stepDown();
    return box->value();
  }
  if (auto* box = qobject_cast<QComboBox*>(field)) {
    box->setCurrentIndex((box->currentIndex() + 1) % box->count());
    emit box->textActivated(box->currentText());
    return box->currentText().toStdString();
  }
  if (auto* edit = field->findChild<QLineEdit*>()) {
    // A file typed in (the chooser button opens a dialog).
    static QTemporaryDir dir;
    const QString path = dir.filePath("text.txt");
    QFile file(path);
    EXPECT_TRUE(file.open(QIODevice::WriteOnly));
    for (int i = 0; i < 10; ++i) file.write("hello, sequences\n");
    file.close();
    edit->setText(path);
    emit edit->editingFinished();
    return path.toStdString();
  }
  ADD_FAILURE() << "not an option field: " << field->metaObject()->className();
  return nullptr;
}

TEST_F(TrainingDockTest, EveryOptionOfEveryDataSetIsAFieldThatEditsTheProjectInOneUndoStep) {
  ProjectDocument* document = window->document();
  QUndoStack* undo = document->undoStack();
  for (const data::DatasetInfo& info : data::dataset_catalog()) {
    SCOPED_TRACE(info.name);
    dock->chooseDataset(QString::fromStdString(info.name));
    settle();
    ASSERT_EQ(document->project().dataset.name, info.name);
    for (const data::OptionInfo& option : info.options) {
      SCOPED_TRACE(option.name);
      const QString name = QString::fromStdString(option.name);
      QWidget* field = dock->datasetOptionField(name);
      ASSERT_NE(field, nullptr);
      EXPECT_TRUE(field->isVisibleTo(dock));
      EXPECT_TRUE(dock->dataSection()->isAncestorOf(field));
      EXPECT_EQ(field->toolTip().toStdString(), option.description);
      // The catalog's range, choices and default (the seed is the project's data seed).
      if (auto* box = qobject_cast<QSpinBox*>(field)) {
        EXPECT_EQ(option.type, data::OptionType::Integer);
        EXPECT_EQ(box->minimum(), option.min);
        EXPECT_EQ(box->maximum(), std::min<double>(option.max, INT_MAX));
      } else if (auto* box = qobject_cast<QDoubleSpinBox*>(field)) {
        EXPECT_EQ(option.type, data::OptionType::Real);
        EXPECT_EQ(box->minimum(), option.min);
        EXPECT_EQ(box->maximum(), option.max);
      } else if (auto* box = qobject_cast<QComboBox*>(field)) {
        EXPECT_EQ(option.type, data::OptionType::Choice);
        EXPECT_EQ(box->count(), static_cast<int>(option.choices.size()));
      }
      const graph::DatasetSettings before = document->project().dataset;
      const graph::Json shown = fieldValue(field);
      if (option.name == "seed") {
        EXPECT_EQ(shown, before.seed);
      } else if (before.options.contains(option.name)) {  // the example's own
        EXPECT_EQ(shown, before.options.at(option.name));
      } else if (option.type == data::OptionType::Choice || option.type == data::OptionType::File) {
        EXPECT_EQ(shown, option.default_choice);
      } else {
        EXPECT_EQ(shown.get<double>(), option.default_value);
      }

      const int steps = undo->index();
      const graph::Json changed = changeField(field);
      settle();
      ASSERT_NE(changed, shown);
      const graph::DatasetSettings& after = document->project().dataset;
      if (option.name == "seed") {
        EXPECT_EQ(after.seed, changed.get<int64_t>());
      } else {
        ASSERT_TRUE(after.options.contains(option.name));
        EXPECT_EQ(after.options.at(option.name), changed);
      }
      EXPECT_EQ(undo->index(), steps + 1);
      undo->undo();
      settle();
      EXPECT_EQ(document->project().dataset, before);
      EXPECT_EQ(fieldValue(dock->datasetOptionField(name)), shown);
    }
  }
}

// The loss's and the optimizer's options come from their option specs (the schema node and
// data set options use): a field each, under Loss and under the learning rate, that edits the
// project in one undo step; another optimizer brings its own fields.
TEST_F(TrainingDockTest, EveryOptionOfTheLossAndTheOptimizerIsAFieldThatEditsTheProject) {
  ProjectDocument* document = window->document();
  QUndoStack* undo = document->undoStack();
  const std::vector<std::pair<std::string, std::string>> choices = {{"CrossEntropyLoss", "SGD"},
                                                                    {"HuberLoss", "Adam"},
                                                                    {"NLLLoss", "AdamW"},
                                                                    {"MSELoss", "RMSprop"}};
  for (const auto& [loss, optimizer] : choices) {
    SCOPED_TRACE(loss + " + " + optimizer);
    graph::TrainingSettings t = document->project().training;
    t.loss = loss;
    t.loss_options = graph::Json::object();
    t.optimizer = optimizer;
    t.optimizer_options = {{"lr", 0.05}};
    document->setTrainingSettings(t, "choose");
    settle();
    std::vector<graph::OptionSpec> specs = train::loss_option_specs(loss);
    for (const graph::OptionSpec& spec : train::optimizer_option_specs(optimizer))
      specs.push_back(spec);
    int fields = 0;
    for (const graph::OptionSpec& spec : specs) {
      SCOPED_TRACE(spec.name);
      QWidget* field = dock->trainingOptionField(QString::fromStdString(spec.name));
      if (spec.hidden || spec.name == "lr" || spec.name == "weight_decay") {
        EXPECT_EQ(field, nullptr);
        continue;
      }
      ASSERT_NE(field, nullptr);
      ++fields;
      EXPECT_TRUE(field->isVisibleTo(dock));
      EXPECT_EQ(field->toolTip().toStdString(), spec.help);
      const graph::TrainingSettings before = document->project().training;
      const int steps = undo->index();
      graph::Json changed;
      if (auto* box = qobject_cast<QCheckBox*>(field)) {
        EXPECT_EQ(box->isChecked(), spec.default_value.get<bool>());
        box->click();
        changed = box->isChecked();
      } else if (auto* edit = qobject_cast<QLineEdit*>(field)) {
        if (spec.kind == graph::OptionSpec::Kind::FloatList) {
          edit->setText("0.8, 0.99");
          changed = graph::Json::array({0.8, 0.99});
        } else {
          // A small number (eps) is typed: the spin box would show 1e-8 as 0.000000.
          EXPECT_EQ(spec.kind, graph::OptionSpec::Kind::Float);
          EXPECT_EQ(graph::Json::parse(edit->property("optionValue").toString().toStdString()),
                    spec.default_value);
          edit->setText("1e-07");
          changed = 1e-07;
        }
        emit edit->editingFinished();
      } else {
        changed = changeField(field);
      }
      settle();
      const graph::TrainingSettings& after = document->project().training;
      const graph::Json& options = spec.name == "reduction" || spec.name == "label_smoothing" ||
                                           spec.name == "ignore_index" || spec.name == "delta"
                                       ? after.loss_options
                                       : after.optimizer_options;
      ASSERT_TRUE(options.contains(spec.name));
      EXPECT_EQ(options.at(spec.name), changed);
      EXPECT_EQ(undo->index(), steps + 1);
      undo->undo();
      settle();
      EXPECT_EQ(document->project().training, before);
    }
    EXPECT_GT(fields, 0);
  }
}

TEST_F(TrainingDockTest, SpinBoxStepsOnOneOptionMergeIntoOneUndoStep) {
  ProjectDocument* document = window->document();
  auto* noise = qobject_cast<QDoubleSpinBox*>(dock->datasetOptionField("noise"));
  ASSERT_NE(noise, nullptr);
  const graph::DatasetSettings before = document->project().dataset;
  const int steps = document->undoStack()->index();
  noise->stepUp();
  noise->stepUp();
  noise->stepUp();
  settle();
  EXPECT_EQ(document->undoStack()->index(), steps + 1);
  EXPECT_NEAR(document->project().dataset.options.at("noise").get<double>(), noise->value(), 1e-12);
  document->undoStack()->undo();
  EXPECT_EQ(document->project().dataset, before);
}

TEST_F(TrainingDockTest, TheDataSectionNeverOverlapsItselfAtAnyHeight) {
  // A dock of its own, sized here; it follows the same project.
  TrainingDock standalone(controller);
  standalone.show();
  // The status at its longest: three lines.
  standalone.counters()->setText(
      "step 12000 · epoch 40 · 2500 steps/s · running\nloss 0.0123 · test accuracy 99.5%\n"
      "probes +4.9%");
  QWidget* section = standalone.dataSection();
  auto* list = standalone.datasetList();
  for (const char* set : {"spirals", "blobs", "curve", "digits"}) {
    standalone.chooseDataset(set);
    for (int height : {300, 500, 900}) {
      SCOPED_TRACE(std::string(set) + " at " + std::to_string(height) + " px");
      standalone.resize(290, height);
      settle();
      std::vector<std::pair<QWidget*, QRect>> controls;
      for (QWidget* w : section->findChildren<QWidget*>(Qt::FindDirectChildrenOnly)) {
        if (w->isVisible()) controls.emplace_back(w, QRect(w->mapTo(section, QPoint()), w->size()));
      }
      ASSERT_GT(controls.size(), 5u);
      for (size_t i = 0; i < controls.size(); ++i) {
        const auto& [a, ra] = controls[i];
        EXPECT_TRUE(section->rect().contains(ra)) << a->objectName().toStdString();
        for (size_t j = i + 1; j < controls.size(); ++j) {
          const auto& [b, rb] = controls[j];
          EXPECT_FALSE(ra.intersects(rb))
              << a->metaObject()->className() << " " << a->objectName().toStdString() << " and "
              << b->metaObject()->className() << " " << b->objectName().toStdString();
        }
      }
      // Every thumbnail shows whole, without scrolling the list.
      for (int i = 0; i < list->count(); ++i) {
        EXPECT_TRUE(list->viewport()->rect().contains(list->visualItemRect(list->item(i))))
            << list->item(i)->text().toStdString();
      }
    }
  }
}

}  // namespace
}  // namespace nns::ui
