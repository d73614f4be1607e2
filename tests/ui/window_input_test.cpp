// SPDX-License-Identifier: GPL-3.0-or-later
// What the window does with the mouse wheel, the labels' mnemonics and the canvas's zoom: a
// wheel over a field without the focus scrolls the panel and leaves the value (everywhere: the
// guard is the application's, installed by ui_test_main.cpp as by the window's main); the Import
// PyTorch Code dialog's labels take Alt+letter to their fields and its Inputs show an example,
// not a default; the status bar's zoom follows every change of the canvas's transform. Waits
// are bounded polls of the event loop.
#include <gtest/gtest.h>

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSet>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "engine/train/losses.h"
#include "ui/app/example_project.h"
#include "ui/app/main_window.h"
#include "ui/app/torch_import_dialog.h"
#include "ui/canvas/graph_view.h"
#include "ui/document/project_document.h"
#include "ui/training/training_dock.h"
#include "ui_test_support.h"

namespace nns::ui {
namespace {

using test::waitFor;

// Notches of the wheel (negative: towards the user, down a panel) with the pointer over the
// middle of `target`.
void wheelOver(QWidget* target, int notches) {
  const QPointF at = QRectF(target->rect()).center();
  QWheelEvent wheel(at, target->mapToGlobal(at), QPoint(), QPoint(0, 120 * notches), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(target, &wheel);
}

void focusAndWait(QWidget* widget) {
  widget->setFocus(Qt::OtherFocusReason);
  ASSERT_TRUE(waitFor([&] { return widget->hasFocus(); }, 5000));
}

void showActive(QWidget* window) {
  window->show();
  window->activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(window));
}

// What a field shows (the wheel must not change it); nothing for a widget that is no field.
std::optional<std::string> valueOf(QWidget* field) {
  if (auto* combo = qobject_cast<QComboBox*>(field)) return combo->currentText().toStdString();
  if (auto* spin = qobject_cast<QAbstractSpinBox*>(field)) return spin->text().toStdString();
  if (auto* slider = qobject_cast<QSlider*>(field)) return std::to_string(slider->value());
  return std::nullopt;
}

// Qt gives a field whose policy includes the wheel the focus as the wheel passes over it, before
// the application's filter sees the wheel; that focus would let the wheel change the value.
bool takesFocusFromTheWheel(QWidget* field) {
  return (field->focusPolicy() & Qt::WheelFocus) == Qt::WheelFocus;
}

class WindowWheelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    graph::Project project = spiralsExample();
    project.training.epochs = 0;
    window->document()->setProject(std::move(project), QString());
    // A dock of its own, too short for its controls, so that it scrolls; it edits the same
    // project.
    dock = std::make_unique<TrainingDock>(window->training());
    dock->resize(290, 260);
    showActive(dock.get());
    test::settle();
    scrollBar = dock->findChild<QScrollArea*>()->verticalScrollBar();
    for (auto* combo : dock->findChildren<QComboBox*>()) {
      if (combo->findText(QString::fromStdString(train::loss_names().back())) >= 0) loss = combo;
    }
  }
  void TearDown() override {
    dock.reset();
    window->document()->undoStack()->setClean();
    window.reset();
  }
  int undoIndex() const { return window->document()->undoStack()->index(); }

  std::unique_ptr<MainWindow> window;
  std::unique_ptr<TrainingDock> dock;
  QScrollBar* scrollBar = nullptr;
  QComboBox* loss = nullptr;
};

TEST_F(WindowWheelTest, AWheelOverAnUnfocusedFieldOfTheTrainingDockScrollsItAndChangesNothing) {
  ASSERT_NE(loss, nullptr);
  ASSERT_GT(scrollBar->maximum(), 0) << "the dock must be too short for its controls";
  focusAndWait(dock->findChild<QLineEdit*>("learningRate"));
  const std::string lossBefore = window->document()->project().training.loss;
  const int edits = undoIndex();

  scrollBar->setValue(0);
  wheelOver(loss, -1);
  EXPECT_GT(scrollBar->value(), 0);
  EXPECT_EQ(loss->currentText().toStdString(), lossBefore);

  // Every field of the dock, both ways (one way may be at its end). A field the dock remade
  // (after an edit) is gone from the list, not dangling.
  int fields = 0;
  const QList<QWidget*> children = dock->findChildren<QWidget*>();
  const QList<QPointer<QWidget>> widgets(children.begin(), children.end());
  for (const QPointer<QWidget>& field : widgets) {
    if (!field || !valueOf(field) || !field->isVisible()) continue;
    ++fields;
    SCOPED_TRACE(field->objectName().toStdString() + " " + field->metaObject()->className());
    EXPECT_FALSE(takesFocusFromTheWheel(field));
    const std::optional<std::string> before = valueOf(field);
    for (int notches : {-1, 1}) {
      if (!field) break;
      wheelOver(field, notches);
      if (field) {
        EXPECT_EQ(valueOf(field), before);
      }
    }
    EXPECT_TRUE(field) << "the wheel made the dock remake its fields";
  }
  EXPECT_GT(fields, 5);
  test::settle();
  EXPECT_EQ(undoIndex(), edits);
  EXPECT_EQ(window->document()->project().training.loss, lossBefore);
}

TEST_F(WindowWheelTest, AFocusedFieldStillTakesTheWheel) {
  ASSERT_NE(loss, nullptr);
  focusAndWait(loss);
  const int edits = undoIndex();
  const int index = loss->currentIndex();
  const int scrolled = scrollBar->value();
  // Down the list where there is room, else up.
  wheelOver(loss, index + 1 < loss->count() ? -1 : 1);
  EXPECT_NE(loss->currentIndex(), index);
  test::settle();
  EXPECT_EQ(undoIndex(), edits + 1);
  EXPECT_EQ(window->document()->project().training.loss, loss->currentText().toStdString());
  EXPECT_EQ(scrollBar->value(), scrolled);
}

// Not the dock's doing: any panel's fields, sliders included, and a dialog's.
TEST(WindowWheel, AnyPanelScrollsPastItsUnfocusedFieldsAndAFocusedOneTakesTheWheel) {
  QScrollArea area;
  auto* content = new QWidget;
  auto* layout = new QVBoxLayout(content);
  auto* combo = new QComboBox;
  combo->addItems({"a", "b", "c"});
  combo->setCurrentIndex(1);
  auto* spin = new QSpinBox;
  spin->setValue(5);
  auto* doubleSpin = new QDoubleSpinBox;
  doubleSpin->setValue(0.5);
  auto* slider = new QSlider(Qt::Horizontal);
  slider->setRange(0, 10);
  slider->setValue(5);
  auto* line = new QLineEdit;
  for (QWidget* w : std::initializer_list<QWidget*>{combo, spin, doubleSpin, slider, line}) {
    layout->addWidget(w);
  }
  layout->addSpacing(2000);
  area.setWidget(content);
  area.resize(200, 150);
  showActive(&area);
  focusAndWait(line);
  QScrollBar* bar = area.verticalScrollBar();
  for (QWidget* field : std::initializer_list<QWidget*>{combo, spin, doubleSpin, slider}) {
    SCOPED_TRACE(field->metaObject()->className());
    EXPECT_FALSE(takesFocusFromTheWheel(field));
    bar->setValue(0);
    const std::optional<std::string> before = valueOf(field);
    wheelOver(field, -1);
    EXPECT_EQ(valueOf(field), before);
    EXPECT_GT(bar->value(), 0);
  }
  // The scroll bar is a slider too: it still scrolls.
  bar->setValue(0);
  wheelOver(bar, -1);
  EXPECT_GT(bar->value(), 0);

  focusAndWait(spin);
  const int scrolled = bar->value();
  wheelOver(spin, 1);
  EXPECT_EQ(spin->value(), 6);
  EXPECT_EQ(bar->value(), scrolled);

  // Outside any scroll area the wheel over an unfocused field does nothing.
  QDialog dialog;
  auto* dialogSpin = new QSpinBox(&dialog);
  dialogSpin->setValue(5);
  auto* dialogLine = new QLineEdit(&dialog);
  dialogLine->move(0, 40);
  showActive(&dialog);
  focusAndWait(dialogLine);
  wheelOver(dialogSpin, 1);
  EXPECT_EQ(dialogSpin->value(), 5);
}

// A label's '&' shows literally unless the label has a buddy; with one, Alt+letter goes to it.
TEST(TorchImportDialogForm, EveryLabelsMnemonicMovesToItsField) {
  TorchImportDialog dialog;
  showActive(&dialog);
  auto* form = dialog.findChild<QFormLayout*>();
  ASSERT_NE(form, nullptr);
  auto* importButton = dialog.findChild<QPushButton*>("torchImportButton");
  ASSERT_NE(importButton, nullptr);
  std::set<std::string> reached;
  QSet<QKeySequence> mnemonics;
  for (auto* button : dialog.findChildren<QPushButton*>()) {
    const QKeySequence key = QKeySequence::mnemonic(button->text());
    if (key.isEmpty()) continue;
    EXPECT_FALSE(mnemonics.contains(key)) << button->text().toStdString();
    mnemonics.insert(key);
  }
  for (int row = 0; row < form->rowCount(); ++row) {
    auto* label = qobject_cast<QLabel*>(form->itemAt(row, QFormLayout::LabelRole)->widget());
    ASSERT_NE(label, nullptr);
    SCOPED_TRACE(label->text().toStdString());
    ASSERT_TRUE(label->text().contains('&'));
    ASSERT_NE(label->buddy(), nullptr) << "the '&' would show";
    const QKeySequence key = QKeySequence::mnemonic(label->text());
    EXPECT_FALSE(mnemonics.contains(key)) << "Alt+letter taken twice";
    mnemonics.insert(key);
    focusAndWait(importButton);
    QTest::keySequence(&dialog, key);
    EXPECT_TRUE(waitFor([&] { return QApplication::focusWidget() == label->buddy(); }, 5000));
    reached.insert(label->buddy()->objectName().toStdString());
  }
  EXPECT_EQ(reached,
            (std::set<std::string>{"torchSource", "torchInputs", "torchPython", "torchProject"}));
}

// The shape of a model's input is the model's: the field shows an example, and an import
// without one asks for it rather than tracing with a guess.
TEST(TorchImportDialogForm, EmptyInputsShowAnExampleAndAreAskedFor) {
  QTemporaryDir dir;
  ASSERT_TRUE(dir.isValid());
  TorchImportDialog dialog;
  auto* inputs = dialog.findChild<QLineEdit*>("torchInputs");
  ASSERT_NE(inputs, nullptr);
  EXPECT_EQ(inputs->placeholderText().toStdString(), "e.g. 3,224,224");
  const QString project = dir.filePath("model.nns");
  dialog.setSource(dir.filePath("model.py") + ":Net");
  dialog.setInputs("");
  dialog.setPython("/usr/bin/python3");
  dialog.setProjectPath(project);
  EXPECT_FALSE(dialog.start());
  EXPECT_FALSE(dialog.isRunning());
  EXPECT_EQ(dialog.errorText().toStdString(),
            "Give the shape of each forward argument without the batch (e.g. 3,224,224)");
  EXPECT_FALSE(QFile::exists(project));
}

// For the eye (the screenshot job's folder): the labels' mnemonics underlined, no '&', and the
// Inputs' example in grey.
TEST(Screenshot, TorchImportDialog) {
  TorchImportDialog dialog;
  dialog.setInputs("");
  dialog.show();
  test::settle();
  QString dir = qEnvironmentVariable("NNS_SCREENSHOT_DIR");
  if (dir.isEmpty()) dir = QDir::tempPath() + "/nnstudio-screenshots";
  ASSERT_TRUE(QDir().mkpath(dir));
  const QString path = QDir(dir).filePath("torch_import_dialog.png");
  ASSERT_TRUE(dialog.grab().save(path)) << path.toStdString();
}

class ZoomLabelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    window = std::make_unique<MainWindow>();
    window->document()->setProject(spiralsExample(), QString());
    window->resize(1200, 800);
    showActive(window.get());
    test::settle();
    view = window->view();
    label = window->findChild<QLabel*>("zoomLabel");
  }
  void TearDown() override {
    window->document()->undoStack()->setClean();
    window.reset();
  }
  // `change` moves the view's scale; the label must come to show the new one.
  void expectLabelFollows(const char* what, const std::function<void()>& change) {
    SCOPED_TRACE(what);
    const int before = qRound(view->zoom() * 100);
    change();
    const int after = qRound(view->zoom() * 100);
    ASSERT_NE(after, before) << "the change must move the scale";
    const QString expected = QString("Zoom %1%").arg(after);
    EXPECT_TRUE(waitFor([&] { return label->text() == expected; }, 5000))
        << label->text().toStdString() << ", expected " << expected.toStdString();
  }

  std::unique_ptr<MainWindow> window;
  GraphView* view = nullptr;
  QLabel* label = nullptr;
};

TEST_F(ZoomLabelTest, TheLabelFollowsEveryChangeOfTheViewsTransform) {
  ASSERT_NE(label, nullptr);
  expectLabelFollows("setTransform", [&] { view->setTransform(QTransform::fromScale(0.5, 0.5)); });
  EXPECT_EQ(label->text().toStdString(), "Zoom 50%");
  expectLabelFollows("scale", [&] { view->scale(1.5, 1.5); });
  EXPECT_EQ(label->text().toStdString(), "Zoom 75%");
  expectLabelFollows("resetTransform", [&] { view->resetTransform(); });
  EXPECT_EQ(label->text().toStdString(), "Zoom 100%");
  expectLabelFollows("fitInView", [&] {
    const QSize size = view->viewport()->size();
    view->fitInView(QRectF(0, 0, 4 * size.width(), 4 * size.height()), Qt::KeepAspectRatio);
  });
  expectLabelFollows("zoomBy", [&] { view->zoomBy(2.5); });
  expectLabelFollows("Frame All", [&] { view->frameAll(); });
  expectLabelFollows("the wheel", [&] { wheelOver(view->viewport(), 2); });
  expectLabelFollows("Zoom Out's keys", [&] {
    focusAndWait(view);
    QTest::keySequence(window.get(), QKeySequence(QKeySequence::ZoomOut));
  });
}

}  // namespace
}  // namespace nns::ui
