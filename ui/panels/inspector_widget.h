// SPDX-License-Identifier: GPL-3.0-or-later
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
  // The model's views, brought up to date first.
  QTreeWidget* moduleTree() { return fresh(modules_); }
  QTableWidget* parameterTable() { return fresh(parameters_); }
  QTableWidget* bufferTable() { return fresh(buffers_); }
  QPlainTextEdit* reprView() { return fresh(repr_); }

  // Re-reads the model now. The document's signals mark the views stale and refresh them on
  // the next event loop turn (a burst of edits builds the model once); after a graph edit only
  // while one of them is shown, else when one is shown or asked for: building a large model
  // on every edit while the Node tab is open would cost every edit a frame.
  void refresh();

 private:
  void scheduleRefresh(bool evenIfHidden);
  bool showsModel() const;
  template <typename View>
  View* fresh(View* view) {
    if (stale_) refresh();
    return view;
  }
  QString scopePrefix() const;

  ProjectDocument* document_;
  OptionsEditor* options_;
  QTreeWidget* modules_;
  QLabel* parameterScope_;
  QTableWidget* parameters_;
  QTableWidget* buffers_;
  QPlainTextEdit* repr_;
  bool pending_ = false;
  bool stale_ = true;
  bool filling_ = false;
};

}  // namespace nns::ui
