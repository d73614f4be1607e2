#include "ui/options_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QTimer>
#include <QVBoxLayout>
#include <limits>

#include "engine/graph/node_types.h"
#include "ui/node_ports.h"
#include "ui/project_document.h"

namespace nns::ui {
namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// "3, 3" for [3, 3]; the reverse accepts commas and spaces.
QString intListText(const graph::Json& v) {
  QStringList parts;
  if (v.is_array()) {
    for (const auto& x : v) parts << QString::number(x.get<int64_t>());
  } else if (v.is_number_integer()) {
    parts << QString::number(v.get<int64_t>());
  }
  return parts.join(", ");
}

std::optional<graph::Json> parseIntList(const QString& text) {
  graph::Json out = graph::Json::array();
  for (const QString& part : text.split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
    bool ok = false;
    const qlonglong v = part.toLongLong(&ok);
    if (!ok) return std::nullopt;
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

}  // namespace

OptionsEditor::OptionsEditor(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(scroll_);
  // Rebuilt after the event that changed the document, never inside a widget's own signal.
  auto later = [this] { QTimer::singleShot(0, this, &OptionsEditor::rebuild); };
  connect(document_, &ProjectDocument::selectionChanged, this, later);
  connect(document_, &ProjectDocument::changed, this, later);
  rebuild();
}

QWidget* OptionsEditor::editorFor(const QString& option) const {
  return scroll_->widget() ? scroll_->widget()->findChild<QWidget*>("option:" + option) : nullptr;
}

QWidget* OptionsEditor::nameEditor() const {
  return scroll_->widget() ? scroll_->widget()->findChild<QWidget*>("name") : nullptr;
}

void OptionsEditor::rebuild() {
  QWidget* old = scroll_->takeWidget();
  if (old) old->deleteLater();
  scroll_->setWidget(makeForm());
}

void OptionsEditor::setOption(graph::NodeId id, const std::string& name, const graph::Json& value) {
  const graph::Node* node = document_->project().graph.find(id);
  if (!node) return;
  graph::Json options = node->options;
  options[name] = value;
  if (!document_->setNodeOptions(id, options)) QTimer::singleShot(0, this, &OptionsEditor::rebuild);
}

QWidget* OptionsEditor::makeForm() {
  auto* form = new QWidget;
  auto* layout = new QFormLayout(form);
  layout->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  const auto& sel = document_->selection();
  if (sel.empty()) {
    // With nothing selected, the model itself: its class name.
    auto* modelName = new QLineEdit(qs(document_->project().name));
    modelName->setObjectName("modelName");
    connect(modelName, &QLineEdit::editingFinished, this, [this, modelName] {
      const QString now = qs(document_->project().name);
      if (modelName->text() != now && !document_->renameModel(modelName->text())) {
        modelName->setText(now);
      }
    });
    layout->addRow(tr("Model class"), modelName);
  }
  if (sel.size() != 1 || !document_->project().graph.find(sel.front())) {
    auto* hint = new QLabel(sel.empty() ? tr("Select a node to see its properties.")
                                        : tr("%n nodes selected.", nullptr, int(sel.size())));
    hint->setWordWrap(true);
    hint->setEnabled(false);
    layout->addRow(hint);
    return form;
  }
  const graph::NodeId id = sel.front();
  const graph::Node& node = document_->project().graph.at(id);

  auto* name = new QLineEdit(qs(node.name));
  name->setObjectName("name");
  connect(name, &QLineEdit::editingFinished, this, [this, id, name] {
    const graph::Node* n = document_->project().graph.find(id);
    if (n && name->text() != qs(n->name) && !document_->renameNode(id, name->text())) {
      name->setText(qs(n->name));
    }
  });
  layout->addRow(tr("Name"), name);
  auto* typeLabel = new QLabel(QString("<b>%1</b>").arg(qs(node.type)));
  layout->addRow(tr("Type"), typeLabel);

  const graph::NodeType* type = graph::find_node_type(node.type);
  if (type && !type->description.empty()) {
    auto* d = new QLabel(qs(type->description));
    d->setWordWrap(true);
    layout->addRow(d);
  }
  if (isGroup(node)) {
    layout->addRow(tr("Members"), new QLabel(QString::number(node.members.size())));
    auto* collapsed = new QCheckBox(tr("Collapsed"));
    collapsed->setChecked(node.collapsed);
    connect(collapsed, &QCheckBox::toggled, this,
            [this, id](bool on) { document_->setCollapsed(id, on); });
    layout->addRow(QString(), collapsed);
  }
  if (!type) return form;

  const graph::Json values = [&] {
    try {
      return type->checked_options(node.options);
    } catch (const std::exception&) {
      graph::Json merged = type->default_options();
      for (auto it = node.options.begin(); it != node.options.end(); ++it) merged[it.key()] = *it;
      return merged;
    }
  }();
  for (const graph::OptionSpec& spec : type->options) {
    const graph::Json v = values.contains(spec.name) ? values[spec.name] : spec.default_value;
    const std::string optionName = spec.name;
    QWidget* editor = nullptr;
    using Kind = graph::OptionSpec::Kind;
    switch (spec.kind) {
      case Kind::Int: {
        auto* box = new QSpinBox;
        box->setRange(spec.min ? static_cast<int>(*spec.min) : -1'000'000'000,
                      spec.max ? static_cast<int>(*spec.max) : 1'000'000'000);
        box->setValue(v.is_number() ? v.get<int>() : 0);
        box->setKeyboardTracking(false);
        connect(box, &QSpinBox::valueChanged, this,
                [this, id, optionName](int x) { setOption(id, optionName, x); });
        editor = box;
        break;
      }
      case Kind::Float: {
        auto* box = new QDoubleSpinBox;
        box->setDecimals(6);
        box->setRange(spec.min.value_or(-1e9), spec.max.value_or(1e9));
        box->setSingleStep(0.1);
        box->setValue(v.is_number() ? v.get<double>() : 0.0);
        box->setKeyboardTracking(false);
        connect(box, &QDoubleSpinBox::valueChanged, this,
                [this, id, optionName](double x) { setOption(id, optionName, x); });
        editor = box;
        break;
      }
      case Kind::Bool: {
        auto* box = new QCheckBox;
        box->setChecked(v.is_boolean() && v.get<bool>());
        connect(box, &QCheckBox::toggled, this,
                [this, id, optionName](bool x) { setOption(id, optionName, x); });
        editor = box;
        break;
      }
      case Kind::Choice: {
        auto* box = new QComboBox;
        for (const std::string& c : spec.choices) box->addItem(qs(c));
        box->setCurrentText(v.is_string() ? qs(v.get<std::string>()) : QString());
        connect(box, &QComboBox::textActivated, this, [this, id, optionName](const QString& x) {
          setOption(id, optionName, x.toStdString());
        });
        editor = box;
        break;
      }
      case Kind::String: {
        auto* edit = new QLineEdit(v.is_string() ? qs(v.get<std::string>()) : QString());
        connect(edit, &QLineEdit::editingFinished, this, [this, id, optionName, edit] {
          setOption(id, optionName, edit->text().toStdString());
        });
        editor = edit;
        break;
      }
      case Kind::IntList:
      case Kind::OptionalInt: {
        const bool optional = spec.kind == Kind::OptionalInt;
        auto* edit = new QLineEdit(v.is_null() ? QString() : intListText(v));
        edit->setPlaceholderText(optional ? tr("None") : tr("e.g. 3, 3"));
        connect(edit, &QLineEdit::editingFinished, this, [this, id, optionName, edit, optional] {
          const QString text = edit->text().trimmed();
          if (optional) {
            bool ok = false;
            const qlonglong x = text.toLongLong(&ok);
            if (text.isEmpty()) {
              setOption(id, optionName, nullptr);
            } else if (ok) {
              setOption(id, optionName, static_cast<int64_t>(x));
            } else {
              emit document_->logMessage(tr("%1: expected an integer or nothing (None), got '%2'")
                                             .arg(qs(optionName), text));
              rebuild();
            }
            return;
          }
          if (auto list = parseIntList(text)) {
            setOption(id, optionName, *list);
          } else {
            emit document_->logMessage(tr("%1: expected integers separated by commas, got '%2'")
                                           .arg(qs(optionName), text));
            rebuild();
          }
        });
        editor = edit;
        break;
      }
    }
    editor->setObjectName("option:" + qs(spec.name));
    editor->setToolTip(qs(spec.help));
    layout->addRow(qs(spec.name), editor);
  }
  return form;
}

}  // namespace nns::ui
