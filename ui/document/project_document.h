// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ProjectDocument: the one place the window's widgets read and change the project. It holds
// the graph::Project, the undo stack, the selection, the analysis of the graph (shapes and
// problems) and the architecture's model (module names, shapes, the repr: the weights are the
// training session's, TrainingController). Every edit goes through an undo command
// (graph_commands.h), so undo and redo reach every change; widgets only listen to the signals.
//
//   ProjectDocument doc;
//   graph::NodeId fc = doc.addNode("Linear", {100, 40});
//   doc.setNodeOptions(fc, {{"in_features", 2}, {"out_features", 64}});
//   doc.undoStack()->undo();   // the options are back to the defaults
#include <QObject>
#include <QPointF>
#include <QString>
#include <QUndoStack>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/graph/builder.h"
#include "engine/graph/layout.h"
#include "engine/graph/project.h"
#include "engine/serialize/serialize.h"

class QTimer;

namespace nns::ui {

// One edit of a project's graph, both ways, as an undo step keeps it: the nodes it changed,
// added or removed (each whole, or only its position when that is all that changed), the
// edges and the project's other parts where they changed. At 10,000 nodes an undo step holds
// what the edit touched, not two copies of the project, and undoing it puts back only that.
struct GraphPatch {
  template <class T>
  struct Both {
    T before, after;
  };
  struct Moved {
    graph::NodeId id = 0;
    double beforeX = 0, beforeY = 0, afterX = 0, afterY = 0;
  };
  std::vector<Both<graph::Node>> changed;  // in place: the same place in the node order
  std::vector<Moved> moved;                // in place, only the position
  std::vector<std::pair<size_t, graph::Node>> removed;  // with their place before, ascending
  std::vector<graph::Node> added;                       // at the end of the node order
  // When the order changed otherwise (none of the four above then).
  std::optional<Both<std::vector<graph::Node>>> nodes;
  Both<graph::NodeId> nextId;
  std::optional<Both<std::vector<graph::Edge>>> edges;
  std::optional<Both<std::vector<graph::BlockDef>>> blocks;
  std::optional<Both<std::vector<graph::ProbeSpec>>> probes;
  std::optional<Both<graph::Json>> extra;
  std::optional<Both<std::string>> name;                 // the model's class name
  std::optional<Both<std::vector<std::string>>> frozen;  // Project::frozen_parameters
  std::optional<Both<std::string>> layoutDirection;      // Project::layout_direction

  // What turns `from` into `to`.
  static GraphPatch between(const graph::Project& from, const graph::Project& to);
  // Makes `project` (in the state before, or after when backwards) what it is after (before).
  void apply(graph::Project& project, bool forward) const;
  bool empty() const;
  // Whether it changes what graph::analyze and the model read: not when only positions, a
  // group's collapse or a run's fold changed (the canvas's view of the same model).
  bool analysed() const;
};

// What one change did to the graph, for views that update only those items (the canvas).
// `everything` when the change is too broad to list (another project, other blocks, a group's
// members or collapse, another direction, probes): redraw it all.
struct GraphChange {
  // A change of everything: the scene redraws all.
  static GraphChange all() {
    GraphChange c;
    c.everything = true;
    return c;
  }
  bool everything = false;
  std::set<graph::NodeId> added, removed;
  std::set<graph::NodeId> changed;  // type, name, options, or the analysis's shapes or problems
  std::set<graph::NodeId> moved;    // only the position
  // Groups collapsed or expanded: their members are shown or hidden, the group turns between
  // one box and a frame (the scene redraws them and what they hold, not everything).
  std::set<graph::NodeId> regrouped;
  std::vector<graph::Edge> edgesAdded, edgesRemoved;
};

// How a loaded state dict matched one node's parameters and buffers.
struct NodeLoadMark {
  enum class Status { Matched, Unexpected, Missing, WrongShape };  // worst last
  Status status = Status::Matched;
  QStringList details;  // one line per key that did not match
};

class ProjectDocument : public QObject {
  Q_OBJECT

 public:
  explicit ProjectDocument(QObject* parent = nullptr);
  ~ProjectDocument() override;

  const graph::Project& project() const { return project_; }
  QUndoStack* undoStack() const { return undoStack_; }
  // The analysis of the graph as it is (made now if an edit since the last one has not been
  // analysed yet).
  const graph::Analysis& analysis() const;
  // Problems of one node (all of them when port is empty, else those of that port).
  QStringList problemsOf(graph::NodeId node, const std::string& port = {}) const;
  // The top level's problems at one node, in the analysis's order (from an index by node).
  std::vector<const graph::Problem*> problemsAt(graph::NodeId node) const;
  // The same as the last analysis made found them, without making one: what the canvas draws
  // while it redraws an edit. An edit's analysis comes a moment after it, in an event of its
  // own (at 10,000 nodes it was two thirds of each edit), and then graphEdited names the nodes
  // whose shapes or problems it changed, and analysed() follows.
  const graph::Analysis& lastAnalysis() const { return analysis_; }
  std::vector<const graph::Problem*> lastProblemsAt(graph::NodeId node) const;

  // The architecture: the model the graph builds, for its structure (module names, the repr,
  // parameter names and shapes, requires_grad from the frozen set); nullptr while the graph
  // has problems (modelError() says why). Built on first use after a change (modelBuilt()
  // follows). Its parameters are not initialized (nn::init::SkipInitGuard) and nothing reads
  // their values: the weights live in the training session (TrainingController::
  // withRestingModel, stateDict).
  std::shared_ptr<graph::GraphModule> model();
  QString modelError() const { return modelError_; }
  // The model if it is built and current, without building it (nullptr otherwise): for what
  // is drawn on every change and must not build a large model each time.
  std::shared_ptr<graph::GraphModule> builtModel() const { return modelStale_ ? nullptr : model_; }

  // How many parameter values the node's module holds (a group's with its members'), without
  // building the model (graph::parameter_count): what a collapsed group's box shows. nullopt
  // when a module in it cannot be made.
  std::optional<int64_t> parameterCount(graph::NodeId node) const;

  // ---- Files ----
  QString filePath() const { return filePath_; }
  // The folder that the project's relative paths (a CSV, a text file) are read from: the
  // project file's, or "." for a project not saved yet.
  QString baseDir() const;
  bool isModified() const { return !undoStack_->isClean(); }
  void newProject();
  // Replaces the project with a file's; throws the engine's error (the document is unchanged).
  void load(const QString& path);
  // What load() does with the file read: a large graph collapsed (collapseForCanvas), laid out
  // and its boxes placed before the canvas first draws it (prepareForCanvas then has nothing
  // left to do), then set.
  void open(graph::Project project, const QString& path);
  void save(const QString& path);
  // Replaces the project with one from memory (crash recovery, the built-in example).
  void setProject(graph::Project project, const QString& path);

  // ---- Edits (each one undo step; an engine error is logged and changes nothing) ----
  graph::NodeId addNode(const QString& type, QPointF pos);
  void removeItems(const std::vector<graph::NodeId>& nodes,
                   const std::vector<graph::PortRef>& wires);
  // Connects, replacing the wire that fed `to` (if any). False when refused.
  bool connectPorts(const graph::PortRef& from, const graph::PortRef& to);
  void disconnectPort(const graph::PortRef& to);
  // What connecting from -> to would do: a refusal (no such port, a cycle; the wire cannot be
  // made) or a warning (the wire can be made, but the target then has a problem, such as a
  // shape that does not fit: the user may be about to fix the options).
  struct ConnectionCheck {
    QString refusal;
    QString warning;
  };
  ConnectionCheck checkConnection(const graph::PortRef& from, const graph::PortRef& to) const;
  void moveNodes(const std::map<graph::NodeId, QPointF>& positions);
  bool setNodeOptions(graph::NodeId node, const graph::Json& options);
  bool renameNode(graph::NodeId node, const QString& name);
  // Renames the model's class (Net, BigNet): what its repr prints; block names must differ.
  bool renameModel(const QString& name);
  // Groups the selected nodes into a container (Sequential, ModuleList, ModuleDict).
  graph::NodeId groupNodes(const std::vector<graph::NodeId>& nodes, const QString& type);
  void ungroup(graph::NodeId group);
  // Moves the nodes into a new custom block (a module class) and puts an instance in their
  // place; inlining puts the block's nodes back.
  graph::NodeId makeBlock(const std::vector<graph::NodeId>& nodes, const QString& blockName);
  void inlineBlock(graph::NodeId instance);
  // Collapses or expands a group and lays the graph out again (one undo step).
  void setCollapsed(graph::NodeId group, bool collapsed);
  // Folds a Sequential's or ModuleList's runs of equal members into one box xN each, or shows
  // them all (graph::repeat_runs); one undo step, laid out again.
  void setFolded(graph::NodeId group, bool folded);
  // The nodes (with the wires between them) as JSON for the clipboard, and back.
  graph::Json copyNodes(const std::vector<graph::NodeId>& nodes) const;
  std::vector<graph::NodeId> pasteNodes(const graph::Json& clip, QPointF offset);
  // Lays the graph out with graph::layout_graph (one undo step), in the project's direction.
  void autoLayout();
  // "TB" or "LR": lays the graph out that way (one undo step with the new positions).
  void setLayoutDirection(const QString& direction);
  // The layout last made for the project as it is drawn now (its groups open or collapsed):
  // the wires' routes and the frames' boxes, valid where the nodes are still where it put
  // them. Made on opening a project, by autoLayout(), and when a group collapses or expands.
  const graph::Layout& layout() const;
  // Readies an opened project for the canvas, without an undo step: a large graph (over
  // kLargeGraph nodes) with no collapsed group gets the groups nested in other groups
  // collapsed; a graph with no positions (boxes that overlap) gets laid out.
  static constexpr size_t kLargeGraph = 150;
  void prepareForCanvas();
  // The first part of that, on a project before it is set (load() does it; so does whoever
  // opens a large project from memory as a file is opened): groups nested in groups collapsed and
  // repeats folded, for a graph over kLargeGraph nodes with no collapsed group. True when it
  // changed anything.
  static bool collapseForCanvas(graph::Project& project);
  // The second part: the layout's positions, where the project's own are no layout (boxes that
  // overlap, or no layout_direction: a file no layered layout made). True when it moved them.
  static bool placeForCanvas(graph::Project& project, const graph::Layout& layout);
  // Freezes or unfreezes a parameter by its qualified name; kept in the project file.
  void setParameterFrozen(const QString& name, bool frozen);
  bool isParameterFrozen(const QString& name) const;

  // ---- Probes (engine/train/probes.h): hooks on a node's module while training ----
  // Whether the node makes a module to place hooks on (a layer, a group, a block instance;
  // not a functional node, an Input or an Output).
  bool canProbe(graph::NodeId node) const;
  const graph::ProbeSpec* probeOf(graph::NodeId node) const;
  // One undo step each (spec.node is set to node). Refused (false, logged) for a node that
  // cannot carry a probe or already has one; removing a node without a probe does nothing.
  // On a box that stands for a folded run (repeats.h), for every repeat of the run at once.
  bool addProbe(graph::NodeId node, graph::ProbeSpec spec = {});
  bool removeProbe(graph::NodeId node);
  // The members of the folded run `node` stands for, in order; just {node} for another node.
  std::vector<graph::NodeId> repeatRun(graph::NodeId node) const;

  // Runs fn on a copy of the project's graph and pushes the difference as one undo step
  // named text. An nns::Error from fn is logged and nothing changes; an fn that changes
  // nothing pushes nothing. Returns whether the edit holds.
  bool edit(const QString& text, const std::function<void(graph::Project&)>& fn);

  // ---- Dataset and training settings ----
  // One undo step each; consecutive edits with the same text (a spin box's steps) merge into
  // one. An edit that changes nothing pushes nothing.
  void setDatasetSettings(const graph::DatasetSettings& settings, const QString& text);
  void setTrainingSettings(const graph::TrainingSettings& settings, const QString& text);

  // ---- Selection ----
  const std::vector<graph::NodeId>& selection() const { return selection_; }
  void setSelection(std::vector<graph::NodeId> nodes);

  // ---- State dicts ----
  // Reads a state dict file, checks it against the architecture and marks each node with how
  // its keys matched; only a file that loads (strict loads refuse missing and unexpected keys)
  // is handed on, with stateDictLoaded, to the owner of the weights (TrainingController).
  // Nothing changes before the check. Returns the report's summary.
  QString loadStateDict(const QString& path, bool strict);
  // Writes `state` (TrainingController::stateDict(): the weights as trained) to a file.
  void saveStateDict(const QString& path, const nn::StateDict& state);
  const std::map<graph::NodeId, NodeLoadMark>& loadMarks() const { return loadMarks_; }

  // Used by the undo commands only: the patch applied forwards (redo) or backwards (undo).
  void applyPatch(const GraphPatch& patch, bool forward);
  void applyPositions(const std::map<graph::NodeId, QPointF>& positions);
  void restoreSettings(const graph::DatasetSettings& dataset,
                       const graph::TrainingSettings& training);

 signals:
  // Another project took this one's place (setProject: new, opened, recovered); changed()
  // and the others follow.
  void projectReplaced();
  // The graph changed (nodes, wires, options, groups): redraw and re-read. graphEdited comes
  // first with what changed, item by item.
  void graphEdited(const nns::ui::GraphChange& change);
  void changed();
  // An analysis was made: after an edit, in the event after it; for a new project, at once.
  void analysed();
  // The dataset or training settings changed.
  void settingsChanged();
  // Only positions changed.
  void nodesMoved(const std::vector<graph::NodeId>& nodes);
  void selectionChanged();
  void filePathChanged(const QString& path);
  // model() built the model anew after a change of the graph.
  void modelBuilt();
  // The architecture's flags changed in place (the frozen set).
  void modelStateChanged();
  // loadStateDict() checked a file's values against the architecture: they are to be loaded
  // (non-strict: only the keys that match).
  void stateDictLoaded(const nns::nn::StateDict& state, bool strict);
  // The state-dict match marks changed.
  void loadMarksChanged();
  // project().probes changed (added, removed, or by undo and redo).
  void probesChanged();
  void logMessage(const QString& text);

 private:
  // analysed: the graph changed what the analysis reads (else it and the model stay).
  void graphChanged(GraphChange change = GraphChange::all(), bool analysed = true);
  // Remakes layout() for the project as it is (positions unchanged); false, logged, when the
  // layout engine fails.
  bool relayout() const;
  // setProject, with the layout already made for it (open()) or none, and the analysis on its
  // way (open()) or none.
  void replaceProject(graph::Project project, const QString& path,
                      std::optional<graph::Layout> layout,
                      std::future<std::optional<graph::Analysis>> analysing = {});
  // What a patch applied that way does to the items (everything when groups changed).
  GraphChange changeOf(const GraphPatch& patch, bool forward) const;
  // Analyses the project now; the nodes whose shapes or problems changed are kept for
  // publishAnalysis() to tell.
  void analyseNow() const;
  // The edit's analysis, in the event after it: made (unless something asked for it first)
  // and told (graphEdited with the nodes it changed, then analysed()).
  void publishAnalysis();
  void takePendingLayout();
  // layout() becomes `layout`; the one it replaces (at 10,000 nodes thousands of boxes and
  // routes, half a millisecond to free) is freed in an event after the edit's.
  void useLayout(graph::Layout layout) const;
  // edit() with fn, then the graph laid out again, in one undo step.
  void editAndLayOut(const QString& text, const std::function<void(graph::Project&)>& fn);
  void applyFrozen(graph::GraphModule& model) const;

  graph::Project project_;
  // A spare copy of project_ that edits run on (edit()): kept equal to it (patches, positions,
  // settings) while shadowValid_; shadowAhead_ while an edit's command is pushed, whose redo
  // finds the copy already changed.
  graph::Project shadow_;
  bool shadowValid_ = false;
  bool shadowAhead_ = false;
  QUndoStack* undoStack_;
  QString filePath_;
  std::vector<graph::NodeId> selection_;
  mutable graph::Analysis analysis_;
  mutable bool analysisStale_ = false;  // an edit since analysis_ was made
  // The analysis open() makes on a worker while it collapses, lays out and draws the project
  // (none, or std::nullopt if it failed): valid only within open(), whose graphChanged takes it
  // (analyseNow) once the canvas has its items. The worker uses analysisCache_ meanwhile.
  mutable std::future<std::optional<graph::Analysis>> analysing_;
  // Starts publishAnalysis() once the events already waiting are done: the edit's repaint
  // comes first (a zero-time timer; a queued call would go before it).
  QTimer* analysisTimer_;
  mutable GraphChange analysisChange_;  // what analyses since the last publishAnalysis() changed
  mutable std::unordered_map<graph::NodeId, std::vector<size_t>> problemIndex_;  // analysis_'s
  // What the last analysis found for each node: an edit analyses again only what it changed
  // (and what its shapes reach). checkConnection's trial analysis uses it too.
  mutable graph::AnalysisCache analysisCache_;
  // parameterCount's counts by type and options; cleared when the blocks change.
  mutable std::unordered_map<std::string, int64_t> parameterCounts_;
  // And its answers by node, until the graph changes what the analysis reads (a collapse, a
  // move or a new project's first draw asks for each group's once).
  mutable std::unordered_map<graph::NodeId, std::optional<int64_t>> nodeParameterCounts_;
  std::shared_ptr<graph::GraphModule> model_;
  bool modelStale_ = true;
  QString modelError_;
  std::map<graph::NodeId, NodeLoadMark> loadMarks_;
  // Made on first use after what the canvas draws as boxes changed (layout() is const).
  mutable graph::Layout layout_;
  mutable bool layoutStale_ = true;
  // A layout an edit made for its new state, taken by applyPatch() instead of making it again.
  std::optional<graph::Layout> pendingLayout_;
};

}  // namespace nns::ui
