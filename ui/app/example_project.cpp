// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/example_project.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>

#include "engine/tensor/error.h"

namespace nns::ui {

QString findExampleFile(const QString& fileName) {
  const QStringList dirs = {
      QCoreApplication::applicationDirPath() + "/../share/nnstudio/examples",
      QStringLiteral(NNS_RESOURCE_DIR) + "/examples",
  };
  for (const QString& dir : dirs) {
    const QString path = QDir(dir).filePath(fileName);
    if (QFileInfo::exists(path)) return QDir::cleanPath(path);
  }
  return {};
}

graph::Project exampleProject(const QString& fileName) {
  QFile file(":/examples/" + fileName);
  if (!file.open(QIODevice::ReadOnly)) {
    throw ValueError("there is no built-in example named '" + fileName.toStdString() +
                     "' (the window has those of resources/examples)");
  }
  return graph::parse_project(file.readAll().toStdString(), fileName.toStdString());
}

graph::Project spiralsExample() {
  return exampleProject("spirals.nns");
}

}  // namespace nns::ui
