// SPDX-License-Identifier: GPL-3.0-or-later
// The soak benchmark (issue 19, item 4; a plain program, not ctest): the real window trains the
// spirals example with a probe on every node for `--minutes M` (default 10) while a script, once
// a second, edits the graph through the document's undoable commands and undoes it, shows and
// hides docks and inspector tabs, selects nodes, switches evaluation passes and pauses and
// resumes the run. Every `--sample S` seconds (default 10) it reads the process's resident
// memory (VmRSS) and the allocator's heap, and prints them with the steps and edits done so far.
// At the end: RSS growth from the first minute after the warm-up to the last minute, and the
// slope of a least-squares fit over the samples after the warm-up. Exits 1 when RSS grew by more
// than the bound (the larger of 20 MiB and 5% of the first minute's level), so a leak shows.
//
// The project is saved to a temporary folder first, so that every run is recorded in its run
// store and the Runs panel lists them, as for a user's saved project. Training runs until
// paused (no epoch budget); edits made while it runs apply when it pauses (the controller remakes
// the session then, carrying the weights), which the script's pause-and-resume does every cycle.
// Run with QT_QPA_PLATFORM=offscreen (the default without a display) or under Xvfb.
// Options: --minutes M (fractions allowed), --sample S, --warmup S (default 60), --csv FILE,
// --probe-budget F (the probes' overhead budget, default 0: exactly every 10 steps).
#include <malloc.h>
#ifdef NNS_USE_MIMALLOC
#include <mimalloc.h>
#endif

#include <QApplication>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFile>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextStream>
#include <QTimer>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/graph/project.h"
#include "engine/train/session.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/training_controller.h"
#include "window_bench.h"

namespace {

using namespace nns;
using namespace nns::ui;

// Resident memory of this process in KiB (VmRSS), 0 if unreadable.
long residentKiB() {
  QFile status("/proc/self/status");
  if (!status.open(QIODevice::ReadOnly | QIODevice::Text)) return 0;
  for (QByteArray line = status.readLine(); !line.isEmpty(); line = status.readLine()) {
    if (line.startsWith("VmRSS:")) return line.mid(6).trimmed().split(' ').value(0).toLong();
  }
  return 0;
}

// The allocator's heap. With glibc's malloc: what it has handed out and not had back (a leak
// grows it; fragmentation and memory kept for reuse, as engine/cpu/memory.cpp keeps up to 256 MiB
// mapped, grow only RSS). The programs link mimalloc (NNS_USE_MIMALLOC), which glibc's mallinfo2
// cannot see: then the memory mimalloc has committed, its free pages included.
double heapInUseMiB() {
#ifdef NNS_USE_MIMALLOC
  size_t committed = 0;
  mi_process_info(nullptr, nullptr, nullptr, nullptr, nullptr, &committed, nullptr, nullptr);
  return static_cast<double>(committed) / (1 << 20);
#else
  const struct mallinfo2 info = mallinfo2();
  return static_cast<double>(info.uordblks + info.hblkhd) / (1 << 20);
#endif
}

struct Sample {
  double seconds = 0;
  double rssMiB = 0;
  double heapMiB = 0;
  int64_t steps = 0;
  int edits = 0;
  int restarts = 0;
};

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// Least-squares slope of y over x, per unit of x.
double slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = mean(x), my = mean(y);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return sxx > 0 ? sxy / sxx : 0;
}

QDockWidget* dockNamed(MainWindow& window, const char* name) {
  return window.findChild<QDockWidget*>(name);
}

graph::NodeId nodeNamed(const ProjectDocument& doc, const std::string& name) {
  const graph::Node* n = doc.project().graph.find_by_name(name);
  return n ? n->id : 0;
}

// Offscreen, every dock shown again says "This plugin does not support propagateSizeHints()";
// the rest goes to stderr as Qt would print it.
void quietHints(QtMsgType type, const QMessageLogContext& context, const QString& text) {
  if (text.contains("propagateSizeHints")) return;
  std::fprintf(stderr, "%s\n", qPrintable(qFormatLogMessage(type, context, text)));
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  qInstallMessageHandler(quietHints);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("NNStudioBench");
  const QStringList args = QApplication::arguments();
  auto option = [&](const char* name, double fallback) {
    const qsizetype i = args.indexOf(name);
    return i >= 0 && i + 1 < args.size() ? args[i + 1].toDouble() : fallback;
  };
  const double minutes = std::max(0.1, option("--minutes", 10));
  const double sampleSeconds = std::max(1.0, option("--sample", 10));
  const double warmupSeconds = std::max(0.0, option("--warmup", 60));
  const double probeBudget = std::max(0.0, option("--probe-budget", 0));
  const qsizetype csvAt = args.indexOf("--csv");
  const QString csvPath = csvAt >= 0 && csvAt + 1 < args.size() ? args[csvAt + 1] : QString();

  QTemporaryDir dir;
  MainWindow window;
  ProjectDocument* doc = bench::open_example_until_paused(window);
  // Probes sample exactly every 10 steps by default (--probe-budget 0): the most samples, so
  // that what keeps them (the probes' reservoirs, the window's health history of 2,048 samples
  // a series) fills within the warm-up. Under the default 5% budget how often they sample
  // follows the machine's load, and those bounded histories fill whenever it lets them.
  graph::ProbeSpec spec;
  spec.max_overhead = probeBudget;
  int probes = 0;
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (!doc->canProbe(n.id)) continue;
    if (doc->probeOf(n.id)) doc->removeProbe(n.id);
    spec.node = n.id;
    if (doc->addProbe(n.id, spec)) ++probes;
  }
  doc->undoStack()->clear();
  if (!dir.isValid() || !window.saveTo(dir.filePath("soak.nns"))) {
    std::fprintf(stderr, "bench_soak: cannot save the example to a temporary folder\n");
    return 1;
  }
  window.resize(1600, 1000);
  window.show();
  for (int i = 0; i < 10; ++i) QApplication::processEvents();

  TrainingController* controller = window.training();
  if (!controller->runStore()) {
    std::fprintf(stderr, "bench_soak: no run store: %s\n", qPrintable(controller->runStoreError()));
    return 1;
  }
  // Steps over all sessions: a session made after an edit counts from 0 again.
  int64_t steps = 0, lastStep = 0;
  QObject::connect(controller, &TrainingController::statusChanged,
                   [&](const train::SessionStatus& s) {
                     steps += s.step >= lastStep ? s.step - lastStep : s.step;
                     lastStep = s.step;
                   });

  const graph::NodeId fc1 = nodeNamed(*doc, "fc1"), relu1 = nodeNamed(*doc, "relu1"),
                      fc2 = nodeNamed(*doc, "fc2");
  QDockWidget* curvesDock = dockNamed(window, "curvesDock");
  QDockWidget* outputDock = dockNamed(window, "boundaryDock");
  QDockWidget* inspectorDock = dockNamed(window, "inspectorDock");
  QDockWidget* runsDock = dockNamed(window, "runsDock");
  QDockWidget* bottomDock = dockNamed(window, "bottomDock");
  auto* bottomTabs = qobject_cast<QTabWidget*>(bottomDock->widget());
  InspectorWidget* inspector = window.inspector();

  // One script step a second, in a cycle. An edit is undone on the next step, so the graph
  // returns to the example's and the undo stack stays two commands deep at most.
  int edits = 0, restarts = 0;
  auto edit = [&](const std::function<bool()>& fn) {
    if (fn()) ++edits;
  };
  auto undo = [&] { doc->undoStack()->undo(); };
  graph::NodeId group = 0;
  const std::vector<std::function<void()>> script = {
      [&] { edit([&] {
              return doc->addNode("Dropout", {240, 300}) != 0;
            }); },
      undo,
      [&] {
        doc->setSelection({fc1});
        inspector->setCurrentWidget(window.probePanel());
      },
      [&] {
        edit([&] {
          return doc->setNodeOptions(fc2,
                                     {{"in_features", 64}, {"out_features", 64}, {"bias", false}});
        });
      },
      undo,
      [&] { curvesDock->hide(); },
      [&] { curvesDock->show(); },
      [&] { edit([&] {
              return (group = doc->groupNodes({fc1, relu1}, "Sequential")) != 0;
            }); },
      [&] { edit([&] { return (doc->ungroup(group), true); }); },
      [&] {
        undo();
        undo();
      },
      [&] {
        doc->setSelection({fc2});
        inspector->setCurrentIndex(0);
      },
      [&] { edit([&] { return doc->renameNode(fc2, "hidden"); }); },
      undo,
      [&] { outputDock->hide(); },
      [&] { outputDock->show(); },
      [&] { edit([&] { return doc->removeProbe(relu1); }); },
      undo,
      [&] {
        runsDock->raise();
        controller->setEvalMode(true);
      },
      [&] {
        bottomDock->raise();
        bottomTabs->setCurrentIndex((bottomTabs->currentIndex() + 1) % bottomTabs->count());
        controller->setEvalMode(false);
      },
      [&] { inspectorDock->hide(); },
      [&] {
        inspectorDock->show();
        doc->setSelection({});
      },
      [&] {
        doc->setSelection({fc1, relu1, fc2});
      },
      [&] {
        // Pause and go on: the edits above apply, the session is made again with the weights
        // carried over, and the run store records a branch.
        controller->pause();
        controller->start();
      },
  };
  size_t next = 0;
  QTimer scriptTimer;
  QObject::connect(&scriptTimer, &QTimer::timeout, [&] {
    script[next]();
    next = (next + 1) % script.size();
    if (!controller->isRunning()) {
      controller->start();
      ++restarts;
    }
  });

  std::vector<Sample> samples;
  QElapsedTimer clock;
  FILE* csv = nullptr;
  if (!csvPath.isEmpty()) {
    csv = std::fopen(csvPath.toLocal8Bit().constData(), "w");
    if (!csv) {
      std::fprintf(stderr, "bench_soak: cannot write %s\n", qPrintable(csvPath));
      return 1;
    }
    std::fprintf(csv, "seconds,rss_mib,heap_mib,steps,edits,restarts\n");
  }
  auto sample = [&] {
    Sample s;
    s.seconds = clock.elapsed() / 1000.0;
    s.rssMiB = residentKiB() / 1024.0;
    s.heapMiB = heapInUseMiB();
    s.steps = steps;
    s.edits = edits;
    s.restarts = restarts;
    samples.push_back(s);
    std::printf("%7.0f %9.1f %9.1f %11lld %6d %8d\n", s.seconds, s.rssMiB, s.heapMiB,
                static_cast<long long>(s.steps), s.edits, s.restarts);
    std::fflush(stdout);
    if (csv) {
      std::fprintf(csv, "%.1f,%.2f,%.2f,%lld,%d,%d\n", s.seconds, s.rssMiB, s.heapMiB,
                   static_cast<long long>(s.steps), s.edits, s.restarts);
      std::fflush(csv);
    }
  };
  QTimer sampleTimer;
  QObject::connect(&sampleTimer, &QTimer::timeout, sample);

  std::printf(
      "platform %s; spirals example with %d probes (every 10 steps, budget %.0f%%), saved to %s; "
      "%.1f min, RSS every %.0f s, warm-up %.0f s\n",
      qPrintable(QGuiApplication::platformName()), probes, 100 * probeBudget,
      qPrintable(doc->filePath()), minutes, sampleSeconds, warmupSeconds);
  std::printf("%7s %9s %9s %11s %6s %8s\n", "time s", "RSS MiB", "heap MiB", "steps", "edits",
              "restarts");
  controller->start();
  clock.start();
  sample();
  scriptTimer.start(1000);
  sampleTimer.start(static_cast<int>(sampleSeconds * 1000));
  QEventLoop loop;
  QTimer::singleShot(static_cast<int>(minutes * 60000), &loop, &QEventLoop::quit);
  loop.exec();
  scriptTimer.stop();
  sampleTimer.stop();
  if (clock.elapsed() / 1000.0 - samples.back().seconds >= 1) sample();
  controller->pause();
  if (csv) std::fclose(csv);
  doc->undoStack()->setClean();

  // The first minute after the warm-up against the last minute; the fit over all after it.
  const double end = samples.back().seconds;
  std::vector<double> first, last, x, y;
  for (const Sample& s : samples) {
    if (s.seconds < warmupSeconds) continue;
    if (s.seconds < warmupSeconds + 60) first.push_back(s.rssMiB);
    if (s.seconds >= end - 60) last.push_back(s.rssMiB);
    x.push_back(s.seconds / 60);
    y.push_back(s.rssMiB);
  }
  if (first.empty() || last.empty()) {
    std::printf("no samples after the warm-up: run longer than --warmup\n");
    return 1;
  }
  const double growth = mean(last) - mean(first);
  const double bound = std::max(20.0, 0.05 * mean(first));
  std::printf(
      "RSS: first minute after warm-up %.1f MiB, last minute %.1f MiB, growth %+.1f MiB "
      "(%+.1f%%), slope %+.2f MiB/min over %zu samples (bound: %.1f MiB)\n",
      mean(first), mean(last), growth, 100 * growth / mean(first), slope(x, y), x.size(), bound);
  std::printf("%lld steps (%.0f/s), %d edits, %d restarts in %.1f min\n",
              static_cast<long long>(steps), static_cast<double>(steps) / end, edits, restarts,
              end / 60);
  if (growth > bound) {
    std::printf("FAIL: resident memory grew by more than %.1f MiB\n", bound);
    return 1;
  }
  return 0;
}
