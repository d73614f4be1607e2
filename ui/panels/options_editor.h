// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The properties of the selected node: its name and an editor for each of its options,
// generated from the node type's option specs (kinds, defaults, ranges, choices). Every
// change is one undoable edit; a value the type refuses is reported and the editor reverts.
//
// A custom block's instance shows its arguments' values (empty: the default), then the block
// class itself, shared by every instance: its argument list (rename, default, remove, add)
// and the options of the nodes inside it, whose fields take a value or "$argument".
// A ModuleDict shows whether it is a switch and which key is active.
#include <QWidget>
#include <functional>

#include "engine/graph/node_types.h"
#include "engine/graph/project.h"

class QFormLayout;
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
  // Any field of the form by object name: "argument:<name>" (an instance's argument value),
  // "blockArgument:<name>", "blockDefault:<name>", "blockRemove:<name>", "blockNewArgument",
  // "blockNewDefault", "blockAddArgument", "inner:<node>:<option>" (a node inside the block),
  // "switch" and "active" (ModuleDict).
  QWidget* field(const QString& objectName) const;

 private:
  void rebuild();
  QWidget* makeForm();
  void setOption(graph::NodeId id, const std::string& name, const graph::Json& value);
  // An editor for one option's value; inside a block (`block` set) numbers and lists are
  // typed, so that "$argument" fits too. `set` gets each committed value.
  QWidget* optionEditor(const graph::OptionSpec& spec, const graph::Json& value,
                        const graph::BlockDef* block, std::function<void(const graph::Json&)> set);
  void addBlockRows(QFormLayout* layout, const graph::Node& instance, const graph::BlockDef& block);
  void addModuleDictRows(QFormLayout* layout, const graph::Node& dict);
  // Runs a project edit; when it is refused, the form is rebuilt to show the values held.
  void editOrRevert(const QString& text, const std::function<void(graph::Project&)>& fn);

  ProjectDocument* document_;
  QScrollArea* scroll_;
  graph::NodeId shown_ = 0;
};

}  // namespace nns::ui
