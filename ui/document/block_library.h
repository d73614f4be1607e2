// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The user's block library: custom blocks saved for use in any project, one JSON file per
// block (the project file's block schema: name, description, arguments, graph) in a folder,
// by default QStandardPaths::AppDataLocation/blocks. The palette lists them under "Library";
// dropping one into a project adds its class (and the classes it uses) and an instance.
//
//   BlockLibrary& lib = BlockLibrary::user();
//   lib.save(project, "MyLinear");            // MyLinear.json (atomic), and the blocks it uses
//   lib.addInstance(document, "MyLinear", {100, 40});   // in another project: one undo step
#include <QObject>
#include <QPointF>
#include <QString>
#include <vector>

#include "engine/graph/project.h"

namespace nns::ui {

class ProjectDocument;

class BlockLibrary : public QObject {
  Q_OBJECT

 public:
  // The one library of the user (the folder may be changed, for tests).
  static BlockLibrary& user();

  QString folder() const { return folder_; }
  void setFolder(const QString& folder);

  // The blocks in the folder, by name. A file that does not read is left out and reported
  // once through problems().
  const std::vector<graph::BlockDef>& blocks() const { return blocks_; }
  const graph::BlockDef* find(const std::string& name) const;
  QStringList problems() const { return problems_; }

  // Writes the project's block `name`, and every block it uses, to the folder (replacing
  // files of the same names). Throws the engine's error when a file cannot be written.
  void save(const graph::Project& project, const std::string& name);
  // Deletes the block's file; a KeyError when there is none.
  void remove(const std::string& name);

  // Adds the library's block `name` (with the blocks it uses) to the document's project and an
  // instance at pos, as one undo step; returns the instance (0 when refused: logged). A project
  // block of the same name and the same definition is used as it is; one that differs keeps
  // its name, and the library's block comes in renamed (MyLinear -> MyLinear2), said in the log.
  graph::NodeId addInstance(ProjectDocument* document, const std::string& name, QPointF pos) const;

  // Reads the folder again.
  void reload();

 signals:
  void changed();

 private:
  BlockLibrary();
  QString fileOf(const std::string& name) const;

  QString folder_;
  std::vector<graph::BlockDef> blocks_;
  QStringList problems_;
};

}  // namespace nns::ui
