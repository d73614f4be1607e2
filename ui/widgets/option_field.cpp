// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/widgets/option_field.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

using Kind = graph::OptionSpec::Kind;

// The value a line edit holds, as JSON text: what an edit is compared with, so that leaving the
// field unchanged edits nothing.
constexpr const char* kValueProperty = "optionValue";

// The text of an option value in a line edit: 3, 0.5, "$in_features", or "3, $size" for a list.
QString valueText(const graph::Json& v) {
  if (v.is_null()) return {};
  if (v.is_string()) return qs(v.get<std::string>());
  if (v.is_array()) {
    QStringList parts;
    for (const auto& x : v) parts << valueText(x);
    return parts.join(", ");
  }
  if (v.is_number_float()) return QString::number(v.get<double>(), 'g', 10);
  return qs(v.dump());
}

bool holdsReference(const graph::Json& v) {
  if (v.is_array()) return std::any_of(v.begin(), v.end(), holdsReference);
  return v.is_string() && v.get<std::string>().size() > 1 && v.get<std::string>()[0] == '$';
}

bool isReference(const QString& text) {
  static const QRegularExpression pattern("^\\$[A-Za-z_][A-Za-z0-9_]*$");
  return pattern.match(text).hasMatch();
}

// One value typed into an option's line edit, for its kind; with references, "$name" (a block
// argument) stands for any value or list element. nullopt when the text does not fit.
std::optional<graph::Json> parseOption(const QString& text, Kind kind, bool references) {
  // A list's elements are references one by one: "$out_features" alone is a list of one.
  if (references && kind != Kind::IntList && isReference(text)) {
    return graph::Json(text.toStdString());
  }
  bool ok = false;
  switch (kind) {
    case Kind::Int: {
      const qlonglong v = text.toLongLong(&ok);
      return ok ? std::optional(graph::Json(static_cast<int64_t>(v))) : std::nullopt;
    }
    case Kind::OptionalInt: {
      if (text.isEmpty()) return graph::Json(nullptr);
      const qlonglong v = text.toLongLong(&ok);
      return ok ? std::optional(graph::Json(static_cast<int64_t>(v))) : std::nullopt;
    }
    case Kind::Float: {
      const double v = text.toDouble(&ok);
      return ok ? std::optional(graph::Json(v)) : std::nullopt;
    }
    case Kind::OptionalFloat: {
      if (text.isEmpty()) return graph::Json(nullptr);
      const double v = text.toDouble(&ok);
      return ok ? std::optional(graph::Json(v)) : std::nullopt;
    }
    case Kind::Bool:
      if (text == "true" || text == "True") return graph::Json(true);
      if (text == "false" || text == "False") return graph::Json(false);
      return std::nullopt;
    case Kind::String:
    case Kind::Choice:
      return graph::Json(text.toStdString());
    case Kind::FloatList: {
      graph::Json out = graph::Json::array();
      for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
        const double v = part.toDouble(&ok);
        if (!ok) return std::nullopt;
        out.push_back(v);
      }
      return out.empty() ? std::nullopt : std::optional(out);
    }
    case Kind::IntList: {
      graph::Json out = graph::Json::array();
      for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
        if (references && isReference(part)) {
          out.push_back(part.toStdString());
          continue;
        }
        const qlonglong v = part.toLongLong(&ok);
        if (!ok) return std::nullopt;
        out.push_back(static_cast<int64_t>(v));
      }
      return out.empty() ? std::nullopt : std::optional(out);
    }
  }
  return std::nullopt;
}

QString expectation(Kind kind, bool references) {
  const QString ref = references ? QObject::tr(" or $argument") : QString();
  switch (kind) {
    case Kind::Int:
      return QObject::tr("expected an integer%1").arg(ref);
    case Kind::OptionalInt:
      return QObject::tr("expected an integer%1 or nothing (None)").arg(ref);
    case Kind::Float:
      return QObject::tr("expected a number%1").arg(ref);
    case Kind::OptionalFloat:
      return QObject::tr("expected a number%1 or nothing (None)").arg(ref);
    case Kind::Bool:
      return QObject::tr("expected true or false%1").arg(ref);
    case Kind::IntList:
      return QObject::tr("expected integers%1 separated by commas").arg(ref);
    case Kind::FloatList:
      return QObject::tr("expected numbers separated by commas");
    case Kind::String:
    case Kind::Choice:
      break;
  }
  return QObject::tr("expected a value");
}

// A QSpinBox holds an int: wider ranges (a seed's 2^32 - 1) are cut to what it can show.
int spinBoxInt(double v) {
  return static_cast<int>(std::clamp(v, static_cast<double>(std::numeric_limits<int>::min()),
                                     static_cast<double>(std::numeric_limits<int>::max())));
}

}  // namespace

QWidget* makeOptionField(const graph::OptionSpec& spec, const graph::Json& value, bool references,
                         std::function<void(const graph::Json&)> commit,
                         std::function<void(const QString&)> refused) {
  // A small number (an eps of 1e-8) would show as 0.000000 in a spin box and one step would
  // make it 0.1: it is typed instead, as the learning rate is.
  const bool small = spec.kind == Kind::Float && spec.default_value.is_number() &&
                     spec.default_value.get<double>() != 0 &&
                     std::abs(spec.default_value.get<double>()) < 1e-3;
  const bool typed =
      spec.kind == Kind::IntList || spec.kind == Kind::FloatList ||
      spec.kind == Kind::OptionalInt || spec.kind == Kind::OptionalFloat ||
      spec.kind == Kind::String || small ||
      (references && (spec.kind == Kind::Int || spec.kind == Kind::Float || holdsReference(value)));
  QWidget* field = nullptr;
  if (typed) {
    auto* edit = new QLineEdit;
    if (spec.kind == Kind::OptionalInt || spec.kind == Kind::OptionalFloat)
      edit->setPlaceholderText(QObject::tr("None"));
    if (spec.kind == Kind::IntList) edit->setPlaceholderText(QObject::tr("e.g. 3, 3"));
    const QString name = qs(spec.name);
    const Kind kind = spec.kind;
    const std::optional<double> min = spec.min, max = spec.max;
    QObject::connect(edit, &QLineEdit::editingFinished, edit, [=] {
      const QString text = edit->text().trimmed();
      const std::optional<graph::Json> v = parseOption(text, kind, references);
      const bool inRange =
          !v || !v->is_number() ||
          ((!min || v->get<double>() >= *min) && (!max || v->get<double>() <= *max));
      if (!v) {
        refused(QObject::tr("%1: %2, got '%3'").arg(name, expectation(kind, references), text));
      } else if (!inRange) {
        refused(QObject::tr("%1: expected a number in [%2, %3], got '%4'")
                    .arg(name, min ? QString::number(*min) : QString("-inf"),
                         max ? QString::number(*max) : QString("inf"), text));
      } else if (*v !=
                 graph::Json::parse(edit->property(kValueProperty).toString().toStdString())) {
        edit->setProperty(kValueProperty, qs(v->dump()));
        commit(*v);
      }
    });
    field = edit;
    if (!spec.file_filter.empty()) {
      // A path: typed, or picked with a file chooser that commits what it picks.
      auto* row = new QWidget;
      auto* layout = new QHBoxLayout(row);
      layout->setContentsMargins(0, 0, 0, 0);
      layout->setSpacing(2);
      auto* browse = new QToolButton;
      browse->setText(QObject::tr("…"));
      browse->setToolTip(QObject::tr("Choose the file"));
      const QString filter = qs(spec.file_filter);
      QObject::connect(browse, &QToolButton::clicked, edit, [edit, filter, name] {
        const QString path = QFileDialog::getOpenFileName(edit, QObject::tr("Choose %1").arg(name),
                                                          edit->text(), filter);
        if (path.isEmpty()) return;
        edit->setText(path);
        emit edit->editingFinished();
      });
      layout->addWidget(edit, 1);
      layout->addWidget(browse);
      field = row;
    }
  } else {
    switch (spec.kind) {
      case Kind::Int: {
        auto* box = new QSpinBox;
        box->setRange(spinBoxInt(spec.min.value_or(-1e9)), spinBoxInt(spec.max.value_or(1e9)));
        box->setKeyboardTracking(false);
        QObject::connect(box, &QSpinBox::valueChanged, box, [commit](int x) { commit(x); });
        field = box;
        break;
      }
      case Kind::Float: {
        auto* box = new QDoubleSpinBox;
        box->setDecimals(6);
        box->setRange(spec.min.value_or(-1e9), spec.max.value_or(1e9));
        box->setSingleStep(0.1);
        box->setKeyboardTracking(false);
        QObject::connect(box, &QDoubleSpinBox::valueChanged, box,
                         [commit](double x) { commit(x); });
        field = box;
        break;
      }
      case Kind::Bool: {
        auto* box = new QCheckBox;
        QObject::connect(box, &QCheckBox::toggled, box, [commit](bool x) { commit(x); });
        field = box;
        break;
      }
      default: {  // Choice (the typed kinds are line edits)
        auto* box = new QComboBox;
        for (const std::string& c : spec.choices) box->addItem(qs(c));
        QObject::connect(box, &QComboBox::textActivated, box,
                         [commit](const QString& x) { commit(x.toStdString()); });
        field = box;
        break;
      }
    }
  }
  setOptionFieldValue(field, value);
  field->setToolTip(qs(spec.help));
  return field;
}

void setOptionFieldValue(QWidget* field, const graph::Json& value) {
  // Only a value that differs is set, so that a field being typed into keeps its text when
  // the document changes elsewhere.
  if (!qobject_cast<QLineEdit*>(field)) {
    // A path's row: its line edit holds the value.
    if (auto* edit = field->findChild<QLineEdit*>();
        edit && !qobject_cast<QComboBox*>(field) && !qobject_cast<QAbstractSpinBox*>(field)) {
      field = edit;
    }
  }
  const QSignalBlocker block(field);
  if (auto* edit = qobject_cast<QLineEdit*>(field)) {
    if (edit->property(kValueProperty).toString() == qs(value.dump())) return;
    edit->setText(valueText(value));
    edit->setProperty(kValueProperty, qs(value.dump()));
  } else if (auto* box = qobject_cast<QSpinBox*>(field)) {
    const int v = value.is_number() ? spinBoxInt(value.get<double>()) : 0;
    if (box->value() != v) box->setValue(v);
  } else if (auto* box = qobject_cast<QDoubleSpinBox*>(field)) {
    const double v = value.is_number() ? value.get<double>() : 0.0;
    if (box->value() != v) box->setValue(v);
  } else if (auto* box = qobject_cast<QCheckBox*>(field)) {
    box->setChecked(value.is_boolean() && value.get<bool>());
  } else if (auto* box = qobject_cast<QComboBox*>(field)) {
    box->setCurrentText(value.is_string() ? qs(value.get<std::string>()) : QString());
  }
}

}  // namespace nns::ui
