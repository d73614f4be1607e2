// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Help > Plugins: what `nnstudio-cli plugins` prints, in the window. Each plugin loaded at
// start (name, version, node types, file), each plugin file that failed and why, and where
// plugins are looked for (engine/plugin/loader.h).
#include <QDialog>

#include "engine/plugin/loader.h"

class QTreeWidget;

namespace nns::ui {

class PluginsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit PluginsDialog(const plugin::PluginReport& report, QWidget* parent = nullptr);

  // The list, for tests: one top-level item per plugin and per failed file.
  QTreeWidget* tree() const { return tree_; }

 private:
  QTreeWidget* tree_;
};

}  // namespace nns::ui
