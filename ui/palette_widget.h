#pragma once
// The palette: every node type the engine offers, grouped by category, plus the containers
// and the project's custom blocks, with a search box. Each entry's tooltip is the
// PyTorch-style repr with default options. Drag an entry onto the canvas, or double-click it,
// to add a node.
#include <QWidget>

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
  // The entry for a node type, or nullptr.
  QTreeWidgetItem* itemFor(const QString& type) const;

 signals:
  // An entry was double-clicked (or Enter pressed on it).
  void nodeTypeActivated(const QString& type);

 private:
  void rebuild();
  void applyFilter(const QString& text);

  ProjectDocument* document_;
  QLineEdit* search_;
  QTreeWidget* tree_;
};

}  // namespace nns::ui
