// SPDX-License-Identifier: GPL-3.0-or-later
// File > Export Image: the canvas of the spirals example as SVG and PNG, the selection's area
// alone, the selection's highlight left out, and failures that write nothing.
#include <gtest/gtest.h>

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QGraphicsItem>
#include <QImage>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QTimer>
#include <QXmlStreamReader>
#include <memory>

#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/image_export.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using test::settle;

class ExportImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    window->resize(1400, 900);
    window->document()->setProject(spiralsExample(), QString());
    window->show();
    settle();
    ASSERT_TRUE(dir.isValid());
  }
  void TearDown() override {
    window->document()->undoStack()->setClean();
    window->close();
    window.reset();
  }

  GraphScene* scene() const { return window->scene(); }
  graph::NodeId id(const std::string& name) const {
    const graph::Node* n = window->document()->project().graph.find_by_name(name);
    EXPECT_TRUE(n) << name;
    return n ? n->id : 0;
  }
  // What the canvas shows, worked out here rather than asked of the exporter: every visible
  // item's bounds and the margin.
  QRectF itemsRect() const {
    QRectF box;
    for (const QGraphicsItem* item : scene()->items()) {
      if (item->isVisible()) box |= item->sceneBoundingRect();
    }
    return box.adjusted(-kExportMargin, -kExportMargin, kExportMargin, kExportMargin);
  }
  QImage exportPng(const QString& name, bool selectionOnly) {
    const QString path = dir.filePath(name);
    const QString error = exportSceneImage(scene(), path, selectionOnly);
    EXPECT_TRUE(error.isEmpty()) << error.toStdString();
    return QImage(path);
  }

  std::unique_ptr<MainWindow> window;
  QTemporaryDir dir;
};

TEST_F(ExportImageTest, SvgIsXmlWithTheNodeNamesAsTextAndTheItemsShape) {
  const QString path = dir.filePath("net.svg");
  ASSERT_EQ(exportSceneImage(scene(), path, false), QString());
  QFile file(path);
  ASSERT_TRUE(file.open(QIODevice::ReadOnly));
  QXmlStreamReader xml(&file);
  QStringList texts;
  QRectF viewBox;
  while (!xml.atEnd()) {
    xml.readNext();
    if (!xml.isStartElement()) continue;
    if (xml.name() == QLatin1String("svg")) {
      const QStringList v = xml.attributes().value("viewBox").toString().split(' ');
      ASSERT_EQ(v.size(), 4);
      viewBox = QRectF(v[0].toDouble(), v[1].toDouble(), v[2].toDouble(), v[3].toDouble());
    } else if (xml.name() == QLatin1String("text")) {
      texts << xml.readElementText(QXmlStreamReader::IncludeChildElements).trimmed();
    }
  }
  ASSERT_FALSE(xml.hasError()) << xml.errorString().toStdString();
  for (const graph::Node& node : window->document()->project().graph.nodes) {
    EXPECT_TRUE(texts.contains(qs(node.name))) << node.name;
  }
  const QRectF items = itemsRect();
  ASSERT_FALSE(viewBox.isEmpty());
  EXPECT_NEAR(viewBox.width() / viewBox.height(), items.width() / items.height(), 0.01);
}

TEST_F(ExportImageTest, PngHasTheItemsAspectAtTwiceTheScaleOnTheThemesBackground) {
  const QImage image = exportPng("net.png", false);
  ASSERT_FALSE(image.isNull());
  const QRectF items = itemsRect();
  EXPECT_NEAR(image.width(), items.width() * kExportPngScale, 1);
  EXPECT_NEAR(image.height(), items.height() * kExportPngScale, 1);
  EXPECT_NEAR(double(image.width()) / image.height(), items.width() / items.height(), 0.01);
  // The margin is the canvas's background.
  EXPECT_EQ(image.pixelColor(1, 1).rgb(), scene()->theme().background.rgb());
}

TEST_F(ExportImageTest, TheSelectionIsNotDrawnAndStaysSelected) {
  const QImage plain = exportPng("plain.png", false);
  const graph::NodeId fc1 = id("fc1");
  window->document()->setSelection({fc1});
  settle();
  ASSERT_EQ(scene()->selectedNodes(), std::vector<graph::NodeId>{fc1});
  const QImage selected = exportPng("selected.png", false);
  EXPECT_TRUE(plain == selected) << "the selection's highlight was drawn";
  // The selection is as it was, on the canvas and in the document.
  EXPECT_EQ(scene()->selectedNodes(), std::vector<graph::NodeId>{fc1});
  EXPECT_EQ(window->document()->selection(), std::vector<graph::NodeId>{fc1});
}

TEST_F(ExportImageTest, SelectionOnlyDrawsTheSelectedArea) {
  const QImage full = exportPng("full.png", false);
  window->document()->setSelection({id("fc1"), id("relu1")});
  settle();
  const QImage part = exportPng("part.png", true);
  ASSERT_FALSE(part.isNull());
  EXPECT_LT(qint64(part.width()) * part.height(), qint64(full.width()) * full.height());
  QRectF area;
  for (const QGraphicsItem* item : scene()->selectedItems()) area |= item->sceneBoundingRect();
  area.adjust(-kExportMargin, -kExportMargin, kExportMargin, kExportMargin);
  EXPECT_NEAR(part.width(), area.width() * kExportPngScale, 1);
  EXPECT_NEAR(part.height(), area.height() * kExportPngScale, 1);

  const QString svg = dir.filePath("part.svg");
  ASSERT_EQ(exportSceneImage(scene(), svg, true), QString());
  const QString fullSvg = dir.filePath("full.svg");
  ASSERT_EQ(exportSceneImage(scene(), fullSvg, false), QString());
  EXPECT_LT(QFileInfo(svg).size(), QFileInfo(fullSvg).size());
}

TEST_F(ExportImageTest, FailuresWriteNothing) {
  for (const char* name : {"missing/net.svg", "missing/net.png"}) {
    const QString path = dir.filePath(name);
    const QString error = exportSceneImage(scene(), path, false);
    EXPECT_FALSE(error.isEmpty()) << name;
    EXPECT_TRUE(error.contains(path)) << error.toStdString();
    EXPECT_FALSE(QFileInfo::exists(path));
  }
  // Neither an unknown type nor a selection-only export with nothing selected.
  EXPECT_FALSE(exportSceneImage(scene(), dir.filePath("net.bmp"), false).isEmpty());
  window->document()->setSelection({});
  settle();
  EXPECT_FALSE(exportSceneImage(scene(), dir.filePath("net.svg"), true).isEmpty());
  // Not even a temporary file is left behind.
  EXPECT_TRUE(QDir(dir.path()).isEmpty(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden));
}

TEST_F(ExportImageTest, FileMenuExportsAndReportsErrors) {
  // File > Export > Image…
  bool inMenu = false;
  for (QAction* menu : window->menuBar()->actions()) {
    if (!menu->menu() || menu->text() != "&File") continue;
    for (QAction* sub : menu->menu()->actions()) {
      if (!sub->menu() || sub->text() != "&Export") continue;
      for (QAction* a : sub->menu()->actions()) inMenu = inMenu || a->text() == "&Image…";
    }
  }
  EXPECT_TRUE(inMenu);

  const QString path = dir.filePath("net.png");
  ASSERT_TRUE(window->exportImageTo(path, false));
  EXPECT_FALSE(QImage(path).isNull());
  EXPECT_TRUE(window->log()->toPlainText().contains(path));

  // An error is shown (the message box, closed here) and logged.
  bool shown = false;
  QTimer::singleShot(0, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      shown = true;
      box->close();
    }
  });
  const QString missing = dir.filePath("missing/net.svg");
  EXPECT_FALSE(window->exportImageTo(missing, false));
  EXPECT_TRUE(shown);
  EXPECT_TRUE(window->log()->toPlainText().contains("Could not export " + missing));
}

}  // namespace
}  // namespace nns::ui
