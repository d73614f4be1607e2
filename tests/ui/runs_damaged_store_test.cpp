// SPDX-License-Identifier: GPL-3.0-or-later
// A damaged run store: the CLI and the window say why and the project still trains. Outside
// the ThreadSanitizer stage (tests/CMakeLists.txt), as the Watch Folder test is: it starts the
// CLI as a process and then opens a window, whose threads (the open's analysis, the session)
// ThreadSanitizer does not support after a fork in a multi-threaded process ("starting new
// threads after multi-threaded fork is not supported").
#include <gtest/gtest.h>

#include <QByteArray>
#include <QDir>
#include <QFile>

#include "runs_fixture.h"
#include "ui/app/main_window.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

TEST_F(RunsTest, ADamagedStoreIsReportedAndTheProjectStillTrains) {
  QDir().mkpath(dir_.filePath("spirals.runs"));
  QFile db(dir_.filePath("spirals.runs/runs.db"));
  ASSERT_TRUE(db.open(QIODevice::WriteOnly));
  db.write(QByteArray(8192, '\x5a'));
  db.close();
  const QByteArray project = fileBytes(project_);

  const Result train = cli({"train", project_, "--steps", "5"});
  EXPECT_EQ(train.code, 0);
  EXPECT_TRUE(train.err.contains("damaged or not a run store")) << train.err.toStdString();
  EXPECT_TRUE(train.err.contains("training without recording")) << train.err.toStdString();
  const Result list = cli({"runs", project_});
  EXPECT_EQ(list.code, 1);
  EXPECT_TRUE(list.err.contains("runs.db")) << list.err.toStdString();
  EXPECT_EQ(fileBytes(project_), project);
  EXPECT_EQ(fileBytes(dir_.filePath("spirals.runs/runs.db")), QByteArray(8192, '\x5a'));

  // The window opens the project and says why its runs are not kept.
  MainWindow window;
  ASSERT_TRUE(window.openFile(project_));
  EXPECT_EQ(window.training()->runStore(), nullptr);
  EXPECT_TRUE(window.training()->runStoreError().contains("damaged"))
      << window.training()->runStoreError().toStdString();
}

}  // namespace
}  // namespace nns::ui
