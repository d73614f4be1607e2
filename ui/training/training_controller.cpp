// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/training_controller.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QStringList>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <future>
#include <limits>
#include <thread>
#include <utility>

#include "engine/graph/builder.h"
#include "engine/graph/node_types.h"
#include "engine/serialize/serialize.h"
#include "engine/tensor/generator.h"
#include "engine/train/checkpoint.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

// A session made from the project (without its probes: the controller places them where it
// knows their ids), or why none could be made, and what making it took.
struct MadeSession {
  std::unique_ptr<train::TrainingSession> session;
  QString error;
  qint64 tookMs = 0;
};

MadeSession makeSession(graph::Project project, const std::string& baseDir) {
  QElapsedTimer took;
  took.start();
  project.probes.clear();
  MadeSession made;
  try {
    made.session = train::make_session(project, baseDir);
    // poll() sends each epoch on as it ends (the curves and the run store keep them): the
    // session's whole history would grow for as long as the run goes on.
    made.session->set_epoch_history_limit(TrainingController::kKeptEpochs);
  } catch (const std::exception& e) {
    made.error = qs(e.what());
  }
  made.tookMs = took.elapsed();
  return made;
}

}  // namespace

// The worker hands the session over through `made`, which this thread takes; its wake-up
// (takeMadeSession) carries nothing. ThreadSanitizer sees the future's release and acquire,
// but not Qt's event queue (an uninstrumented library): a payload the worker allocated for a
// queued call would be reported as a race with its reading here.
struct TrainingController::Making {
  std::future<MadeSession> made;
  // Sets `made`, then wakes the controller: the future is ready when the wake-up comes.
  // Joined when the Making is dropped, so it never posts to a controller that is gone.
  std::jthread worker;
};

namespace {

// A checkpoint save or load pauses the worker for this long at most (one step takes
// milliseconds; a longer wait means a step is stuck and the user is told).
constexpr std::chrono::milliseconds kIdleWait{5000};
// Evaluation passes in eval mode: at most one per this many milliseconds while training.
constexpr qint64 kEvalEveryMs = 500;

// The training settings without what a session takes live (learning rate, batch size): two
// sessions made from settings equal in this form differ only in what set_lr and
// set_batch_size change.
graph::TrainingSettings withoutLive(graph::TrainingSettings t) {
  if (t.optimizer_options.is_object()) t.optimizer_options.erase("lr");
  t.batch_size = 0;
  return t;
}

std::optional<double> learningRateOf(const graph::TrainingSettings& t) {
  if (t.optimizer_options.is_object() && t.optimizer_options.contains("lr") &&
      t.optimizer_options["lr"].is_number()) {
    return t.optimizer_options["lr"].get<double>();
  }
  return std::nullopt;
}

}  // namespace

const char* phaseName(TrainingPhase phase) {
  switch (phase) {
    case TrainingPhase::Idle:
      return "idle";
    case TrainingPhase::Running:
      return "running";
    case TrainingPhase::Paused:
      return "paused";
    case TrainingPhase::ShowingSnapshot:
      return "showing a snapshot";
    case TrainingPhase::Failed:
      return "failed";
  }
  return "?";
}

std::optional<TrainingPhase> TrainingController::transition(TrainingPhase from,
                                                            TrainingEvent event) {
  using P = TrainingPhase;
  using E = TrainingEvent;
  switch (event) {
    case E::Start:
      // A failed run trains again only after a reset (or from a snapshot).
      if (from == P::Running || from == P::Failed) return std::nullopt;
      return P::Running;
    case E::Step:
      if (from == P::Running || from == P::Failed) return std::nullopt;
      return P::Paused;
    case E::Reset:
      return P::Idle;
    case E::Rested:
      if (from != P::Running) return std::nullopt;
      return P::Paused;
    case E::RunFailed:
      // Reported once: a failed run that is still failed is no news.
      if (from == P::Failed) return std::nullopt;
      return P::Failed;
    case E::ShowSnapshot:
      return P::ShowingSnapshot;
    case E::LoadWeights:
      // A run goes on from the loaded weights (the load pauses it for the moment it takes).
      return from == P::Running ? P::Running : P::Paused;
    case E::FreshSession:
    case E::KeptSession:
      // A running session is never replaced (edits apply when it pauses).
      if (from == P::Running) return std::nullopt;
      return event == E::FreshSession ? P::Idle : P::Paused;
  }
  return std::nullopt;
}

std::optional<TrainingEvent> TrainingController::sessionEvent(TrainingPhase phase,
                                                              train::RunState state,
                                                              bool workerIdle) {
  if (state == train::RunState::Failed) return TrainingEvent::RunFailed;
  if (phase == TrainingPhase::Running && state != train::RunState::Running && workerIdle) {
    return TrainingEvent::Rested;
  }
  return std::nullopt;
}

bool TrainingController::enter(TrainingEvent event) {
  const std::optional<TrainingPhase> to = transition(phase_, event);
  if (!to) return false;
  if (*to == phase_) return true;
  phase_ = *to;
  if (phase_ != TrainingPhase::ShowingSnapshot) lineage_.shown.reset();
  emit phaseChanged(phase_);
  return true;
}

// What the session was made from: a change to any of it (but the probes, the learning rate
// and the batch size, which the session takes live) makes a new session.
struct TrainingController::Built {
  graph::Graph graph;
  std::vector<graph::BlockDef> blocks;
  std::string name;
  graph::Json extra;
  std::vector<std::string> frozen;
  graph::DatasetSettings dataset;
  graph::TrainingSettings training;  // withoutLive()
  std::optional<double> lr;
  int64_t batchSize = 0;
  // The probes placed, by node, with the spec each was placed from.
  std::map<graph::NodeId, std::pair<graph::ProbeSpec, train::ProbeId>> probes;

  // The frozen set is left out: applyFrozen() sets the flags on the session's model.
  bool sameModelAndData(const graph::Project& p) const {
    return graph == p.graph && blocks == p.blocks && name == p.name && extra == p.extra &&
           dataset == p.dataset && training == withoutLive(p.training);
  }
};

TrainingController::TrainingController(ProjectDocument* document, QObject* parent)
    : QObject(parent), document_(document), timer_(new QTimer(this)) {
  qRegisterMetaType<nns::train::SessionStatus>();
  qRegisterMetaType<nns::train::Evaluation>();
  qRegisterMetaType<nns::train::Prediction>();
  qRegisterMetaType<nns::train::SampleTrace>();
  qRegisterMetaType<nns::ui::TrainingPhase>();
  connect(document_, &ProjectDocument::changed, this, &TrainingController::onDocumentChanged);
  connect(document_, &ProjectDocument::settingsChanged, this,
          &TrainingController::onDocumentChanged);
  // Probe and frozen-set edits leave the graph as it is.
  connect(document_, &ProjectDocument::modelStateChanged, this,
          &TrainingController::onDocumentChanged);
  connect(document_, &ProjectDocument::probesChanged, this, &TrainingController::onDocumentChanged);
  // Another project's model owes nothing to this one's weights, whatever its node ids.
  connect(document_, &ProjectDocument::projectReplaced, this, &TrainingController::dropSession);
  connect(document_, &ProjectDocument::stateDictLoaded, this, &TrainingController::takeLoadedState);
  connect(document_, &ProjectDocument::filePathChanged, this, &TrainingController::openRunStore);
  openRunStore();
  timer_->setTimerType(Qt::PreciseTimer);
  connect(timer_, &QTimer::timeout, this, &TrainingController::poll);
  timer_->start(kPollMs);
}

TrainingController::~TrainingController() {
  // The window is being torn down: what ending the run announces (runsChanged) must reach no
  // panel, whose models may already be gone (the Runs panel put a watched run's probes on a
  // canvas whose document was destroyed).
  blockSignals(true);
  // A session being made wakes this controller: its worker ends (joined) first.
  freshness_.stopJob();
  // The run's last state and figures go into the store before the window closes.
  if (session_ && recorder_) {
    session_->pause();
    session_->snapshot();
    session_->wait_idle(kIdleWait);
  }
  endRun();
}

void TrainingController::openRunStore() {
  const QString path = document_->filePath();
  const std::string folder =
      path.isEmpty() ? std::string() : train::RunStore::folder_for(path.toStdString());
  if (store_ && store_->folder() == folder) return;
  endRun();
  lineage_.reset();
  store_.reset();
  storeError_.clear();
  if (!folder.empty()) {
    try {
      store_ = std::make_shared<train::RunStore>(folder);
    } catch (const std::exception& e) {
      storeError_ = qs(e.what());
      emit message(tr("Runs are not recorded: %1").arg(storeError_));
    }
  }
  emit runsChanged();
}

void TrainingController::beginRun() {
  if (recorder_ || !store_ || !session_) return;
  try {
    std::optional<train::RunInfo> parent;
    int64_t parentStep = 0;
    std::optional<train::RunInfo> source;  // a run of a watched store
    const std::optional<RunStep>& from = lineage_.branchFrom;
    if (from && from->source) {
      source = from->source->run(from->run);
    } else if (from) {
      parent = store_->run(from->run);
    }
    if (from) parentStep = from->step;
    const int64_t run =
        store_->begin_run(source ? train::new_run_info_from(document_->project(), *source,
                                                            from->source->folder(), parentStep)
                                 : train::new_run_info(document_->project(), parent, parentStep));
    recorder_ = std::make_shared<train::RunRecorder>(store_, run, train::SnapshotSchedule{});
    session_->set_observer(recorder_);
    session_->snapshot();  // where it starts (a branch's parent has that one already)
    restedStep_ = session_->status().step;
    if (source) {
      emit message(tr("Recording run %1, which goes on from %2 run %3 of %4 at step %5")
                       .arg(run)
                       .arg(source->source == "pytorch" ? tr("PyTorch") : tr("the"))
                       .arg(source->id)
                       .arg(qs(from->source->folder()))
                       .arg(parentStep));
    } else {
      emit message(parent ? tr("Recording run %1, a branch of run %2 at step %3")
                                .arg(run)
                                .arg(parent->id)
                                .arg(parentStep)
                          : tr("Recording run %1").arg(run));
    }
  } catch (const std::exception& e) {
    emit message(tr("The run is not recorded: %1").arg(qs(e.what())));
  }
  lineage_.reset();
  emit runsChanged();
}

void TrainingController::endRun() {
  if (!recorder_) return;
  if (session_) {
    // A snapshot asked for before is handed over before the run's figures are written.
    session_->set_observer(nullptr);
    session_->sync(kIdleWait);
  }
  recorder_->finish(train::result_of(status_));
  if (!recorder_->error().empty()) {
    emit message(
        tr("Recording run %1 stopped: %2").arg(recorder_->run()).arg(qs(recorder_->error())));
  }
  recorder_.reset();
  emit runsChanged();
}

train::TrainingSession* TrainingController::session() {
  if (freshness_.stale() && !isRunning()) rebuild();
  return session_.get();
}

void TrainingController::makeSessionInBackground() {
  if (!freshness_.stale() || isRunning() || !freshness_.askMake()) return;
  auto making = std::make_unique<Making>();
  std::promise<MadeSession> promise;
  making->made = promise.get_future();
  making->worker = std::jthread([this, promise = std::move(promise), project = document_->project(),
                                 baseDir = document_->baseDir().toStdString()]() mutable {
    promise.set_value(makeSession(std::move(project), baseDir));
    // By name, without arguments: the call Qt queues is made in Qt Core, nothing of it here.
    QMetaObject::invokeMethod(this, "takeMadeSession", Qt::QueuedConnection);
  });
  freshness_.began(std::move(making));
}

void TrainingController::takeMadeSession() {
  // Not ready: the wake-up of one that session() took already; this one's comes when it is.
  const Making* making = freshness_.job();
  if (!making || making->made.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return;
  }
  if (freshness_.jobIsCurrent()) {
    // Kept for session() while a run goes on (start() takes it before it runs).
    if (freshness_.stale() && !isRunning()) rebuild();
    return;
  }
  // Made for the project before an edit: dropped (its worker joins, idle).
  if (freshness_.dropEndedJob()) makeSessionInBackground();
}

qint64 TrainingController::msSinceEdit() const {
  return QDateTime::currentMSecsSinceEpoch() - freshness_.lastEditMs();
}

bool TrainingController::isRunning() const {
  return session_ && phase_ == TrainingPhase::Running;
}

void TrainingController::stopRunning() {
  if (phase_ != TrainingPhase::Running || !session_) return;
  session_->pause();
  session_->wait_idle(kIdleWait);
  status_ = session_->status();
  if (status_.state == train::RunState::Failed) {
    poll();  // reported as any failure is
  } else {
    enter(TrainingEvent::Rested);
  }
  emit statusChanged(status_);
}

void TrainingController::dropSession() {
  stopRunning();
  endRun();
  lineage_.reset();
  continues_ = false;
  pending_.reset();
  const bool hadSession = session_ != nullptr;
  // The old worker stops and joins; the new project's session is made when something asks.
  session_.reset();
  built_.reset();
  probeNodes_.clear();
  freshness_.reset();
  lastError_.clear();
  status_ = train::SessionStatus{};
  epochsSent_ = 0;
  resetsSeen_ = 0;
  evaluationSent_.reset();
  restedStep_ = restedResets_ = -1;
  enter(TrainingEvent::FreshSession);
  checkDataFits();
  if (hadSession) emit sessionReset();
  emit statusChanged(status_);
  emit weightsChanged();
}

bool TrainingController::withRestingModel(
    const std::function<void(graph::GraphModule& model)>& fn) {
  if (isRunning()) return false;
  train::TrainingSession* s = session();
  if (!s) {
    if (!pending_) return false;
    fn(*pending_->model);
    return true;
  }
  // Predictions or a trace may be queued (they read the model, and a trace writes its
  // gradients): read once the worker has answered them.
  auto* model = dynamic_cast<graph::GraphModule*>(s->model().get());
  if (!model || !s->wait_idle(kIdleWait)) return false;
  fn(*model);
  return true;
}

std::optional<nn::StateDict> TrainingController::stateDict() {
  auto copy = [](nn::Module& m) {
    nn::StateDict out;
    for (const auto& entry : m.state_dict()) out.insert(entry.key(), entry.value().clone());
    return out;
  };
  std::optional<nn::StateDict> out;
  if (session()) {
    withIdleSession(tr("Read the weights"),
                    [&](train::TrainingSession& s) { out = copy(*s.model()); });
    return out;
  }
  if (pending_) return copy(*pending_->model);
  // No session (the data does not fit the model): the initial values a session would start
  // from (its seed's), where the graph builds a model.
  if (document_->model()) {
    const graph::Project& project = document_->project();
    return with_seed(static_cast<uint64_t>(project.training.seed),
                     [&] { return graph::build_model(project); })
        ->state_dict();
  }
  emit message(tr("No weights: %1").arg(document_->modelError()));
  return std::nullopt;
}

graph::NodeId TrainingController::probeNode(train::ProbeId probe) const {
  auto it = probeNodes_.find(probe);
  return it == probeNodes_.end() ? 0 : it->second;
}

train::ProbeId TrainingController::probeOf(graph::NodeId node) const {
  if (!built_) return 0;
  auto it = built_->probes.find(node);
  return it == built_->probes.end() ? 0 : it->second.second;
}

graph::NodeId TrainingController::nodeOfModule(const std::string& modulePath) const {
  if (modulePath.empty()) return 0;
  const std::string first = modulePath.substr(0, modulePath.find('.'));
  for (const graph::Node& n : document_->project().graph.nodes) {
    if (n.name == first) return n.id;
  }
  return 0;
}

QString TrainingController::moduleNameOf(graph::NodeId node) const {
  const auto* model =
      session_ ? dynamic_cast<const graph::GraphModule*>(session_->model().get()) : nullptr;
  if (!model || !model->node_module(node)) return {};
  return qs(model->module_name(node));
}

QString TrainingController::attentionModuleOf(graph::NodeId node) const {
  const QString module = moduleNameOf(node);
  if (module.isNull() || !session_) return {};
  const std::string m = module.toStdString();
  for (const std::string& name : session_->attention_module_names()) {
    if (name == m || name.rfind(m + ".", 0) == 0) return module;
  }
  return {};
}

uint64_t TrainingController::requestPrediction(const Tensor& inputs) {
  train::TrainingSession* s = session();
  return s ? s->predict(inputs) : 0;
}

uint64_t TrainingController::requestTrace(const Tensor& input, const Tensor& target) {
  train::TrainingSession* s = session();
  return s ? s->trace(input, target) : 0;
}

void TrainingController::onDocumentChanged() {
  if (built_ && built_->sameModelAndData(document_->project())) {
    applyLiveSettings();
    syncProbes();
    if (built_->frozen != document_->project().frozen_parameters && !isRunning()) applyFrozen();
    return;
  }
  // Made again when something needs it (session()): an edit itself never waits for a new
  // model, and a burst of edits (a drag of a slider) makes one session, not one per edit.
  freshness_.edited(QDateTime::currentMSecsSinceEpoch());
  emit sessionStale();
}

void TrainingController::applyLiveSettings() {
  if (!session_) return;
  const graph::TrainingSettings& t = document_->project().training;
  const std::optional<double> lr = learningRateOf(t);
  if (lr && lr != built_->lr) session_->set_lr(*lr);
  built_->lr = lr;
  if (t.batch_size != built_->batchSize && t.batch_size >= 1) {
    session_->set_batch_size(t.batch_size);
  }
  built_->batchSize = t.batch_size;
}

void TrainingController::rebuild() {
  QElapsedTimer took;
  took.start();
  freshness_.madeNow();
  const bool hadSession = session_ != nullptr;
  // What the old session learned, unless it is not worth keeping: fresh weights (Idle) or a
  // failed run's. Never while running: session() waits for the run to pause.
  std::optional<PendingWeights> learned;
  bool fromFile = false;
  // The run the new session continues (its steps numbered on from the old one's).
  std::optional<RunStep> continued;
  int64_t continuedStep = 0;
  const bool keep = phase_ == TrainingPhase::Paused || phase_ == TrainingPhase::ShowingSnapshot;
  if (keep && session_ && built_ && session_->wait_idle(kIdleWait)) {
    const train::SessionStatus st = session_->status();
    if (st.state != train::RunState::Failed) {
      if (auto model = std::dynamic_pointer_cast<graph::GraphModule>(session_->model())) {
        learned = PendingWeights{std::move(model), built_->graph};
      }
      continuedStep = st.step;
      if (recorder_) {
        // The old session's last state is its run's last snapshot, the branch point.
        session_->snapshot();
        session_->wait_idle(kIdleWait);
        continued = RunStep{recorder_->run(), st.step, nullptr};
      } else if (shownSnapshot()) {
        continued = lineage_.shown;
      }
    }
  } else if (keep && pending_) {
    // No session held them (the data did not fit the model when they were loaded).
    learned = pending_;
    fromFile = true;
  }
  endRun();
  lineage_.reset();
  continues_ = false;
  // The old worker stops (and joins) before the new one starts; its model is only read from
  // here on.
  session_.reset();
  built_.reset();
  probeNodes_.clear();
  const graph::Project& project = document_->project();
  // The one made in the background for the project as it is, or one made now.
  MadeSession made;
  if (const std::unique_ptr<Making> making = freshness_.takeCurrentJob()) {
    made = making->made.get();
  } else {
    made = makeSession(project, document_->baseDir().toStdString());
  }
  session_ = std::move(made.session);
  lastError_ = made.error;
  bool kept = false;
  if (session_) {
    auto built = std::make_unique<Built>();
    built->graph = project.graph;
    built->blocks = project.blocks;
    built->name = project.name;
    built->extra = project.extra;
    built->frozen = project.frozen_parameters;
    built->dataset = project.dataset;
    built->training = withoutLive(project.training);
    built->lr = learningRateOf(project.training);
    built->batchSize = project.training.batch_size;
    built_ = std::move(built);
    if (learned) {
      kept = carryLearned(*learned->model, learned->graph, /*quiet=*/fromFile);
      if (kept && continuedStep > 0) {
        // Drawn as the old run's continuation: the steps go on from its last one.
        session_->set_progress(continuedStep, 0);
        session_->wait_idle(kIdleWait);
        continues_ = true;
        lineage_.branchFrom = continued;
      }
    }
    // Loaded weights are the session's now (or were not kept: the log says why).
    if (fromFile) pending_.reset();
    applyFrozen();
    syncProbes();
    if (profiling_) session_->set_profiling(true);
  } else if (learned && !fromFile) {
    // No session can be made (the data does not fit): what was learned waits for the next.
    pending_ = std::move(learned);
    kept = true;
  } else if (fromFile) {
    kept = true;  // still waiting
  }
  enter(kept ? TrainingEvent::KeptSession : TrainingEvent::FreshSession);
  checkDataFits();
  lastRemakeMs_ = took.elapsed() + made.tookMs;
  status_ = session_ ? session_->status() : train::SessionStatus{};
  epochsSent_ = 0;
  resetsSeen_ = status_.resets;
  restedStep_ = status_.step;
  restedResets_ = status_.resets;
  evaluationSent_.reset();
  if (hadSession || session_) emit sessionReset();
  emit statusChanged(status_);
  emit weightsChanged();
  emit sessionMade();
}

void TrainingController::applyFrozen() {
  // Only with the worker idle: the flags are the model's, which it reads in every step.
  if (!session_ || !session_->wait_idle(std::chrono::milliseconds(0))) return;
  const std::vector<std::string>& frozen = document_->project().frozen_parameters;
  for (auto& [name, param] : session_->model()->named_parameters()) {
    param.requires_grad_(std::find(frozen.begin(), frozen.end(), name) == frozen.end());
  }
  built_->frozen = frozen;
}

void TrainingController::setProfiling(bool on) {
  if (profiling_ == on) return;
  profiling_ = on;
  if (session_) session_->set_profiling(on);
}

std::optional<train::StepProfile> TrainingController::profile() const {
  if (!profiling_ || !session_) return std::nullopt;
  return session_->profile();
}

void TrainingController::syncProbes() {
  if (!session_ || !built_) return;
  const std::vector<graph::ProbeSpec>& specs = document_->project().probes;
  auto& placed = built_->probes;
  for (auto it = placed.begin(); it != placed.end();) {
    const auto spec = std::find_if(specs.begin(), specs.end(), [&](const graph::ProbeSpec& s) {
      return s.node == it->first && s == it->second.first;
    });
    if (spec != specs.end()) {
      ++it;
      continue;
    }
    session_->remove_probe(it->second.second);
    probeNodes_.erase(it->second.second);
    it = placed.erase(it);
  }
  for (const graph::ProbeSpec& spec : specs) {
    if (placed.count(spec.node)) continue;
    const QString module = moduleNameOf(spec.node);
    // A node the running session's model does not have yet gets its probe with the next
    // session; one without a module (Input, Output, a function) gets none.
    if (module.isNull()) continue;
    try {
      const train::ProbeId id =
          session_->add_probe(module.toStdString(),
                              train::ProbeOptions{spec.activations, spec.gradients, spec.parameters,
                                                  spec.every, spec.max_overhead});
      placed[spec.node] = {spec, id};
      probeNodes_[id] = spec.node;
    } catch (const Error& e) {
      emit message(tr("Probe on %1 not placed: %2").arg(module, qs(e.what())));
    }
  }
}

bool TrainingController::carryLearned(graph::GraphModule& from, const graph::Graph& fromGraph,
                                      bool quiet) {
  auto* to = dynamic_cast<graph::GraphModule*>(session_->model().get());
  // A new session's worker waits for its first command; the wait only makes that certain.
  if (!to || !session_->wait_idle(std::chrono::seconds(5))) return false;
  const graph::Graph& graph = document_->project().graph;
  graph::CarriedState carried;
  try {
    carried = graph::carry_state(from, *to, graph);
  } catch (const Error& e) {
    emit message(tr("The trained weights were not kept: %1").arg(qs(e.what())));
    return false;
  }
  if (quiet) return carried.tensors > 0;
  auto names = [&](const std::vector<graph::NodeId>& ids, const graph::Graph& g) {
    QStringList out;
    for (graph::NodeId id : ids) {
      if (const graph::Node* n = g.find(id)) out << qs(n->name);
    }
    return out.join(", ");
  };
  if (carried.tensors == 0) {
    emit message(tr("The edited model starts from fresh weights: no node kept its shape"));
    return false;
  }
  QString text = carried.kept.empty()
                     ? tr("Kept part of the weights")
                     : tr("Kept the weights of %1").arg(names(carried.kept, graph));
  if (!carried.mixed.empty()) text += tr("; partly kept: %1").arg(names(carried.mixed, graph));
  if (!carried.fresh.empty()) text += tr("; fresh: %1").arg(names(carried.fresh, graph));
  // Nodes of the old graph that are gone, for the record.
  std::vector<graph::NodeId> gone;
  for (const graph::Node& n : fromGraph.nodes) {
    if (!graph.find(n.id) && from.node_module(n.id)) gone.push_back(n.id);
  }
  if (!gone.empty()) text += tr("; removed: %1").arg(names(gone, fromGraph));
  emit message(text + tr(" (%1 tensors). Reset starts from fresh weights.").arg(carried.tensors));
  return true;
}

void TrainingController::takeLoadedState(const nn::StateDict& state, bool strict) {
  train::TrainingSession* s = session();
  if (!s) {
    // No session can take them now (the data does not fit the model): held for the next one,
    // in a model of the graph they were checked against.
    try {
      std::shared_ptr<graph::GraphModule> model = graph::build_model(document_->project());
      serialize::load_into(*model, state, strict);
      pending_ = PendingWeights{std::move(model), document_->project().graph};
    } catch (const std::exception& e) {
      emit message(tr("Load state dict failed: %1").arg(qs(e.what())));
      return;
    }
    enter(TrainingEvent::LoadWeights);
    emit message(tr("The loaded weights wait for a session: %1").arg(lastError_));
    emit weightsChanged();
    return;
  }
  const bool ok = withIdleSession(tr("Load state dict"), [&](train::TrainingSession& session) {
    serialize::load_into(*session.model(), state, strict);
    emit message(tr("Training goes on from the loaded weights"));
  });
  if (!ok) return;
  enter(TrainingEvent::LoadWeights);
  emit weightsChanged();
}

void TrainingController::checkDataFits() {
  graph::NodeId node = 0;
  QString message;
  const graph::Node* input = nullptr;
  int inputs = 0;
  for (const graph::Node& n : document_->project().graph.nodes) {
    if (graph::node_kind(n.type) != graph::NodeKind::Input ||
        document_->project().graph.parent_of(n.id)) {
      continue;
    }
    input = &n;
    ++inputs;
  }
  // One Input reads the data set's samples (with several, which one does is the model's
  // business: the first step says what does not fit).
  if (session_ && inputs == 1 && input->options.is_object() && input->options.contains("shape") &&
      input->options["shape"].is_array()) {
    const data::Dataset& train = session_->train_set();
    if (train.size() > 0) {
      const std::vector<int64_t> sample = train.sample_shape();
      const std::string dtype =
          train.inputs.defined() && train.inputs.dtype() == kInt64 ? "int64" : "float32";
      std::vector<int64_t> shape;
      bool known = true;
      for (const graph::Json& d : input->options["shape"]) {
        if (!d.is_number_integer()) known = false;
        shape.push_back(d.is_number_integer() ? d.get<int64_t>() : -1);
      }
      const std::string inputDtype = input->options.value("dtype", std::string("float32"));
      const bool shapeFits =
          !known || shape == sample ||
          // A leading batch dimension of 1 or -1 in an imported model's Input.
          (shape.size() == sample.size() + 1 && (shape[0] == 1 || shape[0] == -1) &&
           std::equal(sample.begin(), sample.end(), shape.begin() + 1));
      if (!shapeFits || inputDtype != dtype) {
        auto text = [](const std::vector<int64_t>& v) {
          QStringList dims;
          for (int64_t d : v) dims << QString::number(d);
          return "[" + dims.join(", ") + "]";
        };
        node = input->id;
        message = tr("The data set %1 gives samples of shape %2 (%3), but the Input %4 takes %5 "
                     "(%6): choose a data set whose samples fit the model, or set the Input's "
                     "shape to %2 and the layers after it to match")
                      .arg(qs(document_->project().dataset.name), text(sample), qs(dtype),
                           qs(input->name), text(shape), qs(inputDtype));
      }
    }
  }
  if (node == mismatchNode_ && message == mismatch_) return;
  mismatchNode_ = node;
  mismatch_ = message;
  emit dataMismatchChanged(node, message);
}

bool TrainingController::ensureTrainable() {
  if (session() && mismatch_.isEmpty()) return true;
  if (session_) {
    // Every step would fail with the engine's shape error: the Problems list says why.
    emit message(tr("Cannot train: %1").arg(mismatch_));
    emit runFailed(mismatchNode_, mismatch_);
    return false;
  }
  const QString why = lastError_.isEmpty() ? tr("the project makes no session") : lastError_;
  graph::NodeId node = 0;
  for (const graph::Problem& p : document_->analysis().problems) {
    if (p.node != 0) {
      node = p.node;
      break;
    }
  }
  emit message(tr("Cannot train: %1").arg(why));
  emit runFailed(node, why);
  return false;
}

void TrainingController::start() {
  if (!ensureTrainable()) return;
  if (phase_ == TrainingPhase::Running) return;
  if (!enter(TrainingEvent::Start)) {
    emit message(tr("The run failed: reset it before training again"));
    return;
  }
  beginRun();
  session_->start();
  emit runsChanged();
}

void TrainingController::pause() {
  // The phase follows when the worker rests (poll()), with the step it rested at.
  if (session_ && phase_ == TrainingPhase::Running) session_->pause();
}

void TrainingController::stepOnce() {
  if (!ensureTrainable()) return;
  if (phase_ == TrainingPhase::Running) return;
  if (!enter(TrainingEvent::Step)) {
    emit message(tr("The run failed: reset it before stepping again"));
    return;
  }
  beginRun();
  session_->step(1);
}

void TrainingController::reset() {
  stopRunning();
  pending_.reset();
  enter(TrainingEvent::Reset);
  if (freshness_.stale()) {
    rebuild();  // fresh: the phase is Idle, nothing is kept
    return;
  }
  if (!session_) return;
  endRun();
  lineage_.branchFrom.reset();
  continues_ = false;
  session_->reset();
  // The optimizer is made again from the settings the session was made with: the live
  // learning rate and batch size follow.
  if (built_->lr) session_->set_lr(*built_->lr);
  emit message(tr("Training reset"));
}

bool TrainingController::setLearningRate(double lr) {
  if (!std::isfinite(lr) || lr <= 0) {
    emit message(tr("Learning rate %1 refused: it must be a finite number above 0")
                     .arg(QString::number(lr)));
    return false;
  }
  graph::TrainingSettings t = document_->project().training;
  if (!t.optimizer_options.is_object()) t.optimizer_options = graph::Json::object();
  t.optimizer_options["lr"] = lr;
  document_->setTrainingSettings(t, tr("Set learning rate"));
  return true;
}

bool TrainingController::setBatchSize(int64_t batchSize) {
  if (batchSize < 1) {
    emit message(tr("Batch size %1 refused: it must be at least 1").arg(batchSize));
    return false;
  }
  graph::TrainingSettings t = document_->project().training;
  t.batch_size = batchSize;
  document_->setTrainingSettings(t, tr("Set batch size"));
  return true;
}

void TrainingController::setEvalMode(bool on) {
  evalMode_ = on;
  if (on && session_) {
    session_->evaluate();
    lastEvalMs_ = QDateTime::currentMSecsSinceEpoch();
  }
}

bool TrainingController::withIdleSession(const QString& what,
                                         const std::function<void(train::TrainingSession&)>& fn) {
  if (!session()) {
    emit message(tr("%1: no session (%2)").arg(what, lastError_));
    return false;
  }
  const bool wasRunning = isRunning();
  if (wasRunning) session_->pause();
  bool ok = false;
  if (!session_->wait_idle(kIdleWait)) {
    emit message(tr("%1: the training step did not end within %2 s")
                     .arg(what)
                     .arg(kIdleWait.count() / 1000));
  } else {
    try {
      fn(*session_);
      ok = true;
    } catch (const std::exception& e) {
      emit message(tr("%1 failed: %2").arg(what, qs(e.what())));
    }
  }
  if (wasRunning) session_->start();
  return ok;
}

bool TrainingController::saveCheckpoint(const QString& path) {
  return withIdleSession(tr("Save checkpoint"), [&](train::TrainingSession& s) {
    const train::TrainingState state = s.training_state();
    train::save_checkpoint(state, path.toStdString());
    emit message(
        tr("Saved checkpoint %1 at step %2").arg(QFileInfo(path).fileName()).arg(state.step));
  });
}

bool TrainingController::loadCheckpoint(const QString& path) {
  const bool ok = withIdleSession(tr("Load checkpoint"), [&](train::TrainingSession& s) {
    train::TrainingState state = train::load_checkpoint(path.toStdString());
    const int64_t step = state.step;
    s.check_restorable(state);  // a file that does not fit changes nothing
    s.restore(std::move(state));
    s.wait_idle(kIdleWait);
    emit message(tr("Loaded checkpoint %1 (step %2)").arg(QFileInfo(path).fileName()).arg(step));
  });
  if (ok) {
    enter(TrainingEvent::LoadWeights);
    emit weightsChanged();
    // Another run's state: what follows is a run of its own.
    endRun();
    lineage_.reset();
    continues_ = false;
    // The curves so far belong to other weights: they start again from the loaded step.
    epochsSent_ = session_->epoch_count();
    session_->take_step_metrics();
    evaluationSent_.reset();
    emit sessionReset();
  }
  return ok;
}

bool TrainingController::showSnapshot(int64_t run, int64_t step,
                                      std::shared_ptr<train::RunStore> source) {
  if (!store_) {
    emit message(
        tr("No runs to show: %1")
            .arg(storeError_.isEmpty() ? tr("save the project to record its runs") : storeError_));
    return false;
  }
  stopRunning();
  std::optional<train::SnapshotInfo> snapshot;
  std::optional<train::RunInfo> info;
  const bool ok = withIdleSession(
      tr("Show step %1 of run %2").arg(step).arg(run), [&](train::TrainingSession& s) {
        // The probe samples not taken yet belong to the state being left: into its run's
        // history, never shown after the snapshot's.
        const std::vector<train::ProbeSample> left = s.take_probe_samples();
        // The run being recorded: its state now is its last snapshot, written before reading.
        if (recorder_) {
          recorder_->add_probe_samples(left);
          s.snapshot();
          s.wait_idle(kIdleWait);
          recorder_->flush();
        }
        train::RunStore& from = source ? *source : *store_;
        info = from.run(run);
        if (!info) throw ValueError("there is no run " + std::to_string(run));
        snapshot = from.snapshot_at(run, step);
        if (!snapshot) {
          throw ValueError("run " + std::to_string(run) + " has no snapshot at or before step " +
                           std::to_string(step));
        }
        train::BranchStart branch =
            train::branch_start(from, *info, *snapshot, document_->project(), *s.model());
        s.check_restorable(branch.state);
        s.restore(std::move(branch.state));
        if (branch.lr) s.set_lr(*branch.lr);
        s.wait_idle(kIdleWait);
        if (!branch.note.empty())
          emit message(
              tr("Step %1 of run %2: %3").arg(snapshot->step).arg(run).arg(qs(branch.note)));
      });
  if (!ok) return false;
  // What trains from here is a branch of that run.
  endRun();
  lineage_.branchFrom = RunStep{run, snapshot->step, source};
  enter(TrainingEvent::ShowSnapshot);
  lineage_.shown = lineage_.branchFrom;
  continues_ = false;
  restedStep_ = snapshot->step;
  emit weightsChanged();
  epochsSent_ = 0;
  evaluationSent_.reset();
  emit sessionReset();
  emit snapshotShown(run, snapshot->step);
  return true;
}

bool TrainingController::watchFolder(const QString& folder) {
  const std::filesystem::path path = folder.toStdString();
  for (const auto& store : watched_) {
    std::error_code ec;
    if (std::filesystem::equivalent(store->folder(), path, ec)) return true;
  }
  if (!std::filesystem::exists(path / "runs.db")) {
    emit message(tr("Watch Folder: %1 holds no run store (no runs.db); a PyTorch job records "
                    "one with nnstudio_runs.Recorder, the exported train.py in runs/")
                     .arg(folder));
    return false;
  }
  try {
    watched_.push_back(std::make_shared<train::RunStore>(path.string()));
  } catch (const std::exception& e) {
    emit message(tr("Watch Folder: %1 cannot be read: %2").arg(folder, qs(e.what())));
    return false;
  }
  emit message(tr("Watching the runs in %1").arg(folder));
  emit runsChanged();
  return true;
}

void TrainingController::showWatchedProbes(train::RunStore* store, int64_t run) {
  if (isRunning() || shownSnapshot()) return;
  emit watchedProbesShown(store, run, std::numeric_limits<int64_t>::max());
}

void TrainingController::unwatchFolder(const train::RunStore* store) {
  lineage_.forgetStore(store);
  std::erase_if(watched_, [&](const auto& s) { return s.get() == store; });
  emit runsChanged();
}

void TrainingController::renameRun(int64_t run, const QString& name) {
  if (!store_) return;
  try {
    store_->rename_run(run, name.toStdString());
  } catch (const std::exception& e) {
    emit message(tr("Rename run %1 failed: %2").arg(run).arg(qs(e.what())));
  }
  emit runsChanged();
}

bool TrainingController::deleteRun(int64_t run) {
  if (!store_) return false;
  if (run == currentRun()) {
    emit message(tr("Run %1 is being recorded: reset or branch before deleting it").arg(run));
    return false;
  }
  try {
    store_->delete_run(run);
    // Only a branch point in the project's own store is gone.
    lineage_.forgetRun(run);
    emit message(tr("Deleted run %1").arg(run));
  } catch (const std::exception& e) {
    emit message(tr("Delete run %1 failed: %2").arg(run).arg(qs(e.what())));
    return false;
  }
  emit runsChanged();
  return true;
}

void TrainingController::poll() {
  // No remake here: an out-of-date session is made again when something asks (session()).
  if (!session_) return;
  train::TrainingSession& s = *session_;
  // The status first: metrics taken after it are never older than the reset it reports.
  train::SessionStatus st = s.status();
  if (st.resets != resetsSeen_) {
    resetsSeen_ = st.resets;
    epochsSent_ = 0;
    evaluationSent_.reset();
    emit sessionReset();
  }
  // The phase follows the session: a failure (reported below, once status() says Failed: what
  // listens reads it), or the worker of a run whose status no longer says Running at rest,
  // paused between two steps or at the configured end (status_ below has the step it rested at).
  const bool workerIdle = phase_ == TrainingPhase::Running &&
                          st.state != train::RunState::Running &&
                          s.wait_idle(std::chrono::milliseconds(0));
  const std::optional<TrainingEvent> event = sessionEvent(phase_, st.state, workerIdle);
  const bool failedNow = event == TrainingEvent::RunFailed && enter(*event);
  if (event == TrainingEvent::Rested) enter(*event);
  // A run whose worker does not rest yet is running as far as the window is concerned
  // (status() and isRunning() agree).
  if (phase_ == TrainingPhase::Running) st.state = train::RunState::Running;
  if (!freshness_.stale() && built_->frozen != document_->project().frozen_parameters &&
      !isRunning()) {
    applyFrozen();
  }
  const bool statusMoved = st.state != status_.state || st.step != status_.step ||
                           st.epoch != status_.epoch || st.lr != status_.lr ||
                           st.batch_size != status_.batch_size ||
                           st.steps_per_second != status_.steps_per_second;
  status_ = st;
  if (statusMoved) emit statusChanged(status_);
  if (failedNow) {
    // The engine's message names the step that failed (one after the last one done).
    emit message(tr("Training stopped: %1").arg(qs(st.error)));
    emit runFailed(nodeOfModule(st.failed_module), qs(st.error));
  }
  // A run that pauses or ends leaves a snapshot of where it stopped and its figures so far
  // (a fast run may start and end between two polls: the step tells that it moved), and the
  // views that show weights read them again.
  const bool running = st.state == train::RunState::Running;
  if (!running && (st.step != restedStep_ || st.resets != restedResets_)) {
    restedStep_ = st.step;
    restedResets_ = st.resets;
    if (recorder_) {
      s.snapshot();
      // The snapshot goes to the recorder before the figures that mark the run ended.
      s.sync(kIdleWait);
      recorder_->set_result(train::result_of(st));
      emit runsChanged();
    }
    if (!isRunning()) emit weightsChanged();
  }

  std::vector<train::StepMetrics> metrics = s.take_step_metrics();
  if (!metrics.empty()) emit stepMetricsArrived(metrics);
  if (static_cast<size_t>(st.epoch) > epochsSent_) {
    // Only the new epochs: a copy of the whole history every poll grew with the run.
    const std::vector<train::EpochMetrics> fresh = s.epoch_history(epochsSent_);
    epochsSent_ += fresh.size();
    if (!fresh.empty()) emit epochMetricsArrived(fresh);
  } else if (st.epoch < static_cast<int64_t>(epochsSent_)) {
    epochsSent_ = s.epoch_count();
  }
  if (st.last_evaluation &&
      (!evaluationSent_ || evaluationSent_->step != st.last_evaluation->step ||
       evaluationSent_->loss != st.last_evaluation->loss)) {
    evaluationSent_ = st.last_evaluation;
    emit evaluationArrived(*st.last_evaluation);
  }
  std::vector<train::ProbeSample> samples = s.take_probe_samples();
  if (!samples.empty()) {
    if (recorder_) recorder_->add_probe_samples(samples);  // the run's probe history
    emit probeSamplesArrived(samples);
  }
  while (std::optional<train::Prediction> p = s.take_prediction()) emit predictionArrived(*p);
  while (std::optional<train::SampleTrace> t = s.take_trace()) emit traceArrived(*t);

  if (evalMode_ && st.state == train::RunState::Running) {
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    if (now - lastEvalMs_ >= kEvalEveryMs) {
      lastEvalMs_ = now;
      s.evaluate();
    }
  }
}

}  // namespace nns::ui
