// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/compare_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/graph/imported_project.h"
#include "engine/train/run_store.h"
#include "ui/document/qt_strings.h"

namespace nns::ui {

CompareDialog::CompareDialog(train::RunStore* store, int64_t batch, QWidget* parent)
    : QDialog(parent),
      store_(store),
      fileChoice_(new QRadioButton(tr("Another project or an ONNX model"), this)),
      snapshotChoice_(new QRadioButton(tr("A snapshot of this project's runs"), this)),
      path_(new QLineEdit(this)),
      weights_(new QLineEdit(this)),
      runs_(new QComboBox(this)),
      steps_(new QComboBox(this)),
      batch_(new QSpinBox(this)) {
  setWindowTitle(tr("Compare With"));
  setObjectName("compareDialog");
  path_->setObjectName("comparePath");
  weights_->setObjectName("compareWeights");
  snapshotChoice_->setObjectName("compareSnapshot");
  path_->setPlaceholderText(tr("model.nns or model.onnx"));
  weights_->setPlaceholderText(tr("optional: .pt, .pth or .safetensors"));
  weights_->setToolTip(
      tr("The weights the other model runs with. Without them, an ONNX model runs with its own "
         "and a project with its initial weights (from its seed)."));
  auto* browseModel = new QPushButton(tr("Browse…"), this);
  auto* browseWeights = new QPushButton(tr("Browse…"), this);
  connect(browseModel, &QPushButton::clicked, this, &CompareDialog::browseModel);
  connect(browseWeights, &QPushButton::clicked, this, &CompareDialog::browseWeights);
  auto row = [this](QLineEdit* edit, QPushButton* button) {
    auto* w = new QWidget(this);
    auto* h = new QHBoxLayout(w);
    h->setContentsMargins(0, 0, 0, 0);
    h->addWidget(edit, 1);
    h->addWidget(button);
    return w;
  };
  batch_->setRange(1, 65536);
  batch_->setValue(static_cast<int>(batch));
  batch_->setToolTip(
      tr("The first samples of this project's training data, in order: both models run forward "
         "and backward on them"));

  auto* fileForm = new QFormLayout;
  fileForm->addRow(tr("Model:"), row(path_, browseModel));
  fileForm->addRow(tr("Weights:"), row(weights_, browseWeights));
  auto* snapshotForm = new QFormLayout;
  snapshotForm->addRow(tr("Run:"), runs_);
  snapshotForm->addRow(tr("Step:"), steps_);

  if (store_) {
    for (const train::RunInfo& run : store_->runs()) {
      const QString name = run.name.empty() ? tr("Run %1").arg(run.id) : qs(run.name);
      runs_->addItem(tr("%1 (%2 steps)").arg(name).arg(run.steps), QVariant::fromValue(run.id));
    }
  }
  connect(runs_, &QComboBox::currentIndexChanged, this, &CompareDialog::fillSteps);
  fillSteps();
  const bool hasRuns = runs_->count() > 0;
  snapshotChoice_->setEnabled(hasRuns);
  if (!hasRuns) snapshotChoice_->setToolTip(tr("This project has no recorded run yet"));
  fileChoice_->setChecked(true);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Compare"));
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto updateOk = [this, buttons] {
    const bool file = fileChoice_->isChecked();
    path_->setEnabled(file);
    weights_->setEnabled(file);
    runs_->setEnabled(!file);
    steps_->setEnabled(!file);
    buttons->button(QDialogButtonBox::Ok)
        ->setEnabled(file ? QFileInfo(path_->text()).isFile() : steps_->count() > 0);
  };
  connect(fileChoice_, &QRadioButton::toggled, this, updateOk);
  connect(path_, &QLineEdit::textChanged, this, [this, updateOk](const QString& path) {
    // An imported model's weights lie beside its project (model.nns, model.safetensors).
    const QString beside = qs(graph::weights_path_for(path.toStdString()));
    if (path.endsWith(".nns") && weights_->text().isEmpty() && QFileInfo(beside).isFile()) {
      weights_->setText(beside);
    }
    updateOk();
  });
  connect(steps_, &QComboBox::currentIndexChanged, this, updateOk);

  auto* intro = new QLabel(
      tr("This project, with its weights as trained now, is A. Choose B: the canvas shows both, "
         "what was added, removed and changed, and how far each module's outputs, gradients "
         "and weights are apart on one batch of this project's data."),
      this);
  intro->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(intro);
  layout->addWidget(fileChoice_);
  layout->addLayout(fileForm);
  layout->addWidget(snapshotChoice_);
  layout->addLayout(snapshotForm);
  auto* batchForm = new QFormLayout;
  batchForm->addRow(tr("Batch:"), batch_);
  layout->addLayout(batchForm);
  layout->addWidget(buttons);
  resize(560, sizeHint().height());
  updateOk();
}

void CompareDialog::browseModel() {
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Compare With"), QFileInfo(path_->text()).absolutePath(),
      tr("Projects and models (*.nns *.onnx);;NN Studio projects (*.nns);;ONNX models (*.onnx)"));
  if (!path.isEmpty()) path_->setText(path);
}

void CompareDialog::browseWeights() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Weights of B"),
                                                    QFileInfo(path_->text()).absolutePath(),
                                                    tr("State dicts (*.pt *.pth *.safetensors)"));
  if (!path.isEmpty()) weights_->setText(path);
}

void CompareDialog::fillSteps() {
  steps_->clear();
  if (!store_ || runs_->currentIndex() < 0) return;
  const int64_t run = runs_->currentData().value<int64_t>();
  try {
    for (const train::SnapshotInfo& s : store_->snapshots(run)) {
      steps_->addItem(tr("step %1").arg(s.step), QVariant::fromValue(s.step));
    }
    // The latest first chosen: the run as it ended.
    steps_->setCurrentIndex(steps_->count() - 1);
  } catch (const std::exception& e) {
    steps_->setToolTip(qs(e.what()));
  }
}

CompareSource CompareDialog::source() const {
  CompareSource s;
  s.kind = fileChoice_->isChecked() ? CompareSource::Kind::File : CompareSource::Kind::Snapshot;
  s.path = path_->text();
  s.weights = weights_->text();
  if (runs_->currentIndex() >= 0) s.run = runs_->currentData().value<int64_t>();
  if (steps_->currentIndex() >= 0) s.step = steps_->currentData().value<int64_t>();
  s.batch = batch_->value();
  return s;
}

}  // namespace nns::ui
