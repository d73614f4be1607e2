// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// TrainingDock: the training panel. The data set (a thumbnail of every built-in set, or a
// CSV file) with a field for every option the catalog gives it (engine/data/catalog.h, made by
// the option editor's own factory, ui/widgets/option_field.h), its test split, and Regenerate
// (a new seed); the loss, optimizer, learning rate (applied while running), batch size and
// weight decay; Start, Pause, Step, Reset; the step and epoch counters and steps per second;
// the eval-mode switch; checkpoint save and load. It scrolls when the dock is too short for it,
// so that no control ever covers another.
//
// Every setting is the project's: an edit is an undo step of the document (setDatasetSettings,
// setTrainingSettings) and the controls follow the document (undo, open). The run itself is
// the TrainingController's, which takes the edits to a new session when it is not running,
// and the learning rate and batch size at once.
#include <QWidget>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/graph/node_types.h"
#include "engine/graph/project.h"
#include "engine/train/session.h"

class QAction;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QScrollArea;
class QSpinBox;

namespace nns::ui {

class ProjectDocument;
class TrainingController;
class ClassSamplesView;

class TrainingDock : public QWidget {
  Q_OBJECT

 public:
  // The status line shows what the probes cost from this step on.
  static constexpr int64_t kProbeFigureAfterSteps = 50;

  TrainingDock(TrainingController* controller, QWidget* parent = nullptr);

  // Start (F5), Pause (Shift+F5), Step (F10), Reset (Ctrl+F5): the window's Train menu shows
  // the same actions.
  QAction* startAction() const { return startAct_; }
  QAction* pauseAction() const { return pauseAct_; }
  QAction* stepAction() const { return stepAct_; }
  QAction* resetAction() const { return resetAct_; }

  QListWidget* datasetList() const { return datasets_; }
  // The Data group: thumbnails, the chosen set's options, test split, Regenerate, Import CSV.
  QWidget* dataSection() const;
  // The field of an option of the chosen data set ("noise", "classes", "seed", ...), or nullptr.
  QWidget* datasetOptionField(const QString& option) const;
  // The field of an option of the loss or the optimizer ("momentum", "label_smoothing"), or
  // nullptr.
  QWidget* trainingOptionField(const QString& option) const;
  QLineEdit* learningRateEdit() const { return lr_; }
  QSpinBox* batchSizeBox() const { return batch_; }
  QCheckBox* evalModeBox() const { return evalMode_; }
  // Where the model trains: the CPU and each CUDA GPU by name; disabled, with the reason under
  // it, where this machine has no usable GPU (the project's training.device).
  QComboBox* deviceBox() const { return device_; }
  QLabel* deviceNote() const { return deviceNote_; }
  // The project's training.cuda_graphs: whether a GPU replays the steps as CUDA graphs; enabled
  // only while the device is a GPU.
  QCheckBox* cudaGraphsBox() const { return cudaGraphs_; }
  QLabel* counters() const { return counters_; }
  // The line under the learning rate that says why an input was refused ("" when none).
  QLabel* inputMessage() const { return inputMessage_; }

  // What the buttons do after their file dialogs.
  bool saveCheckpointTo(const QString& path);
  bool loadCheckpointFrom(const QString& path);
  // Uses a CSV file as the data set (label column: the given one, or the last column).
  bool importCsv(const QString& path, const QString& labelColumn = {});
  // Uses the user's data at `path` (engine/data/sources.h: an image folder, a folder of MNIST
  // or CIFAR files, an .npz or .npy) with its transforms; false, with a message, when the path
  // is none of those. An image folder starts with Resize(32), CenterCrop(32), ToTensor().
  bool useDataSource(const QString& path);
  // The user's data: its transforms' field (torchvision's text) and the per-class samples.
  QLineEdit* transformsEdit() const { return transforms_; }
  ClassSamplesView* classSamples() const { return classSamples_; }
  // Puts a Normalize with the data's per-channel mean and std at the end of the transforms
  // (replacing one there); false, with a message, when the data cannot be read.
  bool normalizeFromData();
  // Selects a built-in data set (its options start from the defaults).
  void chooseDataset(const QString& name);

 private:
  // The dock's sections, top to bottom; each makes its controls and lays them out in its
  // group box. Laid out in this order, they also give the tab order.
  QGroupBox* buildDataSection();
  QGroupBox* buildTrainingSection();
  // The device combo box, the CUDA graphs check box and the note under them that says why
  // there is no GPU.
  void createDeviceChoice();
  // The project's device and CUDA graphs setting in them.
  void showDeviceChoice(const graph::TrainingSettings& t);
  // Start, Pause, Step and Reset with their shortcuts: the Run section's buttons, the window's
  // Train menu and its toolbar all show these actions.
  void createRunActions();
  QGroupBox* buildRunSection();
  // The sections stacked in the scroll area that fills the dock.
  void layOutSections(QGroupBox* data, QGroupBox* training, QGroupBox* run);
  // Controls -> document edits (and the controller's run settings).
  void connectDataControls();
  void connectTrainingControls();
  void connectCheckpointButtons();
  void buildDatasetList();
  // The source and transforms rows of a "files" data set, inserted at `row` of the form.
  int addSourceRows(int row);
  void applyTransforms();
  void readProject();
  // Remakes the option rows for the data set the project uses now.
  void showDatasetOptions(const graph::DatasetSettings& d);
  void setDatasetOption(const std::string& name, const graph::Json& value);
  // Remakes the option rows of the loss and the optimizer the project uses now, when they
  // changed, and shows the project's values in them.
  void showTrainingOptions(const graph::TrainingSettings& t);
  void showStatus(const train::SessionStatus& status);
  void applyLearningRate();
  void editDataset(const QString& text, const std::function<void(graph::DatasetSettings&)>& fn);
  // The model's one Input takes the data's sample shape and dtype (part of the data set's edit,
  // so one undo takes both back): picking "reverse" leaves an Input of 8 int64 tokens, and the
  // layers after it show what no longer fits. The Input's id and new options when it must
  // change for data settings `d`.
  std::optional<std::pair<graph::NodeId, graph::Json>> inputFittingData(
      const graph::DatasetSettings& d) const;
  void editTraining(const QString& text, const std::function<void(graph::TrainingSettings&)>& fn);

  TrainingController* controller_;
  ProjectDocument* document_;
  QListWidget* datasets_;
  QPushButton* csvButton_;
  QScrollArea* scroll_;
  QGroupBox* dataBox_;
  QFormLayout* dataForm_;
  // The rows of the shown set's options, above the test split, and the set they are for.
  std::vector<std::pair<graph::OptionSpec, QWidget*>> optionFields_;
  std::optional<std::string> optionsShownFor_;
  QLabel* csvFile_ = nullptr;  // the CSV file's row, when the set is one
  // The user's data ("files"): its source row, and the transforms' row (both in the form, made
  // with the option rows); the per-class samples, under the form, shown for image sets.
  QLabel* sourceLabel_ = nullptr;
  QLineEdit* transforms_ = nullptr;
  QWidget* transformsRow_ = nullptr;
  ClassSamplesView* classSamples_;
  // The user's files as last read off the disk: their full path, kind and whether they hold a
  // test set of their own (readProject looks again only when the path changes).
  struct {
    std::string path;
    std::string kind;
    bool ownTest = false;
  } source_;
  QDoubleSpinBox* testSplit_;
  QPushButton* regenerate_;
  QComboBox* loss_;
  QComboBox* optimizer_;
  QFormLayout* trainForm_;
  // The rows of the loss's options (under Loss) and of the optimizer's (under the learning
  // rate), from their option specs, and the loss and optimizer they are for.
  std::vector<std::pair<graph::OptionSpec, QWidget*>> lossFields_, optimizerFields_;
  std::string lossFieldsFor_, optimizerFieldsFor_;
  QLineEdit* lr_;
  QSpinBox* batch_;
  QDoubleSpinBox* weightDecay_;
  QComboBox* device_;
  QCheckBox* cudaGraphs_;
  QLabel* deviceNote_;
  QLabel* inputMessage_;
  QAction* startAct_;
  QAction* pauseAct_;
  QAction* stepAct_;
  QAction* resetAct_;
  QLabel* counters_;
  QCheckBox* evalMode_;
  QPushButton* saveCkpt_;
  QPushButton* loadCkpt_;
};

}  // namespace nns::ui
