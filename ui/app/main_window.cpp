// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLockFile>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTime>
#include <QTimer>
#include <QToolBar>
#include <QUndoView>
#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <set>
#include <utility>

#include "engine/export/pytorch_code.h"
#include "engine/graph/repeats.h"
#include "engine/onnx/onnx_export.h"
#include "engine/onnx/onnx_import.h"
#include "engine/serialize/serialize.h"
#include "engine/train/run_store.h"
#include "ui/app/compare_dialog.h"
#include "ui/app/compare_window.h"
#include "ui/app/example_project.h"
#include "ui/app/plugins_dialog.h"
#include "ui/app/torch_import_dialog.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/image_export.h"
#include "ui/canvas/node_item.h"
#include "ui/document/block_library.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/panels/inspector_widget.h"
#include "ui/panels/options_editor.h"
#include "ui/panels/palette_widget.h"
#include "ui/panels/problems_widget.h"
#include "ui/panels/profile_panel.h"
#include "ui/probes/node_health.h"
#include "ui/probes/probe_panel.h"
#include "ui/probes/sample_trace.h"
#include "ui/training/curves_widget.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/runs_panel.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_dock.h"

namespace nns::ui {
namespace {

constexpr const char* kClipboardMime = "application/x-nnstudio-graph";
constexpr int kMaxRecent = 8;
constexpr int kDefaultAutosaveSeconds = 30;
const QString kProjectFilter = QObject::tr("NN Studio projects (*.nns)");

// The lock file that marks a recovery file's window as alive.
QString recoveryLockPath(const QString& recoveryFile) {
  return QFileInfo(recoveryFile)
      .dir()
      .filePath(QFileInfo(recoveryFile).completeBaseName() + ".lock");
}

// Where the recovered project came from, kept per recovery file.
QString recoveryPathKey(const QString& recoveryFile) {
  return "recovery/" + QFileInfo(recoveryFile).completeBaseName();
}

void removeRecoveryFile(const QString& file) {
  QFile::remove(file);
  QSettings().remove(recoveryPathKey(file));
}

// A lock held for a window's lifetime: never stale by age, only when its process is gone.
std::unique_ptr<QLockFile> tryLockRecovery(const QString& recoveryFile) {
  auto lock = std::make_unique<QLockFile>(recoveryLockPath(recoveryFile));
  lock->setStaleLockTime(0);
  if (!lock->tryLock(0)) return nullptr;
  return lock;
}

}  // namespace

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  document_ = new ProjectDocument(this);
  scene_ = new GraphScene(document_, this);
  view_ = new GraphView(scene_, this);
  setCentralWidget(view_);
  setDockNestingEnabled(true);

  createActions();
  createDocks();
  createMenus();

  statusHint_ = new QLabel(this);
  statusZoom_ = new QLabel(this);
  statusZoom_->setObjectName("zoomLabel");
  statusBar()->addWidget(statusHint_, 1);
  statusBar()->addPermanentWidget(statusZoom_);
  const auto showZoom = [this](double z) {
    statusZoom_->setText(tr("Zoom %1%").arg(qRound(z * 100)));
  };
  connect(view_, &GraphView::zoomChanged, this, showZoom);
  showZoom(view_->zoom());
  connect(scene_, &GraphScene::hint, statusHint_, &QLabel::setText);
  connect(scene_, &GraphScene::contextMenuRequested, this, &MainWindow::showContextMenu);
  connect(document_, &ProjectDocument::logMessage, this, &MainWindow::appendLog);
  connect(document_, &ProjectDocument::filePathChanged, this, &MainWindow::updateTitle);
  connect(document_->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
  connect(document_, &ProjectDocument::selectionChanged, this, &MainWindow::updateActions);
  connect(document_, &ProjectDocument::probesChanged, this, &MainWindow::updateActions);
  connect(scene_, &QGraphicsScene::selectionChanged, this, &MainWindow::updateActions);
  connect(document_, &ProjectDocument::changed, this, &MainWindow::updateActions);
  connect(palette_, &PaletteWidget::nodeTypeActivated, this, [this](const QString& type) {
    const QPointF centre = view_->dropPosition(view_->viewport()->rect().center());
    const graph::NodeId id = document_->addNode(type, centre);
    if (id != 0) document_->setSelection({id});
  });
  connect(palette_, &PaletteWidget::libraryBlockActivated, this, [this](const QString& name) {
    const QPointF centre = view_->dropPosition(view_->viewport()->rect().center());
    const graph::NodeId id =
        BlockLibrary::user().addInstance(document_, name.toStdString(), centre);
    if (id != 0) document_->setSelection({id});
  });
  connect(problems_, &ProblemsWidget::nodeActivated, this, &MainWindow::centerOnNode);

  static int windowsMade = 0;
  recoveryFile_ =
      QDir(recoveryFolder())
          .filePath(
              QString("%1-%2.nns").arg(QCoreApplication::applicationPid()).arg(++windowsMade));
  recoveryLock_ = tryLockRecovery(recoveryFile_);
  autosaveTimer_ = new QTimer(this);
  connect(autosaveTimer_, &QTimer::timeout, this, &MainWindow::autosaveInBackground);
  setAutosaveInterval(kDefaultAutosaveSeconds);

  QSettings settings;
  resize(1500, 920);
  restoreGeometry(settings.value("window/geometry").toByteArray());
  restoreState(settings.value("window/state").toByteArray());
  rebuildRecentMenu();
  updateTitle();
  updateActions();
  reportPlugins();
}

void MainWindow::reportPlugins() {
  // What the program loaded at start, in the log; a failure also in the status bar, so that a
  // plugin that did not load is never silent.
  const plugin::PluginReport& report = plugin::plugin_report();
  QStringList names;
  for (const plugin::LoadedPlugin& p : report.loaded) names << qs(p.name + " " + p.version);
  if (!names.isEmpty()) appendLog(tr("Plugins loaded: %1").arg(names.join(", ")));
  const int failed = static_cast<int>(report.failed.size());
  if (failed == 0) return;
  for (const plugin::PluginFailure& f : report.failed)
    appendLog(tr("Plugin file %1 was skipped: %2").arg(qs(f.file), qs(f.reason)));
  statusBar()->showMessage(
      tr("%n plugin file(s) could not be loaded: see Help > Plugins", "", failed), 15000);
}

MainWindow::~MainWindow() {
  finishAutosave();
  // QWidget's destructor deletes the children after this part of the window is gone, and
  // some signal on the way (the scene's selectionChanged, as its selected items go): no slot
  // of this window may run then.
  for (QObject* child : findChildren<QObject*>()) child->disconnect(this);
  // The canvas goes now, the view before its scene, while what they use is whole: a scene
  // deleted with the other children would reset its view from QGraphicsScene's destructor,
  // and the view's overrides would call into the half-destroyed GraphScene.
  delete view_;
  delete scene_;
}

void MainWindow::createActions() {
  createFileActions();
  createEditActions();
  createSelectionActions();
  createViewActions();
  createProbeActions();
}

QAction* MainWindow::makeAction(const QString& text, const QKeySequence& key,
                                std::function<void()> slot, const QIcon& icon) {
  auto* a = new QAction(icon, text, this);
  if (!key.isEmpty()) a->setShortcut(key);
  connect(a, &QAction::triggered, this, std::move(slot));
  addAction(a);
  return a;
}

void MainWindow::createFileActions() {
  const QStyle* s = style();
  newAct_ = makeAction(
      tr("&New"), QKeySequence::New, [this] { newProject(); },
      s->standardIcon(QStyle::SP_FileIcon));
  openAct_ = makeAction(
      tr("&Open…"), QKeySequence::Open, [this] { openDialog(); },
      s->standardIcon(QStyle::SP_DialogOpenButton));
  saveAct_ = makeAction(
      tr("&Save"), QKeySequence::Save, [this] { save(); },
      s->standardIcon(QStyle::SP_DialogSaveButton));
  saveAsAct_ = makeAction(tr("Save &As…"), QKeySequence::SaveAs, [this] { saveAsDialog(); });
  exportImageAct_ = makeAction(tr("&Image…"), QKeySequence(), [this] { exportImageDialog(); });
  exportPyTorchAct_ =
      makeAction(tr("&PyTorch Code…"), QKeySequence(), [this] { exportPyTorchDialog(); });
  exportPyTorchAct_->setObjectName("exportPyTorchAction");
  exportPyTorchAct_->setToolTip(
      tr("Write the model as PyTorch code (model.py), a training script for one process or "
         "DistributedDataParallel (train.py), the data and the weights as trained now, into a "
         "new folder"));
  exportOnnxAct_ = makeAction(tr("&ONNX Model…"), QKeySequence(), [this] { exportOnnxDialog(); });
  exportOnnxAct_->setObjectName("exportOnnxAction");
  exportOnnxAct_->setToolTip(
      tr("Write the model with the weights as trained now as an ONNX file (eval mode, a dynamic "
         "batch), for ONNX Runtime and other tools"));
  exportImageAct_->setToolTip(
      tr("The canvas (or the selected nodes' area) as an SVG or PNG picture"));
  importOnnxAct_ = makeAction(tr("&ONNX Model…"), QKeySequence(), [this] { importOnnxDialog(); });
  importOnnxAct_->setObjectName("importOnnxAction");
  importPyTorchAct_ =
      makeAction(tr("&PyTorch Code…"), QKeySequence(), [this] { importPyTorchDialog(); });
  importPyTorchAct_->setObjectName("importPyTorchAction");
  importPyTorchAct_->setToolTip(
      tr("Open an nn.Module from Python code (model.py:Net, torchvision.models:resnet18()) as a "
         "new project: its module tree, state-dict keys and weights, traced by torch.fx"));
  importOnnxAct_->setToolTip(
      tr("Open an ONNX model (torch.onnx.export, opsets 13 to 21) as a new project with its "
         "weights, under PyTorch's module names"));
  compareAct_ = makeAction(tr("&Compare With…"), QKeySequence(), [this] { compareDialog(); });
  compareAct_->setObjectName("compareAction");
  compareAct_->setToolTip(
      tr("Compare this model with another project, an ONNX model or a snapshot of its runs: what "
         "was added, removed and changed, and how far outputs, gradients and weights are apart"));
  loadStateAct_ = makeAction(
      tr("&Load State Dict…"), QKeySequence(), [this] { loadStateDictDialog(); },
      s->standardIcon(QStyle::SP_ArrowDown));
  saveStateAct_ =
      makeAction(tr("Save State &Dict…"), QKeySequence(), [this] { saveStateDictDialog(); });
  strictAct_ = new QAction(tr("S&trict State Dict Loading"), this);
  strictAct_->setCheckable(true);
  strictAct_->setChecked(true);
  strictAct_->setToolTip(tr("Refuse state dicts with missing or unexpected keys"));
  quitAct_ = makeAction(tr("&Quit"), QKeySequence::Quit, [this] { close(); });
}

void MainWindow::createEditActions() {
  const QStyle* s = style();
  undoAct_ = document_->undoStack()->createUndoAction(this, tr("&Undo"));
  undoAct_->setShortcut(QKeySequence::Undo);
  undoAct_->setIcon(s->standardIcon(QStyle::SP_ArrowBack));
  redoAct_ = document_->undoStack()->createRedoAction(this, tr("&Redo"));
  // Ctrl+Y everywhere, besides the platform's own redo keys (which may include it already).
  QList<QKeySequence> redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redoKeys.contains(QKeySequence(Qt::CTRL | Qt::Key_Y))) {
    redoKeys.prepend(QKeySequence(Qt::CTRL | Qt::Key_Y));
  }
  redoAct_->setShortcuts(redoKeys);
  redoAct_->setIcon(s->standardIcon(QStyle::SP_ArrowForward));
  addAction(undoAct_);
  addAction(redoAct_);
  copyAct_ = makeAction(tr("&Copy"), QKeySequence::Copy, [this] { copySelection(); });
  pasteAct_ = makeAction(tr("&Paste"), QKeySequence::Paste, [this] { paste(); });
  deleteAct_ = makeAction(tr("&Delete"), QKeySequence::Delete, [this] { deleteSelection(); });
  deleteAct_->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
  selectAllAct_ = makeAction(tr("Select &All"), QKeySequence::SelectAll, [this] {
    std::vector<graph::NodeId> all;
    for (const graph::Node& n : document_->project().graph.nodes) all.push_back(n.id);
    document_->setSelection(all);
  });
}

void MainWindow::createSelectionActions() {
  groupSeqAct_ = makeAction(tr("Group as &Sequential"), QKeySequence(Qt::CTRL | Qt::Key_G),
                            [this] { groupSelection("Sequential"); });
  groupListAct_ = makeAction(tr("Group as Module&List"), QKeySequence(),
                             [this] { groupSelection("ModuleList"); });
  groupDictAct_ = makeAction(tr("Group as Module&Dict"), QKeySequence(),
                             [this] { groupSelection("ModuleDict"); });
  ungroupAct_ = makeAction(tr("&Ungroup"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_G), [this] {
    for (graph::NodeId id : document_->selection()) {
      const graph::Node* n = document_->project().graph.find(id);
      if (n && isGroup(*n)) document_->ungroup(id);
    }
  });
  collapseAct_ =
      makeAction(tr("Collapse / &Expand Group"), QKeySequence(Qt::Key_Space | Qt::CTRL), [this] {
        for (graph::NodeId id : document_->selection()) {
          const graph::Node* n = document_->project().graph.find(id);
          NodeItem* item = scene_->nodeItem(id);
          if (n && isGroup(*n) && item) document_->setCollapsed(id, !n->collapsed);
        }
      });
  // Repeated blocks: a group with runs of equal members folds them into one box xN each; a box
  // that stands for a run (or its group) shows them all again.
  foldAct_ = makeAction(tr("Fold / Show &Repeats"), QKeySequence(), [this] {
    std::set<graph::NodeId> groups;
    for (graph::NodeId id : document_->selection()) {
      if (auto group = foldGroupOf(id)) groups.insert(*group);
    }
    for (graph::NodeId g : groups)
      document_->setFolded(g, !document_->project().graph.at(g).folded);
  });
  foldAct_->setObjectName("foldAction");
  makeBlockAct_ = makeAction(tr("Make Custom &Block…"), QKeySequence(Qt::CTRL | Qt::Key_B), [this] {
    if (document_->selection().empty()) return;
    bool ok = false;
    const QString name = QInputDialog::getText(this, tr("Make Custom Block"),
                                               tr("Class name of the new module (like MyLinear):"),
                                               QLineEdit::Normal, tr("MyBlock"), &ok);
    if (ok && !name.trimmed().isEmpty()) document_->makeBlock(document_->selection(), name);
  });
  inlineBlockAct_ = makeAction(tr("&Inline Block"), QKeySequence(), [this] {
    for (graph::NodeId id : document_->selection()) {
      const graph::Node* n = document_->project().graph.find(id);
      if (n && document_->project().find_block(n->type)) document_->inlineBlock(id);
    }
  });
  renameAct_ = makeAction(tr("&Rename"), QKeySequence(Qt::Key_F2), [this] {
    inspector_->setCurrentWidget(inspector_->optionsEditor());
    if (auto* name = qobject_cast<QLineEdit*>(inspector_->optionsEditor()->nameEditor())) {
      name->setFocus();
      name->selectAll();
    }
  });
}

void MainWindow::createViewActions() {
  frameAct_ = makeAction(tr("&Frame All"), QKeySequence(Qt::Key_F), [this] { view_->frameAll(); });
  resetLayoutAct_ = makeAction(tr("&Reset Layout"), QKeySequence(), [this] {
    applyDefaultLayout();
    view_->frameAll();
  });
  layoutAct_ = makeAction(tr("&Auto-Layout"), QKeySequence(Qt::CTRL | Qt::Key_L), [this] {
    document_->autoLayout();
    view_->frameAll();
  });
  // The flow's direction is the project's (saved with it); choosing it lays the graph out again.
  leftToRightAct_ = makeAction(tr("Flow &Left to Right"), QKeySequence(), [this] {
    document_->setLayoutDirection(leftToRightAct_->isChecked() ? "LR" : "TB");
    view_->frameAll();
  });
  leftToRightAct_->setCheckable(true);
  connect(document_, &ProjectDocument::changed, this,
          [this] { leftToRightAct_->setChecked(document_->project().layout_direction == "LR"); });
  zoomInAct_ = makeAction(tr("Zoom &In"), QKeySequence::ZoomIn, [this] { view_->zoomBy(1.25); });
  zoomOutAct_ = makeAction(tr("Zoom &Out"), QKeySequence::ZoomOut, [this] { view_->zoomBy(0.8); });
}

void MainWindow::createProbeActions() {
  addProbeAct_ = makeAction(tr("Add &Probe"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P),
                            [this] { addProbesToSelection(); });
  addProbeAct_->setToolTip(
      tr("Watch the selected nodes' activations and gradients while the "
         "model trains (hooks on their modules)"));
  removeProbeAct_ =
      makeAction(tr("Remove Probe"), QKeySequence(), [this] { removeProbesFromSelection(); });
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addActions({newAct_, openAct_});
  recentMenu_ = file->addMenu(tr("Open &Recent"));
  file->addActions({saveAct_, saveAsAct_});
  QMenu* importMenu = file->addMenu(tr("&Import"));
  importMenu->addActions({importOnnxAct_, importPyTorchAct_});
  QMenu* exportMenu = file->addMenu(tr("&Export"));
  exportMenu->addActions({exportImageAct_, exportPyTorchAct_, exportOnnxAct_});
  file->addAction(compareAct_);
  file->addSeparator();
  file->addActions({loadStateAct_, saveStateAct_, strictAct_});
  file->addSeparator();
  file->addAction(quitAct_);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addActions({undoAct_, redoAct_});
  edit->addSeparator();
  edit->addActions({copyAct_, pasteAct_, deleteAct_, selectAllAct_, renameAct_});
  edit->addSeparator();
  edit->addActions(
      {groupSeqAct_, groupListAct_, groupDictAct_, ungroupAct_, collapseAct_, foldAct_});
  edit->addSeparator();
  edit->addActions({makeBlockAct_, inlineBlockAct_});
  edit->addSeparator();
  edit->addActions({addProbeAct_, removeProbeAct_});

  viewMenu_ = menuBar()->addMenu(tr("&View"));
  viewMenu_->addActions({frameAct_, layoutAct_, leftToRightAct_, zoomInAct_, zoomOutAct_});
  viewMenu_->addSeparator();
  for (QDockWidget* dock : findChildren<QDockWidget*>())
    viewMenu_->addAction(dock->toggleViewAction());
  viewMenu_->addSeparator();
  viewMenu_->addAction(resetLayoutAct_);

  QMenu* train = menuBar()->addMenu(tr("&Train"));
  train->addActions({trainingDock_->startAction(), trainingDock_->pauseAction(),
                     trainingDock_->stepAction(), trainingDock_->resetAction()});
  train->addSeparator();
  traceStepAct_ =
      train->addAction(tr("Step Through Traced Sample"), this, [this] { stepThroughTrace(); });
  traceStepAct_->setShortcut(Qt::Key_F11);
  traceStepAct_->setToolTip(tr("Click a test point in the Output panel to trace it first"));
  traceStepAct_->setEnabled(false);

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  pluginsAct_ = help->addAction(tr("&Plugins…"), this, [this] {
    PluginsDialog dialog(plugin::plugin_report(), this);
    dialog.exec();
  });
  pluginsAct_->setObjectName("pluginsAction");
  QAction* aboutAct = help->addAction(tr("&About NN Studio"), this, [this] {
    QMessageBox::about(this, tr("About NN Studio"),
                       tr("<b>NN Studio %1</b><br>Build, train and inspect neural networks, with "
                          "PyTorch's modules, names and state dict files.<br><br>Free software "
                          "under the GNU General Public License, version 3 or later.<br><br>Qt %2")
                           .arg(QStringLiteral(NNS_VERSION), QString::fromLatin1(qVersion())));
  });
  aboutAct->setObjectName("aboutAction");

  QToolBar* tools = addToolBar(tr("Main"));
  tools->setObjectName("mainToolBar");
  tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  tools->addActions({newAct_, openAct_, saveAct_});
  tools->addSeparator();
  tools->addActions({trainingDock_->startAction(), trainingDock_->pauseAction(),
                     trainingDock_->stepAction(), trainingDock_->resetAction()});
  tools->addSeparator();
  tools->addActions({undoAct_, redoAct_});
  tools->addSeparator();
  tools->addActions({groupSeqAct_, ungroupAct_});
  tools->addSeparator();
  tools->addActions({frameAct_, layoutAct_});
  tools->addSeparator();
  tools->addAction(loadStateAct_);
  tools->addAction(addProbeAct_);
  addProbeAct_->setIconText(tr("Probe"));
  groupSeqAct_->setIconText(tr("Group"));
  ungroupAct_->setIconText(tr("Ungroup"));
  frameAct_->setIconText(tr("Frame"));
  layoutAct_->setIconText(tr("Layout"));
  loadStateAct_->setIconText(tr("Load weights"));
}

void MainWindow::createDocks() {
  auto dock = [this](const QString& title, const QString& name, QWidget* widget,
                     Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(widget);
    addDockWidget(area, d);
    docks_.push_back(d);
    return d;
  };
  training_ = new TrainingController(document_, this);
  palette_ = new PaletteWidget(document_, this);
  QDockWidget* paletteDock = dock(tr("Layers"), "paletteDock", palette_, Qt::LeftDockWidgetArea);
  paletteDock->setMinimumWidth(220);

  inspector_ = new InspectorWidget(document_, training_, this);
  QDockWidget* inspectorDock =
      dock(tr("Inspector"), "inspectorDock", inspector_, Qt::RightDockWidgetArea);
  inspectorDock->setMinimumWidth(340);

  auto* bottom = new QTabWidget(this);
  problems_ = new ProblemsWidget(document_, bottom);
  // A model whose Input does not take the data set's samples: a problem on the Input.
  connect(training_, &TrainingController::dataMismatchChanged, problems_,
          &ProblemsWidget::setDataMismatch);
  problems_->setDataMismatch(training_->dataMismatchNode(), training_->dataMismatch());
  // The user's images that could not be read, from the session's data.
  auto showSkipped = [this] {
    QStringList files;
    if (const train::TrainingSession* s = training_->currentSession()) {
      for (const data::Dataset* d : {&s->train_set(), &s->test_set()}) {
        for (const std::string& f : d->skipped) {
          if (!files.contains(qs(f))) files << qs(f);
        }
      }
    }
    problems_->setSkippedFiles(files);
  };
  connect(training_, &TrainingController::sessionReset, problems_, showSkipped);
  connect(training_, &TrainingController::sessionMade, problems_, showSkipped);
  log_ = new QPlainTextEdit(bottom);
  log_->setReadOnly(true);
  log_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  log_->setMaximumBlockCount(5000);
  history_ = new QUndoView(document_->undoStack(), bottom);
  history_->setEmptyLabel(tr("<opened>"));
  bottom->addTab(problems_, tr("Problems"));
  bottom->addTab(log_, tr("Log"));
  bottom->addTab(history_, tr("History"));
  connect(problems_, &ProblemsWidget::countChanged, bottom, [bottom](int n) {
    bottom->setTabText(0, n == 0 ? tr("Problems") : tr("Problems (%1)").arg(n));
  });
  dock(tr("Problems, Log and History"), "bottomDock", bottom, Qt::BottomDockWidgetArea);
  trainingDock_ = new TrainingDock(training_, this);
  dock(tr("Training"), "trainingDock", trainingDock_, Qt::LeftDockWidgetArea);
  boundary_ = new DecisionBoundaryWidget(training_, this);
  dock(tr("Output"), "boundaryDock", boundary_, Qt::BottomDockWidgetArea);
  curves_ = new CurvesWidget(training_, this);
  dock(tr("Curves"), "curvesDock", curves_, Qt::BottomDockWidgetArea);
  runsPanel_ = new RunsPanel(training_, curves_, scene_, this);
  // Trace one sample: a test point clicked in the Output panel, what each node did with it.
  connect(training_, &TrainingController::traceArrived, this,
          [this](const train::SampleTrace& trace) {
            if (trace.id != boundary_->traceRequest()) return;
            if (!trace.error.empty()) {
              appendLog(tr("Tracing the sample failed: %1").arg(qs(trace.error)));
              return;
            }
            scene_->setNodeBadges(traceBadges(trace, *training_, document_->project().graph));
            trace_ = std::make_unique<train::SampleTrace>(trace);
            traceStep_ = 0;
            traceView_->clear();
            traceStepAct_->setEnabled(true);
            statusBar()->showMessage(
                tr("Sample traced: Train → Step Through Traced Sample (F11) walks its forward "
                   "pass node by node"),
                8000);
          });
  connect(boundary_, &DecisionBoundaryWidget::traceCleared, this, [this] {
    scene_->setNodeBadges({});
    trace_.reset();
    traceView_->clear();
    traceStepAct_->setEnabled(false);
  });
  dock(tr("Runs"), "runsDock", runsPanel_, Qt::BottomDockWidgetArea);
  traceView_ = new TraceStepView(this);
  dock(tr("Traced Sample"), "traceDock", traceView_, Qt::BottomDockWidgetArea);
  // View > Profile: measuring only while it can be seen (a hidden or covered tab costs the run
  // nothing).
  profilePanel_ = new ProfilePanel(training_, scene_, this);
  QDockWidget* profileDock =
      dock(tr("Profile"), "profileDock", profilePanel_, Qt::BottomDockWidgetArea);
  connect(profileDock, &QDockWidget::visibilityChanged, profilePanel_, &ProfilePanel::setActive);
  connect(profileDock->toggleViewAction(), &QAction::triggered, profileDock,
          [profileDock](bool on) {
            if (on) profileDock->raise();
          });
  connect(profilePanel_, &ProfilePanel::nodeActivated, this, [this](graph::NodeId node) {
    document_->setSelection({node});
    centerOnNode(node);
  });
  connect(training_, &TrainingController::message, this, &MainWindow::appendLog);

  // Probes: health and the NaN highlight on the canvas, the probe panel in the inspector.
  health_ = new NodeHealthModel(this);
  health_->follow(training_);
  scene_->setHealthModel(health_);
  probePanel_ = new ProbePanel(document_, training_, health_, inspector_);
  inspector_->addTab(probePanel_, tr("Probe"));
  connect(health_, &NodeHealthModel::failureChanged, this, [this] {
    problems_->setRunFailure(health_->failedNode(),
                             health_->failed() ? health_->failureMessage() : QString());
  });
  connect(scene_, &GraphScene::probeActivated, this, [this](graph::NodeId node) {
    document_->setSelection({node});
    inspector_->setCurrentWidget(probePanel_);
  });
  applyDefaultLayout();
}

void MainWindow::applyDefaultLayout() {
  auto find = [this](const char* name) { return findChild<QDockWidget*>(name); };
  QDockWidget* paletteDock = find("paletteDock");
  QDockWidget* trainDock = find("trainingDock");
  QDockWidget* inspectorDock = find("inspectorDock");
  QDockWidget* bottomDock = find("bottomDock");
  QDockWidget* boundaryDock = find("boundaryDock");
  QDockWidget* curvesDock = find("curvesDock");
  QDockWidget* runsDock = find("runsDock");
  QDockWidget* traceDock = find("traceDock");
  for (QDockWidget* d : docks_) {
    d->setFloating(false);
    d->show();
  }
  addDockWidget(Qt::LeftDockWidgetArea, paletteDock);
  addDockWidget(Qt::RightDockWidgetArea, inspectorDock);
  addDockWidget(Qt::BottomDockWidgetArea, bottomDock);
  // Training: the dock beside the palette (raised: Start is the first thing to press), the
  // model's output and the curves along the bottom, so the canvas stays the centre.
  tabifyDockWidget(paletteDock, trainDock);
  trainDock->raise();
  splitDockWidget(bottomDock, boundaryDock, Qt::Horizontal);
  splitDockWidget(boundaryDock, curvesDock, Qt::Horizontal);
  // The runs beside the problems and the log: a tab away from the curves they draw into.
  tabifyDockWidget(bottomDock, runsDock);
  // Step Through's tensors: raised when it steps.
  tabifyDockWidget(bottomDock, traceDock);
  bottomDock->raise();
  // The profile beside the curves, closed until View > Profile opens it: it measures only
  // while shown.
  QDockWidget* profileDock = find("profileDock");
  tabifyDockWidget(curvesDock, profileDock);
  profileDock->hide();
  curvesDock->raise();
  // The canvas gets the room: side docks no wider than their controls need, a low bottom row
  // whose log is a narrow column (one problem is one row), the output picture near square.
  resizeDocks({trainDock, inspectorDock}, {290, 370}, Qt::Horizontal);
  resizeDocks({bottomDock, boundaryDock, curvesDock}, {330, 230, 700}, Qt::Horizontal);
  resizeDocks({bottomDock}, {215}, Qt::Vertical);
}

void MainWindow::updateTitle() {
  const QString path = document_->filePath();
  const QString name = path.isEmpty() ? tr("Untitled") : QFileInfo(path).fileName();
  setWindowTitle(QString("%1[*] — NN Studio").arg(name));
  setWindowModified(document_->isModified());
}

void MainWindow::updateActions() {
  const auto& sel = document_->selection();
  bool anyGroup = false, anyInstance = false;
  for (graph::NodeId id : sel) {
    const graph::Node* n = document_->project().graph.find(id);
    anyGroup = anyGroup || (n && isGroup(*n));
    anyInstance = anyInstance || (n && document_->project().find_block(n->type));
  }
  makeBlockAct_->setEnabled(!sel.empty());
  inlineBlockAct_->setEnabled(anyInstance);
  copyAct_->setEnabled(!sel.empty());
  groupSeqAct_->setEnabled(!sel.empty());
  groupListAct_->setEnabled(!sel.empty());
  groupDictAct_->setEnabled(!sel.empty());
  ungroupAct_->setEnabled(anyGroup);
  collapseAct_->setEnabled(anyGroup);
  foldAct_->setEnabled(std::any_of(
      sel.begin(), sel.end(), [this](graph::NodeId id) { return foldGroupOf(id).has_value(); }));
  renameAct_->setEnabled(sel.size() == 1);
  bool canAdd = false, canRemove = !scene_->selectedProbes().empty();
  for (graph::NodeId id : sel) {
    canAdd = canAdd || (document_->canProbe(id) && !document_->probeOf(id));
    canRemove = canRemove || document_->probeOf(id);
  }
  addProbeAct_->setEnabled(canAdd);
  removeProbeAct_->setEnabled(canRemove);
}

void MainWindow::appendLog(const QString& text) {
  log_->appendPlainText(QTime::currentTime().toString("HH:mm:ss  ") + text);
  statusBar()->showMessage(text, 6000);
}

graph::NodeId MainWindow::stepThroughTrace() {
  if (!trace_) return 0;
  // The modules that are nodes on the canvas, in the order they ran.
  std::map<std::string, graph::NodeId> nodes;
  for (const graph::Node& n : document_->project().graph.nodes) {
    const QString module = training_->moduleNameOf(n.id);
    if (!module.isNull()) nodes[module.toStdString()] = n.id;
  }
  const std::vector<train::ModuleTrace>& modules = trace_->modules;
  for (size_t tried = 0; tried < modules.size(); ++tried) {
    const size_t at = (traceStep_ + tried) % modules.size();
    const auto node = nodes.find(modules[at].module);
    if (node == nodes.end()) continue;
    traceStep_ = at + 1;
    document_->setSelection({node->second});
    centerOnNode(node->second);
    const graph::Node& n = document_->project().graph.at(node->second);
    // The node's input, output and gradient for the sample, drawn.
    traceView_->showStep(tr("%1 (%2), traced sample at step %3, loss %4")
                             .arg(qs(n.name), qs(n.type))
                             .arg(trace_->step)
                             .arg(trace_->loss, 0, 'g', 4),
                         modules[at]);
    if (auto* dock = qobject_cast<QDockWidget*>(traceView_->parentWidget())) dock->raise();
    return node->second;
  }
  return 0;
}

void MainWindow::centerOnNode(qint64 id) {
  if (NodeItem* item = scene_->shownItem(id)) view_->centerOn(item);
}

void MainWindow::showContextMenu(QPoint screenPos) {
  QMenu menu(this);
  menu.addActions({renameAct_, copyAct_, deleteAct_});
  menu.addSeparator();
  menu.addActions(
      {groupSeqAct_, groupListAct_, groupDictAct_, ungroupAct_, collapseAct_, foldAct_});
  menu.addSeparator();
  menu.addActions({makeBlockAct_, inlineBlockAct_});
  menu.addSeparator();
  updateActions();
  menu.addActions({addProbeAct_, removeProbeAct_});
  menu.exec(screenPos);
}

std::optional<graph::NodeId> MainWindow::foldGroupOf(graph::NodeId id) const {
  const graph::Project& p = document_->project();
  const graph::Node* n = p.graph.find(id);
  if (!n) return std::nullopt;
  if (n->folded || graph::has_repeats(p, *n)) return id;
  if (scene_->repeatCount(id) > 1) {
    if (const graph::Node* parent = p.graph.parent_of(id)) return parent->id;
  }
  return std::nullopt;
}

void MainWindow::groupSelection(const QString& type) {
  document_->groupNodes(document_->selection(), type);
}

void MainWindow::copySelection() {
  const std::vector<graph::NodeId> sel = document_->selection();
  if (sel.empty()) return;
  const QByteArray json = QByteArray::fromStdString(document_->copyNodes(sel).dump(2));
  auto* mime = new QMimeData;
  mime->setData(kClipboardMime, json);
  mime->setText(QString::fromUtf8(json));
  QApplication::clipboard()->setMimeData(mime);
  appendLog(tr("Copied %n node(s)", nullptr, static_cast<int>(sel.size())));
}

void MainWindow::paste() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime || !mime->hasFormat(kClipboardMime)) return;
  graph::Json clip;
  try {
    clip = graph::Json::parse(mime->data(kClipboardMime).toStdString());
  } catch (const std::exception& e) {
    appendLog(tr("Paste refused: the clipboard holds no graph (%1)").arg(e.what()));
    return;
  }
  document_->pasteNodes(clip, QPointF(40, 40));
}

void MainWindow::deleteSelection() {
  const std::vector<graph::NodeId> probes = scene_->selectedProbes();
  const std::vector<graph::NodeId> nodes = scene_->selectedNodes();
  const std::vector<graph::PortRef> wires = scene_->selectedWires();
  if (probes.empty()) {
    document_->removeItems(nodes, wires);
    return;
  }
  document_->undoStack()->beginMacro(tr("Delete"));
  for (graph::NodeId id : probes) document_->removeProbe(id);
  if (!nodes.empty() || !wires.empty()) document_->removeItems(nodes, wires);
  document_->undoStack()->endMacro();
}

void MainWindow::addProbesToSelection() {
  std::vector<graph::NodeId> targets;
  for (graph::NodeId id : document_->selection()) {
    if (document_->canProbe(id) && !document_->probeOf(id)) targets.push_back(id);
  }
  if (targets.empty()) return;
  document_->undoStack()->beginMacro(
      tr("Add %n probe(s)", nullptr, static_cast<int>(targets.size())));
  for (graph::NodeId id : targets) document_->addProbe(id);
  document_->undoStack()->endMacro();
}

void MainWindow::removeProbesFromSelection() {
  std::vector<graph::NodeId> targets = scene_->selectedProbes();
  for (graph::NodeId id : document_->selection()) {
    if (document_->probeOf(id) && std::find(targets.begin(), targets.end(), id) == targets.end())
      targets.push_back(id);
  }
  if (targets.empty()) return;
  document_->undoStack()->beginMacro(
      tr("Remove %n probe(s)", nullptr, static_cast<int>(targets.size())));
  for (graph::NodeId id : targets) document_->removeProbe(id);
  document_->undoStack()->endMacro();
}

// ---- Files --------------------------------------------------------------------------------

bool MainWindow::maybeSave() {
  if (!document_->isModified()) return true;
  const auto answer = QMessageBox::warning(
      this, tr("Unsaved changes"), tr("The project has unsaved changes. Save them?"),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel);
  if (answer == QMessageBox::Save) return save();
  return answer == QMessageBox::Discard;
}

void MainWindow::newProject() {
  if (!maybeSave()) return;
  document_->newProject();
  view_->frameAll();
}

void MainWindow::openDialog() {
  if (!maybeSave()) return;
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open Project"), dir, kProjectFilter);
  if (!path.isEmpty()) openFile(path);
}

bool MainWindow::openFile(const QString& path) {
  try {
    document_->load(path);
  } catch (const std::exception& e) {
    appendLog(tr("Could not open %1: %2").arg(path, e.what()));
    QMessageBox::critical(this, tr("Could not open the project"), QString::fromUtf8(e.what()));
    return false;
  }
  addRecentFile(path);
  tidyLayout();
  view_->frameAll();
  return true;
}

void MainWindow::tidyLayout() {
  // A file laid out for smaller boxes (or by hand elsewhere) gets the canvas's own layout, as
  // part of opening it rather than as an undo step.
  document_->prepareForCanvas();
}

void MainWindow::openExample() {
  document_->setProject(spiralsExample(), QString());
  appendLog(tr("Opened the example spirals.nns"));
  tidyLayout();
  view_->frameAll();
}

bool MainWindow::save() {
  if (document_->filePath().isEmpty()) return saveAsDialog();
  return saveTo(document_->filePath());
}

bool MainWindow::saveAsDialog() {
  QString dir = document_->filePath();
  if (dir.isEmpty()) {
    dir = QSettings().value("files/lastDir", QDir::homePath()).toString() + "/" +
          qs(document_->project().name) + ".nns";
  }
  QString path = QFileDialog::getSaveFileName(this, tr("Save Project"), dir, kProjectFilter);
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += ".nns";
  return saveTo(path);
}

bool MainWindow::saveTo(const QString& path) {
  try {
    document_->save(path);
  } catch (const std::exception& e) {
    appendLog(tr("Could not save %1: %2").arg(path, e.what()));
    QMessageBox::critical(this, tr("Could not save the project"), QString::fromUtf8(e.what()));
    return false;
  }
  finishAutosave();  // or it would write the file again after it is gone
  removeRecoveryFile(recoveryFile());
  addRecentFile(path);
  return true;
}

void MainWindow::addRecentFile(const QString& path) {
  QSettings settings;
  const QString full = QFileInfo(path).absoluteFilePath();
  QStringList recent = settings.value("files/recent").toStringList();
  recent.removeAll(full);
  recent.prepend(full);
  while (recent.size() > kMaxRecent) recent.removeLast();
  settings.setValue("files/recent", recent);
  settings.setValue("files/lastDir", QFileInfo(full).absolutePath());
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recentMenu_->clear();
  const QStringList recent = QSettings().value("files/recent").toStringList();
  for (const QString& path : recent) {
    recentMenu_
        ->addAction(QFileInfo(path).fileName(), this,
                    [this, path] {
                      if (maybeSave()) openFile(path);
                    })
        ->setToolTip(path);
  }
  recentMenu_->setEnabled(!recent.isEmpty());
}

void MainWindow::loadStateDictDialog() {
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString();
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Load State Dict"), dir, tr("State dicts (*.pt *.pth *.bin *.safetensors)"));
  if (path.isEmpty()) return;
  try {
    const QString report = document_->loadStateDict(path, strictAct_->isChecked());
    QMessageBox::information(this, tr("State dict"), report);
  } catch (const std::exception& e) {
    appendLog(tr("Could not load %1: %2").arg(path, e.what()));
    QMessageBox::critical(this, tr("Could not load the state dict"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::saveStateDictDialog() {
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString() + "/" +
                      qs(document_->project().name) + ".pt";
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save State Dict"), dir, tr("PyTorch (*.pt *.pth);;safetensors (*.safetensors)"));
  if (path.isEmpty()) return;
  saveStateDictTo(path);
}

bool MainWindow::saveStateDictTo(const QString& path) {
  try {
    // The weights as trained so far (the session's; a run pauses for the moment it takes).
    const std::optional<nn::StateDict> weights = training_->stateDict();
    if (!weights) throw ValueError(document_->modelError().toStdString());
    document_->saveStateDict(path, *weights);
    return true;
  } catch (const std::exception& e) {
    appendLog(tr("Could not save %1: %2").arg(path, e.what()));
    QMessageBox::critical(this, tr("Could not save the state dict"), QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::exportPyTorchDialog() {
  const QString start = QSettings().value("files/lastDir", QDir::homePath()).toString() + "/" +
                        qs(document_->project().name) + "_pytorch";
  const QString dir =
      QFileDialog::getSaveFileName(this, tr("Export PyTorch Code to a New Folder"), start,
                                   QString(), nullptr, QFileDialog::ShowDirsOnly);
  if (dir.isEmpty()) return;
  bool replace = false;
  if (QFileInfo::exists(dir)) {
    if (QMessageBox::question(this, tr("Replace the Folder?"),
                              tr("%1 exists. Replace it and everything in it with the export?")
                                  .arg(QDir::toNativeSeparators(dir))) != QMessageBox::Yes)
      return;
    replace = true;
  }
  exportPyTorchTo(dir, replace);
}

bool MainWindow::exportPyTorchTo(const QString& dir, bool replace) {
  try {
    // The weights as trained so far (the session's; a run pauses for the moment it takes).
    const std::optional<nn::StateDict> state = training_->stateDict();
    if (!state) throw ValueError(document_->modelError().toStdString());
    const nn::StateDict& weights = *state;
    const QString base = document_->filePath().isEmpty()
                             ? QString()
                             : QFileInfo(document_->filePath()).absolutePath();
    exporting::write_pytorch_export(document_->project(), dir.toStdString(), base.toStdString(),
                                    &weights, replace);
    appendLog(tr("Exported PyTorch code to %1: model.py (class %2), train.py, data.pt, "
                 "weights.pt, README.md")
                  .arg(QDir::toNativeSeparators(dir), qs(document_->project().name)));
    statusBar()->showMessage(tr("Exported PyTorch code to %1").arg(QDir::toNativeSeparators(dir)),
                             5000);
    return true;
  } catch (const std::exception& e) {
    appendLog(tr("Could not export PyTorch code to %1: %2").arg(dir, e.what()));
    QMessageBox::critical(this, tr("Could not export PyTorch code"), QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::compareDialog() {
  CompareDialog dialog(training_->runStore(), document_->project().training.batch_size, this);
  if (dialog.exec() == QDialog::Accepted) compareWith(dialog.source());
}

CompareWindow* MainWindow::compareWith(const CompareSource& source) {
  CompareSide a, b;
  a.project = document_->project();
  a.weights = training_->stateDict();
  const QString here = document_->filePath().isEmpty()
                           ? tr("Untitled")
                           : QFileInfo(document_->filePath()).fileName();
  a.weightsName = tr("as trained now (step %1)").arg(training_->status().step);
  a.name = QString("%1, %2").arg(here, a.weightsName);
  a.baseDir = document_->baseDir();
  try {
    QApplication::setOverrideCursor(Qt::WaitCursor);
    if (source.kind == CompareSource::Kind::Snapshot) {
      train::RunStore* store = training_->runStore();
      const std::optional<train::RunInfo> run = store ? store->run(source.run) : std::nullopt;
      const std::optional<train::SnapshotInfo> snapshot =
          run ? store->snapshot_at(source.run, source.step) : std::nullopt;
      if (!snapshot) {
        throw ValueError("run " + std::to_string(source.run) + " has no snapshot at step " +
                         std::to_string(source.step));
      }
      // The run's own architecture, as it was when it started: an edit since is a difference.
      b.project = graph::parse_project(run->project, "run " + std::to_string(source.run));
      b.weights = store->load_weights(*snapshot);
      b.weightsName = tr("run %1 at step %2").arg(source.run).arg(snapshot->step);
      b.name = tr("%1, %2").arg(here, b.weightsName);
      b.baseDir = a.baseDir;
    } else {
      const std::string path = source.path.toStdString();
      if (source.path.endsWith(".onnx", Qt::CaseInsensitive)) {
        graph::ImportedProject imported = onnx::import_model_file(path);
        b.project = std::move(imported.project);
        b.weights = std::move(imported.weights);
        b.weightsName = tr("the ONNX model's");
      } else {
        b.project = graph::load_project(path);
      }
      if (!source.weights.isEmpty()) {
        b.weights = serialize::load_state_dict_file(source.weights.toStdString());
        b.weightsName = QFileInfo(source.weights).fileName();
      }
      b.name = QString("%1, %2").arg(
          QFileInfo(source.path).fileName(),
          b.weights ? tr("weights %1").arg(b.weightsName) : tr("initial weights"));
      b.baseDir = QFileInfo(source.path).absolutePath();
    }
    QApplication::restoreOverrideCursor();
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    appendLog(tr("Could not compare with %1: %2")
                  .arg(source.kind == CompareSource::Kind::Snapshot
                           ? tr("run %1 at step %2").arg(source.run).arg(source.step)
                           : source.path,
                       e.what()));
    QMessageBox::critical(this, tr("Could not compare"), QString::fromUtf8(e.what()));
    return nullptr;
  }
  auto* window = new CompareWindow(std::move(a), std::move(b), source.batch, this);
  window->show();
  return window;
}

void MainWindow::importOnnxDialog() {
  if (!maybeSave()) return;
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString();
  const QString model =
      QFileDialog::getOpenFileName(this, tr("Import ONNX Model"), dir, tr("ONNX models (*.onnx)"));
  if (model.isEmpty()) return;
  // Where the project goes: beside the model by default; its weights go beside the project.
  const QFileInfo info(model);
  QString project = QFileDialog::getSaveFileName(
      this, tr("Save the Imported Project As"),
      info.absolutePath() + "/" + info.completeBaseName() + ".nns", kProjectFilter);
  if (project.isEmpty()) return;
  if (QFileInfo(project).suffix() != "nns") project += ".nns";
  const QString weights = QString::fromStdString(graph::weights_path_for(project.toStdString()));
  if (QFileInfo::exists(weights) &&
      QMessageBox::question(this, tr("Replace the Weights?"),
                            tr("%1 exists. Replace it with the imported model's weights?")
                                .arg(QDir::toNativeSeparators(weights))) != QMessageBox::Yes)
    return;
  importOnnxTo(model, project);
}

TorchImportDialog* MainWindow::importPyTorchDialog() {
  auto* dialog = new TorchImportDialog(this);
  dialog->setAttribute(Qt::WA_DeleteOnClose);
  connect(
      dialog, &TorchImportDialog::imported, this,
      [this](const QString& project, const QStringList& notes) {
        if (!maybeSave() || !openFile(project)) return;
        const QString weights =
            QString::fromStdString(graph::weights_path_for(project.toStdString()));
        try {
          document_->loadStateDict(weights, /*strict=*/true);
        } catch (const std::exception& e) {
          appendLog(tr("Could not load the imported weights %1: %2").arg(weights, e.what()));
          return;
        }
        appendLog(tr("Imported PyTorch code as %1 with its weights %2")
                      .arg(QDir::toNativeSeparators(project), QDir::toNativeSeparators(weights)));
        for (const QString& note : notes) appendLog(tr("Note: %1").arg(note));
        statusBar()->showMessage(tr("Imported %1").arg(QFileInfo(project).fileName()), 8000);
      });
  dialog->open();
  return dialog;
}

bool MainWindow::importOnnxTo(const QString& model, const QString& project) {
  graph::ImportedProject imported;
  try {
    QApplication::setOverrideCursor(Qt::WaitCursor);
    imported = onnx::import_model_file(model.toStdString());
    graph::write_imported(imported, project.toStdString());
    QApplication::restoreOverrideCursor();
  } catch (const std::exception& e) {
    QApplication::restoreOverrideCursor();
    appendLog(tr("Could not import %1: %2").arg(model, e.what()));
    QMessageBox::critical(this, tr("Could not import the ONNX model"), QString::fromUtf8(e.what()));
    return false;
  }
  if (!openFile(project)) return false;
  const QString weights = QString::fromStdString(graph::weights_path_for(project.toStdString()));
  try {
    document_->loadStateDict(weights, /*strict=*/true);
  } catch (const std::exception& e) {
    appendLog(tr("Could not load the imported weights %1: %2").arg(weights, e.what()));
    QMessageBox::critical(this, tr("Could not load the imported weights"),
                          QString::fromUtf8(e.what()));
    return false;
  }
  appendLog(tr("Imported %1 as %2 (%3 nodes) with its weights %4")
                .arg(QDir::toNativeSeparators(model), QDir::toNativeSeparators(project))
                .arg(imported.project.graph.nodes.size())
                .arg(QDir::toNativeSeparators(weights)));
  for (const std::string& note : imported.notes) appendLog(tr("Note: %1").arg(qs(note)));
  statusBar()->showMessage(
      tr("Imported %1 with its weights").arg(QFileInfo(model).fileName()) +
          (imported.notes.empty()
               ? QString()
               : tr(" (see the log for %n note(s))", "", static_cast<int>(imported.notes.size()))),
      8000);
  return true;
}

void MainWindow::exportOnnxDialog() {
  const QString start = QSettings().value("files/lastDir", QDir::homePath()).toString() + "/" +
                        qs(document_->project().name) + ".onnx";
  QString path =
      QFileDialog::getSaveFileName(this, tr("Export ONNX Model"), start, tr("ONNX model (*.onnx)"));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().toLower() != "onnx") path += ".onnx";
  bool ok = false;
  const int opset = QInputDialog::getInt(
      this, tr("ONNX Opset"),
      tr("The ONNX opset to write (%1 to %2; 17 is the first with LayerNormalization):")
          .arg(onnx::kMinOpset)
          .arg(onnx::kMaxOpset),
      static_cast<int>(onnx::kDefaultOpset), static_cast<int>(onnx::kMinOpset),
      static_cast<int>(onnx::kMaxOpset), 1, &ok);
  if (!ok) return;
  exportOnnxTo(path, opset);
}

bool MainWindow::exportOnnxTo(const QString& path, int opset) {
  try {
    // The weights as trained so far (the session's; a run pauses for the moment it takes).
    const std::optional<nn::StateDict> state = training_->stateDict();
    if (!state) throw ValueError(document_->modelError().toStdString());
    const nn::StateDict& weights = *state;
    onnx::write_model_file(document_->project(), path.toStdString(), &weights, opset);
    appendLog(tr("Exported the ONNX model (opset %1) to %2")
                  .arg(opset)
                  .arg(QDir::toNativeSeparators(path)));
    statusBar()->showMessage(
        tr("Exported the ONNX model to %1").arg(QDir::toNativeSeparators(path)), 5000);
    return true;
  } catch (const std::exception& e) {
    appendLog(tr("Could not export the ONNX model to %1: %2").arg(path, e.what()));
    QMessageBox::critical(this, tr("Could not export the ONNX model"), QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::exportImageDialog() {
  const bool selectionOnly = !scene_->selectedNodes().empty();
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString() + "/" +
                      qs(document_->project().name) + ".svg";
  QString filter;
  QString path = QFileDialog::getSaveFileName(
      this, selectionOnly ? tr("Export Selection as Image") : tr("Export Image"), dir,
      tr("SVG image (*.svg);;PNG image (*.png)"), &filter);
  if (path.isEmpty()) return;
  // A name typed without an extension takes the chosen filter's.
  const QString suffix = QFileInfo(path).suffix().toLower();
  if (suffix != "svg" && suffix != "png") path += filter.startsWith("PNG") ? ".png" : ".svg";
  exportImageTo(path, selectionOnly);
}

bool MainWindow::exportImageTo(const QString& path, bool selectionOnly) {
  const QString error = exportSceneImage(scene_, path, selectionOnly);
  if (error.isEmpty()) {
    appendLog((selectionOnly ? tr("Exported the selection to %1") : tr("Exported the canvas to %1"))
                  .arg(path));
    return true;
  }
  appendLog(tr("Could not export %1: %2").arg(path, error));
  QMessageBox::critical(this, tr("Could not export the image"), error);
  return false;
}

// ---- Autosave and recovery -------------------------------------------------------------------

QString MainWindow::recoveryFolder() {
  const QString dir =
      QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath("recovery");
  QDir().mkpath(dir);
  return dir;
}

void MainWindow::setAutosaveInterval(int seconds) {
  autosaveTimer_->start(seconds * 1000);
}

void MainWindow::autosave() {
  // The timer's write, waited for: one way to write the recovery file.
  finishAutosave();
  autosaveInBackground();
  finishAutosave();
}

void MainWindow::autosaveInBackground() {
  if (autosaving_.valid()) {
    // The last one is still writing (a slow disk): this tick is skipped, not queued.
    if (autosaving_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    finishAutosave();
  }
  if (!document_->isModified()) return;
  QSettings().setValue(recoveryPathKey(recoveryFile()), document_->filePath());
  autosaving_ = std::async(std::launch::async,
                           [project = document_->project(), path = recoveryFile().toStdString()] {
                             try {
                               graph::save_project(project, path);
                               return std::string();
                             } catch (const std::exception& e) {
                               return std::string(e.what());
                             }
                           });
}

void MainWindow::finishAutosave() {
  if (!autosaving_.valid()) return;
  const std::string error = autosaving_.get();
  if (!error.empty()) appendLog(tr("Autosave failed: %1").arg(QString::fromStdString(error)));
}

bool MainWindow::offerRecovery(bool ask) {
  // Newest first; a file is an orphan when its window's lock can be taken.
  const QFileInfoList candidates =
      QDir(recoveryFolder()).entryInfoList({"*.nns"}, QDir::Files, QDir::Time);
  QString file;
  std::unique_ptr<QLockFile> orphanLock;
  for (const QFileInfo& info : candidates) {
    if (info.absoluteFilePath() == QFileInfo(recoveryFile()).absoluteFilePath()) continue;
    orphanLock = tryLockRecovery(info.absoluteFilePath());
    if (orphanLock) {
      file = info.absoluteFilePath();
      break;
    }
  }
  if (file.isEmpty()) return false;
  const QString original = QSettings().value(recoveryPathKey(file)).toString();
  if (ask) {
    const auto answer = QMessageBox::question(
        this, tr("Restore unsaved work?"),
        tr("NN Studio did not close properly last time. Restore the unsaved work of %1?")
            .arg(original.isEmpty() ? tr("an untitled project") : QFileInfo(original).fileName()),
        QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes);
    if (answer != QMessageBox::Yes) {
      removeRecoveryFile(file);
      return false;
    }
  }
  try {
    document_->setProject(graph::load_project(file.toStdString()), original);
  } catch (const std::exception& e) {
    appendLog(tr("The recovery file did not load: %1").arg(e.what()));
    return false;
  }
  // The restored work keeps its positions as the user left them (no tidying).
  // The restored work is not saved anywhere yet: it becomes this window's recovery file
  // before the orphan goes, so a crash now loses nothing either.
  document_->undoStack()->resetClean();
  autosave();
  removeRecoveryFile(file);
  updateTitle();
  view_->frameAll();
  appendLog(tr("Restored unsaved work"));
  return true;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!maybeSave()) {
    event->ignore();
    return;
  }
  QSettings settings;
  settings.setValue("window/geometry", saveGeometry());
  settings.setValue("window/state", saveState());
  finishAutosave();
  removeRecoveryFile(recoveryFile());
  event->accept();
}

void MainWindow::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange) {
    scene_->setTheme(CanvasTheme::fromPalette(QApplication::palette()));
  }
  QMainWindow::changeEvent(event);
}

}  // namespace nns::ui
