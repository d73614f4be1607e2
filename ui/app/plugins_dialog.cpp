// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/plugins_dialog.h"

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "ui/document/qt_strings.h"

namespace nns::ui {

PluginsDialog::PluginsDialog(const plugin::PluginReport& report, QWidget* parent)
    : QDialog(parent), tree_(new QTreeWidget) {
  setWindowTitle(tr("Plugins"));
  auto* layout = new QVBoxLayout(this);
  const int failed = static_cast<int>(report.failed.size());
  QString summary = tr("%n plugin(s) loaded", "", static_cast<int>(report.loaded.size()));
  if (failed) summary += tr("; %n file(s) failed to load and were skipped", "", failed);
  auto* heading = new QLabel("<b>" + summary + "</b>");
  layout->addWidget(heading);

  tree_->setColumnCount(3);
  tree_->setHeaderLabels({tr("Plugin"), tr("Version"), tr("Node types / reason")});
  tree_->setRootIsDecorated(true);
  tree_->setWordWrap(true);
  tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  tree_->header()->setStretchLastSection(true);
  for (const plugin::LoadedPlugin& p : report.loaded) {
    QStringList types;
    for (const std::string& t : p.types) types << qs(t);
    auto* item = new QTreeWidgetItem(tree_, {qs(p.name), qs(p.version), types.join(", ")});
    item->setToolTip(0, qs(p.description));
    new QTreeWidgetItem(item, {tr("file"), QString(), qs(p.file)});
    if (!p.description.empty())
      new QTreeWidgetItem(item, {tr("about"), QString(), qs(p.description)});
  }
  const QColor error = palette().color(QPalette::Text).lightness() > 128 ? QColor(255, 120, 110)
                                                                         : QColor(180, 30, 20);
  for (const plugin::PluginFailure& f : report.failed) {
    const QString file = qs(f.file);
    auto* item = new QTreeWidgetItem(tree_, {file.section('/', -1), tr("failed"), qs(f.reason)});
    item->setForeground(1, error);
    item->setForeground(2, error);
    item->setToolTip(0, file);
    item->setToolTip(2, qs(f.reason));
  }
  layout->addWidget(tree_, 1);

  QStringList folders;
  for (const std::string& folder : report.folders) folders << qs(folder).toHtmlEscaped();
  auto* where = new QLabel(
      tr("Plugins are loaded at start from these folders, the first first (set "
         "<code>NNS_PLUGIN_PATH</code> to add folders). A plugin runs inside NN Studio: load only "
         "plugins you trust.<br>%1")
          .arg(folders.join("<br>")));
  where->setWordWrap(true);
  where->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(where);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(760, 420);
}

}  // namespace nns::ui
