// SPDX-License-Identifier: GPL-3.0-or-later
// The canvas at size (issue 12's benchmark; a plain program, not ctest): generated projects of
// about 100, 300 and 1,000 nodes (a ModuleList of Sequential blocks with residual Adds, as
// tests/support/generated_projects.h makes them) opened in the real window, against the spirals
// example:
//   - open: setting the project, readying it for the canvas (large ones collapse one level down,
//     dot lays out what has no layout) and the scene built and painted once;
//   - one edit at 1,000 nodes, p50 and p99 over many: move, rename, connect, delete, undo;
//   - collapsing and expanding a group of 200 members (with the layout that follows);
//   - at 10,000 nodes (issue 31: 1,650 blocks of 4, 9,905 nodes): the open, every group
//     expanded and laid out, and the same edits plus expanding and collapsing a block.
// Run under Xvfb (xvfb-run -a -s "-screen 0 1600x1000x24" bench_canvas) or with
// QT_QPA_PLATFORM=offscreen. Targets on a 2-core machine: open 1,000 nodes within 1 s and 2.5x
// the example's open, an edit under 16 ms p99, collapse or expand under 100 ms; at 10,000
// nodes, the open within 3x the example's and every edit under 16 ms p99, the next event
// dispatch included. `bench_canvas --big` runs only the 10,000-node rows; `bench_canvas --open
// FILE.nns` times opening one project file against the example.
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "support/generated_projects.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"

namespace {

using namespace nns;

double msSince(const QElapsedTimer& t) {
  return static_cast<double>(t.nsecsElapsed()) / 1e6;
}

// The application, timing each event it delivers from the event loop (not those sent while
// another is handled): a frame the user waits for is one such dispatch.
class TimedApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* event) override {
    if (depth_ > 0) return QApplication::notify(receiver, event);
    ++depth_;
    QElapsedTimer t;
    t.start();
    const bool done = QApplication::notify(receiver, event);
    longest_ = std::max(longest_, msSince(t));
    --depth_;
    return done;
  }
  // The longest dispatch since the last call.
  double takeLongest() { return std::exchange(longest_, 0.0); }

 private:
  int depth_ = 0;
  double longest_ = 0;
};

TimedApplication* timedApp() {
  return static_cast<TimedApplication*>(QCoreApplication::instance());
}

void settle() {
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
}

// Opens the project in the window and paints it; milliseconds, the best of three.
double openMs(ui::MainWindow& window, const graph::Project& project) {
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    // From another project, as a user opens a file: none of its items are there yet.
    window.document()->setProject(graph::Project(), QString());
    settle();
    graph::Project opened = project;  // as a file is read, not timed
    QElapsedTimer t;
    t.start();
    // What File > Open does with the file read (load(), then MainWindow::tidyLayout).
    window.document()->open(std::move(opened), QString());
    window.document()->prepareForCanvas();
    window.view()->frameAll();
    window.repaint();
    settle();
    best = std::min(best, msSince(t));
  }
  return best;
}

struct Stats {
  double p50 = 0, p99 = 0;          // the edit itself: the document, the scene's items
  double after50 = 0, after99 = 0;  // the longest single event dispatch in the 100 ms after it
};

double percentile(std::vector<double> ms, int p) {
  std::sort(ms.begin(), ms.end());
  return ms[std::min(ms.size() - 1, ms.size() * static_cast<size_t>(p) / 100)];
}

// Each edit, then the longest single event dispatch in the 100 ms after it (TimedApplication):
// the repaint it posted, the edit's analysis (the event after the repaint) and the redraw of
// what it changed, the Output panel's session once edits settle, the overview redrawn. Each is
// a frame of its own; the edit and each of them must stay under 16 ms.
Stats timeEach(int n, const std::function<void(int)>& edit) {
  std::vector<double> ms, after;
  for (int i = 0; i < n; ++i) {
    QElapsedTimer t;
    t.start();
    edit(i);
    ms.push_back(msSince(t));
    timedApp()->takeLongest();
    QElapsedTimer window;
    window.start();
    while (window.elapsed() < 100) QApplication::processEvents(QEventLoop::AllEvents, 5);
    after.push_back(timedApp()->takeLongest());
  }
  return {percentile(ms, 50), percentile(ms, 99), percentile(after, 50), percentile(after, 99)};
}

void report(const char* what, Stats s) {
  std::printf("  %-20s %6.2f  %6.2f               %6.2f  %6.2f\n", what, s.p50, s.p99, s.after50,
              s.after99);
}

// Edits on a tower of `blocks` blocks opened as a user would (nested groups collapsed): move,
// rename, connect, delete + undo, undo + redo, then expanding and collapsing a block.
void editRows(ui::MainWindow& window, const graph::Project& project, int blocks) {
  ui::ProjectDocument* doc = window.document();
  openMs(window, project);
  const graph::Graph& g = doc->project().graph;
  const graph::NodeId head = g.find_by_name("head")->id;
  const std::string last = "add" + std::to_string(blocks - 2);
  const std::string before = "add" + std::to_string(blocks - 3);
  std::printf("edits at %zu nodes (ms)   p50     p99   then, longest dispatch: p50   p99\n",
              g.nodes.size());
  report("move", timeEach(40, [&](int i) {
           const graph::Node& n = doc->project().graph.at(head);
           doc->moveNodes({{head, QPointF(n.x + (i % 2 ? 10 : -10), n.y)}});
         }));
  report("rename", timeEach(40, [&](int i) { doc->renameNode(head, i % 2 ? "head" : "head2"); }));
  report("connect", timeEach(40, [&](int i) {
           const graph::Graph& gg = doc->project().graph;
           const graph::NodeId from = gg.find_by_name(i % 2 ? last : before)->id;
           doc->connectPorts({from, "out"}, {head, "in"});
         }));
  report("delete + undo", timeEach(20, [&](int) {
           const graph::NodeId extra = doc->addNode("ReLU", QPointF(-400, 0));
           doc->removeItems({extra}, {});
           doc->undoStack()->undo();
           doc->undoStack()->undo();
         }));
  report("undo + redo", timeEach(40, [&](int i) {
           if (i % 2) {
             doc->undoStack()->redo();
           } else {
             doc->undoStack()->undo();
           }
         }));
  // A block in the middle: expanded (its members laid out, the level around it again), then
  // collapsed back.
  const graph::NodeId block = g.find_by_name("block" + std::to_string(blocks / 2))->id;
  if (g.at(block).collapsed) {
    report("expand / collapse", timeEach(20, [&](int i) { doc->setCollapsed(block, i % 2 == 0); }));
  }
  doc->undoStack()->setClean();
  // The document's own share: the same renames on a ProjectDocument with no window or canvas
  // (its edit copies and compares the project and checks the graph again).
  ui::ProjectDocument bare;
  bare.setProject(project, QString());
  const graph::NodeId h = bare.project().graph.find_by_name("head")->id;
  std::vector<double> ms;
  for (int i = 0; i < 20; ++i) {
    QElapsedTimer t;
    t.start();
    bare.renameNode(h, i % 2 ? "head" : "head2");
    ms.push_back(msSince(t));
  }
  std::printf("  rename, document alone %6.2f  %6.2f\n", percentile(ms, 50), percentile(ms, 99));
}

}  // namespace

// `bench_canvas --shots DIR`: screenshots of the 10,000-node tower as opened (nested groups
// collapsed): the whole of it, its top at the opening zoom, and one block expanded at 100%.
int shots(ui::MainWindow& window, const QString& dir) {
  ui::ProjectDocument* doc = window.document();
  doc->setProject(test::residual_tower(1650, 4), QString());
  doc->prepareForCanvas();
  window.view()->frameAll();
  settle();
  auto shoot = [&](const char* name) {
    settle();
    const QString path = QDir(dir).filePath(name);
    if (!window.grab().toImage().save(path)) return false;
    std::printf("%s\n", qPrintable(path));
    return true;
  };
  bool ok = shoot("tower10k_opened.png");
  // The whole model: zoomed out until it fits (a column of 1,650 blocks).
  ui::GraphView* view = window.view();
  const QRectF all = view->graphScene()->nodesRect();
  view->fitInView(all, Qt::KeepAspectRatio);
  ok = shoot("tower10k_whole.png") && ok;
  // A quarter of it: the blocks' boxes and the residual path beside them at small zoom.
  view->resetTransform();
  view->scale(0.2, 0.2);
  view->centerOn(all.center());
  ok = shoot("tower10k_zoom20.png") && ok;
  // One block in the middle expanded, at 100%.
  const graph::NodeId block = doc->project().graph.find_by_name("block825")->id;
  doc->setCollapsed(block, false);
  view->resetTransform();
  const QRectF box = view->graphScene()->nodeItem(block)->sceneBoundingRect();
  view->centerOn(box.center());
  ok = shoot("tower10k_block.png") && ok;
  doc->undoStack()->setClean();
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  TimedApplication app(argc, argv);
  ui::MainWindow window;
  window.resize(1600, 1000);
  window.show();
  settle();
  if (argc > 2 && std::string(argv[1]) == "--shots") return shots(window, argv[2]);
  // `bench_canvas --open FILE.nns`: one project as saved (an imported resnet50 opens folded).
  if (argc > 2 && std::string(argv[1]) == "--open") {
    const double spirals = openMs(window, ui::spiralsExample());
    const graph::Project p = graph::load_project(argv[2]);
    const double ms = openMs(window, p);
    std::printf("open (ms, best of 3)  nodes   open   vs spirals\n");
    std::printf("  spirals example     %5d  %6.1f\n", 7, spirals);
    std::printf("  %-18s  %5zu  %6.1f  %5.2fx\n", QFileInfo(argv[2]).fileName().toUtf8().data(),
                p.graph.nodes.size(), ms, ms / spirals);
    return 0;
  }

  const bool bigOnly = argc > 1 && std::string(argv[1]) == "--big";
  const double spirals = openMs(window, ui::spiralsExample());
  std::printf("open (ms, best of 3)       nodes   open   vs spirals\n");
  std::printf("  spirals example          %5d  %6.1f\n", 7, spirals);
  for (int blocks : {10, 30, 100}) {
    if (bigOnly) break;
    const graph::Project p = test::residual_tower(blocks, 8);
    const double ms = openMs(window, p);
    std::printf("  tower of %3d blocks      %5zu  %6.1f  %5.2fx\n", blocks, p.graph.nodes.size(),
                ms, ms / spirals);
  }
  // Fully open at 1,000 nodes: every group expanded, as after View -> Layout on an expanded file.
  if (!bigOnly) {
    graph::Project p = test::residual_tower(100, 8);
    p.layout_direction = "TB";
    ui::ProjectDocument* doc = window.document();
    QElapsedTimer t;
    t.start();
    doc->setProject(p, QString());
    doc->autoLayout();
    window.repaint();
    settle();
    std::printf("  1,005 nodes all expanded, laid out and painted: %.1f ms\n", msSince(t));
  }

  if (!bigOnly) editRows(window, test::residual_tower(100, 8), 100);

  // Collapse and expand a group of 200 members in a 1,000-node model.
  if (!bigOnly) {
    ui::ProjectDocument* doc = window.document();
    graph::Project big = test::residual_tower(4, 200);
    openMs(window, big);
    const graph::NodeId block = doc->project().graph.find_by_name("block0")->id;
    std::printf("group of 200 in %zu nodes (ms)\n", doc->project().graph.nodes.size());
    report("collapse / expand", timeEach(10, [&](int i) { doc->setCollapsed(block, i % 2 == 0); }));
    doc->undoStack()->setClean();
  }

  // 10,000 nodes (issue 31): a ModuleList of 1,650 Sequential blocks of 4 with residual Adds.
  const graph::Project huge = test::residual_tower(1650, 4);
  {
    std::printf("open at 10,000 nodes (ms, best of 3)\n");
    const double ms = openMs(window, huge);
    std::printf("  tower of 1,650 blocks    %5zu  %6.1f  %5.2fx\n", huge.graph.nodes.size(), ms,
                ms / spirals);
    graph::Project p = huge;
    p.layout_direction = "TB";
    QElapsedTimer t;
    t.start();
    window.document()->setProject(p, QString());
    window.document()->autoLayout();
    window.repaint();
    settle();
    std::printf("  %zu nodes all expanded, laid out and painted: %.1f ms\n", p.graph.nodes.size(),
                msSince(t));
  }
  editRows(window, huge, 1650);
  return 0;
}
