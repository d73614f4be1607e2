// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/panels/palette_widget.h"

#include <QAction>
#include <QDir>
#include <QHeaderView>
#include <QLineEdit>
#include <QMimeData>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

#include "engine/graph/node_types.h"
#include "engine/tensor/error.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/block_library.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

constexpr int kTypeRole = Qt::UserRole;
constexpr int kSearchRole = Qt::UserRole + 1;
constexpr int kLibraryRole = Qt::UserRole + 2;  // true on the user library's blocks

// A block as its constructor reads, with the arguments' defaults: MyLinear(in_features=4,
// out_features=3), then its description.
QString blockRepr(const graph::BlockDef& b) {
  QStringList args;
  for (const auto& [key, value] : b.arguments.items()) args << qs(key + "=" + value.dump());
  QString out = qs(b.name) + "(" + args.join(", ") + ")";
  if (!b.description.empty()) out += "\n" + qs(b.description);
  return out;
}

// A tree whose entries drag out as node types.
class PaletteTree : public QTreeWidget {
 public:
  using QTreeWidget::QTreeWidget;

 protected:
  QStringList mimeTypes() const override {
    return {GraphView::kNodeTypeMime, GraphView::kLibraryBlockMime};
  }
  QMimeData* mimeData(const QList<QTreeWidgetItem*>& items) const override {
    if (items.isEmpty() || items.first()->data(0, kTypeRole).isNull()) return nullptr;
    auto* mime = new QMimeData;
    mime->setData(items.first()->data(0, kLibraryRole).toBool() ? GraphView::kLibraryBlockMime
                                                                : GraphView::kNodeTypeMime,
                  items.first()->data(0, kTypeRole).toString().toUtf8());
    return mime;
  }
};

}  // namespace

PaletteWidget::PaletteWidget(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
  search_ = new QLineEdit(this);
  search_->setPlaceholderText(tr("Search layers…"));
  search_->setClearButtonEnabled(true);
  tree_ = new PaletteTree(this);
  tree_->setHeaderHidden(true);
  tree_->setDragEnabled(true);
  tree_->setDragDropMode(QAbstractItemView::DragOnly);
  tree_->setSelectionMode(QAbstractItemView::SingleSelection);
  tree_->setRootIsDecorated(true);
  tree_->setUniformRowHeights(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->setSpacing(4);
  layout->addWidget(search_);
  layout->addWidget(tree_);

  connect(search_, &QLineEdit::textChanged, this, &PaletteWidget::applyFilter);
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QVariant type = item->data(0, kTypeRole);
    if (type.isNull()) return;
    if (item->data(0, kLibraryRole).toBool()) {
      emit libraryBlockActivated(type.toString());
    } else {
      emit nodeTypeActivated(type.toString());
    }
  });
  removeFromLibrary_ = new QAction(tr("Remove from Library"), this);
  removeFromLibrary_->setToolTip(tr("Delete the selected block's file from the block library"));
  tree_->addAction(removeFromLibrary_);
  tree_->setContextMenuPolicy(Qt::ActionsContextMenu);
  auto updateActions = [this] {
    QTreeWidgetItem* item = tree_->currentItem();
    removeFromLibrary_->setEnabled(item && item->data(0, kLibraryRole).toBool());
  };
  connect(tree_, &QTreeWidget::currentItemChanged, this, updateActions);
  connect(removeFromLibrary_, &QAction::triggered, this, [this] {
    QTreeWidgetItem* item = tree_->currentItem();
    if (!item || !item->data(0, kLibraryRole).toBool()) return;
    const QString name = item->data(0, kTypeRole).toString();
    try {
      BlockLibrary::user().remove(name.toStdString());
      emit document_->logMessage(tr("Removed %1 from the block library").arg(name));
    } catch (const Error& e) {
      emit document_->logMessage(tr("Remove from Library refused: %1").arg(qs(e.what())));
    }
  });
  updateActions();
  connect(&BlockLibrary::user(), &BlockLibrary::changed, this, &PaletteWidget::rebuild);
  // Custom blocks come and go with the project.
  connect(document_, &ProjectDocument::changed, this, [this] {
    QTreeWidgetItem* blocks = nullptr;
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
      if (tree_->topLevelItem(i)->text(0) == tr("Custom blocks")) blocks = tree_->topLevelItem(i);
    }
    const int have = blocks ? blocks->childCount() : 0;
    if (have != static_cast<int>(document_->project().blocks.size())) rebuild();
  });
  rebuild();
}

QTreeWidgetItem* PaletteWidget::itemFor(const QString& type, bool library) const {
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* category = tree_->topLevelItem(i);
    for (int j = 0; j < category->childCount(); ++j) {
      QTreeWidgetItem* item = category->child(j);
      if (item->data(0, kTypeRole).toString() == type &&
          item->data(0, kLibraryRole).toBool() == library) {
        return item;
      }
    }
  }
  return nullptr;
}

void PaletteWidget::rebuild() {
  tree_->clear();
  std::map<QString, QTreeWidgetItem*> categories;
  auto category = [&](const QString& name) {
    QTreeWidgetItem*& item = categories[name];
    if (!item) {
      item = new QTreeWidgetItem(tree_, {name});
      item->setFlags(Qt::ItemIsEnabled);
      QFont f = item->font(0);
      f.setBold(true);
      item->setFont(0, f);
    }
    return item;
  };
  auto entry = [&](QTreeWidgetItem* parent, const QString& type, const QString& tooltip,
                   const QString& search) {
    auto* item = new QTreeWidgetItem(parent, {type});
    item->setData(0, kLibraryRole, false);
    item->setData(0, kTypeRole, type);
    item->setData(0, kSearchRole, (type + " " + parent->text(0) + " " + search).toLower());
    item->setToolTip(0, QString("<pre>%1</pre>").arg(tooltip.toHtmlEscaped()));
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled);
  };
  for (const graph::NodeType& t : graph::node_types()) {
    if (t.plugin.empty())
      entry(category(qs(t.category)), qs(t.name), qs(defaultRepr(t)), qs(t.description));
  }
  QTreeWidgetItem* containers = category(tr("Containers"));
  entry(containers, "Sequential",
        tr("Sequential(): calls its members in a chain.\nSelect nodes, then add it to group them."),
        {});
  entry(containers, "ModuleList",
        tr("ModuleList(): holds its members as 0, 1, …; each is wired on its own.\nSelect "
           "nodes, then add it to group them."),
        {});
  entry(containers, "ModuleDict",
        tr("ModuleDict(): holds its members by name.\nSelect nodes, then add it to group them."),
        {});
  if (!document_->project().blocks.empty()) {
    QTreeWidgetItem* blocks = category(tr("Custom blocks"));
    for (const graph::BlockDef& b : document_->project().blocks) {
      entry(blocks, qs(b.name), blockRepr(b), qs(b.description));
    }
  }
  // A section per plugin (engine/plugin), after the built-in layers and containers.
  for (const graph::NodeType& t : graph::node_types()) {
    if (t.plugin.empty()) continue;
    QTreeWidgetItem* section = category(tr("Plugin: %1").arg(qs(t.plugin)));
    section->setToolTip(0, tr("Node types of the plugin %1 %2 (Help > Plugins)")
                               .arg(qs(t.plugin), qs(t.plugin_version)));
    entry(section, qs(t.name),
          qs(defaultRepr(t)) +
              tr("\n\nFrom the plugin %1 %2.").arg(qs(t.plugin), qs(t.plugin_version)),
          qs(t.category + " " + t.description));
  }
  const BlockLibrary& library = BlockLibrary::user();
  if (!library.blocks().empty() || !library.problems().isEmpty()) {
    QTreeWidgetItem* saved = category(tr("Library"));
    saved->setToolTip(0, library.problems().join("\n"));
    for (const graph::BlockDef& b : library.blocks()) {
      entry(saved, qs(b.name),
            blockRepr(b) +
                tr("\n\nFrom the block library: drop it to add the class and an instance.\n%1")
                    .arg(QDir::toNativeSeparators(library.folder())),
            qs(b.description));
      saved->child(saved->childCount() - 1)->setData(0, kLibraryRole, true);
    }
  }
  tree_->expandAll();
  applyFilter(search_->text());
}

void PaletteWidget::applyFilter(const QString& text) {
  const QStringList words = text.toLower().split(' ', Qt::SkipEmptyParts);
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* category = tree_->topLevelItem(i);
    int shown = 0;
    for (int j = 0; j < category->childCount(); ++j) {
      QTreeWidgetItem* item = category->child(j);
      const QString haystack = item->data(0, kSearchRole).toString();
      bool match = true;
      for (const QString& w : words) match = match && haystack.contains(w);
      item->setHidden(!match);
      shown += match ? 1 : 0;
    }
    category->setHidden(shown == 0);
    if (!words.isEmpty()) category->setExpanded(true);
  }
}

}  // namespace nns::ui
