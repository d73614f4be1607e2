// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/node_health.h"

#include <algorithm>
#include <cmath>

#include "engine/train/run_store.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

QString percent(double fraction) {
  return QString::number(fraction * 100, 'f', 0) + "%";
}

}  // namespace

QString healthName(NodeHealth health) {
  switch (health) {
    case NodeHealth::Ok:
      return QObject::tr("ok");
    case NodeHealth::Saturated:
      return QObject::tr("saturated");
    case NodeHealth::DeadUnits:
      return QObject::tr("dead units");
    case NodeHealth::Vanishing:
      return QObject::tr("vanishing gradient");
    case NodeHealth::Exploding:
      return QObject::tr("exploding gradient");
  }
  return {};
}

QString healthThresholds() {
  return QObject::tr(
             "exploding: gradient norm > %1 or not finite; vanishing: gradient norm < "
             "%2; dead units: > %3 of outputs exactly 0; saturated: > %4 of outputs at "
             "the ends of Tanh/Sigmoid")
      .arg(kExplodingNorm, 0, 'g')
      .arg(kVanishingNorm, 0, 'g')
      .arg(percent(kDeadFraction), percent(kSaturatedFraction));
}

HealthReport judgeHealth(const HealthPoint& p) {
  HealthReport r;
  r.step = p.step;
  QStringList numbers;
  if (!std::isnan(p.gradNorm)) numbers << QObject::tr("grad norm %1").arg(p.gradNorm, 0, 'g', 3);
  if (!std::isnan(p.dead)) numbers << QObject::tr("dead %1").arg(percent(p.dead));
  if (!std::isnan(p.saturation)) numbers << QObject::tr("saturated %1").arg(percent(p.saturation));
  if (p.nonfinite || p.gradNorm > kExplodingNorm) {
    r.health = NodeHealth::Exploding;
  } else if (p.gradNorm < kVanishingNorm) {
    r.health = NodeHealth::Vanishing;
  } else if (p.dead > kDeadFraction) {
    r.health = NodeHealth::DeadUnits;
  } else if (p.saturation > kSaturatedFraction) {
    r.health = NodeHealth::Saturated;
  }
  if (p.nonfinite) numbers.prepend(QObject::tr("non-finite gradient"));
  r.summary = QObject::tr("%1 at step %2: %3")
                  .arg(healthName(r.health))
                  .arg(p.step)
                  .arg(numbers.isEmpty() ? QObject::tr("no statistics yet") : numbers.join(", "));
  return r;
}

QColor healthColor(const CanvasTheme& theme, NodeHealth health) {
  switch (health) {
    case NodeHealth::Ok:
      return theme.matched;
    case NodeHealth::Saturated:
    case NodeHealth::DeadUnits:
      return theme.warning;
    case NodeHealth::Vanishing:
      return QColor(0x4a, 0x7f, 0xd8);
    case NodeHealth::Exploding:
      return theme.error;
  }
  return theme.matched;
}

NodeHealthModel::NodeHealthModel(QObject* parent) : QObject(parent) {}

void NodeHealthModel::follow(TrainingController* controller) {
  connect(controller, &TrainingController::probeSamplesArrived, this,
          [this, controller](const std::vector<train::ProbeSample>& samples) {
            // The session's own samples take the place of a watched run's history.
            if (showingWatched_) clear();
            std::map<graph::NodeId, std::vector<train::ProbeSample>> byNode;
            for (const train::ProbeSample& s : samples) {
              if (graph::NodeId node = controller->probeNode(s.probe)) byNode[node].push_back(s);
            }
            for (const auto& [node, list] : byNode) add(node, list);
          });
  connect(controller, &TrainingController::sessionReset, this, &NodeHealthModel::clear);
  // A recorded run's step shown (the Runs panel's slider): what the probes saw up to there,
  // from the run store; a branch trained from there goes on from it.
  connect(controller, &TrainingController::snapshotShown, this,
          [this, controller](int64_t run, int64_t step) {
            // The run shown may be a watched store's (a PyTorch job's): its history is there.
            showHistory(
                controller,
                controller->shownSource() ? controller->shownSource() : controller->runStore(), run,
                step);
          });
  connect(controller, &TrainingController::watchedProbesShown, this,
          [this, controller](train::RunStore* store, int64_t run, int64_t step) {
            showHistory(controller, store, run, step);
            showingWatched_ = true;
          });
  // Only a run that failed while training (a NaN/Inf, an error in a step): a graph that cannot
  // make a session is already on the canvas and in the Problems panel as the graph's problem.
  connect(controller, &TrainingController::runFailed, this,
          [this, controller](graph::NodeId node, const QString& message) {
            if (controller->status().state == train::RunState::Failed) setFailure(node, message);
          });
  ProjectDocument* document = controller->document();
  connect(document, &ProjectDocument::probesChanged, this, [this, document] {
    std::vector<graph::NodeId> gone;
    for (const auto& [id, data] : nodes_) {
      if (!document->probeOf(id)) gone.push_back(id);
    }
    for (graph::NodeId id : gone) forget(id);
  });
}

void NodeHealthModel::showHistory(TrainingController* controller, train::RunStore* store,
                                  int64_t run, int64_t step) {
  clear();
  if (!store) return;
  std::vector<train::ProbeSample> history;
  try {
    history = store->probe_history(run, step);
  } catch (const std::exception& e) {
    emit controller->message(
        tr("The probes' history of run %1 cannot be read: %2").arg(run).arg(qs(e.what())));
    return;
  }
  // Stored samples name their module (probe ids belong to a session): the probed nodes'
  // modules in the model as it is now. A node whose probe was removed shows nothing.
  ProjectDocument* document = controller->document();
  std::map<std::string, graph::NodeId> nodeOf;
  for (const graph::Node& n : document->project().graph.nodes) {
    if (!document->probeOf(n.id)) continue;
    const QString module = controller->moduleNameOf(n.id);
    if (!module.isEmpty()) nodeOf[module.toStdString()] = n.id;
  }
  std::map<graph::NodeId, std::vector<train::ProbeSample>> byNode;
  for (train::ProbeSample& s : history) {
    auto it = nodeOf.find(s.module);
    if (it != nodeOf.end()) byNode[it->second].push_back(std::move(s));
  }
  for (const auto& [node, samples] : byNode) add(node, samples);
}

void NodeHealthModel::add(graph::NodeId node, const std::vector<train::ProbeSample>& samples) {
  if (samples.empty()) return;
  NodeData& data = nodes_[node];
  for (const train::ProbeSample& s : samples) {
    std::vector<train::ProbeSample>& list = data.series[{s.kind, s.tensor}];
    // Never more than kMaxSamples + 1 slots: doubling to 4,096 on the sample that makes the
    // list thin would keep half of them unused for good (about 0.6 MB a series).
    if (list.size() == list.capacity()) {
      list.reserve(std::min(kMaxSamples + 1, std::max<size_t>(16, 2 * list.size())));
    }
    list.push_back(s);
    if (list.size() > kMaxSamples) {
      // Every other sample of the older half goes; the first one stays.
      const size_t half = list.size() / 2;
      size_t out = 1;
      for (size_t i = 1; i < list.size(); ++i) {
        if (i < half && i % 2 == 1) continue;
        list[out++] = std::move(list[i]);
      }
      list.resize(out);
    }

    // The step's sparkline point: the samples of a step may arrive over several polls.
    auto it = std::find_if(data.points.rbegin(), data.points.rend(),
                           [&](const HealthPoint& p) { return p.step == s.step; });
    HealthPoint* point = nullptr;
    if (it != data.points.rend()) {
      point = &*it;
    } else {
      if (!data.points.empty() && s.step < data.points.back().step) continue;  // long gone
      data.points.push_back(HealthPoint{.step = s.step});
      point = &data.points.back();
    }
    const bool output = s.tensor == "output";
    switch (s.kind) {
      case train::ProbeKind::Activation:
        if (output) {
          point->dead = s.stats.zero_fraction;
          point->saturation = s.stats.saturated_fraction;
        }
        break;
      case train::ProbeKind::GradOutput:
        if (output) point->gradNorm = s.stats.norm;
        point->nonfinite = point->nonfinite || s.stats.nonfinite > 0;
        break;
      case train::ProbeKind::GradInput:
        point->nonfinite = point->nonfinite || s.stats.nonfinite > 0;
        break;
      case train::ProbeKind::ParamGrad:
        point->hasParamGrads = true;
        point->paramGradSquares += s.stats.norm * s.stats.norm;
        point->nonfinite = point->nonfinite || s.stats.nonfinite > 0;
        break;
      case train::ProbeKind::Attention:
        break;  // drawn as maps in the Probe tab, not as health
    }
    // Without the output's gradient, the parameters' total gradient norm stands for it.
    if (!data.series.count({train::ProbeKind::GradOutput, "output"}) && point->hasParamGrads) {
      point->gradNorm = std::sqrt(point->paramGradSquares);
    }
  }
  if (data.points.size() > kSparklinePoints) {
    data.points.erase(data.points.begin(),
                      data.points.end() - static_cast<std::ptrdiff_t>(kSparklinePoints));
  }
  ++revision_;
  emit updated({node});
}

void NodeHealthModel::clear() {
  std::vector<graph::NodeId> ids;
  for (const auto& [id, data] : nodes_) ids.push_back(id);
  if (failedNode_ != 0) ids.push_back(failedNode_);
  nodes_.clear();
  showingWatched_ = false;
  const bool hadFailure = failed_;
  failed_ = false;
  failedNode_ = 0;
  failureMessage_.clear();
  ++revision_;
  emit updated(ids);
  if (hadFailure) emit failureChanged();
}

void NodeHealthModel::forget(graph::NodeId node) {
  if (nodes_.erase(node) == 0) return;
  ++revision_;
  emit updated({node});
}

const NodeHealthModel::SeriesMap* NodeHealthModel::series(graph::NodeId node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second.series;
}

std::optional<HealthReport> NodeHealthModel::health(graph::NodeId node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.points.empty()) return std::nullopt;
  return judgeHealth(it->second.points.back());
}

const std::vector<HealthPoint>& NodeHealthModel::sparkline(graph::NodeId node) const {
  static const std::vector<HealthPoint> kNone;
  auto it = nodes_.find(node);
  return it == nodes_.end() ? kNone : it->second.points;
}

void NodeHealthModel::setFailure(graph::NodeId node, const QString& message) {
  std::vector<graph::NodeId> ids{node};
  if (failedNode_ != 0 && failedNode_ != node) ids.push_back(failedNode_);
  failed_ = true;
  failedNode_ = node;
  failureMessage_ = message;
  ++revision_;
  emit failureChanged();
  emit updated(ids);
}

}  // namespace nns::ui
