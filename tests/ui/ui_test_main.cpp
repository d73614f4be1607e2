// SPDX-License-Identifier: GPL-3.0-or-later
// The window's tests run in one QApplication. Without a display they use Qt's offscreen
// platform. ctest runs every test as a process of its own, several at once: each process
// gets a home folder of its own (and QStandardPaths' test mode within it), so settings and
// recovery files are neither the user's nor another test's.
#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

#include "ui/app/application.h"

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QTemporaryDir home;
  if (!home.isValid()) {
    fprintf(stderr, "ui_tests: no temporary folder for the tests' home: %s\n",
            qPrintable(home.errorString()));
    return 1;
  }
  qputenv("HOME", home.path().toLocal8Bit());
  QStandardPaths::setTestModeEnabled(true);
  QApplication app(argc, argv);
  // As the window's own main does: the tests drive the same application.
  nns::ui::setUpApplication(app);
  QApplication::setOrganizationName("NNStudioTests");
  QApplication::setApplicationName("ui_tests");
  QSettings().clear();
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
