// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/document/project_document.h"

#include <QFileInfo>
#include <QRectF>
#include <QTimer>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <exception>
#include <future>
#include <iterator>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/graph/edit.h"
#include "engine/graph/node_types.h"
#include "engine/graph/repeats.h"
#include "engine/nn/init.h"
#include "ui/document/graph_commands.h"
#include "ui/document/node_info.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

// Every node of the set, with the members of the groups in it (recursively).
std::vector<graph::NodeId> withMembers(const graph::Graph& g, std::vector<graph::NodeId> ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (const graph::Node* n = g.find(ids[i])) {
      for (graph::NodeId m : n->members) {
        if (std::find(ids.begin(), ids.end(), m) == ids.end()) ids.push_back(m);
      }
    }
  }
  return ids;
}

}  // namespace

ProjectDocument::ProjectDocument(QObject* parent)
    : QObject(parent), undoStack_(new QUndoStack(this)), analysisTimer_(new QTimer(this)) {
  analysisTimer_->setSingleShot(true);
  analysisTimer_->setInterval(0);
  connect(analysisTimer_, &QTimer::timeout, this, &ProjectDocument::publishAnalysis);
  graphChanged();
}

ProjectDocument::~ProjectDocument() = default;

QStringList ProjectDocument::problemsOf(graph::NodeId node, const std::string& port) const {
  QStringList out;
  for (const graph::Problem* p : problemsAt(node)) {
    if (port.empty() || p->port == port) out << qs(p->message);
  }
  return out;
}

const graph::Analysis& ProjectDocument::analysis() const {
  if (analysisStale_) analyseNow();
  return analysis_;
}

std::vector<const graph::Problem*> ProjectDocument::problemsAt(graph::NodeId node) const {
  analysis();
  return lastProblemsAt(node);
}

std::vector<const graph::Problem*> ProjectDocument::lastProblemsAt(graph::NodeId node) const {
  std::vector<const graph::Problem*> out;
  auto it = problemIndex_.find(node);
  if (it == problemIndex_.end()) return out;
  for (size_t i : it->second) out.push_back(&analysis_.problems[i]);
  return out;
}

std::shared_ptr<graph::GraphModule> ProjectDocument::model() {
  if (!modelStale_) return model_;
  modelStale_ = false;
  std::shared_ptr<graph::GraphModule> built;
  try {
    // The structure only: no initializer runs (skip_init), so a large model costs neither its
    // random numbers nor the memory of weights nobody reads (untouched pages stay virtual).
    const nn::init::SkipInitGuard structure_only;
    built = graph::build_model(project_);
    modelError_.clear();
  } catch (const std::exception& e) {
    model_.reset();
    modelError_ = qs(e.what());
    return nullptr;
  }
  applyFrozen(*built);
  model_ = std::move(built);
  emit modelBuilt();
  return model_;
}

std::optional<int64_t> ProjectDocument::parameterCount(graph::NodeId node) const {
  auto [it, added] = nodeParameterCounts_.try_emplace(node);
  if (added) it->second = graph::parameter_count(project_, node, parameterCounts_);
  return it->second;
}

void ProjectDocument::applyFrozen(graph::GraphModule& model) const {
  const std::vector<std::string>& frozen = project_.frozen_parameters;
  for (auto& [name, param] : model.named_parameters()) {
    const bool isFrozen = std::find(frozen.begin(), frozen.end(), name) != frozen.end();
    param.requires_grad_(!isFrozen);
  }
}

void ProjectDocument::newProject() {
  graph::Project fresh;
  fresh.layout_direction = "TB";
  fresh.graph.add_node("Input", "x", {{"shape", {2}}}, 0, 0);
  setProject(std::move(fresh), QString());
}

void ProjectDocument::load(const QString& path) {
  open(graph::load_project(path.toStdString()), path);
  emit logMessage(tr("Opened %1").arg(QFileInfo(path).fileName()));
}

void ProjectDocument::open(graph::Project project, const QString& path) {
  // The analysis (at 10,000 nodes a third of the open) runs on a worker, on a copy of the
  // project, while this thread collapses and lays it out and the canvas makes its items (which
  // read the analysis when first drawn): graphChanged takes it after that. The cache is the
  // document's, which nothing uses until then.
  auto analysing = std::async(
      std::launch::async, [copy = std::make_shared<const graph::Project>(project), this] {
        std::optional<graph::Analysis> made(std::in_place);
        std::set<graph::NodeId> changed;  // all of them: the open redraws everything
        try {
          graph::reanalyze(*copy, analysisCache_, *made, changed);
        } catch (const std::exception&) {
          made.reset();  // analyseNow() tries again and says why
        }
        return made;
      });
  // Collapsed and placed before it is shown: the canvas never draws all of a large model, nor
  // draws it once where the file had it and again where the layout puts it.
  collapseForCanvas(project);
  std::optional<graph::Layout> layout;
  try {
    layout = graph::layout_graph(project);
    placeForCanvas(project, *layout);
  } catch (const std::exception&) {
    // prepareForCanvas() tries again and says why.
  }
  replaceProject(std::move(project), path, std::move(layout), std::move(analysing));
}

void ProjectDocument::save(const QString& path) {
  // The positions are the canvas's (made or kept by it): the file says so, and opens as it is.
  if (project_.layout_direction.empty()) {
    project_.layout_direction = layout().direction;
    shadow_.layout_direction = project_.layout_direction;
  }
  graph::save_project(project_, path.toStdString());
  undoStack_->setClean();
  if (filePath_ != path) {
    filePath_ = path;
    emit filePathChanged(path);
  }
  emit logMessage(tr("Saved %1").arg(QFileInfo(path).fileName()));
}

void ProjectDocument::setProject(graph::Project project, const QString& path) {
  replaceProject(std::move(project), path, std::nullopt);
}

void ProjectDocument::replaceProject(graph::Project project, const QString& path,
                                     std::optional<graph::Layout> layout,
                                     std::future<std::optional<graph::Analysis>> analysing) {
  analysing_ = std::move(analysing);
  undoStack_->clear();
  project_ = std::move(project);
  shadowValid_ = false;
  parameterCounts_.clear();
  layoutStale_ = !layout;
  if (layout) layout_ = std::move(*layout);
  model_.reset();
  selection_.clear();
  loadMarks_.clear();
  filePath_ = path;
  emit projectReplaced();
  graphChanged();
  emit selectionChanged();
  emit loadMarksChanged();
  emit probesChanged();
  emit filePathChanged(path);
}

bool ProjectDocument::edit(const QString& text, const std::function<void(graph::Project&)>& fn) {
  // fn runs on the spare copy (what the project is, kept so that an edit copies nothing: at
  // 10,000 nodes the copy and freeing it were a fifth of a rename); a refused edit leaves it
  // half changed, so it is made again from the project next time.
  if (!shadowValid_) {
    shadow_ = project_;
    shadowValid_ = true;
  }
  try {
    fn(shadow_);
  } catch (const Error& e) {
    shadowValid_ = false;
    emit logMessage(tr("%1 refused: %2").arg(text, qs(e.what())));
    return false;
  } catch (...) {
    shadowValid_ = false;  // whatever else fn threw, the copy is not the project any more
    throw;
  }
  GraphPatch patch = GraphPatch::between(project_, shadow_);
  if (patch.empty()) return true;
  shadowAhead_ = true;
  undoStack_->push(new GraphEditCommand(this, text, std::move(patch)));
  if (shadowAhead_) {  // the command was not done (it always is): start again from the project
    shadowAhead_ = false;
    shadowValid_ = false;
  }
  return true;
}

void ProjectDocument::setDatasetSettings(const graph::DatasetSettings& settings,
                                         const QString& text) {
  if (settings == project_.dataset) return;
  undoStack_->push(new SettingsEditCommand(this, text, {project_.dataset, project_.training},
                                           {settings, project_.training}));
}

void ProjectDocument::setTrainingSettings(const graph::TrainingSettings& settings,
                                          const QString& text) {
  if (settings == project_.training) return;
  undoStack_->push(new SettingsEditCommand(this, text, {project_.dataset, project_.training},
                                           {project_.dataset, settings}));
}

void ProjectDocument::restoreSettings(const graph::DatasetSettings& dataset,
                                      const graph::TrainingSettings& training) {
  project_.dataset = dataset;
  project_.training = training;
  shadow_.dataset = dataset;
  shadow_.training = training;
  emit settingsChanged();
}

namespace {

template <class T>
void patchPart(std::optional<GraphPatch::Both<T>>& part, const T& from, const T& to) {
  if (from != to) part = GraphPatch::Both<T>{from, to};
}

template <class T>
const T& side(const GraphPatch::Both<T>& both, bool forward) {
  return forward ? both.after : both.before;
}

// Only the position differs.
bool onlyMoved(const graph::Node& a, const graph::Node& b) {
  return a.type == b.type && a.name == b.name && a.options == b.options && a.members == b.members &&
         a.collapsed == b.collapsed && a.folded == b.folded && a.extra == b.extra;
}

}  // namespace

GraphPatch GraphPatch::between(const graph::Project& from, const graph::Project& to) {
  GraphPatch patch;
  const std::vector<graph::Node>& a = from.graph.nodes;
  const std::vector<graph::Node>& b = to.graph.nodes;
  // The nodes of `to` are those of `from` in the same order, less the removed, with the added
  // at the end (what every edit but a reordering does): walk both in step.
  size_t j = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (j < b.size() && b[j].id == a[i].id) {
      if (!(a[i] == b[j])) {
        if (onlyMoved(a[i], b[j])) {
          patch.moved.push_back({a[i].id, a[i].x, a[i].y, b[j].x, b[j].y});
        } else {
          patch.changed.push_back({a[i], b[j]});
        }
      }
      ++j;
    } else {
      patch.removed.emplace_back(i, a[i]);
    }
  }
  bool reordered = false;
  if (j < b.size()) {
    // Were any of the nodes left over in `to` there before (a reordering)? The few left over
    // are looked for in one pass over `from`: a hash set of every id was a third of adding a
    // node to a 10,000-node graph.
    std::vector<graph::NodeId> rest;
    for (size_t k = j; k < b.size(); ++k) rest.push_back(b[k].id);
    std::sort(rest.begin(), rest.end());
    reordered = std::any_of(a.begin(), a.end(), [&](const graph::Node& n) {
      return std::binary_search(rest.begin(), rest.end(), n.id);
    });
    if (!reordered) patch.added.assign(b.begin() + static_cast<std::ptrdiff_t>(j), b.end());
  }
  if (reordered) {
    patch.changed.clear();
    patch.moved.clear();
    patch.removed.clear();
    patch.nodes = Both<std::vector<graph::Node>>{a, b};
  }
  patch.nextId = {from.graph.next_id, to.graph.next_id};
  patchPart(patch.edges, from.graph.edges, to.graph.edges);
  patchPart(patch.blocks, from.blocks, to.blocks);
  patchPart(patch.probes, from.probes, to.probes);
  patchPart(patch.extra, from.extra, to.extra);
  patchPart(patch.name, from.name, to.name);
  patchPart(patch.frozen, from.frozen_parameters, to.frozen_parameters);
  patchPart(patch.layoutDirection, from.layout_direction, to.layout_direction);
  return patch;
}

bool GraphPatch::analysed() const {
  if (nodes || !removed.empty() || !added.empty() || edges || blocks || name) return true;
  return std::any_of(changed.begin(), changed.end(), [](const Both<graph::Node>& c) {
    return c.before.type != c.after.type || c.before.name != c.after.name ||
           c.before.options != c.after.options || c.before.members != c.after.members ||
           c.before.extra != c.after.extra;
  });
}

bool GraphPatch::empty() const {
  return changed.empty() && moved.empty() && removed.empty() && added.empty() && !nodes &&
         nextId.before == nextId.after && !edges && !blocks && !probes && !extra && !name &&
         !frozen && !layoutDirection;
}

GraphChange ProjectDocument::changeOf(const GraphPatch& patch, bool forward) const {
  GraphChange change;
  if (patch.nodes) {
    change.everything = true;
    return change;
  }
  for (const auto& [before, after] : patch.changed) {
    const graph::Node& from = forward ? before : after;
    const graph::Node& to = forward ? after : before;
    if (from.members != to.members || from.folded != to.folded) change.everything = true;
    if (from.collapsed != to.collapsed) change.regrouped.insert(to.id);
    if (from.type != to.type || from.name != to.name || from.options != to.options ||
        from.extra != to.extra) {
      change.changed.insert(to.id);
    } else {
      change.moved.insert(to.id);
    }
  }
  for (const GraphPatch::Moved& m : patch.moved) change.moved.insert(m.id);
  auto gone = [&](const graph::Node& n) {
    change.removed.insert(n.id);
    if (!n.members.empty()) change.everything = true;  // a group's frame goes
  };
  auto come = [&](const graph::Node& n) {
    change.added.insert(n.id);
    if (!n.members.empty()) change.everything = true;  // a new group frames nodes
  };
  for (const auto& [index, n] : patch.removed) forward ? gone(n) : come(n);
  for (const graph::Node& n : patch.added) forward ? come(n) : gone(n);
  // A Ref shows its target's ports: it changes with its target. (Its option is looked at
  // before its type: most nodes have no "target", and the type's lookup for each of 10,000
  // nodes was a sixth of a rename.)
  if (!change.changed.empty()) {
    for (const graph::Node& n : project_.graph.nodes) {
      if (n.options.is_object() && n.options.contains("target") &&
          n.options["target"].is_number_integer() &&
          graph::node_kind(n.type) == graph::NodeKind::Ref &&
          change.changed.count(n.options["target"].get<graph::NodeId>())) {
        change.changed.insert(n.id);
      }
    }
  }
  if (patch.edges) {
    auto key = [](const graph::Edge& e) {
      return std::tie(e.from.node, e.from.port, e.to.node, e.to.port);
    };
    auto less = [&](const graph::Edge& x, const graph::Edge& y) { return key(x) < key(y); };
    std::vector<graph::Edge> a = forward ? patch.edges->before : patch.edges->after;
    std::vector<graph::Edge> b = forward ? patch.edges->after : patch.edges->before;
    std::sort(a.begin(), a.end(), less);
    std::sort(b.begin(), b.end(), less);
    std::set_difference(b.begin(), b.end(), a.begin(), a.end(),
                        std::back_inserter(change.edgesAdded), less);
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(),
                        std::back_inserter(change.edgesRemoved), less);
  }
  return change;
}

void GraphPatch::apply(graph::Project& project, bool forward) const {
  const GraphPatch& patch = *this;
  std::vector<graph::Node>& nodes = project.graph.nodes;
  if (patch.nodes) {
    nodes = side(*patch.nodes, forward);
  } else {
    // Backwards, the added nodes (at the end) go first, so that the removed go back to the
    // places they had.
    if (!forward && !patch.added.empty()) {
      std::unordered_set<graph::NodeId> added;
      for (const graph::Node& n : patch.added) added.insert(n.id);
      std::erase_if(nodes, [&](const graph::Node& n) { return added.count(n.id) > 0; });
    }
    for (const auto& both : patch.changed) {
      const graph::Node& to = side(both, forward);
      project.graph.at(to.id) = to;
    }
    for (const GraphPatch::Moved& m : patch.moved) {
      graph::Node& n = project.graph.at(m.id);
      n.x = forward ? m.afterX : m.beforeX;
      n.y = forward ? m.afterY : m.beforeY;
    }
    if (forward) {
      if (!patch.removed.empty()) {
        std::unordered_set<graph::NodeId> removed;
        for (const auto& [index, n] : patch.removed) removed.insert(n.id);
        std::erase_if(nodes, [&](const graph::Node& n) { return removed.count(n.id) > 0; });
      }
      nodes.insert(nodes.end(), patch.added.begin(), patch.added.end());
    } else if (!patch.removed.empty()) {
      // Each removed node back at its place: one pass, in the order of the places.
      std::vector<graph::Node> merged;
      merged.reserve(nodes.size() + patch.removed.size());
      size_t r = 0, i = 0;
      while (r < patch.removed.size() || i < nodes.size()) {
        if (r < patch.removed.size() &&
            (patch.removed[r].first == merged.size() || i == nodes.size())) {
          merged.push_back(patch.removed[r++].second);
        } else {
          merged.push_back(std::move(nodes[i++]));
        }
      }
      nodes = std::move(merged);
    }
  }
  project.graph.next_id = side(patch.nextId, forward);
  if (patch.edges) project.graph.edges = side(*patch.edges, forward);
  if (patch.blocks) project.blocks = side(*patch.blocks, forward);
  if (patch.probes) project.probes = side(*patch.probes, forward);
  if (patch.extra) project.extra = side(*patch.extra, forward);
  if (patch.name) project.name = side(*patch.name, forward);
  if (patch.frozen) project.frozen_parameters = side(*patch.frozen, forward);
  if (patch.layoutDirection) project.layout_direction = side(*patch.layoutDirection, forward);
}

void ProjectDocument::applyPatch(const GraphPatch& patch, bool forward) {
  patch.apply(project_, forward);
  // The spare copy edits run on follows (an edit's own redo finds it there already).
  if (shadowAhead_) {
    shadowAhead_ = false;
  } else if (shadowValid_) {
    patch.apply(shadow_, forward);
  }
  if (patch.blocks) parameterCounts_.clear();

  const bool structural = patch.nodes || !patch.changed.empty() || !patch.moved.empty() ||
                          !patch.removed.empty() || !patch.added.empty() || patch.edges ||
                          patch.blocks || patch.name || patch.layoutDirection;
  GraphChange change = changeOf(patch, forward);
  // What the canvas draws as boxes changed (a group collapsed or expanded, another direction,
  // a probe's health strip): the routes and frames follow, and it is all redrawn.
  change.everything = change.everything || patch.blocks || patch.layoutDirection || patch.probes;
  if (pendingLayout_) {
    takePendingLayout();
  } else if (change.everything || !change.regrouped.empty()) {
    layoutStale_ = true;
  }
  if (!structural) {
    // Only the frozen set (or the probes, or the project's extra fields) changed: the model
    // stays, its flags follow.
    if (model_) applyFrozen(*model_);
    emit modelStateChanged();
    if (patch.probes) emit probesChanged();
    return;
  }
  // A group collapsed or expanded, a run folded, the positions laid out again: nothing the
  // analysis or the model reads (GraphPatch::analysed), so neither is made again.
  const size_t before = selection_.size();
  std::erase_if(selection_, [&](graph::NodeId id) { return !project_.graph.find(id); });
  graphChanged(std::move(change), patch.analysed());
  if (selection_.size() != before) emit selectionChanged();
  if (patch.probes) emit probesChanged();
}

void ProjectDocument::applyPositions(const std::map<graph::NodeId, QPointF>& positions) {
  std::vector<graph::NodeId> moved;
  for (const auto& [id, pos] : positions) {
    if (graph::Node* n = project_.graph.find(id)) {
      n->x = pos.x();
      n->y = pos.y();
      if (graph::Node* spare = shadowValid_ ? shadow_.graph.find(id) : nullptr) {
        spare->x = pos.x();
        spare->y = pos.y();
      }
      moved.push_back(id);
    }
  }
  emit nodesMoved(moved);
}

void ProjectDocument::graphChanged(GraphChange change, bool analysed) {
  if (analysed) {
    modelStale_ = true;
    analysisStale_ = true;
    nodeParameterCounts_.clear();
    if (!change.everything && !analysisTimer_->isActive()) analysisTimer_->start();
  }
  if (!loadMarks_.empty()) {
    loadMarks_.clear();
    emit loadMarksChanged();
  }
  const bool everything = change.everything;
  emit graphEdited(change);
  if (analysed && everything) {
    // After the items are made (they read the analysis when first drawn), while an opened
    // project's analysis finishes on its worker (unless one of them asked for it already);
    // then all of it is told at once.
    if (analysisStale_) analyseNow();
    analysisChange_ = {};
  }
  emit changed();
  if (analysed && change.everything) emit this->analysed();
}

void ProjectDocument::analyseNow() const {
  analysisStale_ = false;
  std::optional<graph::Analysis> made;
  if (analysing_.valid()) made = analysing_.get();
  if (made) {
    analysis_ = std::move(*made);
    analysisChange_.everything = true;  // another project: all of it is drawn anew
  } else {
    try {
      // In place: the nodes whose shapes or problems the edit changed are redrawn.
      graph::reanalyze(project_, analysisCache_, analysis_, analysisChange_.changed);
    } catch (const std::exception& e) {
      analysis_ = {};
      analysis_.problems.push_back({0, {}, e.what(), {}});
      analysisChange_.everything = true;
    }
  }
  // Each node's problems by node: every box and wire asks for its own on each refresh.
  problemIndex_.clear();
  for (size_t i = 0; i < analysis_.problems.size(); ++i) {
    const graph::Problem& p = analysis_.problems[i];
    if (p.block.empty()) problemIndex_[p.node].push_back(i);
  }
}

void ProjectDocument::publishAnalysis() {
  if (analysisStale_) analyseNow();
  GraphChange change = std::move(analysisChange_);
  analysisChange_ = {};
  // Nodes removed since have no items; the scene skips them.
  if (change.everything || !change.changed.empty()) emit graphEdited(change);
  emit analysed();
}

graph::NodeId ProjectDocument::addNode(const QString& type, QPointF pos) {
  const std::string t = type.toStdString();
  graph::NodeId id = 0;
  edit(tr("Add %1").arg(type), [&](graph::Project& p) {
    graph::Json options = graph::Json::object();
    if (const graph::NodeType* nt = graph::find_node_type(t)) {
      options = nt->default_options();
    } else if (!p.find_block(t)) {
      throw ValueError("unknown node type '" + t + "': pick one from the palette");
    }
    id = p.graph.add_node(t, freeNodeName(p.graph, t), options, pos.x(), pos.y());
  });
  return id;
}

void ProjectDocument::removeItems(const std::vector<graph::NodeId>& nodes,
                                  const std::vector<graph::PortRef>& wires) {
  const std::vector<graph::NodeId> all = withMembers(project_.graph, nodes);
  QString text = all.empty() ? tr("Delete %n wire(s)", nullptr, static_cast<int>(wires.size()))
                             : tr("Delete %n node(s)", nullptr, static_cast<int>(all.size()));
  edit(text, [&](graph::Project& p) {
    for (const graph::PortRef& to : wires) {
      if (p.graph.edge_into(to)) p.graph.disconnect(to);
    }
    for (graph::NodeId id : all) {
      if (p.graph.find(id)) p.graph.remove_node(id);
    }
    std::erase_if(p.probes, [&](const graph::ProbeSpec& probe) {
      return std::find(all.begin(), all.end(), probe.node) != all.end();
    });
  });
}

bool ProjectDocument::connectPorts(const graph::PortRef& from, const graph::PortRef& to) {
  return edit(tr("Connect %1.%2 to %3.%4")
                  .arg(qs(project_.graph.at(from.node).name), qs(from.port),
                       qs(project_.graph.at(to.node).name), qs(to.port)),
              [&](graph::Project& p) {
                if (p.graph.edge_into(to)) p.graph.disconnect(to);
                p.graph.connect(from, to);
              });
}

void ProjectDocument::disconnectPort(const graph::PortRef& to) {
  edit(tr("Disconnect %1.%2").arg(qs(project_.graph.at(to.node).name), qs(to.port)),
       [&](graph::Project& p) { p.graph.disconnect(to); });
}

ProjectDocument::ConnectionCheck ProjectDocument::checkConnection(const graph::PortRef& from,
                                                                  const graph::PortRef& to) const {
  if (from.node == to.node) return {tr("a node cannot feed itself"), {}};
  graph::Project trial = project_;
  try {
    if (trial.graph.edge_into(to)) trial.graph.disconnect(to);
    trial.graph.connect(from, to);
  } catch (const Error& e) {
    return {qs(e.what()), {}};
  }
  // Only what this wire causes at its target counts, not what was wrong before.
  const QStringList before = problemsOf(to.node);
  graph::Analysis after;
  try {
    after = graph::analyze(trial, &analysisCache_);
  } catch (const std::exception& e) {
    return {{}, qs(e.what())};
  }
  for (const graph::Problem& p : after.problems) {
    if (p.node != to.node || !p.block.empty()) continue;
    if (!p.port.empty() && p.port != to.port) continue;
    if (!before.contains(qs(p.message))) return {{}, qs(p.message)};
  }
  return {};
}

void ProjectDocument::moveNodes(const std::map<graph::NodeId, QPointF>& positions) {
  std::map<graph::NodeId, QPointF> from;
  for (const auto& [id, pos] : positions) {
    const graph::Node& n = project_.graph.at(id);
    from[id] = QPointF(n.x, n.y);
  }
  undoStack_->push(new MoveNodesCommand(this, std::move(from), positions));
}

bool ProjectDocument::setNodeOptions(graph::NodeId node, const graph::Json& options) {
  return edit(tr("Edit %1").arg(qs(project_.graph.at(node).name)), [&](graph::Project& p) {
    graph::Node& n = p.graph.at(node);
    if (const graph::NodeType* type = graph::find_node_type(n.type)) {
      type->checked_options(options);  // refuse values the type does not allow
    }
    n.options = options;
  });
}

bool ProjectDocument::renameModel(const QString& name) {
  const std::string newName = name.trimmed().toStdString();
  return edit(tr("Rename model to %1").arg(name.trimmed()), [&](graph::Project& p) {
    if (newName.empty() || newName.find_first_of(". ") != std::string::npos) {
      throw ValueError("model class name '" + newName +
                       "' is not a valid class name: use letters, digits and _");
    }
    if (p.find_block(newName) || graph::find_node_type(newName)) {
      throw ValueError("model class name '" + newName +
                       "' is taken by a custom block or a node type: pick another");
    }
    p.name = newName;
  });
}

bool ProjectDocument::renameNode(graph::NodeId node, const QString& name) {
  const std::string newName = name.trimmed().toStdString();
  return edit(tr("Rename to %1").arg(name.trimmed()), [&](graph::Project& p) {
    graph::Node& n = p.graph.at(node);
    if (newName == n.name) return;
    if (newName.empty() || newName.find('.') != std::string::npos) {
      throw ValueError("node name '" + newName +
                       "' is not a valid attribute name: use letters, digits and _, no dots");
    }
    if (p.graph.find_by_name(newName)) {
      throw ValueError("node name '" + newName + "' is taken: pick another name");
    }
    // A ModuleDict's active key is its member's name: it follows the rename.
    if (const graph::Node* parent = p.graph.parent_of(node)) {
      graph::Json& options = p.graph.at(parent->id).options;
      if (options.is_object() && options.value("active", graph::Json()) == n.name) {
        options["active"] = newName;
      }
    }
    n.name = newName;
  });
}

void ProjectDocument::editAndLayOut(const QString& text,
                                    const std::function<void(graph::Project&)>& fn) {
  // The graph is laid out again in the same undo step; the layout is deterministic, so
  // expanding a group puts its members back where they were.
  edit(text, [&](graph::Project& p) {
    fn(p);
    pendingLayout_ = graph::layout_graph(p);
    graph::apply_layout(p, *pendingLayout_);
  });
  takePendingLayout();
}

void ProjectDocument::setCollapsed(graph::NodeId group, bool collapsed) {
  const QString name = qs(project_.graph.at(group).name);
  editAndLayOut(collapsed ? tr("Collapse %1").arg(name) : tr("Expand %1").arg(name),
                [&](graph::Project& p) { p.graph.at(group).collapsed = collapsed; });
}

void ProjectDocument::setFolded(graph::NodeId group, bool folded) {
  const QString name = qs(project_.graph.at(group).name);
  editAndLayOut(
      folded ? tr("Fold repeats of %1").arg(name) : tr("Show every repeat of %1").arg(name),
      [&](graph::Project& p) { p.graph.at(group).folded = folded; });
}

void ProjectDocument::autoLayout() {
  editAndLayOut(tr("Auto-layout"), [](graph::Project&) {});
}

void ProjectDocument::setLayoutDirection(const QString& direction) {
  editAndLayOut(direction == "LR" ? tr("Lay out left to right") : tr("Lay out top to bottom"),
                [&](graph::Project& p) { p.layout_direction = direction.toStdString(); });
}

void ProjectDocument::takePendingLayout() {
  // An edit that changed nothing pushed no command, and restore() did not take the layout.
  if (pendingLayout_) {
    useLayout(std::move(*pendingLayout_));
    layoutStale_ = false;
  }
  pendingLayout_.reset();
}

void ProjectDocument::useLayout(graph::Layout layout) const {
  auto replaced = std::make_shared<graph::Layout>(std::exchange(layout_, std::move(layout)));
  // The queued call owns the old layout: it is freed once that call has run, after this event.
  QTimer::singleShot(0, this, [replaced = std::move(replaced)] {});
}

const graph::Layout& ProjectDocument::layout() const {
  if (layoutStale_) relayout();
  return layout_;
}

bool ProjectDocument::relayout() const {
  layoutStale_ = false;
  try {
    useLayout(graph::layout_graph(project_));
    return true;
  } catch (const std::exception& e) {
    layout_ = {};
    // The canvas then draws plain wires and fits frames to their members.
    emit const_cast<ProjectDocument*>(this)->logMessage(
        tr("Could not lay out the graph: %1").arg(qs(e.what())));
    return false;
  }
}

bool ProjectDocument::collapseForCanvas(graph::Project& project) {
  graph::Graph& g = project.graph;
  const bool anyCollapsed =
      std::any_of(g.nodes.begin(), g.nodes.end(), [](const graph::Node& n) { return n.collapsed; });
  if (g.nodes.size() <= kLargeGraph || anyCollapsed) return false;
  // Open at the module tree's first level: each top-level group shows its members, and
  // groups nested in them are one box each until expanded.
  const auto parents = graph::parent_index(g);
  for (graph::Node& n : g.nodes) {
    if (isGroup(n) && parents.count(n.id)) n.collapsed = true;
  }
  graph::fold_all_repeats(project);  // and repeated blocks as one box xN
  return true;
}

void ProjectDocument::prepareForCanvas() {
  if (collapseForCanvas(project_)) {
    shadowValid_ = false;
    graphChanged();
    layoutStale_ = true;
  }
  if (!layoutStale_ && layout_.boxes.empty()) return;  // the layout engine failed
  if (layoutStale_ && !relayout()) return;
  if (!placeForCanvas(project_, layout_)) return;
  shadow_.layout_direction = project_.layout_direction;
  std::map<graph::NodeId, QPointF> positions;
  // placeForCanvas moved the project's nodes: the document says so, and moves its copy.
  for (const auto& [id, box] : layout_.boxes) positions[id] = QPointF(box.x, box.y);
  applyPositions(positions);
}

bool ProjectDocument::placeForCanvas(graph::Project& project, const graph::Layout& layout) {
  graph::Graph& g = project.graph;
  // Positions that make boxes overlap are no layout (a file written by hand), and neither are
  // those of a file no layered layout made (layout_direction unset): the layout's positions
  // replace them.
  // Any two boxes that overlap, found through a grid of cells (each box listed in the cells it
  // covers): a sweep along one axis was quadratic for a column of boxes that all start at the
  // same x (a 10,000-node tower).
  constexpr double kCell = 256;
  std::unordered_map<int64_t, std::vector<QRectF>> cells;
  bool overlap = false;
  for (graph::NodeId id : layout.order) {
    const graph::Node& n = g.at(id);
    if (isGroup(n) && !n.collapsed && !n.members.empty()) continue;  // a frame
    const graph::NodeSize size = graph::node_box_size(project, n);
    const QRectF box(n.x, n.y, size.width, size.height);
    const auto first = [](double v) { return static_cast<int64_t>(std::floor(v / kCell)); };
    for (int64_t cx = first(box.left()); cx <= first(box.right()) && !overlap; ++cx) {
      for (int64_t cy = first(box.top()); cy <= first(box.bottom()) && !overlap; ++cy) {
        std::vector<QRectF>& cell = cells[(cx << 32) ^ (cy & 0xffffffff)];
        overlap = std::any_of(cell.begin(), cell.end(),
                              [&](const QRectF& other) { return other.intersects(box); });
        cell.push_back(box);
      }
    }
    if (overlap) break;
  }
  if (!overlap && !project.layout_direction.empty()) return false;
  project.layout_direction = layout.direction;
  for (const auto& [id, box] : layout.boxes) {
    if (graph::Node* n = g.find(id)) {
      n->x = box.x;
      n->y = box.y;
    }
  }
  return true;
}

void ProjectDocument::setParameterFrozen(const QString& name, bool frozen) {
  const std::string key = name.toStdString();
  edit(frozen ? tr("Freeze %1").arg(name) : tr("Unfreeze %1").arg(name), [&](graph::Project& p) {
    std::vector<std::string>& list = p.frozen_parameters;
    auto it = std::find(list.begin(), list.end(), key);
    if (frozen && it == list.end()) list.push_back(key);
    if (!frozen && it != list.end()) list.erase(it);
  });
}

bool ProjectDocument::canProbe(graph::NodeId node) const {
  const graph::Node* n = project_.graph.find(node);
  if (!n) return false;
  if (isGroup(*n) || project_.find_block(n->type)) return true;
  const graph::NodeType* type = graph::find_node_type(n->type);
  return type && type->make_module;
}

const graph::ProbeSpec* ProjectDocument::probeOf(graph::NodeId node) const {
  for (const graph::ProbeSpec& p : project_.probes) {
    if (p.node == node) return &p;
  }
  return nullptr;
}

std::vector<graph::NodeId> ProjectDocument::repeatRun(graph::NodeId node) const {
  // The probe panel asks on every redraw: the runs are worked out only in a folded group.
  const graph::Node* group = project_.graph.parent_of(node);
  if (!group || !group->folded) return {node};
  const graph::FoldedRepeats folds = graph::folded_repeats(project_);
  if (!folds.count.contains(node)) return {node};
  std::vector<graph::NodeId> run;
  for (graph::NodeId m : group->members) {
    auto hidden = folds.hidden.find(m);
    if (m == node || (hidden != folds.hidden.end() && hidden->second == node)) run.push_back(m);
  }
  return run;
}

bool ProjectDocument::addProbe(graph::NodeId node, graph::ProbeSpec spec) {
  const graph::Node* n = project_.graph.find(node);
  const QString name = n ? qs(n->name) : QString::number(node);
  const std::vector<graph::NodeId> run = repeatRun(node);
  const QString text = run.size() > 1
                           ? tr("Add probes to the %1 repeats of %2").arg(run.size()).arg(name)
                           : tr("Add probe to %1").arg(name);
  return edit(text, [&](graph::Project& p) {
    if (!canProbe(node)) {
      throw ValueError("node '" + name.toStdString() +
                       "' has no module to place hooks on (a functional node, an Input or an "
                       "Output, or no such node): probe a layer, a group or a block instance");
    }
    if (probeOf(node)) {
      throw ValueError("node '" + name.toStdString() + "' already has a probe");
    }
    // A folded run's repeats side by side: each gets the probe (the box's panel compares them).
    for (graph::NodeId m : run) {
      if (m != node && probeOf(m)) continue;
      graph::ProbeSpec each = spec;
      each.node = m;
      p.probes.push_back(std::move(each));
    }
  });
}

bool ProjectDocument::removeProbe(graph::NodeId node) {
  if (!probeOf(node)) return false;
  const std::vector<graph::NodeId> run = repeatRun(node);
  return edit(tr("Remove probe from %1").arg(qs(project_.graph.at(node).name)),
              [&](graph::Project& p) {
                std::erase_if(p.probes, [&](const graph::ProbeSpec& s) {
                  return std::find(run.begin(), run.end(), s.node) != run.end();
                });
              });
}

bool ProjectDocument::isParameterFrozen(const QString& name) const {
  const std::vector<std::string>& frozen = project_.frozen_parameters;
  return std::find(frozen.begin(), frozen.end(), name.toStdString()) != frozen.end();
}

void ProjectDocument::setSelection(std::vector<graph::NodeId> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes == selection_) return;
  selection_ = std::move(nodes);
  emit selectionChanged();
}

QString ProjectDocument::loadStateDict(const QString& path, bool strict) {
  auto m = model();
  if (!m)
    throw ValueError("the graph has problems, so there is no model to load into: " +
                     modelError_.toStdString());
  const nn::StateDict sd = serialize::load_state_dict_file(path.toStdString());
  const serialize::LoadReport report = serialize::compare_state_dict(*m, sd);

  // Each key belongs to the node whose module name is its longest prefix (or, for the model's
  // own Parameter and Buffer nodes, to the node of that name).
  auto nodeOf = [&](const std::string& key) -> graph::NodeId {
    graph::NodeId best = 0;
    size_t bestLength = 0;
    for (const graph::Node& n : project_.graph.nodes) {
      if (n.name == key && !project_.graph.parent_of(n.id)) return n.id;
      const std::string prefix = m->module_name(n.id);
      if (prefix.empty() || prefix.size() <= bestLength) continue;
      if (key.size() > prefix.size() && key.compare(0, prefix.size(), prefix) == 0 &&
          key[prefix.size()] == '.') {
        best = n.id;
        bestLength = prefix.size();
      }
    }
    return best;
  };
  std::map<graph::NodeId, NodeLoadMark> marks;
  auto mark = [&](const std::string& key, NodeLoadMark::Status status, const QString& line) {
    const graph::NodeId id = nodeOf(key);
    if (id == 0) return;
    NodeLoadMark& mk = marks[id];
    mk.status = std::max(mk.status, status);
    if (!line.isEmpty()) mk.details << line;
  };
  for (const std::string& k : report.matched) mark(k, NodeLoadMark::Status::Matched, {});
  for (const std::string& k : report.unexpected) {
    mark(k, NodeLoadMark::Status::Unexpected, tr("unexpected: %1").arg(qs(k)));
  }
  for (const std::string& k : report.missing) {
    mark(k, NodeLoadMark::Status::Missing, tr("missing: %1").arg(qs(k)));
  }
  for (const serialize::WrongShape& w : report.wrong_shape) {
    mark(w.key, NodeLoadMark::Status::WrongShape,
         tr("wrong shape: %1 is %2 in the file, %3 in the model")
             .arg(qs(w.key), qs(shape_str(w.file)), qs(shape_str(w.expected))));
  }
  loadMarks_ = std::move(marks);
  emit loadMarksChanged();

  const QString name = QFileInfo(path).fileName();
  if (!report.loadable(strict)) {
    emit logMessage(tr("Did not load %1 (%2): %3")
                        .arg(name, strict ? tr("strict") : tr("non-strict"), qs(report.str())));
    return qs(report.str());
  }
  // The owner of the weights (the training session) takes them.
  emit stateDictLoaded(sd, strict);
  emit logMessage(tr("Loaded %1: %2").arg(name, qs(report.str())));
  return qs(report.str());
}

void ProjectDocument::saveStateDict(const QString& path, const nn::StateDict& state) {
  serialize::save_state_dict_file(state, path.toStdString());
  emit logMessage(tr("Saved the state dict to %1").arg(QFileInfo(path).fileName()));
}

QString ProjectDocument::baseDir() const {
  return filePath_.isEmpty() ? QStringLiteral(".") : QFileInfo(filePath_).absolutePath();
}
}  // namespace nns::ui

namespace nns::ui {

graph::NodeId ProjectDocument::groupNodes(const std::vector<graph::NodeId>& nodes,
                                          const QString& type) {
  const std::string t = type.toStdString();
  // Members of selected groups come along with their group, so only the outermost nodes count.
  std::vector<graph::NodeId> outermost;
  for (graph::NodeId id : nodes) {
    bool inner = false;
    for (const graph::Node* a = project_.graph.parent_of(id); a;
         a = project_.graph.parent_of(a->id)) {
      inner = inner || std::find(nodes.begin(), nodes.end(), a->id) != nodes.end();
    }
    if (!inner) outermost.push_back(id);
  }
  graph::NodeId group = 0;
  edit(tr("Group as %1").arg(type), [&](graph::Project& p) {
    if (outermost.empty()) throw ValueError("select the nodes to group first");
    std::string base = t;
    base[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(base[0])));
    group = graph::group_nodes(p.graph, outermost, t, graph::unique_name(p.graph, base));
  });
  if (group != 0) setSelection({group});
  return group;
}

void ProjectDocument::ungroup(graph::NodeId group) {
  edit(tr("Ungroup %1").arg(qs(project_.graph.at(group).name)),
       [&](graph::Project& p) { graph::ungroup(p.graph, group); });
}

graph::NodeId ProjectDocument::makeBlock(const std::vector<graph::NodeId>& nodes,
                                         const QString& blockName) {
  graph::NodeId instance = 0;
  edit(tr("Make block %1").arg(blockName), [&](graph::Project& p) {
    instance = graph::make_block(p, p.graph, nodes, blockName.trimmed().toStdString());
  });
  if (instance != 0) setSelection({instance});
  return instance;
}

void ProjectDocument::inlineBlock(graph::NodeId instance) {
  std::vector<graph::NodeId> added;
  edit(tr("Inline %1").arg(qs(project_.graph.at(instance).name)),
       [&](graph::Project& p) { added = graph::inline_block(p, p.graph, instance); });
  if (!added.empty()) setSelection(added);
}

graph::Json ProjectDocument::copyNodes(const std::vector<graph::NodeId>& nodes) const {
  const std::vector<graph::NodeId> all = withMembers(project_.graph, nodes);
  auto picked = [&](graph::NodeId id) {
    return std::find(all.begin(), all.end(), id) != all.end();
  };
  graph::Graph clip;
  for (const graph::Node& n : project_.graph.nodes) {
    if (picked(n.id)) clip.insert_node(n);
  }
  for (const graph::Edge& e : project_.graph.edges) {
    if (picked(e.from.node) && picked(e.to.node)) clip.edges.push_back(e);
  }
  return graph::graph_to_json(clip);
}

std::vector<graph::NodeId> ProjectDocument::pasteNodes(const graph::Json& clip, QPointF offset) {
  std::vector<graph::NodeId> pasted;
  edit(tr("Paste"), [&](graph::Project& p) {
    const graph::Graph in = graph::graph_from_json(clip, "clipboard");
    pasted = graph::paste_nodes(p.graph, in.nodes, in.edges, offset.x(), offset.y());
  });
  // Select the outermost pasted nodes, so that a move carries the groups' members along.
  std::vector<graph::NodeId> top;
  for (graph::NodeId id : pasted) {
    const graph::Node* parent = project_.graph.parent_of(id);
    if (!parent || std::find(pasted.begin(), pasted.end(), parent->id) == pasted.end()) {
      top.push_back(id);
    }
  }
  setSelection(top);
  return pasted;
}

}  // namespace nns::ui
