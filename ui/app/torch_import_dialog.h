// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// File > Import > PyTorch Code...: the source (FILE.py:EXPR or package.module:EXPR), one shape
// per forward argument, the Python that has torch, and the project to write. The tracer runs
// in a QProcess and the project is made on a worker thread, so the window never waits; the
// dialog shows the tracer's progress and, when it fails, its message (the op, the module path
// and the source line), and writes nothing then. When the project is written it emits
// imported() and closes (engine/torch_import/torch_import.h does the work).
#include <QDialog>
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>
#include <memory>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace nns::ui {

class TorchImportDialog : public QDialog {
  Q_OBJECT

 public:
  explicit TorchImportDialog(QWidget* parent = nullptr);
  ~TorchImportDialog() override;

  void setSource(const QString& source);
  void setInputs(const QString& inputs);  // "3,224,224" or "12:int64 12:int64"
  void setPython(const QString& python);
  void setProjectPath(const QString& path);
  // Starts the import (the Import button); false, with the reason shown, when a field is
  // missing.
  bool start();
  bool isRunning() const;
  // The last failure's message, empty when none.
  QString errorText() const { return error_; }

 signals:
  // The project and its weights are written: open it. `notes` are for the log.
  void imported(const QString& project, const QStringList& notes);

 private slots:
  // The worker of tracerFinished woke this thread: the project it built (or why it could not)
  // is taken from the future this dialog owns. A slot so that the worker can call it by name,
  // with nothing queued that it allocated.
  void takeBuiltProject();

 private:
  struct Building;  // the project being made from the trace on a worker thread
  void browseSource();
  void browsePython();
  void browseProject();
  void tracerFinished(int exitCode, QProcess::ExitStatus status);
  void fail(const QString& message);
  void setBusy(bool busy, const QString& text = {});

  QLineEdit *source_, *inputs_, *python_, *project_;
  QLabel *status_, *errorLabel_;
  QProgressBar* progress_;
  QPushButton* importButton_;
  QProcess* process_ = nullptr;
  std::unique_ptr<Building> building_;
  std::unique_ptr<QTemporaryDir> traceDir_;
  QString pythonUsed_, error_;
};

}  // namespace nns::ui
