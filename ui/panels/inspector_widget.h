// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The inspector: the selected node's properties (OptionsEditor), the model's module tree
// (named_modules with train/eval mode), its named_parameters (shape, dtype, requires_grad as a
// checkbox that freezes or unfreezes, numel, value norm, gradient norm), its named_buffers
// (shape, dtype, persistent) and its PyTorch-style repr. With one node selected, the tables
// show that node's module; otherwise the whole model's.
//
// The structure comes from the document's architecture; the values (the norms of the weights
// and of the last step's gradients) from the training session, which owns them: read at rest
// (TrainingController::withRestingModel), again whenever the weights change at rest
// (weightsChanged). While a run goes on, the table keeps the values it read last, and says at
// which step they were read. After an edit the session is made again for the values only
// once the edits stop for a moment (a burst of edits never waits for a new model).
#include <QTabWidget>
#include <map>
#include <string>
#include <utility>

class QLabel;
class QPlainTextEdit;
class QTableWidget;
class QTreeWidget;

namespace nns::ui {

class OptionsEditor;
class ProjectDocument;
class TrainingController;

class InspectorWidget : public QTabWidget {
  Q_OBJECT

 public:
  InspectorWidget(ProjectDocument* document, TrainingController* training,
                  QWidget* parent = nullptr);

  OptionsEditor* optionsEditor() const { return options_; }
  // The model's views, brought up to date first.
  QTreeWidget* moduleTree() { return fresh(modules_); }
  QTableWidget* parameterTable() { return fresh(parameters_); }
  QTableWidget* bufferTable() { return fresh(buffers_); }
  QPlainTextEdit* reprView() { return fresh(repr_); }

  // Re-reads the model now. The document's signals mark the views stale and refresh them on
  // the next event loop turn (a burst of edits builds the model once) while one of them is
  // shown, else when one is shown or asked for: building a large model on every edit or
  // selection while the Node tab is open would cost each a frame.
  void refresh();

 private:
  void scheduleRefresh();
  bool showsModel() const;
  template <typename View>
  View* fresh(View* view) {
    if (stale_) refresh();
    return view;
  }
  QString scopePrefix() const;

  // The norms of the session's parameters and their gradients, by name (readValues()).
  void readValues();

  ProjectDocument* document_;
  TrainingController* training_;
  OptionsEditor* options_;
  QTreeWidget* modules_;
  QLabel* parameterScope_;
  QTableWidget* parameters_;
  QTableWidget* buffers_;
  QPlainTextEdit* repr_;
  bool pending_ = false;
  bool stale_ = true;
  bool filling_ = false;
  // The norms read last (value, gradient; NaN: none), the step they are of, and whether they
  // are the session's as it is now.
  std::map<std::string, std::pair<double, double>> values_;
  int64_t valuesStep_ = -1;
  bool valuesCurrent_ = false;
  QTimer* valuesTimer_;
};

}  // namespace nns::ui
