// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The palette: every node type the engine offers, grouped by category, plus the containers,
// the project's custom blocks and the user's block library ("Library"), with a search box.
// Each entry's tooltip is the PyTorch-style repr with default options. Drag an entry onto the
// canvas, or double-click it, to add a node; a library block brings its class along. The
// context menu removes a block from the library.
#include <QWidget>

class QAction;
class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;

namespace nns::ui {

class ProjectDocument;

class PaletteWidget : public QWidget {
  Q_OBJECT

 public:
  explicit PaletteWidget(ProjectDocument* document, QWidget* parent = nullptr);

  QLineEdit* searchBox() const { return search_; }
  QTreeWidget* tree() const { return tree_; }
  // The entry for a node type (or, with library, for a block of the user's library), or
  // nullptr.
  QTreeWidgetItem* itemFor(const QString& type, bool library = false) const;
  QAction* removeFromLibraryAction() const { return removeFromLibrary_; }

 signals:
  // An entry was double-clicked (or Enter pressed on it).
  void nodeTypeActivated(const QString& type);
  void libraryBlockActivated(const QString& name);

 private:
  void rebuild();
  void applyFilter(const QString& text);

  ProjectDocument* document_;
  QLineEdit* search_;
  QTreeWidget* tree_;
  QAction* removeFromLibrary_;
};

}  // namespace nns::ui
