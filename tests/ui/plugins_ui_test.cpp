// SPDX-License-Identifier: GPL-3.0-or-later
// Plugins in the window: their types in a palette section per plugin, Help > Plugins listing
// what loaded and what failed, and a project whose plugin is missing opening, marking its
// node and saving back unchanged. The example and the broken test plugins are loaded from the
// build (tests/plugins), as the program loads them at start.
#include <gtest/gtest.h>

#include <QAction>
#include <QFile>
#include <QImage>
#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <memory>

#include "engine/graph/project.h"
#include "engine/plugin/loader.h"
#include "ui/app/main_window.h"
#include "ui/app/plugins_dialog.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/project_document.h"
#include "ui/panels/palette_widget.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

void loadTestPlugins() {
  plugin::load_plugins({NNS_PLUGIN_BUILD_DIR, NNS_TEST_PLUGIN_DIR});
}

// A project that uses a plugin no build has: its node must open, keep its options, say what
// to install, and save back as it was read.
const char* kMissingPluginProject = R"({
  "format": "nnstudio-project", "version": 1, "name": "Fancy", "layout_direction": "TB",
  "graph": {"nodes": [{"id": 1, "type": "Input", "name": "x", "options": {"shape": [4]},
                       "x": 0, "y": 0},
                      {"id": 2, "type": "FancyNorm", "name": "norm",
                       "options": {"groups": 2, "eps": null}, "x": 0, "y": 100},
                      {"id": 3, "type": "Linear", "name": "fc",
                       "options": {"in_features": 4, "out_features": 2}, "x": 0, "y": 200},
                      {"id": 4, "type": "Output", "name": "y", "x": 0, "y": 300}],
            "edges": [{"from": {"node": 1, "port": "out"}, "to": {"node": 2, "port": "in"}},
                      {"from": {"node": 2, "port": "out"}, "to": {"node": 3, "port": "in"}},
                      {"from": {"node": 3, "port": "out"}, "to": {"node": 4, "port": "in"}}],
            "next_id": 5},
  "plugin_types": {"FancyNorm": {"plugin": "fancy", "version": "2.1.0"}}})";

TEST(PluginsUi, ThePaletteShowsASectionPerPlugin) {
  loadTestPlugins();
  MainWindow window;
  window.openExample();
  test::settle();
  for (const auto& [type, plugin] : {std::pair{"RMSNorm", "rmsnorm"},
                                     {"FourierFeatures", "fourier_features"},
                                     {"FaultyLayer", "faulty"}}) {
    QTreeWidgetItem* item = window.palette()->itemFor(type);
    ASSERT_TRUE(item) << type;
    EXPECT_EQ(item->parent()->text(0), QString("Plugin: %1").arg(plugin));
    EXPECT_TRUE(item->toolTip(0).contains(QString("From the plugin %1").arg(plugin)))
        << item->toolTip(0).toStdString();
  }
  // The built-in sections hold no plugin type.
  EXPECT_EQ(window.palette()->itemFor("Linear")->parent()->text(0), "Linear / Conv");
}

TEST(PluginsUi, HelpPluginsListsWhatLoadedAndWhatFailed) {
  loadTestPlugins();
  MainWindow window;
  auto* action = window.findChild<QAction*>("pluginsAction");
  ASSERT_TRUE(action);
  EXPECT_EQ(action->text(), "&Plugins…");
  const plugin::PluginReport& report = plugin::plugin_report();
  PluginsDialog dialog(report, &window);
  QTreeWidget* tree = dialog.tree();
  ASSERT_EQ(tree->topLevelItemCount(),
            static_cast<int>(report.loaded.size() + report.failed.size()));
  QStringList rows;
  for (int i = 0; i < tree->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* item = tree->topLevelItem(i);
    rows << item->text(0) + " | " + item->text(1) + " | " + item->text(2);
  }
  const QString text = rows.join("\n");
  EXPECT_TRUE(text.contains("rmsnorm | 1.0.0 | RMSNorm")) << text.toStdString();
  EXPECT_TRUE(text.contains("fourier_features | 1.0.0 | FourierFeatures")) << text.toStdString();
  EXPECT_TRUE(text.contains("wrong_abi.so | failed | built for plugin ABI version 999"))
      << text.toStdString();
  EXPECT_TRUE(text.contains("not_a_library.so | failed | cannot be loaded as a shared library"))
      << text.toStdString();
  // A new window says so without being asked: the log names every skipped file.
  const QString log = window.log()->toPlainText();
  EXPECT_TRUE(log.contains("Plugins loaded: ")) << log.toStdString();
  EXPECT_TRUE(log.contains("wrong_abi.so was skipped: built for plugin ABI version 999"))
      << log.toStdString();
}

TEST(PluginsUi, AProjectWhosePluginIsMissingOpensMarksItsNodeAndSavesBackUnchanged) {
  QTemporaryDir dir;
  const QString in = dir.filePath("fancy.nns"), out = dir.filePath("fancy_saved.nns");
  // The file as NN Studio writes it, so that saving it unchanged gives the same bytes.
  const std::string text = graph::project_to_json(graph::parse_project(kMissingPluginProject));
  {
    QFile f(in);
    ASSERT_TRUE(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(text));
  }
  MainWindow window;
  window.resize(1200, 800);
  window.show();
  ASSERT_TRUE(window.openFile(in));
  test::settle();
  EXPECT_TRUE(window.scene()->shownItem(2)) << "the node of the missing plugin is drawn";
  const QStringList problems = window.document()->problemsOf(2);
  ASSERT_FALSE(problems.isEmpty());
  EXPECT_TRUE(problems.join("\n").contains("plugin 'fancy' 2.1.0 is not installed"))
      << problems.join("\n").toStdString();
  // Its wires are kept: the two edges of node 2 are drawn.
  EXPECT_EQ(window.document()->project().graph.edges.size(), 3u);
  ASSERT_TRUE(window.saveTo(out));
  QFile saved(out);
  ASSERT_TRUE(saved.open(QIODevice::ReadOnly));
  EXPECT_EQ(saved.readAll().toStdString(), text);
}

}  // namespace
}  // namespace nns::ui
