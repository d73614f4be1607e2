// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The engine's strings (std::string, UTF-8) as Qt's.
#include <QString>
#include <string>

namespace nns::ui {

inline QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

}  // namespace nns::ui
