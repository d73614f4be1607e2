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

 signals:
  void nodeActivated(graph::NodeId id);
  void countChanged(int count);

 private:
  void refresh();

  ProjectDocument* document_;
};

}  // namespace nns::ui
