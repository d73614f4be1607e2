// SPDX-License-Identifier: GPL-3.0-or-later
// The training dock's Device choice (issue 27): the CPU and each CUDA GPU by name; on a
// machine without a usable GPU (every build machine) it is disabled and says why, in the
// words of nns::cuda::unavailable_reason(). The CUDA graphs box under it (issue 41) is the
// project's training.cuda_graphs, enabled only for a GPU.
#include <gtest/gtest.h>

#include <QCheckBox>
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

TEST(DeviceChoice, TheCudaGraphsBoxIsDisabledOnTheCpu) {
  ProjectDocument doc;
  TrainingController controller(&doc);
  TrainingDock dock(&controller);
  QCheckBox* box = dock.cudaGraphsBox();
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->text(), "CUDA graphs");
  EXPECT_EQ(doc.project().training.device, "cpu");
  EXPECT_TRUE(box->isChecked());
  EXPECT_FALSE(box->isEnabled());
  EXPECT_TRUE(box->toolTip().contains("on a GPU")) << box->toolTip().toStdString();
}

// A GPU project (cuda:3: one this machine may lack keeps its setting) turns it on or off as an
// undoable edit, and a project saved with it off opens with the box clear.
TEST(DeviceChoice, TheCudaGraphsBoxIsTheProjectsSettingOnAGpu) {
  ProjectDocument doc;
  graph::Project p = doc.project();
  p.training.device = "cuda:3";
  doc.setProject(p, QString());
  TrainingController controller(&doc);
  TrainingDock dock(&controller);
  QCheckBox* box = dock.cudaGraphsBox();
  EXPECT_TRUE(box->isEnabled());
  EXPECT_TRUE(box->isChecked());
  box->setChecked(false);
  EXPECT_FALSE(doc.project().training.cuda_graphs);
  doc.undoStack()->undo();
  EXPECT_TRUE(doc.project().training.cuda_graphs);
  EXPECT_TRUE(box->isChecked());

  p.training.cuda_graphs = false;
  doc.setProject(graph::parse_project(graph::project_to_json(p)), QString());
  EXPECT_FALSE(box->isChecked());
  EXPECT_TRUE(box->isEnabled());
  p.training.device = "cpu";
  doc.setProject(p, QString());
  EXPECT_FALSE(box->isEnabled());
}

}  // namespace
}  // namespace nns::ui
