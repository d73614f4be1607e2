// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fixture of the Runs tests (runs_test.cpp, watch_folder_test.cpp): a copy of the spirals
// example in a folder of its own, its store beside it, and the CLI at hand.
#include <gtest/gtest.h>

#include <QByteArray>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <string>

#include "engine/train/run_store.h"

namespace nns::ui {

// These tests look for the store beside their own projects: the suite's NNSTUDIO_RUNS_DIR
// (which keeps the source tree clean) is not theirs.
class RunsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = qgetenv("NNSTUDIO_RUNS_DIR");
    qunsetenv("NNSTUDIO_RUNS_DIR");
    ASSERT_TRUE(dir_.isValid());
    project_ = dir_.filePath("spirals.nns");
    ASSERT_TRUE(
        QFile::copy(QStringLiteral(NNS_SOURCE_DIR "/resources/examples/spirals.nns"), project_));
    QFile::setPermissions(project_, QFile::ReadOwner | QFile::WriteOwner);
  }
  void TearDown() override {
    if (!saved_.isEmpty()) qputenv("NNSTUDIO_RUNS_DIR", saved_);
  }

  // The project's probes sample exactly every N steps (max_overhead 0): with the example's 5%
  // budget, which steps a loaded machine samples is up to its timing (a branch of 460 steps
  // sampled none on a loaded CI run), and a test that compares sampled steps needs them fixed.
  void sampleEveryNSteps() {
    QFile file(project_);
    ASSERT_TRUE(file.open(QIODevice::ReadOnly));
    QJsonObject project = QJsonDocument::fromJson(file.readAll()).object();
    file.close();
    QJsonArray probes = project["probes"].toArray();
    for (QJsonValueRef probe : probes) {
      QJsonObject spec = probe.toObject();
      spec["max_overhead"] = 0;
      probe = spec;
    }
    project["probes"] = probes;
    ASSERT_TRUE(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(QJsonDocument(project).toJson());
  }

  struct Result {
    int code = -1;
    QString out;
    QString err;
  };
  Result cli(const QStringList& args) {
    QProcess p;
    p.setProcessEnvironment(QProcessEnvironment::systemEnvironment());
    p.start(NNS_CLI, args);
    EXPECT_TRUE(p.waitForFinished(120000)) << args.join(' ').toStdString();
    return {p.exitCode(), QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
  }
  std::string folder() const { return train::RunStore::folder_for(project_.toStdString()); }
  QByteArray fileBytes(const QString& path) {
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::ReadOnly)) << path.toStdString();
    return f.readAll();
  }

  QByteArray saved_;
  QTemporaryDir dir_;
  QString project_;
};

}  // namespace nns::ui
