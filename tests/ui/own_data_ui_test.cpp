// SPDX-License-Identifier: GPL-3.0-or-later
// Your own data in the window, as a user meets it: torchvision's resnet18(num_classes=10)
// imported through File > Import > PyTorch Code, then a folder of CIFAR-10 batches chosen as
// its data (the dock's Images… entry does this after its folder dialog), a Normalize from the
// data's own mean and std, the classes' samples in the data section, training until the test
// accuracy is well above chance, and the Output panel's confusion matrix and the test images
// the model gets wrong, one of them clicked to trace. Needs the system Python's torch
// (Debian's python3-torch); skipped without it.
#include <gtest/gtest.h>

#include <QDir>
#include <QImage>
#include <QLineEdit>
#include <QMouseEvent>
#include <QTemporaryDir>
#include <QTest>
#include <fstream>
#include <memory>
#include <random>

#include "engine/graph/project.h"
#include "engine/train/session.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/app/torch_import_dialog.h"
#include "ui/document/project_document.h"
#include "ui/panels/problems_widget.h"
#include "ui/training/class_samples_view.h"
#include "ui/training/decision_boundary_widget.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_dock.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

// CIFAR-10 binary batches whose classes a network tells apart by colour within an epoch, with
// enough noise that it still gets some test images wrong at first.
void writeCifar(const QString& folder, int trainPerBatch, int test) {
  QDir().mkpath(folder);
  std::mt19937 rng(7);
  const int colours[10][3] = {{230, 60, 60},   {60, 200, 60},  {60, 60, 230},  {230, 230, 60},
                              {230, 60, 230},  {60, 230, 230}, {250, 150, 40}, {140, 70, 20},
                              {200, 200, 200}, {40, 40, 40}};
  auto write = [&](const QString& name, int n) {
    std::ofstream out((folder + "/" + name).toStdString(), std::ios::binary);
    for (int i = 0; i < n; ++i) {
      const int label = static_cast<int>(rng() % 10);
      out.put(static_cast<char>(label));
      for (int c = 0; c < 3; ++c) {
        for (int p = 0; p < 32 * 32; ++p) {
          const int v = colours[label][c] / 3 + static_cast<int>(rng() % 170);
          out.put(static_cast<char>(std::min(v, 255)));
        }
      }
    }
  };
  for (int b = 1; b <= 5; ++b) write(QString("data_batch_%1.bin").arg(b), trainPerBatch);
  write("test_batch.bin", test);
}

TEST(OwnDataUi, ImportedResnet18TrainsOnCifarFilesAndShowsWhatItGetsWrong) {
  if (!test::pythonHasTorch()) GTEST_SKIP() << "/usr/bin/python3 has no torch";
  QTemporaryDir tmp;
  const QString cifar = tmp.filePath("cifar-10-batches-bin");
  writeCifar(cifar, 200, 200);

  auto window = std::make_unique<MainWindow>();
  window->resize(1600, 1000);
  window->document()->setProject(spiralsExample(), QString());
  window->show();
  test::settle();
  TorchImportDialog* dialog = window->importPyTorchDialog();
  dialog->setSource("torchvision.models:resnet18(num_classes=10)");
  dialog->setInputs("3,32,32");
  dialog->setPython("/usr/bin/python3");
  const QString project = tmp.filePath("resnet18.nns");
  dialog->setProjectPath(project);
  ASSERT_TRUE(dialog->start());
  ASSERT_TRUE(test::waitFor([&] { return window->document()->filePath() == project; }, 120000));
  test::settle();

  TrainingDock* dock = window->trainingDock();
  ASSERT_TRUE(dock->useDataSource(cifar));
  const graph::DatasetSettings& data = window->document()->project().dataset;
  EXPECT_EQ(data.name, "files");
  EXPECT_EQ(data.path, "cifar-10-batches-bin");  // relative to the project
  EXPECT_EQ(data.transforms, "ToTensor()");
  ASSERT_TRUE(dock->transformsEdit());
  EXPECT_EQ(dock->transformsEdit()->text(), "ToTensor()");
  ASSERT_TRUE(dock->normalizeFromData());
  EXPECT_NE(window->document()->project().dataset.transforms.find("Normalize(mean=("),
            std::string::npos);

  // The session reads the files on its thread; the data section then shows each class.
  TrainingController* controller = window->training();
  ASSERT_TRUE(test::waitFor([&] { return controller->currentSession() && !controller->isStale(); },
                            120000));
  ClassSamplesView* samples = dock->classSamples();
  ASSERT_TRUE(test::waitFor([&] { return samples->isVisible(); }, 60000));
  ASSERT_EQ(samples->rows().size(), 10u);
  int64_t total = 0;
  for (const ClassSamplesView::Row& row : samples->rows()) {
    total += row.count;
    EXPECT_FALSE(row.images.empty()) << row.name.toStdString();
  }
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(samples->rows()[0].name, "airplane");  // CIFAR-10's names without batches.meta.txt

  // Train until an evaluation shows the model well above chance (10%).
  dock->startAction()->trigger();
  ASSERT_TRUE(test::waitFor(
      [&] {
        return controller->status().last_evaluation &&
               controller->status().last_evaluation->accuracy > 0.4;
      },
      600000));
  dock->pauseAction()->trigger();
  ASSERT_TRUE(test::waitFor([&] { return !controller->isRunning(); }, 60000));

  DecisionBoundaryWidget* output = window->boundary();
  ASSERT_TRUE(test::waitFor([&] { return output->confusionClasses() == 10; }, 30000));
  int64_t cells = 0, right = 0;
  for (int64_t t = 0; t < 10; ++t) {
    for (int64_t g = 0; g < 10; ++g) {
      cells += output->confusion(t, g);
      if (t == g) right += output->confusion(t, g);
    }
  }
  EXPECT_EQ(cells, 200);
  EXPECT_EQ(cells - right, output->wrongCount());
  EXPECT_EQ(static_cast<int64_t>(output->shownIndices().size()),
            std::min<int64_t>(output->wrongCount(), DecisionBoundaryWidget::kShownImages));
  if (output->wrongCount() > 0) {
    // A wrong image, clicked, is traced.
    window->show();
    output->repaint();
    const QRectF box = output->sampleRect(0);
    ASSERT_FALSE(box.isEmpty());
    QTest::mouseClick(output, Qt::LeftButton, {}, box.center().toPoint());
    EXPECT_EQ(output->tracedSample(), 0);
  }
  // For a person to look at: the data section's classes, the matrix and the wrong images.
  if (const QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR"); !dir.isEmpty()) {
    EXPECT_TRUE(window->grab().save(dir + "/own_data_resnet18_cifar.png"));
    EXPECT_TRUE(output->grab().save(dir + "/own_data_output.png"));
    EXPECT_TRUE(dock->dataSection()->grab().save(dir + "/own_data_section.png"));
  }
  window->document()->undoStack()->setClean();
  window->close();
}

// An image folder chosen in the dock with a corrupt file among its PNGs: the session trains on
// the rest, the Problems list names the file left out, and the model's Input takes the
// folder's sample shape after the default transforms (Resize(32), CenterCrop(32)) in the same
// undo step as the data.
TEST(OwnDataUi, AnImageFolderWithACorruptFileListsItInTheProblems) {
  QTemporaryDir tmp;
  const QString folder = tmp.filePath("shapes");
  for (const char* cls : {"circle", "square"}) {
    QDir().mkpath(folder + "/" + cls);
    for (int i = 0; i < 6; ++i) {
      QImage image(40 + i, 36, QImage::Format_RGB32);
      image.fill(QColor(cls[0] == 'c' ? 200 : 20, 40 * i, 90));
      ASSERT_TRUE(image.save(QString("%1/%2/%3.png").arg(folder, cls).arg(i)));
    }
  }
  {
    std::ofstream broken((folder + "/square/broken.png").toStdString(), std::ios::binary);
    broken << "\x89PNG\r\n\x1a\n not really";
  }
  auto window = std::make_unique<MainWindow>();
  window->resize(1400, 900);
  window->document()->setProject(spiralsExample(), QString());
  window->show();
  test::settle();
  TrainingDock* dock = window->trainingDock();
  ASSERT_TRUE(dock->useDataSource(folder));
  const graph::Node* input = window->document()->project().graph.find_by_name("x");
  ASSERT_TRUE(input);
  EXPECT_EQ(input->options.at("shape"), graph::Json({3, 32, 32}));
  window->document()->undoStack()->undo();  // one step takes the data and the Input back
  EXPECT_EQ(window->document()->project().dataset.name, "spirals");
  EXPECT_EQ(window->document()->project().graph.find_by_name("x")->options.at("shape"),
            graph::Json({2}));
  window->document()->undoStack()->redo();
  // The spirals MLP cannot take images; a small convolutional network on 16 x 16 grey ones can.
  graph::Project digits = graph::load_project(NNS_SOURCE_DIR "/resources/examples/digits.nns");
  digits.dataset = window->document()->project().dataset;
  window->document()->setProject(digits, tmp.filePath("digits.nns"));
  dock->transformsEdit()->setText("Grayscale(), Resize(16), CenterCrop(16), ToTensor()");
  emit dock->transformsEdit()->editingFinished();
  EXPECT_EQ(window->document()->project().graph.find_by_name("x")->options.at("shape"),
            graph::Json({1, 16, 16}));

  TrainingController* controller = window->training();
  ASSERT_TRUE(
      test::waitFor([&] { return controller->currentSession() && !controller->isStale(); }, 60000));
  EXPECT_EQ(controller->currentSession()->train_set().size() +
                controller->currentSession()->test_set().size(),
            12);
  ProblemsWidget* problems = window->problems();
  QTreeWidgetItem* skipped = nullptr;
  for (int i = 0; i < problems->topLevelItemCount(); ++i) {
    if (problems->topLevelItem(i)->text(1) == "files") skipped = problems->topLevelItem(i);
  }
  ASSERT_TRUE(skipped);
  EXPECT_TRUE(skipped->text(2).startsWith("1 image could not be read and is left out"))
      << skipped->text(2).toStdString();
  ASSERT_EQ(skipped->childCount(), 1);
  EXPECT_TRUE(skipped->child(0)->text(2).contains("broken.png"));
  window->document()->undoStack()->setClean();
  window->close();
}

}  // namespace
}  // namespace nns::ui
