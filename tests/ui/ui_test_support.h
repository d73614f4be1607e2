// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Helpers for the window's tests: mouse gestures on a view's viewport in scene coordinates,
// letting queued work (deferred rebuilds) run, and waiting for the training worker.
#include <QApplication>
#include <QGraphicsView>
#include <QMouseEvent>
#include <QProcess>
#include <QTest>

namespace nns::ui::test {

inline void settle() {
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
}

// Runs the event loop until pred holds (true), or at most timeoutMs (false): for what a
// training session's worker delivers through the window's 25 Hz poll.
template <typename Pred>
bool waitFor(Pred pred, int timeoutMs = 15000) {
  return QTest::qWaitFor(pred, timeoutMs);
}

// Whether Debian's torch imports in /usr/bin/python3 (the tests that run PyTorch skip without).
inline bool pythonHasTorch() {
  QProcess p;
  p.start("/usr/bin/python3", {"-c", "import torch"});
  return p.waitForFinished(60000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
}

// Sends one mouse event to the view's viewport at a scene position.
inline void sendMouse(QGraphicsView* view, QEvent::Type type, QPointF scenePos,
                      Qt::MouseButton button, Qt::MouseButtons buttons,
                      Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  const QPoint local = view->mapFromScene(scenePos);
  const QPoint global = view->viewport()->mapToGlobal(local);
  QMouseEvent event(type, QPointF(local), QPointF(global), button, buttons, modifiers);
  QApplication::sendEvent(view->viewport(), &event);
}

// Press at `from`, move in a few steps, release at `to`: a drag as a hand makes it.
inline void dragMouse(QGraphicsView* view, QPointF from, QPointF to) {
  sendMouse(view, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton);
  for (int i = 1; i <= 4; ++i) {
    sendMouse(view, QEvent::MouseMove, from + (to - from) * (i / 4.0), Qt::NoButton,
              Qt::LeftButton);
  }
  sendMouse(view, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton);
  settle();
}

inline void clickMouse(QGraphicsView* view, QPointF at,
                       Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  sendMouse(view, QEvent::MouseButtonPress, at, Qt::LeftButton, Qt::LeftButton, modifiers);
  sendMouse(view, QEvent::MouseButtonRelease, at, Qt::LeftButton, Qt::NoButton, modifiers);
  settle();
}

}  // namespace nns::ui::test
