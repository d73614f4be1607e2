// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/widgets/wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QScrollBar>
#include <QWheelEvent>

namespace nns::ui {
namespace {

// A field whose value the wheel steps. A scroll bar is a slider too, but scrolling is its job.
bool isValueField(const QObject* object) {
  return qobject_cast<const QComboBox*>(object) || qobject_cast<const QAbstractSpinBox*>(object) ||
         (qobject_cast<const QAbstractSlider*>(object) && !qobject_cast<const QScrollBar*>(object));
}

// The scroll area the field sits in, within its own window (a dialog never scrolls the window
// behind it); null when there is none.
QAbstractScrollArea* enclosingScrollArea(QWidget* field) {
  for (QWidget* w = field; !w->isWindow() && w->parentWidget(); w = w->parentWidget()) {
    if (auto* area = qobject_cast<QAbstractScrollArea*>(w->parentWidget())) return area;
  }
  return nullptr;
}

// What the wheel would have done had the field not been under the pointer.
void scrollPanelOf(QWidget* field, const QWheelEvent& wheel) {
  QAbstractScrollArea* area = enclosingScrollArea(field);
  if (!area) return;
  QWidget* viewport = area->viewport();
  QWheelEvent forwarded(viewport->mapFromGlobal(wheel.globalPosition()), wheel.globalPosition(),
                        wheel.pixelDelta(), wheel.angleDelta(), wheel.buttons(), wheel.modifiers(),
                        wheel.phase(), wheel.inverted(), wheel.source());
  QCoreApplication::sendEvent(viewport, &forwarded);
}

class WheelGuard : public QObject {
 public:
  using QObject::QObject;

  bool eventFilter(QObject* watched, QEvent* event) override {
    switch (event->type()) {
      case QEvent::Polish:
        // Qt gives a field with Qt::WheelFocus (combo and spin boxes have it) the focus as the
        // wheel passes over it, before any filter sees the wheel: a field takes the focus from
        // a click or Tab only, so that the focus says whether the wheel is meant for it.
        if (isValueField(watched)) {
          auto* field = static_cast<QWidget*>(watched);
          if (field->focusPolicy() == Qt::WheelFocus) field->setFocusPolicy(Qt::StrongFocus);
        }
        return false;
      case QEvent::Wheel: {
        if (!isValueField(watched)) return false;
        auto* field = static_cast<QWidget*>(watched);
        if (field->hasFocus()) return false;
        scrollPanelOf(field, *static_cast<QWheelEvent*>(event));
        return true;
      }
      default:
        return false;
    }
  }
};

}  // namespace

void installWheelGuard(QApplication& app) {
  app.installEventFilter(new WheelGuard(&app));
}

}  // namespace nns::ui
