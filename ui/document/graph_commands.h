// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The undo commands of a ProjectDocument. They hold node ids and patches of the spec, never
// pointers to items or modules, so they stay valid whatever the canvas does in between.
#include <QPointF>
#include <QUndoCommand>
#include <map>

#include "ui/document/project_document.h"

namespace nns::ui {

// Any change to the graph: what it changed, both ways (GraphPatch). Obsolete when nothing.
class GraphEditCommand : public QUndoCommand {
 public:
  GraphEditCommand(ProjectDocument* document, const QString& text, GraphPatch patch);
  void undo() override;
  void redo() override;

 private:
  ProjectDocument* document_;
  GraphPatch patch_;
};

// Nodes dragged to new positions. Consecutive drags of the same nodes merge into one step; a
// drag that ends where it began is obsolete.
class MoveNodesCommand : public QUndoCommand {
 public:
  static constexpr int kId = 1;
  MoveNodesCommand(ProjectDocument* document, std::map<graph::NodeId, QPointF> from,
                   std::map<graph::NodeId, QPointF> to);
  int id() const override { return kId; }
  bool mergeWith(const QUndoCommand* other) override;
  void undo() override;
  void redo() override;

 private:
  ProjectDocument* document_;
  std::map<graph::NodeId, QPointF> from_, to_;
};

// The dataset and training settings before and after. Consecutive edits with the same text
// (a spin box stepped several times) merge into one step.
class SettingsEditCommand : public QUndoCommand {
 public:
  static constexpr int kId = 2;
  struct Settings {
    graph::DatasetSettings dataset;
    graph::TrainingSettings training;
    bool operator==(const Settings&) const = default;
  };
  SettingsEditCommand(ProjectDocument* document, const QString& text, Settings before,
                      Settings after);
  int id() const override { return kId; }
  bool mergeWith(const QUndoCommand* other) override;
  void undo() override;
  void redo() override;

 private:
  ProjectDocument* document_;
  Settings before_, after_;
};

}  // namespace nns::ui
