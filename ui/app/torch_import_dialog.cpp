// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/torch_import_dialog.h"

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QVBoxLayout>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "engine/graph/imported_project.h"
#include "engine/torch_import/torch_import.h"

namespace nns::ui {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// A form's label whose mnemonic (Alt+letter) moves to `field`. QFormLayout gives a buddy only to
// the label of a row whose field is a widget, and a label without a buddy shows its '&'.
QLabel* labelFor(const QString& text, QWidget* field) {
  auto* label = new QLabel(text);
  label->setBuddy(field);
  return label;
}

QHBoxLayout* withButton(QLineEdit* edit, QPushButton* button) {
  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(edit, 1);
  row->addWidget(button);
  return row;
}

// What building the project gives: plain strings, made QStrings on the dialog's thread.
struct Built {
  std::string error;  // empty when the project and its weights are written
  std::vector<std::string> notes;
};

// Runs the model once to check it against PyTorch's numbers: off the window's thread.
Built buildProject(const std::string& traceDir, const std::string& project) {
  Built built;
  try {
    const graph::ImportedProject imported = torch_import::read_trace(traceDir);
    graph::write_imported(imported, project);
    built.notes = imported.notes;
  } catch (const std::exception& e) {
    built.error = e.what();
  }
  return built;
}

}  // namespace

// The worker hands its outcome over through `built`, which this thread takes; its wake-up
// (takeBuiltProject) carries nothing. ThreadSanitizer sees the future's release and acquire,
// but not Qt's event queue or QThread::finished (an uninstrumented library): a result the
// worker wrote and this thread read after either would be reported as a race.
struct TorchImportDialog::Building {
  std::future<Built> built;
  // Sets `built`, then wakes the dialog: the future is ready when the wake-up comes. Joined
  // when the Building is dropped, so it never posts to a dialog that is gone.
  std::jthread worker;
};

TorchImportDialog::TorchImportDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Import PyTorch Code"));
  setObjectName("torchImportDialog");
  source_ = new QLineEdit(this);
  source_->setObjectName("torchSource");
  source_->setPlaceholderText(tr("model.py:Net or torchvision.models:resnet18()"));
  source_->setToolTip(
      tr("FILE.py:EXPR or package.module:EXPR: EXPR is evaluated in that module; a class or "
         "function is called with no arguments, and the result must be an nn.Module"));
  inputs_ = new QLineEdit(this);
  inputs_->setObjectName("torchInputs");
  // An example, not a default: the shape is the model's (784 for an MLP on MNIST, 12:int64
  // for a language model); a default would trace most models with the wrong input.
  inputs_->setPlaceholderText(tr("e.g. 3,224,224"));
  inputs_->setToolTip(
      tr("One shape per forward argument, without the batch, separated by spaces; add :int64 "
         "for token indices (12:int64)"));
  python_ = new QLineEdit(this);
  python_->setObjectName("torchPython");
  python_->setPlaceholderText(qs(torch_import::python_for("")));
  python_->setToolTip(
      tr("A Python interpreter that imports torch (empty: $NNSTUDIO_PYTHON, "
         "else python3 on the PATH)"));
  project_ = new QLineEdit(this);
  project_->setObjectName("torchProject");
  project_->setToolTip(tr("The project to write (.nns); its weights go beside it (.safetensors)"));

  auto* sourceButton = new QPushButton(tr("File…"), this);
  auto* pythonButton = new QPushButton(tr("Choose…"), this);
  auto* projectButton = new QPushButton(tr("Save As…"), this);
  connect(sourceButton, &QPushButton::clicked, this, &TorchImportDialog::browseSource);
  connect(pythonButton, &QPushButton::clicked, this, &TorchImportDialog::browsePython);
  connect(projectButton, &QPushButton::clicked, this, &TorchImportDialog::browseProject);

  auto* form = new QFormLayout;
  form->addRow(labelFor(tr("&Source:"), source_), withButton(source_, sourceButton));
  form->addRow(labelFor(tr("I&nputs:"), inputs_), inputs_);  // Alt+I is Import's
  form->addRow(labelFor(tr("&Python:"), python_), withButton(python_, pythonButton));
  form->addRow(labelFor(tr("P&roject:"), project_), withButton(project_, projectButton));

  status_ = new QLabel(this);
  status_->setObjectName("torchImportStatus");
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 0);  // busy: the tracer does not know how long it takes
  progress_->setVisible(false);
  errorLabel_ = new QLabel(this);
  errorLabel_->setObjectName("torchImportError");
  errorLabel_->setWordWrap(true);
  errorLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  errorLabel_->setStyleSheet("color: #b00020");
  errorLabel_->setVisible(false);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Cancel, this);
  importButton_ = buttons->addButton(tr("&Import"), QDialogButtonBox::AcceptRole);
  importButton_->setObjectName("torchImportButton");
  connect(importButton_, &QPushButton::clicked, this, [this] { start(); });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(status_);
  layout->addWidget(progress_);
  layout->addWidget(errorLabel_);
  layout->addWidget(buttons);
  resize(620, sizeHint().height());

  QSettings settings;
  python_->setText(settings.value("torchImport/python").toString());
  inputs_->setText(settings.value("torchImport/inputs").toString());
}

TorchImportDialog::~TorchImportDialog() {
  if (process_) {
    process_->disconnect(this);
    process_->kill();
    process_->waitForFinished(2000);
  }
  // Waits for the worker (the project it writes is finished) before the trace it reads is
  // removed with traceDir_; a wake-up it posted goes with this object.
  building_.reset();
}

void TorchImportDialog::setSource(const QString& source) {
  source_->setText(source);
}
void TorchImportDialog::setInputs(const QString& inputs) {
  inputs_->setText(inputs);
}
void TorchImportDialog::setPython(const QString& python) {
  python_->setText(python);
}
void TorchImportDialog::setProjectPath(const QString& path) {
  project_->setText(path);
}

bool TorchImportDialog::isRunning() const {
  return process_ != nullptr || building_ != nullptr;
}

void TorchImportDialog::browseSource() {
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString();
  const QString file = QFileDialog::getOpenFileName(this, tr("PyTorch Code"), dir,
                                                    tr("Python files (*.py);;All files (*)"));
  if (file.isEmpty()) return;
  // The class or function to call: the user types it after the colon.
  source_->setText(file + ":");
  source_->setFocus();
  if (project_->text().isEmpty())
    project_->setText(QFileInfo(file).absolutePath() + "/" + QFileInfo(file).completeBaseName() +
                      ".nns");
}

void TorchImportDialog::browsePython() {
  const QString file = QFileDialog::getOpenFileName(this, tr("Python Interpreter"), "/usr/bin");
  if (!file.isEmpty()) python_->setText(file);
}

void TorchImportDialog::browseProject() {
  const QString dir = QSettings().value("files/lastDir", QDir::homePath()).toString();
  QString file = QFileDialog::getSaveFileName(this, tr("Save the Imported Project As"), dir,
                                              tr("NN Studio projects (*.nns)"));
  if (file.isEmpty()) return;
  if (QFileInfo(file).suffix() != "nns") file += ".nns";
  project_->setText(file);
}

void TorchImportDialog::setBusy(bool busy, const QString& text) {
  progress_->setVisible(busy);
  importButton_->setEnabled(!busy);
  for (QLineEdit* e : {source_, inputs_, python_, project_}) e->setEnabled(!busy);
  status_->setText(text);
}

void TorchImportDialog::fail(const QString& message) {
  error_ = message;
  errorLabel_->setText(message);
  errorLabel_->setVisible(true);
  setBusy(false);
}

bool TorchImportDialog::start() {
  if (isRunning()) return false;
  error_.clear();
  errorLabel_->setVisible(false);
  const QString source = source_->text().trimmed();
  QString project = project_->text().trimmed();
  if (source.isEmpty() || !source.contains(':')) {
    fail(tr("Give the source as FILE.py:EXPR or package.module:EXPR (model.py:Net)"));
    return false;
  }
  if (source.endsWith(".onnx")) {
    fail(tr("An ONNX model opens with File > Import > ONNX Model"));
    return false;
  }
  const QStringList inputs =
      inputs_->text().split(QRegularExpression("[\\s;]+"), Qt::SkipEmptyParts);
  if (inputs.isEmpty()) {
    fail(tr("Give the shape of each forward argument without the batch (e.g. 3,224,224)"));
    return false;
  }
  if (project.isEmpty()) {
    fail(tr("Choose where to write the project (.nns)"));
    return false;
  }
  if (QFileInfo(project).suffix() != "nns") project += ".nns";
  project_->setText(project);
  QSettings settings;
  settings.setValue("torchImport/python", python_->text().trimmed());
  settings.setValue("torchImport/inputs", inputs_->text().trimmed());

  torch_import::Request request;
  request.source = source.toStdString();
  for (const QString& i : inputs) request.inputs.push_back(i.toStdString());
  request.python = python_->text().trimmed().toStdString();
  std::string tracer;
  try {
    tracer = torch_import::find_tracer(QCoreApplication::applicationDirPath().toStdString());
  } catch (const std::exception& e) {
    fail(QString::fromUtf8(e.what()));
    return false;
  }
  traceDir_ = std::make_unique<QTemporaryDir>();
  if (!traceDir_->isValid()) {
    fail(tr("Cannot make a temporary folder: %1").arg(traceDir_->errorString()));
    return false;
  }
  pythonUsed_ = qs(torch_import::python_for(request.python));
  QStringList args;
  for (const std::string& a :
       torch_import::tracer_arguments(tracer, request, traceDir_->path().toStdString()))
    args << qs(a);

  process_ = new QProcess(this);
  // A file SOURCE is read relative to the folder the user works in: the project's.
  process_->setWorkingDirectory(QFileInfo(project).absolutePath());
  connect(process_, &QProcess::readyReadStandardOutput, this, [this] {
    while (process_ && process_->canReadLine()) {
      const QString line = QString::fromUtf8(process_->readLine()).trimmed();
      if (line.startsWith("progress: ")) status_->setText(line.mid(10));
    }
  });
  connect(process_, &QProcess::finished, this, &TorchImportDialog::tracerFinished);
  connect(process_, &QProcess::errorOccurred, this, [this](QProcess::ProcessError e) {
    if (e != QProcess::FailedToStart || !process_) return;
    process_->deleteLater();
    process_ = nullptr;
    fail(tr("Cannot run the Python interpreter '%1' (give one that imports torch in the "
            "Python field, or set $NNSTUDIO_PYTHON)")
             .arg(pythonUsed_));
  });
  setBusy(true, tr("Starting %1…").arg(pythonUsed_));
  process_->start(pythonUsed_, args);
  return true;
}

void TorchImportDialog::tracerFinished(int exitCode, QProcess::ExitStatus status) {
  QProcess* process = process_;
  process_ = nullptr;
  process->deleteLater();
  const std::string errors = process->readAllStandardError().toStdString();
  if (status != QProcess::NormalExit || exitCode != 0) {
    fail(qs(torch_import::tracer_failure(pythonUsed_.toStdString(),
                                         status == QProcess::NormalExit ? exitCode : 128, errors)));
    return;
  }
  status_->setText(tr("Building the project…"));
  auto building = std::make_unique<Building>();
  std::promise<Built> promise;
  building->built = promise.get_future();
  building->worker =
      std::jthread([this, promise = std::move(promise), dir = traceDir_->path().toStdString(),
                    project = project_->text().toStdString()]() mutable {
        promise.set_value(buildProject(dir, project));
        // By name, without arguments: the call Qt queues is made in Qt Core, nothing of it here.
        QMetaObject::invokeMethod(this, "takeBuiltProject", Qt::QueuedConnection);
      });
  building_ = std::move(building);
}

void TorchImportDialog::takeBuiltProject() {
  // Ready: the worker set it before it woke this thread, and it wakes it once.
  const Built built = building_->built.get();
  building_.reset();  // joins the worker, done once it has posted the wake-up
  traceDir_.reset();
  if (!built.error.empty()) {
    fail(qs(built.error));
    return;
  }
  QStringList notes;
  for (const std::string& note : built.notes) notes << qs(note);
  setBusy(false, tr("Imported"));
  emit imported(project_->text(), notes);
  accept();
}

}  // namespace nns::ui
