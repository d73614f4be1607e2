// nnstudio: the window. Opens the project given on the command line, or the spirals example;
// offers back the unsaved work of a session that did not close properly.
//
//   nnstudio [project.nns]
#include <QApplication>
#include <QStringList>
#include <QTimer>

#include "engine/plugin/loader.h"
#include "ui/app/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName("NNStudio");
  QApplication::setApplicationName("nnstudio");
  QApplication::setApplicationDisplayName("NN Studio");
  QApplication::setApplicationVersion(NNS_VERSION);

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
