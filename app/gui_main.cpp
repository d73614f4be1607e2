// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio: the window. Opens the project given on the command line, or the spirals example;
// offers back the unsaved work of a session that did not close properly.
//
//   nnstudio [project.nns]
#include <QApplication>
#include <QIcon>
#include <QStringList>
#include <QTimer>
#include <cstring>
#include <iostream>

#include "engine/plugin/loader.h"
#include "ui/app/application.h"
#include "ui/app/main_window.h"

namespace {

constexpr const char* kUsage =
    "Usage: nnstudio [options] [PROJECT.nns]\n"
    "\n"
    "Build neural networks visually, train them and look inside them while they learn.\n"
    "\n"
    "Opens PROJECT.nns in the window, or the spirals example when no project is given. Unsaved\n"
    "work from a session that did not close properly is offered back.\n"
    "\n"
    "Options:\n"
    "  -h, --help            print this help and exit\n"
    "  -v, --version         print the version and exit\n"
    "  -platform NAME        Qt's platform plugin (xcb, wayland, offscreen); Qt's other\n"
    "                        options (-style, -reverse, ...) work as in every Qt program\n"
    "\n"
    "Environment:\n"
    "  NNS_PLUGIN_PATH       more folders to load layer plugins from (':'-separated)\n"
    "  NNSTUDIO_RUNS_DIR     keep the recorded training runs here instead of beside each project\n"
    "\n"
    "nnstudio-cli does the same work without a window: train, inspect, convert, export.\n";

// Answered before Qt starts, so that they work without a display.
bool answered_before_qt(int argc, char** argv, int& exit_code) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << kUsage;
      exit_code = 0;
      return true;
    }
    if (std::strcmp(argv[i], "-v") == 0 || std::strcmp(argv[i], "--version") == 0) {
      std::cout << "nnstudio " << NNS_VERSION << "\n";
      exit_code = 0;
      return true;
    }
  }
  return false;
}

QIcon application_icon() {
  QIcon icon;
  for (int size : {16, 24, 32, 48, 64, 128, 256, 512}) {
    icon.addFile(QStringLiteral(":/icons/org.nnstudio.NNStudio-%1.png").arg(size));
  }
  return icon;
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  if (answered_before_qt(argc, argv, exit_code)) return exit_code;

  QApplication app(argc, argv);
  QApplication::setOrganizationName("NNStudio");
  QApplication::setApplicationName("nnstudio");
  QApplication::setApplicationDisplayName("NN Studio");
  QApplication::setApplicationVersion(NNS_VERSION);
  // The installed .desktop entry's name: the desktop matches the window to its menu entry
  // and icon by it (on Wayland, the only way).
  QGuiApplication::setDesktopFileName("org.nnstudio.NNStudio");
  QApplication::setWindowIcon(application_icon());
  nns::ui::setUpApplication(app);

  // Before the window, so the palette lists the plugins' types and a project that uses them
  // opens; Help > Plugins shows what loaded and what failed.
  nns::plugin::load_installed_plugins();
  nns::ui::MainWindow window;
  const QStringList args = QApplication::arguments();
  if (args.size() < 2 || !window.openFile(args.at(1))) window.openExample();
  window.show();
  // Asked once the window is up, so the question has a window to sit on.
  QTimer::singleShot(0, &window, [&window] { window.offerRecovery(); });
  return QApplication::exec();
}
