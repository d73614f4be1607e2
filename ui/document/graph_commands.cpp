// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/document/graph_commands.h"

namespace nns::ui {

GraphEditCommand::GraphEditCommand(ProjectDocument* document, const QString& text, GraphPatch patch)
    : QUndoCommand(text), document_(document), patch_(std::move(patch)) {
  setObsolete(patch_.empty());
}

void GraphEditCommand::undo() {
  document_->applyPatch(patch_, false);
}

void GraphEditCommand::redo() {
  document_->applyPatch(patch_, true);
}

MoveNodesCommand::MoveNodesCommand(ProjectDocument* document, std::map<graph::NodeId, QPointF> from,
                                   std::map<graph::NodeId, QPointF> to)
    : QUndoCommand(QObject::tr("Move %n node(s)", nullptr, static_cast<int>(to.size()))),
      document_(document),
      from_(std::move(from)),
      to_(std::move(to)) {
  setObsolete(from_ == to_);
}

bool MoveNodesCommand::mergeWith(const QUndoCommand* other) {
  const auto* move = static_cast<const MoveNodesCommand*>(other);
  if (move->from_.size() != to_.size()) return false;
  for (const auto& [id, pos] : move->from_) {
    if (!to_.count(id)) return false;
  }
  to_ = move->to_;
  setObsolete(from_ == to_);
  return true;
}

void MoveNodesCommand::undo() {
  document_->applyPositions(from_);
}

void MoveNodesCommand::redo() {
  document_->applyPositions(to_);
}

SettingsEditCommand::SettingsEditCommand(ProjectDocument* document, const QString& text,
                                         Settings before, Settings after)
    : QUndoCommand(text),
      document_(document),
      before_(std::move(before)),
      after_(std::move(after)) {
  setObsolete(before_ == after_);
}

bool SettingsEditCommand::mergeWith(const QUndoCommand* other) {
  const auto* edit = static_cast<const SettingsEditCommand*>(other);
  if (edit->text() != text()) return false;
  after_ = edit->after_;
  setObsolete(before_ == after_);
  return true;
}

void SettingsEditCommand::undo() {
  document_->restoreSettings(before_.dataset, before_.training);
}

void SettingsEditCommand::redo() {
  document_->restoreSettings(after_.dataset, after_.training);
}

}  // namespace nns::ui
