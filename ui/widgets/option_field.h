// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The editor of one option value, made from its graph::OptionSpec (kind, range, choices, help):
// the one factory behind every panel that edits options, so that a node's options in the
// inspector and a data set's in the Training dock look and behave alike.
//
//   QWidget* field = makeOptionField(spec, value, false,
//                                    [](const graph::Json& v) { /* one undoable edit */ },
//                                    [](const QString& why) { /* report, revert */ });
//
// Int and Float get a spin box within the spec's range, Bool a check box, Choice a combo box;
// the kinds typed as text (lists, an optional integer, strings) a line edit. With `references`
// (an option inside a custom block) numbers and any value holding "$argument" are typed too,
// so that a block argument fits. Spin boxes commit each step and each typed-out value (no
// keyboard tracking), line edits when editing finishes with a value that differs.
#include <QString>
#include <functional>

#include "engine/graph/node_types.h"

class QWidget;

namespace nns::ui {

// `commit` gets each value the user commits; `refused` gets a message ("kernel_size: expected
// integers separated by commas, got 'x'") when typed text does not parse. The field's tooltip
// is the spec's help.
QWidget* makeOptionField(const graph::OptionSpec& spec, const graph::Json& value, bool references,
                         std::function<void(const graph::Json&)> commit,
                         std::function<void(const QString&)> refused);

// Shows `value` (of the kind the field was made for) in a field from makeOptionField without
// committing it: for a panel that follows the document (undo) without remaking its fields.
void setOptionFieldValue(QWidget* field, const graph::Json& value);

}  // namespace nns::ui
