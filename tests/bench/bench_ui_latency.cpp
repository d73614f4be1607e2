// SPDX-License-Identifier: GPL-3.0-or-later
// The window's smoothness while it trains (issue 7's benchmarks; a plain program, not ctest):
//   - event-loop latency: a 1 ms QTimer's lateness (p50, p99, max) while the spirals example
//     trains at full speed with a probe on every node, fc2's probe panel open and every plot
//     showing (target: p99 under 16 ms, one frame);
//   - the plots' refresh rate (curves replots and decision-boundary pictures per second);
//   - training steps per second with the window open against `nnstudio-cli train` headless on
//     the same project (target: at least 80%).
// Run under Xvfb (xvfb-run -a -s "-screen 0 1600x1000x24" bench_ui_latency) or with
// QT_QPA_PLATFORM=offscreen. Each side runs `kRounds` times, alternating, and the medians are
// compared, so that load from other processes on the machine falls on both alike.
// Options: --seconds N (each window run's length), --no-probes, --trace (the slowest event
// dispatches by receiver, to find what makes a frame long).
#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTimer>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/graph/project.h"
#include "engine/train/session.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui/panels/inspector_widget.h"
#include "ui/probes/probe_panel.h"
#include "ui/training/curves_widget.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "window_bench.h"

namespace {

using namespace nns;
using namespace nns::ui;

constexpr int kRounds = 3;
// --seconds N: how long each window run measures (after half a second of warm-up). Longer
// runs show whether drawing stays within a frame as the curves and histories grow.
int windowSeconds = 5;
constexpr int kCliSteps = 25000;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

double median(std::vector<double> v) {
  return percentile(std::move(v), 0.5);
}

// `nnstudio-cli train` on the example: its own steps per second ("N steps, X steps/s").
double headlessStepsPerSecond(const QString& project) {
  QProcess cli;
  // Thousands of steps past the example's 40 epochs (760 steps): the first steps run faster
  // than later ones (the rate settles as the loss falls), so both sides train long runs.
  cli.start(NNS_CLI, {"train", project, "--steps", QString::number(kCliSteps), "--quiet"});
  if (!cli.waitForFinished(600000) || cli.exitCode() != 0) {
    std::fprintf(stderr, "bench_ui_latency: nnstudio-cli train failed: %s\n",
                 cli.readAllStandardError().constData());
    return 0;
  }
  const QString out = QString::fromUtf8(cli.readAllStandardOutput());
  const QRegularExpressionMatch m =
      QRegularExpression(R"((\d+) steps, ([\d.]+) steps/s)").match(out);
  return m.hasMatch() ? m.captured(2).toDouble() : 0;
}

// The same session made in this process with no window (what the window's worker does,
// without the window): tells the window's cost from the process's.
double inProcessStepsPerSecond(const QString& path) {
  graph::Project project = graph::load_project(path.toStdString());
  project.training.epochs = 0;
  auto session = train::make_session(project, QFileInfo(path).absolutePath().toStdString());
  session->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t steps0 = session->status().step;
  QElapsedTimer clock;
  clock.start();
  std::this_thread::sleep_for(std::chrono::seconds(windowSeconds));
  const double seconds = clock.nsecsElapsed() / 1e9;
  return static_cast<double>(session->status().step - steps0) / seconds;
}

struct WindowRun {
  double stepsPerSecond = 0;
  double p50 = 0, p99 = 0, max = 0;  // timer lateness, ms
  double replotsPerSecond = 0;
  double boundaryPerSecond = 0;
  int probes = 0;
};

// --trace: which event dispatches take the longest, by receiver class and event type, so that a
// long frame can be traced to the panel that drew it. Only the outermost dispatch is timed (a
// paint inside a timer's handler counts as the timer's).
class TracingApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool tracing = false;
  struct Cost {
    int count = 0;
    double total = 0, max = 0;
    int over8 = 0;
  };
  std::map<std::string, Cost> costs;

  bool notify(QObject* receiver, QEvent* event) override {
    if (!tracing || depth_ > 0) return QApplication::notify(receiver, event);
    ++depth_;
    QElapsedTimer t;
    t.start();
    const bool result = QApplication::notify(receiver, event);
    const double ms = t.nsecsElapsed() / 1e6;
    --depth_;
    if (ms > 1.0) {
      std::string key = std::string(receiver->metaObject()->className()) + " " +
                        receiver->objectName().toStdString() + " event " +
                        std::to_string(static_cast<int>(event->type()));
      Cost& c = costs[key];
      ++c.count;
      c.total += ms;
      c.max = std::max(c.max, ms);
      if (ms > 8) ++c.over8;
    }
    return result;
  }

 private:
  int depth_ = 0;
};

TracingApplication* tracingApp = nullptr;

// --no-probes: the window without probes, to tell their cost from the window's own.
bool withProbes = true;

WindowRun windowRun() {
  MainWindow window;
  ProjectDocument* doc = bench::open_example_until_paused(window);
  WindowRun run;
  graph::NodeId shown = 0;
  for (const graph::Node& n : doc->project().graph.nodes) {
    if (!doc->canProbe(n.id)) continue;
    if (withProbes && !doc->probeOf(n.id)) doc->addProbe(n.id);
    if (!withProbes && doc->probeOf(n.id)) doc->removeProbe(n.id);
    if (doc->probeOf(n.id)) ++run.probes;
    if (n.name == "fc2") shown = n.id;
  }
  // As a user watches it: fc2's probe panel open beside the curves and the boundary.
  if (withProbes && shown) {
    doc->setSelection({shown});
    window.inspector()->setCurrentWidget(window.probePanel());
  }
  window.resize(1600, 1000);
  window.show();
  for (int i = 0; i < 10; ++i) QApplication::processEvents();

  TrainingController* controller = window.training();
  std::vector<double> lateness;
  QElapsedTimer clock;
  qint64 last = -1;
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    if (last >= 0) lateness.push_back(std::max(0.0, (now - last) / 1e6 - 1.0));
    last = now;
  });

  controller->start();
  // Let the run settle (the first epoch, the first pictures), then measure.
  QElapsedTimer warm;
  warm.start();
  while (warm.elapsed() < 500) QApplication::processEvents(QEventLoop::AllEvents, 5);
  const int64_t steps0 = controller->session()->status().step;
  const int replots0 = window.curves()->replots();
  const int pictures0 = window.boundary()->predictionsShown();
  clock.start();
  if (tracingApp) tracingApp->tracing = true;
  probe.start(1);
  QEventLoop loop;
  QTimer::singleShot(windowSeconds * 1000, &loop, &QEventLoop::quit);
  loop.exec();
  probe.stop();
  if (tracingApp) tracingApp->tracing = false;
  const double seconds = clock.nsecsElapsed() / 1e9;
  const int64_t steps = controller->session()->status().step - steps0;
  controller->pause();

  run.stepsPerSecond = static_cast<double>(steps) / seconds;
  run.p50 = percentile(lateness, 0.5);
  run.p99 = percentile(lateness, 0.99);
  run.max = percentile(lateness, 1.0);
  run.replotsPerSecond = (window.curves()->replots() - replots0) / seconds;
  run.boundaryPerSecond = (window.boundary()->predictionsShown() - pictures0) / seconds;
  doc->undoStack()->setClean();
  return run;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  TracingApplication app(argc, argv);
  if (QApplication::arguments().contains("--trace")) tracingApp = &app;
  const QStringList args = QApplication::arguments();
  withProbes = !args.contains("--no-probes");
  if (const qsizetype i = args.indexOf("--seconds"); i >= 0 && i + 1 < args.size()) {
    windowSeconds = std::max(1, args[i + 1].toInt());
  }
  QApplication::setOrganizationName("NNStudioBench");
  const QString project = findExampleFile("spirals.nns");
  if (project.isEmpty()) {
    std::fprintf(stderr, "bench_ui_latency: resources/examples/spirals.nns not found\n");
    return 1;
  }
  std::printf("platform %s; spirals example, %d s per window run, %d steps per CLI run\n",
              qPrintable(QGuiApplication::platformName()), windowSeconds, kCliSteps);
  std::vector<double> headless, inProcess, windowed, p50, p99, worst, replots, pictures;
  for (int round = 0; round < kRounds; ++round) {
    headless.push_back(headlessStepsPerSecond(project));
    inProcess.push_back(inProcessStepsPerSecond(project));
    const WindowRun w = windowRun();
    windowed.push_back(w.stepsPerSecond);
    p50.push_back(w.p50);
    p99.push_back(w.p99);
    worst.push_back(w.max);
    replots.push_back(w.replotsPerSecond);
    pictures.push_back(w.boundaryPerSecond);
    std::printf(
        "round %d: headless %.0f steps/s, in-process session %.0f steps/s | window (%d probes) "
        "%.0f steps/s, timer lateness p50 "
        "%.2f ms p99 %.2f ms max %.1f ms, curves %.1f replots/s, boundary %.1f pictures/s\n",
        round + 1, headless.back(), inProcess.back(), w.probes, w.stepsPerSecond, w.p50, w.p99,
        w.max, w.replotsPerSecond, w.boundaryPerSecond);
    std::fflush(stdout);
  }
  if (tracingApp) {
    std::printf("event dispatches over 1 ms, all rounds (count, total ms, max ms, over 8 ms):\n");
    std::vector<std::pair<std::string, TracingApplication::Cost>> rows(app.costs.begin(),
                                                                       app.costs.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.total > b.second.total; });
    for (const auto& [key, c] : rows) {
      std::printf("  %6d %9.1f %7.1f %5d  %s\n", c.count, c.total, c.max, c.over8, key.c_str());
    }
  }
  const double ratio = median(headless) > 0 ? median(windowed) / median(headless) : 0;
  std::printf(
      "median: headless %.0f steps/s (in-process session %.0f), window %.0f steps/s (%.0f%%, "
      "target >= 80%%); lateness "
      "p50 %.2f ms, p99 %.2f ms (target < 16 ms); curves %.1f replots/s; boundary %.1f/s\n",
      median(headless), median(inProcess), median(windowed), 100 * ratio, median(p50), median(p99),
      median(replots), median(pictures));
  return 0;
}
