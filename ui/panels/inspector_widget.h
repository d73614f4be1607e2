#pragma once
// The inspector: the selected node's properties (OptionsEditor), the model's module tree
// (named_modules with train/eval mode), its named_parameters (shape, dtype, requires_grad as a
// checkbox that freezes or unfreezes, numel, value norm, gradient norm), its named_buffers
// (shape, dtype, persistent) and its PyTorch-style repr. With one node selected, the tables
// show that node's module; otherwise the whole model's.
#include <QTabWidget>

class QLabel;
class QPlainTextEdit;
class QTableWidget;
class QTreeWidget;

namespace nns::ui {

class OptionsEditor;
class ProjectDocument;

class InspectorWidget : public QTabWidget {
  Q_OBJECT

 public:
  explicit InspectorWidget(ProjectDocument* document, QWidget* parent = nullptr);

  OptionsEditor* optionsEditor() const { return options_; }
  QTreeWidget* moduleTree() const { return modules_; }
  QTableWidget* parameterTable() const { return parameters_; }
  QTableWidget* bufferTable() const { return buffers_; }
  QPlainTextEdit* reprView() const { return repr_; }

  // Re-reads the model now (the document's signals schedule this for the next event loop
  // turn, so a burst of edits builds the model once).
  void refresh();

 private:
  void scheduleRefresh();
  QString scopePrefix() const;

  ProjectDocument* document_;
  OptionsEditor* options_;
  QTreeWidget* modules_;
  QLabel* parameterScope_;
  QTableWidget* parameters_;
  QTableWidget* buffers_;
  QPlainTextEdit* repr_;
  bool pending_ = false;
  bool filling_ = false;
};

}  // namespace nns::ui
