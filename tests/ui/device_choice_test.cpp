// SPDX-License-Identifier: GPL-3.0-or-later
// The training dock's Device choice (issue 27): the CPU and each CUDA GPU by name; on a
// machine without a usable GPU (every build machine) it is disabled and says why, in the
// words of nns::cuda::unavailable_reason().
#include <gtest/gtest.h>

#include <QComboBox>
#include <QLabel>
#include <QUndoStack>

#include "engine/backend/cuda_backend.h"
#include "ui/document/project_document.h"
#include "ui/training/training_controller.h"
#include "ui/training/training_dock.h"

namespace nns::ui {
namespace {

TEST(DeviceChoice, ListsTheCpuAndEachGpuOrSaysWhyThereIsNone) {
  ProjectDocument doc;
  TrainingController controller(&doc);
  TrainingDock dock(&controller);
  QComboBox* box = dock.deviceBox();
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->itemData(0).toString(), "cpu");
  EXPECT_EQ(box->currentData().toString(), "cpu");
  const std::vector<CudaDeviceProperties> gpus = cuda::devices();
  if (gpus.empty()) {
    EXPECT_FALSE(box->isEnabled());
    EXPECT_EQ(box->count(), 1);
    const std::string reason = cuda::unavailable_reason();
    ASSERT_FALSE(reason.empty());
    EXPECT_TRUE(dock.deviceNote()->isVisibleTo(&dock));
    EXPECT_EQ(dock.deviceNote()->text().toStdString(), "No CUDA GPU: " + reason);
    EXPECT_EQ(box->toolTip(), dock.deviceNote()->text());
  } else {
    EXPECT_TRUE(box->isEnabled());
    ASSERT_EQ(box->count(), static_cast<int>(gpus.size()) + 1);
    EXPECT_TRUE(box->itemText(1).contains(QString::fromStdString(gpus[0].name)));
    // Choosing the GPU is an undoable edit of the project's training.device.
    box->setCurrentIndex(1);
    EXPECT_EQ(doc.project().training.device, "cuda:0");
    doc.undoStack()->undo();
    EXPECT_EQ(doc.project().training.device, "cpu");
    EXPECT_EQ(box->currentData().toString(), "cpu");
  }
}

TEST(DeviceChoice, AProjectForAGpuThisMachineLacksKeepsItsSetting) {
  if (!cuda::devices().empty()) GTEST_SKIP() << "this machine has a GPU";
  ProjectDocument doc;
  graph::Project p = doc.project();
  p.training.device = "cuda:3";
  doc.setProject(p, QString());
  TrainingController controller(&doc);
  TrainingDock dock(&controller);
  EXPECT_EQ(dock.deviceBox()->currentData().toString(), "cuda:3");
  EXPECT_TRUE(dock.deviceBox()->currentText().contains("not on this machine"));
  EXPECT_EQ(doc.project().training.device, "cuda:3");
}

}  // namespace
}  // namespace nns::ui
