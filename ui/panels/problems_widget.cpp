// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/panels/problems_widget.h"

#include <QHeaderView>
#include <QPainter>

#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {

ProblemsWidget::ProblemsWidget(ProjectDocument* document, QWidget* parent)
    : QTreeWidget(parent), document_(document) {
  setHeaderLabels({tr("Node"), tr("Port"), tr("Problem")});
  setRootIsDecorated(false);
  setAlternatingRowColors(true);
  setWordWrap(true);
  header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  header()->setStretchLastSection(true);
  // After each analysis (an edit's comes in its own event, a moment after the edit).
  connect(document_, &ProjectDocument::analysed, this, &ProblemsWidget::refresh);
  connect(this, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
    const graph::NodeId id = item->data(0, Qt::UserRole).toLongLong();
    if (id == 0 || !document_->project().graph.find(id)) return;
    document_->setSelection({id});
    emit nodeActivated(id);
  });
  refresh();
}

void ProblemsWidget::setRunFailure(graph::NodeId node, const QString& message) {
  failedNode_ = node;
  failure_ = message;
  refresh();
}

void ProblemsWidget::setDataMismatch(graph::NodeId node, const QString& message) {
  mismatchNode_ = node;
  mismatch_ = message;
  refresh();
}

void ProblemsWidget::setSkippedFiles(const QStringList& files) {
  if (files == skipped_) return;
  skipped_ = files;
  refresh();
}

void ProblemsWidget::refresh() {
  clear();
  const graph::Graph& g = document_->project().graph;
  const auto& problems = document_->analysis().problems;
  if (!failure_.isEmpty()) {
    const graph::Node* n = g.find(failedNode_);
    auto* item =
        new QTreeWidgetItem(this, {n ? qs(n->name) : tr("(training)"), QString(), failure_});
    item->setData(0, Qt::UserRole, static_cast<qlonglong>(n ? failedNode_ : 0));
    item->setToolTip(2, failure_);
    item->setForeground(0, QColor(0xd9, 0x3f, 0x3f));
    item->setForeground(2, QColor(0xd9, 0x3f, 0x3f));
  }
  if (!mismatch_.isEmpty()) {
    const graph::Node* n = g.find(mismatchNode_);
    auto* item = new QTreeWidgetItem(this, {n ? qs(n->name) : tr("(data)"), tr("data"), mismatch_});
    item->setData(0, Qt::UserRole, static_cast<qlonglong>(n ? mismatchNode_ : 0));
    item->setToolTip(2, mismatch_);
    item->setForeground(0, QColor(0xd9, 0x3f, 0x3f));
  }
  if (!skipped_.isEmpty()) {
    const QString what =
        skipped_.size() == 1
            ? tr("1 image could not be read and is left out of the data")
            : tr("%1 images could not be read and are left out of the data").arg(skipped_.size());
    auto* item = new QTreeWidgetItem(this, {tr("(data)"), tr("files"), what});
    item->setData(0, Qt::UserRole, static_cast<qlonglong>(0));
    item->setToolTip(2, what);
    item->setForeground(0, QColor(0xd9, 0x3f, 0x3f));
    for (const QString& file : skipped_) {
      auto* child = new QTreeWidgetItem(item, {QString(), QString(), file});
      child->setData(0, Qt::UserRole, static_cast<qlonglong>(0));
      child->setToolTip(2, file);
    }
  }
  for (const graph::Problem& p : problems) {
    const graph::Node* n = p.block.empty() ? g.find(p.node) : nullptr;
    QString where = n                 ? qs(n->name)
                    : p.block.empty() ? tr("(graph)")
                                      : qs(p.block) + tr(" (block)");
    auto* item = new QTreeWidgetItem(this, {where, qs(p.port), qs(p.message)});
    item->setData(0, Qt::UserRole, static_cast<qlonglong>(n ? p.node : 0));
    item->setToolTip(2, qs(p.message));
    item->setForeground(0, QColor(0xd9, 0x3f, 0x3f));
  }
  emit countChanged(static_cast<int>(problems.size()) + (failure_.isEmpty() ? 0 : 1) +
                    (mismatch_.isEmpty() ? 0 : 1) + (skipped_.isEmpty() ? 0 : 1));
}

void ProblemsWidget::paintEvent(QPaintEvent* event) {
  QTreeWidget::paintEvent(event);
  if (topLevelItemCount() > 0) return;
  QPainter painter(viewport());
  painter.setPen(palette().color(QPalette::PlaceholderText));
  painter.drawText(viewport()->rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
                   tr("No problems: every node and wire checks out"));
}

}  // namespace nns::ui
