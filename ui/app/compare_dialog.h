// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// File > Compare With...: what to compare the open project (with its weights as trained now)
// against: another project or an ONNX model, with weights of its own if wanted (a project's
// .safetensors beside it is offered), or a snapshot of one of this project's recorded runs; and
// the batch of the project's data both models run on.
#include <QDialog>
#include <QString>
#include <cstdint>

class QComboBox;
class QLineEdit;
class QRadioButton;
class QSpinBox;

namespace nns::train {
class RunStore;
}

namespace nns::ui {

struct CompareSource {
  enum class Kind { File, Snapshot };
  Kind kind = Kind::File;
  QString path;     // File: a .nns project or an .onnx model
  QString weights;  // File: a state dict (.pt, .pth, .safetensors); empty: the file's own (an
                    // ONNX model's) or the project's initial weights
  int64_t run = 0;  // Snapshot: of the project's run store
  int64_t step = 0;
  int64_t batch = 32;  // samples of the project's data both models run on
};

class CompareDialog : public QDialog {
  Q_OBJECT

 public:
  // store: the project's runs (nullptr: none to offer).
  CompareDialog(train::RunStore* store, int64_t batch, QWidget* parent = nullptr);
  CompareSource source() const;

 private:
  void browseModel();
  void browseWeights();
  void fillSteps();

  train::RunStore* store_;
  QRadioButton* fileChoice_;
  QRadioButton* snapshotChoice_;
  QLineEdit* path_;
  QLineEdit* weights_;
  QComboBox* runs_;
  QComboBox* steps_;
  QSpinBox* batch_;
};

}  // namespace nns::ui
