// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A read-only table of rows (a module per row, a difference per row): the whole row selected by
// a click, columns as wide as their contents and the last one taking the rest. The profile's
// and the model diff's tables.
#include <QStringList>

class QTableWidget;
class QWidget;

namespace nns::ui {

QTableWidget* makeRowTable(const QStringList& headers, QWidget* parent);

}  // namespace nns::ui
