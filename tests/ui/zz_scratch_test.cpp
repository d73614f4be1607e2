#include <gtest/gtest.h>
#include <QLabel>
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/canvas/image_export.h"
#include "ui/document/project_document.h"
#include "ui/training/training_dock.h"
#include "ui_test_support.h"
namespace nns::ui {
TEST(Scratch, Shots) {
  MainWindow w;
  w.resize(1500, 920);
  w.document()->setProject(spiralsExample(), QString());
  w.show();
  test::settle();
  TrainingDock d(w.training());
  d.show();
  d.counters()->setText("step 12000 · epoch 40 · 2500 steps/s · running\nloss 0.0123 · test accuracy 99.5%\nprobes +4.9%");
  for (const char* set : {"spirals", "digits"}) {
    d.chooseDataset(set);
    for (int h : {300, 900}) {
      d.resize(290, h);
      test::settle();
      d.grab().save(QString("/tmp/shot_%1_%2.png").arg(set).arg(h));
    }
  }
  exportSceneImage(w.scene(), "/tmp/shot_canvas.png", false);
  exportSceneImage(w.scene(), "/tmp/shot_canvas.svg", false);
  w.grab().save("/tmp/shot_window.png");
  w.document()->undoStack()->setClean();
}
}
