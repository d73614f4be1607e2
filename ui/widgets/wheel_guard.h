// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The mouse wheel over a value field (combo box, spin box, slider) that does not have the focus
// scrolls the panel around the field instead of changing its value: scrolling the Training dock
// must not change its loss on the way down. A field with the focus (clicked or tabbed into)
// still takes the wheel. One filter on the application covers every dock, panel and dialog,
// those made later included; ui/app/application.h installs it.
class QApplication;

namespace nns::ui {

void installWheelGuard(QApplication& app);

}  // namespace nns::ui
