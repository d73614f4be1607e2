#pragma once
// The properties of the selected node: its name and an editor for each of its options,
// generated from the node type's option specs (kinds, defaults, ranges, choices). Every
// change is one undoable edit; a value the type refuses is reported and the editor reverts.
#include <QWidget>

#include "engine/graph/spec.h"

class QScrollArea;

namespace nns::ui {

class ProjectDocument;

class OptionsEditor : public QWidget {
  Q_OBJECT

 public:
  explicit OptionsEditor(ProjectDocument* document, QWidget* parent = nullptr);

  // The editor widget of an option of the shown node (for tests and focus), or nullptr.
  QWidget* editorFor(const QString& option) const;
  QWidget* nameEditor() const;

 private:
  void rebuild();
  QWidget* makeForm();
  void setOption(graph::NodeId id, const std::string& name, const graph::Json& value);

  ProjectDocument* document_;
  QScrollArea* scroll_;
  graph::NodeId shown_ = 0;
};

}  // namespace nns::ui
