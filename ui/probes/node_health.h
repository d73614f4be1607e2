// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// NodeHealthModel: what the window knows about each probed node in the current run. It keeps
// the probe samples (engine/train/probes.h) it is given, per node and series, judges each
// probed node's health from them, and remembers the node where a NaN or an infinity stopped
// the run. The canvas (colour and sparkline on the node) and the probe panel read it; a run's
// reset clears it, and a recorded run's step shown puts that run's probe history up to the
// step in its place (from the run store).
//
// Health, from the node's latest sampled step (the thresholds are rules of thumb, stated in
// the node's tooltip too):
//   Exploding  the gradient norm is above kExplodingNorm (1e3) or a gradient is not finite;
//   Vanishing  the gradient norm is below kVanishingNorm (1e-5);
//   DeadUnits  more than kDeadFraction (90%) of the outputs are exactly 0 (dead ReLUs: a
//              healthy ReLU layer zeroes about half of its outputs, so half is no sign);
//   Saturated  more than kSaturatedFraction (50%) of the outputs sit at the ends of a bounded
//              activation (Tanh, Sigmoid and their hard forms; see TensorStats);
//   Ok         none of these.
// The gradient norm is that of the gradient w.r.t. the node's output when the probe records
// it, else the total norm of its parameters' gradients.
#include <QObject>
#include <QString>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/spec.h"
#include "engine/train/probes.h"
#include "ui/widgets/canvas_theme.h"

namespace nns::train {
class RunStore;
}  // namespace nns::train

namespace nns::ui {

class TrainingController;

enum class NodeHealth { Ok, Saturated, DeadUnits, Vanishing, Exploding };  // worst last

constexpr double kExplodingNorm = 1e3;
constexpr double kVanishingNorm = 1e-5;
constexpr double kDeadFraction = 0.9;
constexpr double kSaturatedFraction = 0.5;

// One sampled step of a node: what its sparkline plots. NaN where the probe does not record it.
struct HealthPoint {
  int64_t step = 0;
  double dead = std::numeric_limits<double>::quiet_NaN();
  double saturation = std::numeric_limits<double>::quiet_NaN();
  double gradNorm = std::numeric_limits<double>::quiet_NaN();  // see above
  bool nonfinite = false;                                      // a gradient was not finite
  double paramGradSquares = 0;  // sum of the parameters' squared gradient norms this step
  bool hasParamGrads = false;
};

struct HealthReport {
  NodeHealth health = NodeHealth::Ok;
  int64_t step = 0;  // the latest sampled step
  QString summary;   // one line: the verdict and the numbers behind it
};

// "ok", "dead units", "saturated", "vanishing gradient", "exploding gradient".
QString healthName(NodeHealth health);
// The thresholds above as one line of text, for tooltips.
QString healthThresholds();
HealthReport judgeHealth(const HealthPoint& point);
// Green, amber (saturated, dead units), blue (vanishing), red (exploding).
QColor healthColor(const CanvasTheme& theme, NodeHealth health);

class NodeHealthModel : public QObject {
  Q_OBJECT

 public:
  using SeriesKey = std::pair<train::ProbeKind, std::string>;
  using SeriesMap = std::map<SeriesKey, std::vector<train::ProbeSample>>;
  // Samples kept per series: beyond it the older half is thinned to every other sample, so
  // that the first steps and a dense recent stretch always stay.
  static constexpr size_t kMaxSamples = 2048;
  // Points kept for a node's sparkline.
  static constexpr size_t kSparklinePoints = 64;

  explicit NodeHealthModel(QObject* parent = nullptr);

  // Follows a controller: its probe samples (by the node of their probe), its resets and
  // failures; and its document's probes (a removed probe's samples go with it).
  void follow(TrainingController* controller);

  // Samples of one node's probe (any kinds and steps, in the order they were taken).
  void add(graph::NodeId node, const std::vector<train::ProbeSample>& samples);
  // What the probes saw up to `step` of a recorded run (and its parents up to where it
  // branched), from the controller's run store, in place of what was there (the controller's
  // snapshotShown).
  void showHistory(TrainingController* controller, train::RunStore* store, int64_t run,
                   int64_t step);
  // Forgets every sample and the failure (a reset run, a new project).
  void clear();
  // Forgets one node's samples (its probe was removed).
  void forget(graph::NodeId node);

  // nullptr for a node without samples.
  const SeriesMap* series(graph::NodeId node) const;
  std::optional<HealthReport> health(graph::NodeId node) const;
  // The node's sparkline points, oldest first (at most kSparklinePoints).
  const std::vector<HealthPoint>& sparkline(graph::NodeId node) const;
  // Grows with every change, so that a timer can tell whether to replot.
  uint64_t revision() const { return revision_; }

  // The node where a NaN/Inf (or another error) stopped the run, and why; 0 for none or for
  // a failure outside any node (the loss).
  void setFailure(graph::NodeId node, const QString& message);
  graph::NodeId failedNode() const { return failedNode_; }
  QString failureMessage() const { return failureMessage_; }
  bool failed() const { return failed_; }

 signals:
  // Samples arrived or were cleared; the nodes whose health may have changed (all when cleared).
  void updated(const std::vector<graph::NodeId>& nodes);
  void failureChanged();

 private:
  struct NodeData {
    SeriesMap series;
    std::vector<HealthPoint> points;  // by step, the last kSparklinePoints
  };
  std::map<graph::NodeId, NodeData> nodes_;
  uint64_t revision_ = 0;
  graph::NodeId failedNode_ = 0;
  QString failureMessage_;
  bool failed_ = false;
  bool showingWatched_ = false;  // a watched run's history, not the session's samples
};

}  // namespace nns::ui
