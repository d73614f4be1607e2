// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/application.h"

#include <QApplication>

#include "engine/cpu/threads.h"
#include "ui/widgets/wheel_guard.h"

namespace nns::ui {

void setUpApplication(QApplication& app) {
  installWheelGuard(app);
  if (qEnvironmentVariableIsEmpty("OPENBLAS_NUM_THREADS")) nns::set_num_threads(1);
}

}  // namespace nns::ui
