// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/training_dock.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPainter>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/backend/cuda_backend.h"
#include "engine/data/catalog.h"
#include "engine/data/sources.h"
#include "engine/graph/node_types.h"
#include "engine/optim/factory.h"
#include "engine/train/losses.h"
#include "engine/train/optimizers.h"
#include "engine/train/session.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/training/class_samples_view.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui/widgets/option_field.h"

namespace nns::ui {
namespace {

constexpr int kThumb = 56;
const QString kCsv = QStringLiteral("csv");
// The user's own data: one project name ("files"), two entries in the list, one per chooser.
const QString kFiles = QStringLiteral("files");
const QString kImagesEntry = QStringLiteral("files:images");
const QString kNumpyEntry = QStringLiteral("files:numpy");
// An image folder's transforms when it is chosen: one size for photos of any size.
const char kFolderTransforms[] = "Resize(32), CenterCrop(32), ToTensor()";

// A small picture of a data set as its generator makes it with the default options.
QImage thumbnail(const data::Dataset& d) {
  QImage image(kThumb, kThumb, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  p.setRenderHint(QPainter::Antialiasing, true);
  p.setPen(Qt::NoPen);
  const std::vector<float> x = d.inputs.to(kFloat32).to_vector<float>();
  const int64_t n = d.size();
  auto range = [](const std::vector<float>& v, size_t stride, size_t col) {
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = col; i < v.size(); i += stride) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    return std::pair<float, float>(lo, hi > lo ? hi : lo + 1);
  };
  auto at = [](float v, std::pair<float, float> r) {
    return 3 + (v - r.first) / (r.second - r.first) * (kThumb - 6);
  };
  if (d.input_kind == data::InputKind::Points2D && d.task == data::TaskKind::Classification) {
    const std::vector<int64_t> y = d.targets.to_vector<int64_t>();
    const auto rx = range(x, 2, 0), ry = range(x, 2, 1);
    for (int64_t i = 0; i < n; ++i) {
      p.setBrush(DecisionBoundaryWidget::classColor(y[static_cast<size_t>(i)]));
      p.drawEllipse(QPointF(at(x[2 * i], rx), kThumb - at(x[2 * i + 1], ry)), 1.3, 1.3);
    }
  } else if (d.input_kind == data::InputKind::Curve1D) {
    const std::vector<float> y = d.targets.to_vector<float>();
    const auto rx = range(x, 1, 0), ry = range(y, 1, 0);
    p.setBrush(DecisionBoundaryWidget::classColor(1));
    for (int64_t i = 0; i < n; ++i) {
      p.drawEllipse(QPointF(at(x[i], rx), kThumb - at(y[i], ry)), 1.2, 1.2);
    }
  } else if (d.input_kind == data::InputKind::Image && d.image_height > 0) {
    // A 2 x 2 tile of the first images.
    const int64_t h = d.image_height, w = d.image_width;
    const int64_t tiles = std::min<int64_t>(4, n);
    for (int64_t k = 0; k < tiles; ++k) {
      QImage digit(static_cast<int>(w), static_cast<int>(h), QImage::Format_Grayscale8);
      for (int64_t r = 0; r < h; ++r) {
        for (int64_t c = 0; c < w; ++c) {
          const float v = std::clamp(x[static_cast<size_t>((k * h + r) * w + c)], 0.0f, 1.0f);
          digit.setPixel(static_cast<int>(c), static_cast<int>(r),
                         qRgb(255 - static_cast<int>(v * 255), 255 - static_cast<int>(v * 255),
                              255 - static_cast<int>(v * 255)));
        }
      }
      const int half = kThumb / 2;
      p.drawImage(QRect(static_cast<int>(k % 2) * half + 1, static_cast<int>(k / 2) * half + 1,
                        half - 2, half - 2),
                  digit);
    }
  } else if (d.input_kind == data::InputKind::Sequence && d.inputs.dtype() == kInt64 &&
             d.inputs.dim() == 2) {
    // The first sequences as rows of cells, a colour per token.
    const std::vector<int64_t> tokens = d.inputs.to_vector<int64_t>();
    const int64_t length = std::min<int64_t>(d.inputs.size(1), 10);
    const int64_t rows = std::min<int64_t>(n, 7);
    const double cell = (kThumb - 6.0) / static_cast<double>(std::max<int64_t>(length, rows));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < length; ++c) {
        p.setBrush(DecisionBoundaryWidget::classColor(
            tokens[static_cast<size_t>(r * d.inputs.size(1) + c)]));
        p.drawRect(QRectF(3 + static_cast<double>(c) * cell, 3 + static_cast<double>(r) * cell,
                          cell - 1, cell - 1));
      }
    }
  } else if (d.input_kind == data::InputKind::Sequence && d.inputs.dim() == 3) {
    // The first windows of values as lines.
    const int64_t length = d.inputs.size(1);
    const auto ry = range(x, 1, 0);
    p.setBrush(Qt::NoBrush);
    for (int64_t w = 0; w < std::min<int64_t>(n, 3); ++w) {
      p.setPen(QPen(DecisionBoundaryWidget::classColor(w), 1.2));
      QPointF last;
      for (int64_t t = 0; t < length; ++t) {
        const QPointF point(3 + static_cast<double>(t) /
                                    static_cast<double>(length - 1 > 0 ? length - 1 : 1) *
                                    (kThumb - 6),
                            kThumb - at(x[static_cast<size_t>(w * length + t)], ry));
        if (t > 0) p.drawLine(last, point);
        last = point;
      }
    }
  } else {
    p.setPen(Qt::darkGray);
    p.drawText(image.rect(), Qt::AlignCenter, QObject::tr("table"));
  }
  p.setPen(QColor(200, 200, 200));
  p.setBrush(Qt::NoBrush);
  p.drawRect(image.rect().adjusted(0, 0, -1, -1));
  return image;
}

// A page of text, for a data set that reads the user's text file.
QImage textThumbnail() {
  QImage image(kThumb, kThumb, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  QFont font = p.font();
  font.setPixelSize(15);
  font.setBold(true);
  p.setFont(font);
  p.setPen(QColor(80, 80, 80));
  p.drawText(QRect(0, 4, kThumb, 24), Qt::AlignCenter, QStringLiteral("Aa"));
  p.setPen(QColor(150, 150, 150));
  for (int r = 0; r < 3; ++r) p.drawLine(8, 32 + r * 7, kThumb - 8 - (r == 2 ? 14 : 0), 32 + r * 7);
  p.setPen(QColor(200, 200, 200));
  p.drawRect(image.rect().adjusted(0, 0, -1, -1));
  return image;
}

QImage csvThumbnail() {
  QImage image(kThumb, kThumb, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  p.setPen(QColor(120, 120, 120));
  for (int r = 0; r < 5; ++r) p.drawLine(6, 10 + r * 9, kThumb - 6, 10 + r * 9);
  p.drawLine(kThumb / 2, 10, kThumb / 2, 46);
  p.setPen(QColor(200, 200, 200));
  p.drawRect(image.rect().adjusted(0, 0, -1, -1));
  return image;
}

// A folder of pictures: coloured tiles, for the image data entry.
QImage imagesThumbnail() {
  QImage image(kThumb, kThumb, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  const int tile = (kThumb - 12) / 3;
  for (int k = 0; k < 9; ++k) {
    p.fillRect(6 + (k % 3) * tile + 1, 6 + (k / 3) * tile + 1, tile - 2, tile - 2,
               DecisionBoundaryWidget::classColor(k));
  }
  p.setPen(QColor(200, 200, 200));
  p.drawRect(image.rect().adjusted(0, 0, -1, -1));
  return image;
}

// An array file: its extension, for the NumPy entry.
QImage numpyThumbnail() {
  QImage image(kThumb, kThumb, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  QPainter p(&image);
  QFont font = p.font();
  font.setPixelSize(13);
  font.setBold(true);
  p.setFont(font);
  p.setPen(QColor(80, 80, 80));
  p.drawText(image.rect(), Qt::AlignCenter, QStringLiteral(".npz"));
  p.setPen(QColor(200, 200, 200));
  p.drawRect(image.rect().adjusted(0, 0, -1, -1));
  return image;
}

// The thumbnails in as many rows as the list's width needs: every set shows, without a scroll
// bar of the list's own, and the rows below move down instead of being covered.
class ThumbnailList : public QListWidget {
 public:
  ThumbnailList() {
    setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    policy.setHeightForWidth(true);
    setSizePolicy(policy);
  }
  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override {
    const int frame = 2 * frameWidth();
    const int columns = std::max(1, (width - frame) / gridSize().width());
    const int rows = std::max(1, (count() + columns - 1) / columns);
    return rows * gridSize().height() + frame;
  }
  QSize sizeHint() const override {
    const int width = 3 * gridSize().width() + 2 * frameWidth();
    return {width, heightForWidth(width)};
  }
  QSize minimumSizeHint() const override {
    return gridSize() + QSize(2 * frameWidth(), 2 * frameWidth());
  }
};

// Scrolls the dock's controls when the dock is shorter than they need, never sideways: the dock
// stays as wide as its widest control, as it was without scrolling.
class VerticalScrollArea : public QScrollArea {
 public:
  VerticalScrollArea() {
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
    setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  }
  QSize minimumSizeHint() const override {
    const int inner = widget() ? widget()->minimumSizeHint().width() : 0;
    return {inner + verticalScrollBar()->sizeHint().width() + 2 * frameWidth(),
            QScrollArea::minimumSizeHint().height()};
  }
};

constexpr char kSeed[] = "seed";

// The options a data set takes, as option specs: the catalog's, for a CSV file the seed that
// splits it, none for a set this build does not know (a newer project's).
std::vector<graph::OptionSpec> datasetOptionSpecs(const std::string& name) {
  std::vector<graph::OptionSpec> specs;
  if (name == kCsv.toStdString()) {
    graph::OptionSpec seed;
    seed.name = kSeed;
    seed.kind = graph::OptionSpec::Kind::Int;
    seed.default_value = 0;
    seed.help = QObject::tr("seed of the train/test split").toStdString();
    seed.min = 0;
    specs.push_back(seed);
    return specs;
  }
  try {
    for (const data::OptionInfo& o : data::dataset_info(name).options) {
      specs.push_back(graph::option_spec(o));
    }
  } catch (const KeyError&) {
    // No options to offer.
  }
  return specs;
}

// The seed the data is made and split with: the settings' own, unless the options hold one for
// the generator (make_session passes the settings' seed on only when they do not).
int64_t dataSeed(const graph::DatasetSettings& d) {
  if (d.options.is_object() && d.options.contains(kSeed) && d.options.at(kSeed).is_number()) {
    return d.options.at(kSeed).get<int64_t>();
  }
  return d.seed;
}

// The value the data set uses for an option: the project's, else the catalog's default.
graph::Json datasetOptionValue(const graph::DatasetSettings& d, const graph::OptionSpec& spec) {
  if (spec.name == kSeed) return dataSeed(d);
  if (d.options.is_object() && d.options.contains(spec.name)) return d.options.at(spec.name);
  return spec.default_value;
}

// A row's label: "center_range" reads "Center range".
QString optionLabel(const std::string& name) {
  QString text = qs(name).replace('_', ' ');
  if (!text.isEmpty()) text[0] = text[0].toUpper();
  return text;
}

// The header's names of a CSV file ("" when unreadable).
QStringList csvColumns(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) return {};
  QStringList columns = QString::fromUtf8(f.readLine()).trimmed().split(',');
  for (QString& c : columns) c = c.trimmed().remove('"');
  return columns;
}

}  // namespace

TrainingDock::TrainingDock(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller), document_(controller->document()) {
  QGroupBox* dataBox = buildDataSection();
  QGroupBox* trainBox = buildTrainingSection();
  createRunActions();
  QGroupBox* runBox = buildRunSection();
  layOutSections(dataBox, trainBox, runBox);

  // Controls -> document edits.
  connectDataControls();
  connectTrainingControls();
  connectCheckpointButtons();

  // Document and controller -> controls.
  connect(document_, &ProjectDocument::settingsChanged, this, &TrainingDock::readProject);
  connect(document_, &ProjectDocument::changed, this, &TrainingDock::readProject);
  connect(controller_, &TrainingController::statusChanged, this, &TrainingDock::showStatus);
  // The per-class samples come from the session's training set, read on its own thread.
  auto showSamples = [this] {
    const train::TrainingSession* session = controller_->currentSession();
    classSamples_->setDataset(session ? session->train_set() : data::Dataset());
    scroll_->updateGeometry();
  };
  connect(controller_, &TrainingController::sessionReset, this, showSamples);
  connect(controller_, &TrainingController::sessionMade, this, showSamples);
  readProject();
  showStatus(controller_->status());
}

QGroupBox* TrainingDock::buildDataSection() {
  datasets_ = new ThumbnailList;
  datasets_->setObjectName("datasetList");
  datasets_->setViewMode(QListView::IconMode);
  datasets_->setIconSize(QSize(kThumb, kThumb));
  datasets_->setFlow(QListView::LeftToRight);
  datasets_->setWrapping(true);
  datasets_->setResizeMode(QListView::Adjust);
  datasets_->setMovement(QListView::Static);
  datasets_->setGridSize(QSize(kThumb + 20, kThumb + 22));
  buildDatasetList();
  csvButton_ = new QPushButton(tr("Import CSV…"));
  testSplit_ = new QDoubleSpinBox;
  testSplit_->setRange(0, 0.9);
  testSplit_->setSingleStep(0.05);
  testSplit_->setDecimals(2);
  testSplit_->setToolTip(tr("The fraction of the data held out to test on"));
  regenerate_ = new QPushButton(tr("Regenerate"));
  regenerate_->setToolTip(tr("The same data set with a new seed"));

  // The chosen set's option rows go above the test split (showDatasetOptions).
  dataBox_ = new QGroupBox(tr("Data"));
  auto* dataLayout = new QVBoxLayout(dataBox_);
  dataLayout->addWidget(datasets_);
  dataForm_ = new QFormLayout;
  dataForm_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  dataForm_->addRow(tr("Test split"), testSplit_);
  auto* dataButtons = new QHBoxLayout;
  dataButtons->addWidget(regenerate_);
  dataButtons->addWidget(csvButton_);
  dataForm_->addRow(dataButtons);
  dataLayout->addLayout(dataForm_);
  classSamples_ = new ClassSamplesView;
  classSamples_->setObjectName("classSamples");
  dataLayout->addWidget(classSamples_);
  return dataBox_;
}

QGroupBox* TrainingDock::buildTrainingSection() {
  loss_ = new QComboBox;
  for (const std::string& n : train::loss_names()) loss_->addItem(qs(n));
  optimizer_ = new QComboBox;
  for (const std::string& n : optim::optimizer_names()) optimizer_->addItem(qs(n));
  lr_ = new QLineEdit;
  lr_->setObjectName("learningRate");
  lr_->setToolTip(tr("Learning rate: applied at once, also while training"));
  batch_ = new QSpinBox;
  batch_->setRange(1, 1 << 20);
  weightDecay_ = new QDoubleSpinBox;
  weightDecay_->setDecimals(5);
  weightDecay_->setRange(0, 10);
  weightDecay_->setSingleStep(1e-4);
  inputMessage_ = new QLabel;
  inputMessage_->setObjectName("inputMessage");
  inputMessage_->setWordWrap(true);
  inputMessage_->setStyleSheet("color: #b00020");
  inputMessage_->hide();
  createDeviceChoice();

  auto* trainBox = new QGroupBox(tr("Training"));
  trainForm_ = new QFormLayout;
  trainForm_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  // The loss's option rows go under Loss, the optimizer's under the learning rate
  // (showTrainingOptions).
  trainForm_->addRow(tr("Loss"), loss_);
  trainForm_->addRow(tr("Optimizer"), optimizer_);
  trainForm_->addRow(tr("Learning rate"), lr_);
  trainForm_->addRow(inputMessage_);
  // A row each: side by side, the two spin boxes made the dock ~90 px wider than the canvas
  // can spare.
  trainForm_->addRow(tr("Batch size"), batch_);
  trainForm_->addRow(tr("Weight decay"), weightDecay_);
  trainForm_->addRow(tr("Device"), device_);
  trainForm_->addRow(QString(), cudaGraphs_);
  trainForm_->addRow(deviceNote_);
  trainBox->setLayout(trainForm_);
  return trainBox;
}

void TrainingDock::createDeviceChoice() {
  // The devices this machine has (nns::cuda::devices(): the backend library is loaded here,
  // once); the choice is the project's training.device.
  device_ = new QComboBox;
  device_->addItem(tr("CPU"), QStringLiteral("cpu"));
  for (const CudaDeviceProperties& p : cuda::devices()) {
    device_->addItem(tr("GPU %1: %2 (%3 GiB)")
                         .arg(p.index)
                         .arg(qs(p.name))
                         .arg(static_cast<double>(p.total_memory) / (1 << 30), 0, 'f', 1),
                     QStringLiteral("cuda:%1").arg(p.index));
  }
  cudaGraphs_ = new QCheckBox(tr("CUDA graphs"));
  cudaGraphs_->setObjectName("cudaGraphs");
  deviceNote_ = new QLabel;
  deviceNote_->setWordWrap(true);
  if (device_->count() == 1) {
    const QString why = tr("No CUDA GPU: %1").arg(qs(cuda::unavailable_reason()));
    device_->setEnabled(false);
    device_->setToolTip(why);
    deviceNote_->setText(why);
  } else {
    deviceNote_->hide();
  }
}

void TrainingDock::createRunActions() {
  auto action = [this](const QString& text, const QKeySequence& key, auto fn) {
    auto* a = new QAction(text, this);
    a->setShortcut(key);
    a->setShortcutContext(Qt::WindowShortcut);
    a->setToolTip(QString("%1 (%2)").arg(text, key.toString(QKeySequence::NativeText)));
    connect(a, &QAction::triggered, controller_, fn);
    addAction(a);
    return a;
  };
  startAct_ = action(tr("Start"), QKeySequence(Qt::Key_F5), &TrainingController::start);
  pauseAct_ = action(tr("Pause"), QKeySequence(Qt::SHIFT | Qt::Key_F5), &TrainingController::pause);
  stepAct_ = action(tr("Step"), QKeySequence(Qt::Key_F10), &TrainingController::stepOnce);
  resetAct_ = action(tr("Reset"), QKeySequence(Qt::CTRL | Qt::Key_F5), &TrainingController::reset);
}

QGroupBox* TrainingDock::buildRunSection() {
  auto button = [](QAction* a) {
    auto* b = new QToolButton;
    b->setDefaultAction(a);
    b->setToolButtonStyle(Qt::ToolButtonTextOnly);
    b->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    return b;
  };
  counters_ = new QLabel;
  counters_->setObjectName("trainingCounters");
  counters_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Wrapped, so that a longer figure never widens the dock mid-run.
  counters_->setWordWrap(true);
  evalMode_ = new QCheckBox(tr("Eval mode: test twice a second"));
  evalMode_->setToolTip(
      tr("Evaluation passes (model.eval(), no grad) on the test set while training, so the "
         "test curves follow the run between epochs"));
  saveCkpt_ = new QPushButton(tr("Save checkpoint…"));
  loadCkpt_ = new QPushButton(tr("Load checkpoint…"));

  auto* runBox = new QGroupBox(tr("Run"));
  auto* runLayout = new QVBoxLayout;
  auto* buttons = new QHBoxLayout;
  for (QAction* a : {startAct_, pauseAct_, stepAct_, resetAct_}) buttons->addWidget(button(a));
  runLayout->addLayout(buttons);
  runLayout->addWidget(counters_);
  runLayout->addWidget(evalMode_);
  auto* ckptRow = new QHBoxLayout;
  ckptRow->addWidget(saveCkpt_);
  ckptRow->addWidget(loadCkpt_);
  runLayout->addLayout(ckptRow);
  runBox->setLayout(runLayout);
  return runBox;
}

void TrainingDock::layOutSections(QGroupBox* data, QGroupBox* training, QGroupBox* run) {
  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(data);
  layout->addWidget(training);
  layout->addWidget(run);
  layout->addStretch(1);
  scroll_ = new VerticalScrollArea;
  scroll_->setWidget(content);
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(scroll_);
}

void TrainingDock::connectDataControls() {
  connect(datasets_, &QListWidget::itemClicked, this, [this](QListWidgetItem* item) {
    const QString name = item->data(Qt::UserRole).toString();
    if (name == kCsv) {
      csvButton_->click();
    } else if (name == kImagesEntry) {
      const QString folder = QFileDialog::getExistingDirectory(
          this, tr("Choose an image folder, or a folder of MNIST or CIFAR files"));
      if (!folder.isEmpty()) useDataSource(folder);
      readProject();  // the list shows the set in use, chosen or not
    } else if (name == kNumpyEntry) {
      const QString file =
          QFileDialog::getOpenFileName(this, tr("Choose NumPy arrays"), QString(),
                                       tr("NumPy arrays (*.npz *.npy);;All files (*)"));
      if (!file.isEmpty()) useDataSource(file);
      readProject();
    } else {
      chooseDataset(name);
    }
  });
  connect(csvButton_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import CSV"), QString(),
                                                      tr("CSV files (*.csv);;All files (*)"));
    if (path.isEmpty()) return;
    const QStringList columns = csvColumns(path);
    bool ok = true;
    const QString label =
        columns.isEmpty()
            ? QString()
            : QInputDialog::getItem(this, tr("Import CSV"), tr("Label column:"), columns,
                                    static_cast<int>(columns.size()) - 1, false, &ok);
    if (ok) importCsv(path, label);
  });
  connect(testSplit_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    editDataset(tr("Set test split"), [v](graph::DatasetSettings& d) { d.test_fraction = v; });
  });
  connect(regenerate_, &QPushButton::clicked, this, [this] {
    editDataset(tr("Regenerate data"), [](graph::DatasetSettings& d) {
      d.seed = dataSeed(d) + 1;
      d.options.erase(kSeed);
    });
  });
}

void TrainingDock::connectTrainingControls() {
  connect(loss_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    editTraining(tr("Set loss"), [&](graph::TrainingSettings& t) {
      t.loss = name.toStdString();
      t.loss_options = graph::Json::object();
    });
  });
  connect(optimizer_, &QComboBox::currentTextChanged, this, [this](const QString& name) {
    editTraining(tr("Set optimizer"), [&](graph::TrainingSettings& t) {
      t.optimizer = name.toStdString();
      // Keep what every optimizer takes; momentum and the like belong to the old one.
      graph::Json kept = graph::Json::object();
      for (const char* key : {"lr", "weight_decay"}) {
        if (t.optimizer_options.contains(key)) kept[key] = t.optimizer_options[key];
      }
      t.optimizer_options = kept;
    });
  });
  connect(lr_, &QLineEdit::editingFinished, this, &TrainingDock::applyLearningRate);
  connect(batch_, &QSpinBox::valueChanged, this, [this](int v) { controller_->setBatchSize(v); });
  connect(weightDecay_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
    editTraining(tr("Set weight decay"),
                 [v](graph::TrainingSettings& t) { t.optimizer_options["weight_decay"] = v; });
  });
  connect(evalMode_, &QCheckBox::toggled, controller_, &TrainingController::setEvalMode);
  connect(device_, &QComboBox::currentIndexChanged, this, [this](int index) {
    const std::string device = device_->itemData(index).toString().toStdString();
    editTraining(tr("Set device"), [&](graph::TrainingSettings& t) { t.device = device; });
  });
  connect(cudaGraphs_, &QCheckBox::toggled, this, [this](bool on) {
    editTraining(on ? tr("Turn CUDA graphs on") : tr("Turn CUDA graphs off"),
                 [on](graph::TrainingSettings& t) { t.cuda_graphs = on; });
  });
}

void TrainingDock::connectCheckpointButtons() {
  connect(saveCkpt_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save checkpoint"), QString(),
                                                      tr("PyTorch checkpoint (*.pt *.pth)"));
    if (!path.isEmpty()) saveCheckpointTo(path);
  });
  connect(loadCkpt_, &QPushButton::clicked, this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Load checkpoint"), QString(),
                                                      tr("PyTorch checkpoint (*.pt *.pth)"));
    if (!path.isEmpty()) loadCheckpointFrom(path);
  });
}

void TrainingDock::buildDatasetList() {
  for (const data::DatasetInfo& info : data::dataset_catalog()) {
    QImage image;
    try {
      image = thumbnail(data::make_dataset(info.name));
    } catch (const Error&) {
      // A set that needs a file the user picks (text) has no data before that.
      image = info.name == "text" ? textThumbnail() : csvThumbnail();
    }
    auto* item = new QListWidgetItem(QIcon(QPixmap::fromImage(image)), qs(info.name));
    item->setData(Qt::UserRole, qs(info.name));
    item->setToolTip(qs(info.description));
    datasets_->addItem(item);
  }
  auto* csv = new QListWidgetItem(QIcon(QPixmap::fromImage(csvThumbnail())), tr("CSV…"));
  csv->setData(Qt::UserRole, kCsv);
  csv->setToolTip(tr("Your own data: a CSV file with a header row"));
  datasets_->addItem(csv);
  auto* images = new QListWidgetItem(QIcon(QPixmap::fromImage(imagesThumbnail())), tr("Images…"));
  images->setData(Qt::UserRole, kImagesEntry);
  images->setToolTip(
      tr("Your own images: a folder with a subfolder of images per class (as "
         "torchvision's ImageFolder), or a folder of MNIST or CIFAR files"));
  datasets_->addItem(images);
  auto* numpy = new QListWidgetItem(QIcon(QPixmap::fromImage(numpyThumbnail())), tr("NumPy…"));
  numpy->setData(Qt::UserRole, kNumpyEntry);
  numpy->setToolTip(
      tr("Your own arrays: an .npz with x and y (or x_train, y_train, x_test, "
         "y_test), or x.npy beside y.npy"));
  datasets_->addItem(numpy);
}

bool TrainingDock::useDataSource(const QString& path) {
  const std::string kind = data::source_kind(path.toStdString());
  if (kind.empty() || kind == "CSV") {
    emit controller_->message(
        tr("%1 is not data NN Studio reads: choose a folder with a subfolder of images per class, "
           "a folder of MNIST or CIFAR files, or an .npz/.npy file")
            .arg(path));
    return false;
  }
  const QString projectPath = document_->filePath();
  // Relative to the project file, as the project format keeps it, when there is one.
  const QString stored = projectPath.isEmpty()
                             ? QFileInfo(path).absoluteFilePath()
                             : QFileInfo(projectPath).absoluteDir().relativeFilePath(path);
  editDataset(tr("Use %1").arg(QFileInfo(path).fileName()), [&](graph::DatasetSettings& d) {
    d.name = kFiles.toStdString();
    d.options = graph::Json::object();
    d.csv_path.clear();
    d.label_column.clear();
    d.path = stored.toStdString();
    d.transforms =
        kind == "image folder" ? kFolderTransforms : (kind == "NumPy" ? "" : "ToTensor()");
  });
  return true;
}

void TrainingDock::applyTransforms() {
  const QString text = transforms_->text().trimmed();
  try {
    const std::string canonical = data::transforms_text(data::parse_transforms(text.toStdString()));
    transforms_->setStyleSheet(QString());
    transforms_->setToolTip(
        tr("torchvision's transforms, applied to every image in this order; "
           "the exported train.py uses the same"));
    editDataset(tr("Set transforms"), [&](graph::DatasetSettings& d) { d.transforms = canonical; });
  } catch (const Error& e) {
    transforms_->setStyleSheet(QStringLiteral("QLineEdit { color: #b00020; }"));
    transforms_->setToolTip(qs(e.what()));
    emit controller_->message(tr("Transforms refused: %1").arg(qs(e.what())));
  }
}

bool TrainingDock::normalizeFromData() {
  const graph::DatasetSettings& d = document_->project().dataset;
  if (d.name != kFiles.toStdString()) return false;
  const std::string path =
      (std::filesystem::path(document_->baseDir().toStdString()) / d.path).string();
  try {
    std::vector<data::Transform> transforms = data::parse_transforms(d.transforms);
    std::vector<double> mean, std;
    data::channel_statistics(path, transforms, 2000, mean, std);
    transforms.erase(std::remove_if(transforms.begin(), transforms.end(),
                                    [](const data::Transform& t) {
                                      return t.kind == data::Transform::Kind::Normalize;
                                    }),
                     transforms.end());
    const bool tensor = std::any_of(transforms.begin(), transforms.end(), [](const auto& t) {
      return t.kind == data::Transform::Kind::ToTensor;
    });
    if (!tensor) transforms.push_back({});  // ToTensor
    data::Transform normalize;
    normalize.kind = data::Transform::Kind::Normalize;
    // Four digits: the figure a person would write, and the same in train.py.
    for (double& m : mean) m = std::round(m * 1e4) / 1e4;
    for (double& s : std) s = std::max(std::round(s * 1e4) / 1e4, 1e-4);
    normalize.mean = mean;
    normalize.std = std;
    transforms.push_back(normalize);
    const std::string text = data::transforms_text(transforms);
    editDataset(tr("Normalize from data"), [&](graph::DatasetSettings& s) { s.transforms = text; });
    return true;
  } catch (const std::exception& e) {
    emit controller_->message(tr("Normalize from data: %1").arg(qs(e.what())));
    return false;
  }
}

int TrainingDock::addSourceRows(int row) {
  sourceLabel_ = new QLabel;
  sourceLabel_->setObjectName("dataSource");
  sourceLabel_->setWordWrap(true);
  dataForm_->insertRow(row++, tr("Source"), sourceLabel_);
  transformsRow_ = new QWidget;
  auto* line = new QHBoxLayout(transformsRow_);
  line->setContentsMargins(0, 0, 0, 0);
  transforms_ = new QLineEdit;
  transforms_->setObjectName("transformsEdit");
  transforms_->setPlaceholderText(tr("ToTensor()"));
  transforms_->setToolTip(
      tr("torchvision's transforms, applied to every image in this order; "
         "the exported train.py uses the same"));
  connect(transforms_, &QLineEdit::editingFinished, this, &TrainingDock::applyTransforms);
  auto* add = new QToolButton;
  add->setText(tr("Add"));
  add->setObjectName("addTransform");
  add->setToolTip(tr("Add a transform (edit its numbers in the text)"));
  add->setPopupMode(QToolButton::InstantPopup);
  auto* menu = new QMenu(add);
  const std::vector<std::pair<QString, QString>> examples = {
      {"Resize", "Resize(32)"},
      {"CenterCrop", "CenterCrop(32)"},
      {"RandomCrop", "RandomCrop(32, padding=4)"},
      {"RandomHorizontalFlip", "RandomHorizontalFlip(p=0.5)"},
      {"Grayscale", "Grayscale(num_output_channels=1)"},
  };
  for (const auto& [name, call] : examples) {
    menu->addAction(name, this, [this, call] {
      // Image steps go before ToTensor, where torchvision takes them.
      QString text = transforms_->text().trimmed();
      const int tensor = text.indexOf(QLatin1String("ToTensor"));
      if (tensor >= 0) {
        text.insert(tensor, call + ", ");
      } else {
        text = text.isEmpty() ? call : text + ", " + call;
      }
      transforms_->setText(text);
      applyTransforms();
    });
  }
  menu->addSeparator();
  menu->addAction(tr("Normalize from the data's mean and std"), this,
                  [this] { normalizeFromData(); });
  add->setMenu(menu);
  // The text gets the section's whole width on a row of its own: a Normalize is long.
  line->addStretch(1);
  line->addWidget(add);
  dataForm_->insertRow(row++, tr("Transforms"), transformsRow_);
  dataForm_->insertRow(row++, transforms_);
  return row;
}

void TrainingDock::chooseDataset(const QString& name) {
  editDataset(tr("Use data set %1").arg(name), [&](graph::DatasetSettings& d) {
    if (d.name == name.toStdString()) return;
    d.name = name.toStdString();
    // Another generator's options mean nothing to this one: it starts from its defaults.
    d.options = graph::Json::object();
    d.csv_path.clear();
    d.label_column.clear();
  });
}

bool TrainingDock::importCsv(const QString& path, const QString& labelColumn) {
  const QStringList columns = csvColumns(path);
  if (columns.isEmpty()) {
    emit controller_->message(tr("Import CSV: cannot read %1").arg(path));
    return false;
  }
  const QString label = labelColumn.isEmpty() ? columns.back() : labelColumn;
  const QString projectPath = document_->filePath();
  // Relative to the project file, as the project format keeps it, when there is one.
  const QString stored = projectPath.isEmpty()
                             ? QFileInfo(path).absoluteFilePath()
                             : QFileInfo(projectPath).absoluteDir().relativeFilePath(path);
  editDataset(tr("Import %1").arg(QFileInfo(path).fileName()), [&](graph::DatasetSettings& d) {
    d.name = kCsv.toStdString();
    d.options = graph::Json::object();
    d.csv_path = stored.toStdString();
    d.label_column = label.toStdString();
  });
  return true;
}

QWidget* TrainingDock::dataSection() const {
  return dataBox_;
}

QWidget* TrainingDock::datasetOptionField(const QString& option) const {
  for (const auto& [spec, field] : optionFields_) {
    if (qs(spec.name) == option) return field;
  }
  return nullptr;
}

void TrainingDock::showDatasetOptions(const graph::DatasetSettings& d) {
  // The rows above the test split are the old set's.
  const int oldRows =
      static_cast<int>(optionFields_.size()) + (csvFile_ ? 1 : 0) + (sourceLabel_ ? 3 : 0);
  for (int i = 0; i < oldRows; ++i) dataForm_->removeRow(0);
  optionFields_.clear();
  csvFile_ = nullptr;
  sourceLabel_ = nullptr;
  transforms_ = nullptr;
  transformsRow_ = nullptr;
  optionsShownFor_ = d.name;
  int row = 0;
  if (d.name == kCsv.toStdString()) {
    csvFile_ = new QLabel;
    csvFile_->setWordWrap(true);
    dataForm_->insertRow(row++, tr("File"), csvFile_);
  }
  if (d.name == kFiles.toStdString()) row = addSourceRows(row);
  for (const graph::OptionSpec& spec : datasetOptionSpecs(d.name)) {
    const std::string name = spec.name;
    QWidget* field = makeOptionField(
        spec, datasetOptionValue(d, spec), false,
        [this, name](const graph::Json& value) { setDatasetOption(name, value); },
        [this](const QString& why) {
          emit controller_->message(why);
          readProject();
        });
    field->setObjectName("datasetOption:" + qs(name));
    dataForm_->insertRow(row++, optionLabel(name), field);
    optionFields_.emplace_back(spec, field);
  }
  // Another set's rows may need another width.
  scroll_->updateGeometry();
}

void TrainingDock::showTrainingOptions(const graph::TrainingSettings& t) {
  // The optimizer's learning rate and weight decay have fields of their own; the hidden
  // options change nothing here.
  auto shown = [](const graph::OptionSpec& spec) {
    return !spec.hidden && spec.name != "lr" && spec.name != "weight_decay";
  };
  auto valueOf = [](const graph::Json& options, const graph::OptionSpec& spec) {
    return options.is_object() && options.contains(spec.name) ? options[spec.name]
                                                              : spec.default_value;
  };
  // Rows for `specs` after the row of `above`, replacing `fields`; `set` edits the settings.
  auto remake =
      [&](std::vector<std::pair<graph::OptionSpec, QWidget*>>& fields,
          const std::vector<graph::OptionSpec>& specs, const graph::Json& options, QWidget* above,
          const QString& prefix,
          std::function<void(graph::TrainingSettings&, const std::string&, const graph::Json&)>
              set) {
        for (const auto& [spec, field] : fields) trainForm_->removeRow(field);
        fields.clear();
        int row = 0;
        QFormLayout::ItemRole role;
        trainForm_->getWidgetPosition(above, &row, &role);
        for (const graph::OptionSpec& spec : specs) {
          if (!shown(spec)) continue;
          const std::string name = spec.name;
          QWidget* field = makeOptionField(
              spec, valueOf(options, spec), false,
              [this, name, set](const graph::Json& value) {
                editTraining(tr("Set %1").arg(qs(name)),
                             [&](graph::TrainingSettings& s) { set(s, name, value); });
              },
              [this](const QString& why) {
                emit controller_->message(why);
                readProject();
              });
          field->setObjectName(prefix + qs(name));
          trainForm_->insertRow(++row, optionLabel(name), field);
          fields.emplace_back(spec, field);
        }
      };
  try {
    if (lossFieldsFor_ != t.loss) {
      lossFieldsFor_ = t.loss;
      remake(lossFields_, train::loss_option_specs(t.loss), t.loss_options, loss_, "lossOption:",
             [](graph::TrainingSettings& s, const std::string& name, const graph::Json& v) {
               if (!s.loss_options.is_object()) s.loss_options = graph::Json::object();
               s.loss_options[name] = v;
             });
    }
    if (optimizerFieldsFor_ != t.optimizer) {
      optimizerFieldsFor_ = t.optimizer;
      remake(optimizerFields_, train::optimizer_option_specs(t.optimizer), t.optimizer_options,
             inputMessage_, "optimizerOption:",
             [](graph::TrainingSettings& s, const std::string& name, const graph::Json& v) {
               s.optimizer_options[name] = v;
             });
    }
  } catch (const std::exception&) {
    // An unknown loss or optimizer (a hand-written file): no option rows; starting a run
    // names the problem.
  }
  for (const auto& [spec, field] : lossFields_)
    setOptionFieldValue(field, valueOf(t.loss_options, spec));
  for (const auto& [spec, field] : optimizerFields_)
    setOptionFieldValue(field, valueOf(t.optimizer_options, spec));
  scroll_->updateGeometry();
}

QWidget* TrainingDock::trainingOptionField(const QString& option) const {
  for (const auto* fields : {&lossFields_, &optimizerFields_}) {
    for (const auto& [spec, field] : *fields) {
      if (qs(spec.name) == option) return field;
    }
  }
  return nullptr;
}

void TrainingDock::setDatasetOption(const std::string& name, const graph::Json& value) {
  if (name == kSeed) {
    // One seed makes and splits the data: the settings' (the generator's own option would
    // leave the split and Regenerate behind).
    editDataset(tr("Set data seed"), [&](graph::DatasetSettings& d) {
      d.options.erase(kSeed);
      d.seed = value.get<int64_t>();
    });
    return;
  }
  graph::Json stored = value;
  // A file in or below the project's folder is kept relative to it, so the project moves with
  // its data (the CSV import does the same).
  const data::DatasetInfo* info = nullptr;
  try {
    info = &data::dataset_info(document_->project().dataset.name);
  } catch (const Error&) {
  }
  if (info && value.is_string() && !document_->filePath().isEmpty()) {
    for (const data::OptionInfo& o : info->options) {
      if (o.name != name || o.type != data::OptionType::File) continue;
      const QDir folder = QFileInfo(document_->filePath()).absoluteDir();
      const QString relative = folder.relativeFilePath(qs(value.get<std::string>()));
      if (!relative.startsWith(QLatin1String(".."))) stored = relative.toStdString();
    }
  }
  editDataset(tr("Set %1").arg(qs(name)),
              [&](graph::DatasetSettings& d) { d.options[name] = stored; });
}

void TrainingDock::editDataset(const QString& text,
                               const std::function<void(graph::DatasetSettings&)>& fn) {
  graph::DatasetSettings d = document_->project().dataset;
  if (!d.options.is_object()) d.options = graph::Json::object();
  fn(d);
  const graph::DatasetSettings& now = document_->project().dataset;
  if (d == now) return;
  // Only what can change a sample's shape is worth making the data for: another set, a CSV, a
  // length, size or file. Other edits stay single commands (spin box steps merge).
  bool shapeMayChange = d.name != now.name || d.csv_path != now.csv_path || d.path != now.path ||
                        d.transforms != now.transforms;
  for (const char* key : {"length", "size", "dims", "digits", "file"}) {
    shapeMayChange = shapeMayChange ||
                     d.options.value(key, graph::Json()) != now.options.value(key, graph::Json());
  }
  const auto input = shapeMayChange ? inputFittingData(d) : std::nullopt;
  if (!input) {
    document_->setDatasetSettings(d, text);
    return;
  }
  const graph::Node* node = document_->project().graph.find(input->first);
  const QString message = tr("Input %1 now reads the data: %2 %3 per sample")
                              .arg(qs(node->name), qs(input->second.at("shape").dump()),
                                   qs(input->second.at("dtype").get<std::string>()));
  document_->undoStack()->beginMacro(text);
  document_->setDatasetSettings(d, text);
  document_->setNodeOptions(input->first, input->second);
  document_->undoStack()->endMacro();
  emit controller_->message(message);
}

std::optional<std::pair<graph::NodeId, graph::Json>> TrainingDock::inputFittingData(
    const graph::DatasetSettings& d) const {
  graph::Project project = document_->project();
  const graph::Node* input = nullptr;
  for (const graph::Node& n : project.graph.nodes) {
    if (graph::node_kind(n.type) != graph::NodeKind::Input) continue;
    if (input) return std::nullopt;  // several inputs: which one reads the data is the user's
    input = &n;
  }
  if (!input) return std::nullopt;
  project.dataset = d;
  Tensor x;
  try {
    if (d.name == kFiles.toStdString()) {
      // One sample as the model takes it (after the random transforms' test stand-ins): the
      // whole set is the session's to read, on its own thread.
      data::SourceOptions options;
      options.transforms = data::test_transforms(data::parse_transforms(d.transforms));
      options.head = 1;
      x = data::load_source(
              (std::filesystem::path(document_->baseDir().toStdString()) / d.path).string(),
              options)
              .dataset.inputs;
    } else {
      x = train::project_split(project, document_->baseDir().toStdString()).train.inputs;
    }
  } catch (const std::exception&) {
    return std::nullopt;  // the session says what is wrong with the data
  }
  if (!x.defined() || x.dim() < 1) return std::nullopt;
  const graph::Json shape(std::vector<int64_t>(x.sizes().begin() + 1, x.sizes().end()));
  const std::string dtype = x.dtype() == kInt64 ? "int64" : "float32";
  graph::Json options = input->options.is_object() ? input->options : graph::Json::object();
  if (options.value("shape", graph::Json()) == shape &&
      options.value("dtype", std::string("float32")) == dtype) {
    return std::nullopt;
  }
  options["shape"] = shape;
  options["dtype"] = dtype;
  return std::make_pair(input->id, options);
}

void TrainingDock::editTraining(const QString& text,
                                const std::function<void(graph::TrainingSettings&)>& fn) {
  graph::TrainingSettings t = document_->project().training;
  if (!t.optimizer_options.is_object()) t.optimizer_options = graph::Json::object();
  fn(t);
  document_->setTrainingSettings(t, text);
}

void TrainingDock::applyLearningRate() {
  const QString text = lr_->text().trimmed();
  bool ok = false;
  const double lr = text.toDouble(&ok);
  if (!ok || !std::isfinite(lr) || lr <= 0) {
    inputMessage_->setText(
        tr("Learning rate \"%1\" refused: enter a number above 0, such as 0.01 or 1e-3").arg(text));
    inputMessage_->show();
    emit controller_->message(inputMessage_->text());
    return;
  }
  inputMessage_->hide();
  inputMessage_->clear();
  controller_->setLearningRate(lr);
}

void TrainingDock::readProject() {
  const graph::Project& p = document_->project();
  const graph::DatasetSettings& d = p.dataset;
  const graph::TrainingSettings& t = p.training;
  QString name = qs(d.name);
  if (name == kFiles) {
    const QString suffix = QFileInfo(qs(d.path)).suffix().toLower();
    name = suffix == QLatin1String("npz") || suffix == QLatin1String("npy") ? kNumpyEntry
                                                                            : kImagesEntry;
  }
  for (int i = 0; i < datasets_->count(); ++i) {
    QListWidgetItem* item = datasets_->item(i);
    if (item->data(Qt::UserRole).toString() == name && !item->isSelected()) {
      const QSignalBlocker block(datasets_);
      datasets_->setCurrentItem(item);
    }
  }
  if (optionsShownFor_ != d.name) showDatasetOptions(d);
  for (const auto& [spec, field] : optionFields_) {
    setOptionFieldValue(field, datasetOptionValue(d, spec));
  }
  if (csvFile_) {
    csvFile_->setText(
        tr("%1, label column %2").arg(QFileInfo(qs(d.csv_path)).fileName(), qs(d.label_column)));
    csvFile_->setToolTip(qs(d.csv_path));
  }
  // What the user's files are is read off the disk when the path changes, not at every edit.
  const std::string full =
      d.name == kFiles.toStdString()
          ? (std::filesystem::path(document_->baseDir().toStdString()) / d.path).string()
          : std::string();
  if (full != source_.path) {
    source_.path = full;
    source_.kind = full.empty() ? std::string() : data::source_kind(full);
    source_.ownTest = !source_.kind.empty() && data::has_test_split(full);
  }
  const std::string& kind = source_.kind;
  if (sourceLabel_) {
    sourceLabel_->setText(kind.empty()
                              ? tr("%1 (not found)").arg(qs(d.path))
                              : tr("%1 (%2)").arg(QFileInfo(qs(d.path)).fileName(), qs(kind)));
    sourceLabel_->setToolTip(qs(full));
    transformsRow_->setEnabled(kind != "NumPy");
    transforms_->setEnabled(kind != "NumPy");
    if (!transforms_->hasFocus()) {
      transforms_->setText(qs(d.transforms));
      transforms_->setCursorPosition(0);
      transforms_->setStyleSheet(QString());
      transforms_->setToolTip(tr("%1\n\ntorchvision's transforms, applied to every image in this "
                                 "order; the exported train.py uses the same")
                                  .arg(qs(d.transforms)));
    }
  }
  // A source with a test set of its own (MNIST's t10k files, CIFAR's test batch, a test/
  // folder) tests on it: the split and a new seed mean nothing to it.
  const bool ownTest = source_.ownTest;
  testSplit_->setEnabled(!ownTest);
  testSplit_->setToolTip(ownTest ? tr("This data has a test set of its own, which it tests on")
                                 : tr("The fraction of the data held out to test on"));
  regenerate_->setEnabled(d.name != kFiles.toStdString());
  {
    const QSignalBlocker b1(testSplit_), b2(loss_), b3(optimizer_), b4(batch_), b5(weightDecay_);
    testSplit_->setValue(d.test_fraction);
    loss_->setCurrentText(qs(t.loss));
    optimizer_->setCurrentText(qs(t.optimizer));
    batch_->setValue(static_cast<int>(t.batch_size));
    const graph::Json& o = t.optimizer_options;
    weightDecay_->setValue(o.is_object() ? o.value("weight_decay", 0.0) : 0.0);
    if (!lr_->hasFocus()) {
      lr_->setText(o.is_object() && o.contains("lr") ? QString::number(o["lr"].get<double>())
                                                     : QString());
    }
  }
  showDeviceChoice(t);
  showTrainingOptions(t);
}

void TrainingDock::showDeviceChoice(const graph::TrainingSettings& t) {
  const QSignalBlocker b1(device_), b2(cudaGraphs_);
  // A project made on a machine with a GPU this one lacks keeps its setting, shown as such.
  int device = device_->findData(qs(t.device));
  if (device < 0) {
    device_->addItem(tr("%1 (not on this machine)").arg(qs(t.device)), qs(t.device));
    device = device_->count() - 1;
  }
  device_->setCurrentIndex(device);
  const bool gpu = qs(t.device).startsWith(QLatin1String("cuda"));
  cudaGraphs_->setChecked(t.cuda_graphs);
  cudaGraphs_->setEnabled(gpu);
  cudaGraphs_->setToolTip(
      gpu ? tr("Replay each training step the probes do not sample as a CUDA graph: one launch "
               "instead of hundreds. Off, every step runs eagerly.")
          : tr("CUDA graphs replay the training steps on a GPU: choose one as the device"));
}

void TrainingDock::showStatus(const train::SessionStatus& s) {
  const bool running = s.state == train::RunState::Running;
  startAct_->setEnabled(!running && s.state != train::RunState::Failed);
  pauseAct_->setEnabled(running);
  stepAct_->setEnabled(!running && s.state != train::RunState::Failed);
  QString text = tr("step %1 · epoch %2 · %3 steps/s · %4")
                     .arg(s.step)
                     .arg(s.epoch)
                     .arg(s.steps_per_second, 0, 'f', 0)
                     .arg(qs(train::run_state_name(s.state)));
  // On a GPU: whether the steps replay as CUDA graphs (one launch a step), or why not.
  if (!s.graphs_off.empty()) {
    text += tr(" · no CUDA graphs");
  } else if (s.graph_replays > 0) {
    text += tr(" · CUDA graphs");
  }
  if (s.step > 0) text += tr("\nloss %1").arg(s.smoothed_loss, 0, 'g', 4);
  if (s.last_evaluation && std::isfinite(s.last_evaluation->accuracy)) {
    text += tr(" · test accuracy %1%").arg(100 * s.last_evaluation->accuracy, 0, 'f', 1);
  }
  // What watching costs: the probes time themselves against the training (probes.h).
  const train::ProbeOverhead& probes = s.probe_overhead;
  // Over the first steps the figure says little (the first step is always sampled, and the
  // probes' clock needs some steps to average over).
  QString tip;
  if (probes.sampled > 0 && s.step >= kProbeFigureAfterSteps) {
    text += tr(" · probes +%1%").arg(100 * probes.fraction, 0, 'f', 1);
    tip = tr("Probes: their hooks and summaries have added %1% to this run's training time, as "
             "measured (each probe's overhead budget, 5% unless set otherwise, keeps it near "
             "that). %2 steps sampled; %3 steps skipped to keep within the budgets.")
              .arg(100 * probes.fraction, 0, 'f', 1)
              .arg(probes.sampled)
              .arg(probes.skipped);
    if (probes.forced > 0) {
      tip += tr(" %1 steps sampled beyond the budget so that every probe keeps a readable "
                "history (at least a third of its steps early on, then one in ten).")
                 .arg(probes.forced);
    }
  }
  if (!s.graphs_off.empty()) {
    tip += (tip.isEmpty() ? "" : "\n") + tr("CUDA graphs are off: %1").arg(qs(s.graphs_off));
  } else if (s.graph_replays > 0) {
    tip += (tip.isEmpty() ? "" : "\n") +
           tr("%1 steps replayed as CUDA graphs (the steps the probes sample run eagerly)")
               .arg(s.graph_replays);
  }
  counters_->setToolTip(tip);
  counters_->setText(text);
}

bool TrainingDock::saveCheckpointTo(const QString& path) {
  return controller_->saveCheckpoint(path);
}

bool TrainingDock::loadCheckpointFrom(const QString& path) {
  return controller_->loadCheckpoint(path);
}

}  // namespace nns::ui
