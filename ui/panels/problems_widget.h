// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The problems the analysis finds in the graph (node, port, message). Clicking one selects
// its node and asks the canvas to show it.
#include <QTreeWidget>

#include "engine/graph/spec.h"

namespace nns::ui {

class ProjectDocument;

class ProblemsWidget : public QTreeWidget {
  Q_OBJECT

 public:
  explicit ProblemsWidget(ProjectDocument* document, QWidget* parent = nullptr);
  // The error that stopped a training run (a NaN/Inf in a node), listed first until it is
  // cleared (an empty message) when the run is reset.
  void setRunFailure(graph::NodeId node, const QString& message);
  // A model whose Input does not take the data set's samples
  // (TrainingController::dataMismatch): listed on the Input until it fits (an empty message).
  void setDataMismatch(graph::NodeId node, const QString& message);
  // The user's files that could not be read and were left out of the data (data::Dataset::
  // skipped, each "file: why"): one entry with their count, each file under it.
  void setSkippedFiles(const QStringList& files);

 signals:
  void nodeActivated(graph::NodeId id);
  void countChanged(int count);

 protected:
  // An empty list says so, rather than showing bare column headers.
  void paintEvent(QPaintEvent* event) override;

 private:
  void refresh();

  ProjectDocument* document_;
  graph::NodeId failedNode_ = 0;
  QString failure_;
  graph::NodeId mismatchNode_ = 0;
  QString mismatch_;
  QStringList skipped_;
};

}  // namespace nns::ui
