// SPDX-License-Identifier: GPL-3.0-or-later
// The window's saves into a filesystem that refuses them, for real: a read-only tmpfs and a
// full one. The window must say which file and why, keep the work unsaved (marked modified,
// its recovery file kept), and leave the previous file as it was. Mounting needs a mount
// namespace, which a process with threads (Qt's) cannot make for itself, so each test runs
// itself again under unshare(1), in a namespace of its own (a user namespace too when not
// root), where its mounts are seen by nobody else.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>
#include <QUndoStack>
#include <cerrno>
#include <cstring>
#include <memory>

#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/document/project_document.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

constexpr const char* kInside = "NNS_TEST_IN_MOUNT_NAMESPACE";

// In the test process: runs the current test again under unshare(1) and checks that it passed
// there. Skips when the system allows no mount namespace.
void runInOwnMountNamespace() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  QStringList args;
  if (::geteuid() != 0) args << "--map-root-user";
  args << "--mount"
       << "--propagation"
       << "private" << QCoreApplication::applicationFilePath()
       << QString("--gtest_filter=%1.%2").arg(info->test_suite_name(), info->name());
  QProcess child;
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert(kInside, "1");
  child.setProcessEnvironment(env);
  child.setProcessChannelMode(QProcess::MergedChannels);
  child.start("unshare", args);
  if (!child.waitForStarted())
    GTEST_SKIP() << "unshare(1) did not start: " << child.errorString().toStdString();
  ASSERT_TRUE(child.waitForFinished(120000)) << "the test under unshare did not finish";
  const QString output = QString::fromLocal8Bit(child.readAll());
  if (!output.contains("[ RUN      ]")) {
    GTEST_SKIP() << "no mount namespace: " << output.trimmed().toStdString();
  }
  EXPECT_EQ(child.exitStatus(), QProcess::NormalExit);
  EXPECT_EQ(child.exitCode(), 0) << output.toStdString();
  EXPECT_TRUE(output.contains("[  PASSED  ] 1 test.")) << output.toStdString();
}

QByteArray contents(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("(unreadable)");
}

// The file names in dir, space-separated.
std::string files(const QString& dir) {
  return QDir(dir)
      .entryList(QDir::Files | QDir::NoDotAndDotDot, QDir::Name)
      .join(' ')
      .toStdString();
}

// A 256 KiB tmpfs on dir (made if need be).
void mountTmpfs(const QString& dir) {
  QDir().mkpath(dir);
  ASSERT_EQ(
      ::mount("tmpfs", dir.toLocal8Bit().constData(), "tmpfs", MS_NOSUID | MS_NODEV, "size=256k"),
      0)
      << std::strerror(errno);
}

void remount(const QString& dir, bool readOnly) {
  const unsigned long flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | (readOnly ? MS_RDONLY : 0);
  ASSERT_EQ(::mount(nullptr, dir.toLocal8Bit().constData(), nullptr, flags, nullptr), 0)
      << std::strerror(errno);
}

// Fills the filesystem of dir to the last byte.
void fill(const QString& dir) {
  QFile filler(dir + "/filler");
  ASSERT_TRUE(filler.open(QIODevice::WriteOnly));
  const QByteArray block(4096, 'x');
  while (filler.write(block) == block.size() && filler.flush()) {
  }
}

// The title and text of the message box that the next call shows (closed at once).
struct ShownBox {
  QString title;
  QString text;
};

template <typename Fn>
ShownBox messageBoxOf(Fn&& fn) {
  ShownBox shown;
  QTimer::singleShot(0, [&] {
    if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
      shown = {box->windowTitle(), box->text()};
      box->close();
    }
  });
  fn();
  return shown;
}

class FileFaultsUi : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!qEnvironmentVariableIsSet(kInside)) return;
    window = std::make_unique<MainWindow>();
    window->document()->setProject(spiralsExample(), QString());
    window->show();
    test::settle();
  }
  void TearDown() override {
    if (!window) return;
    window->document()->undoStack()->setClean();
    window->close();
    window.reset();
  }
  ProjectDocument* doc() const { return window->document(); }
  // An edit of fc2 (64 to 64 features, with or without bias): the document has unsaved work.
  void edit(bool bias) {
    const graph::Node* fc2 = doc()->project().graph.find_by_name("fc2");
    ASSERT_TRUE(fc2);
    doc()->setNodeOptions(fc2->id, {{"in_features", 64}, {"out_features", 64}, {"bias", bias}});
    ASSERT_TRUE(window->isWindowModified());
  }

  std::unique_ptr<MainWindow> window;
  QTemporaryDir tmp;
};

TEST_F(FileFaultsUi, SavingToAReadOnlyOrFullDiskSaysWhichFileAndWhyAndKeepsTheWork) {
  if (!window) return runInOwnMountNamespace();
  const QString disk = tmp.filePath("disk");
  mountTmpfs(disk);
  // The project's runs database (spirals.runs/) stays open for writing, which would keep the
  // filesystem from becoming read-only: it gets a filesystem of its own.
  mountTmpfs(disk + "/spirals.runs");
  const QString path = disk + "/spirals.nns";
  const QString weights = disk + "/spirals.pt";
  ASSERT_TRUE(window->saveTo(path));
  ASSERT_TRUE(window->saveStateDictTo(weights));
  const QByteArray project = contents(path);
  const QByteArray stateDict = contents(weights);

  // Read-only: Save and Save As fail, saying so; the work stays unsaved and recoverable.
  edit(false);
  window->autosave();
  ASSERT_TRUE(QFileInfo::exists(window->recoveryFile()));
  remount(disk, /*readOnly=*/true);
  ShownBox box = messageBoxOf([&] { EXPECT_FALSE(window->saveTo(path)); });
  EXPECT_EQ(box.title.toStdString(), "Could not save the project");
  EXPECT_EQ(
      box.text.toStdString(),
      (path + ": cannot create a temporary file next to it: Read-only file system").toStdString());
  EXPECT_TRUE(window->log()->toPlainText().contains("Could not save " + path + ": " + box.text));
  box = messageBoxOf([&] { EXPECT_FALSE(window->saveTo(disk + "/copy.nns")); });
  EXPECT_EQ(box.text.toStdString(),
            (disk + "/copy.nns: cannot create a temporary file next to it: Read-only file system")
                .toStdString());
  EXPECT_TRUE(window->isWindowModified());
  EXPECT_TRUE(doc()->isModified());
  EXPECT_EQ(doc()->filePath().toStdString(), path.toStdString());
  EXPECT_TRUE(QFileInfo::exists(window->recoveryFile()));
  EXPECT_EQ(contents(path), project);
  EXPECT_EQ(files(disk), "spirals.nns spirals.pt");

  // Full: the project and the state dict fail to write; the previous files stay.
  remount(disk, /*readOnly=*/false);
  fill(disk);
  box = messageBoxOf([&] { EXPECT_FALSE(window->saveTo(path)); });
  EXPECT_EQ(box.title.toStdString(), "Could not save the project");
  EXPECT_EQ(box.text.toStdString(),
            (path + ": write failed: No space left on device").toStdString());
  EXPECT_TRUE(window->isWindowModified());
  EXPECT_TRUE(QFileInfo::exists(window->recoveryFile()));
  box = messageBoxOf([&] { EXPECT_FALSE(window->saveStateDictTo(weights)); });
  EXPECT_EQ(box.title.toStdString(), "Could not save the state dict");
  EXPECT_EQ(box.text.toStdString(),
            (weights + ": write failed: No space left on device").toStdString());
  EXPECT_EQ(contents(path), project);
  EXPECT_EQ(contents(weights), stateDict);
  EXPECT_EQ(files(disk), "filler spirals.nns spirals.pt");

  // With room again, the same Save works and the document is clean.
  ASSERT_TRUE(QFile::remove(disk + "/filler"));
  EXPECT_TRUE(window->saveTo(path));
  EXPECT_FALSE(window->isWindowModified());
  EXPECT_NE(contents(path), project);
  ::umount2((disk + "/spirals.runs").toLocal8Bit().constData(), MNT_DETACH);
  ::umount2(disk.toLocal8Bit().constData(), MNT_DETACH);
}

TEST_F(FileFaultsUi, AFailedAutosaveIsLoggedAndKeepsThePreviousRecoveryFile) {
  if (!window) return runInOwnMountNamespace();
  const QString folder = QFileInfo(window->recoveryFile()).path();
  mountTmpfs(folder);
  edit(false);
  window->autosave();
  const QByteArray recovery = contents(window->recoveryFile());
  ASSERT_FALSE(recovery.isEmpty());
  edit(true);
  remount(folder, /*readOnly=*/true);
  window->autosave();
  EXPECT_TRUE(window->log()->toPlainText().contains(
      "Autosave failed: " + window->recoveryFile() +
      ": cannot create a temporary file next to it: Read-only file system"))
      << window->log()->toPlainText().toStdString();
  EXPECT_EQ(contents(window->recoveryFile()), recovery);
  EXPECT_EQ(files(folder), QFileInfo(window->recoveryFile()).fileName().toStdString());
  ::umount2(folder.toLocal8Bit().constData(), MNT_DETACH);
}

}  // namespace
}  // namespace nns::ui
