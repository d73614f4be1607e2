// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The main window: palette (left), canvas (centre), inspector (right), problems, log and undo
// history (bottom); menus, toolbar and shortcuts; files, recent files, autosave and crash
// recovery; window layout remembered in QSettings.
#include <QIcon>
#include <QKeySequence>
#include <QMainWindow>
#include <QString>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/spec.h"
#include "engine/train/session.h"

class QAction;
class QDockWidget;
class QLabel;
class QLockFile;
class QMenu;
class QPlainTextEdit;
class QTimer;
class QUndoView;

namespace nns::ui {

class GraphScene;
class TorchImportDialog;
class GraphView;
class InspectorWidget;
class PaletteWidget;
class ProblemsWidget;
class ProjectDocument;
class CompareWindow;
struct CompareSource;
class CurvesWidget;
class RunsPanel;
class TraceStepView;
class DecisionBoundaryWidget;
class NodeHealthModel;
class ProbePanel;
class ProfilePanel;
class TrainingController;
class TrainingDock;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  ProjectDocument* document() const { return document_; }
  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  PaletteWidget* palette() const { return palette_; }
  InspectorWidget* inspector() const { return inspector_; }
  ProblemsWidget* problems() const { return problems_; }
  // Training: the controller (the one link to the engine's session), its dock and plots.
  TrainingController* training() const { return training_; }
  TrainingDock* trainingDock() const { return trainingDock_; }
  // Probes: what they saw per node (health on the canvas) and the inspector's probe tab.
  NodeHealthModel* nodeHealth() const { return health_; }
  ProbePanel* probePanel() const { return probePanel_; }
  CurvesWidget* curves() const { return curves_; }
  // View > Profile: where the step's time goes, per module.
  ProfilePanel* profilePanel() const { return profilePanel_; }
  RunsPanel* runsPanel() const { return runsPanel_; }
  // Step Through Traced Sample's view of each node's tensors (a tab beside the log).
  TraceStepView* traceView() const { return traceView_; }
  DecisionBoundaryWidget* boundary() const { return boundary_; }
  QPlainTextEdit* log() const { return log_; }

  // Opens a project file; shows the error and returns false when it cannot.
  bool openFile(const QString& path);
  // Opens the built-in spirals example.
  void openExample();
  bool saveTo(const QString& path);
  // The model's state dict as it is trained now (.pt, .pth or .safetensors, by the name);
  // shows the error and returns false when it cannot.
  bool saveStateDictTo(const QString& path);
  // File > Export Image: the canvas, or with selectionOnly the selection's area, as SVG or PNG
  // (by the name); shows the error and returns false when it cannot.
  bool exportImageTo(const QString& path, bool selectionOnly);
  // File > Export > PyTorch Code: model.py, README.md and the weights as trained now
  // (weights.pt) in the folder `dir` (engine/export/pytorch_code.h); `replace` an existing
  // one. Shows the error and returns false when it cannot.
  bool exportPyTorchTo(const QString& dir, bool replace);
  // File > Export > ONNX Model: the model with the weights as trained now as an ONNX file of
  // the given opset (engine/onnx/onnx_export.h). Shows the error and returns false when it
  // cannot.
  bool exportOnnxTo(const QString& path, int opset);
  // File > Import > ONNX Model: the model `model` (.onnx) written as the project `project` (.nns)
  // with its weights beside it (.safetensors), then opened with the weights loaded. Shows the
  // error and returns false when it cannot; a model that cannot be read writes nothing.
  bool importOnnxTo(const QString& model, const QString& project);
  // File > Import > PyTorch Code: opens the dialog (ui/app/torch_import_dialog.h), which traces
  // the code in a QProcess; the project it writes opens with its weights loaded. Returns the
  // dialog (it deletes itself when closed).
  TorchImportDialog* importPyTorchDialog();
  // File > Compare With...: the model diff of this project (its weights as trained now) and
  // `source`, in a window of its own (ui/app/compare_window.h). Shows the error and returns
  // nullptr when B cannot be read.
  CompareWindow* compareWith(const CompareSource& source);

  // This window's recovery file: autosave writes it while there is unsaved work and a clean
  // close removes it. Every window has its own, named by process id and a counter, and holds
  // a lock file beside it while it lives, so two running windows never take each other's work.
  QString recoveryFile() const { return recoveryFile_; }
  // Where every window's recovery files are.
  static QString recoveryFolder();
  void setAutosaveInterval(int seconds);
  // Writes the recovery file now if there is unsaved work (what the autosave timer does).
  void autosave();
  // When a window that is gone (closed without saving by a crash or a kill) left a recovery
  // file, the newest one: asks (when ask is set) and restores it. Returns whether it restored.
  // A file whose window still runs, in this process or another, is left alone.
  bool offerRecovery(bool ask = true);

  // Groups the selection into a container (what Ctrl+G does for Sequential).
  // The group whose repeats a Fold / Show Repeats on `id` toggles: the group itself (one with
  // runs, or folded), or the group of a box that stands for a folded run.
  std::optional<graph::NodeId> foldGroupOf(graph::NodeId id) const;
  void groupSelection(const QString& type);
  void copySelection();
  void paste();
  void deleteSelection();
  // Adds a probe to every selected node that can take one and has none (one undo step).
  void addProbesToSelection();
  // Removes the probes of the selected nodes and of the selected probe tags (one undo step).
  void removeProbesFromSelection();

  // Train > Step Through Traced Sample (F11): with a sample traced (a test point clicked in
  // the Output panel), selects the next node of its forward pass in the order the modules ran
  // (after the last, the first again) and says in the status bar what went in and came out.
  // The node selected (0 when there is no trace).
  graph::NodeId stepThroughTrace();

 protected:
  void closeEvent(QCloseEvent* event) override;
  void changeEvent(QEvent* event) override;

 private:
  // The window's actions, grouped by what they act on; createMenus puts them in the menus and
  // the toolbar.
  void createActions();
  // A window action: its text, shortcut (none when empty), what it does and its icon.
  QAction* makeAction(const QString& text, const QKeySequence& key, std::function<void()> slot,
                      const QIcon& icon = QIcon());
  void createFileActions();
  // Undo, redo and the clipboard's.
  void createEditActions();
  // What the Edit menu does to the selected nodes: group, collapse, fold, custom blocks, rename.
  void createSelectionActions();
  void createViewActions();
  void createProbeActions();
  void createMenus();
  void createDocks();
  // Where the docks go and their sizes by default (View > Reset Layout); a saved layout
  // replaces it at startup.
  void applyDefaultLayout();
  void tidyLayout();
  void updateTitle();
  void updateActions();
  void addRecentFile(const QString& path);
  void rebuildRecentMenu();
  bool maybeSave();
  void newProject();
  void openDialog();
  bool save();
  bool saveAsDialog();
  void loadStateDictDialog();
  void saveStateDictDialog();
  void exportImageDialog();
  void exportPyTorchDialog();
  void exportOnnxDialog();
  void importOnnxDialog();
  void compareDialog();
  // The plugins loaded at start and the files that failed, in the log and the status bar.
  void reportPlugins();
  void showContextMenu(QPoint screenPos);
  void appendLog(const QString& text);
  void centerOnNode(qint64 id);

  ProjectDocument* document_;
  GraphScene* scene_;
  GraphView* view_;
  PaletteWidget* palette_;
  InspectorWidget* inspector_;
  ProblemsWidget* problems_;
  std::vector<QDockWidget*> docks_;
  TrainingController* training_;
  TrainingDock* trainingDock_;
  NodeHealthModel* health_;
  ProbePanel* probePanel_;
  ProfilePanel* profilePanel_ = nullptr;
  CurvesWidget* curves_;
  RunsPanel* runsPanel_;
  TraceStepView* traceView_ = nullptr;
  DecisionBoundaryWidget* boundary_;
  QPlainTextEdit* log_;
  QUndoView* history_;
  QLabel* statusZoom_;
  QLabel* statusHint_;
  QTimer* autosaveTimer_;
  // The timer's autosave: a copy of the project written on a worker thread (writing a
  // 10,000-node project is a tenth of a second); its error, or "", when done.
  std::future<std::string> autosaving_;
  void autosaveInBackground();
  // Waits for the worker's autosave (before the file is written again or removed), and logs
  // its failure.
  void finishAutosave();
  QString recoveryFile_;
  std::unique_ptr<QLockFile> recoveryLock_;
  QMenu* recentMenu_ = nullptr;
  QMenu* viewMenu_ = nullptr;

  QAction *newAct_, *openAct_, *saveAct_, *saveAsAct_, *exportImageAct_, *exportPyTorchAct_,
      *exportOnnxAct_, *importOnnxAct_, *loadStateAct_, *saveStateAct_, *strictAct_, *quitAct_;
  QAction* importPyTorchAct_ = nullptr;
  QAction* compareAct_ = nullptr;  // File > Compare With
  QAction *undoAct_, *redoAct_, *copyAct_, *pasteAct_, *deleteAct_, *selectAllAct_;
  QAction *groupSeqAct_, *groupListAct_, *groupDictAct_, *ungroupAct_, *collapseAct_, *foldAct_,
      *renameAct_, *makeBlockAct_, *inlineBlockAct_;
  QAction *frameAct_, *layoutAct_, *leftToRightAct_, *zoomInAct_, *zoomOutAct_, *resetLayoutAct_;
  QAction *addProbeAct_, *removeProbeAct_;
  QAction* pluginsAct_ = nullptr;              // Help > Plugins
  QAction* traceStepAct_ = nullptr;            // Train > Step Through Traced Sample
  std::unique_ptr<train::SampleTrace> trace_;  // the sample traced now (none: null)
  size_t traceStep_ = 0;                       // the next module of trace_ to show
};

}  // namespace nns::ui
