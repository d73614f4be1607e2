// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/panels/options_editor.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "engine/graph/node_types.h"
#include "engine/graph/repeats.h"
#include "engine/tensor/error.h"
#include "ui/document/block_arguments.h"
#include "ui/document/block_library.h"
#include "ui/document/node_info.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/widgets/option_field.h"

namespace nns::ui {
namespace {

// Inside a block, the editor's context menu binds its option to one of the block's arguments
// (what typing "$name" does), for the fields that take no typing: check boxes and choices.
QWidget* withBindMenu(QWidget* editor, const graph::BlockDef* block,
                      const std::function<void(const graph::Json&)>& set) {
  if (!block) return editor;
  QStringList names;
  for (const auto& [key, value] : block->arguments.items()) names << qs(key);
  editor->setContextMenuPolicy(Qt::CustomContextMenu);
  QObject::connect(
      editor, &QWidget::customContextMenuRequested, editor, [editor, names, set](QPoint at) {
        auto* line = qobject_cast<QLineEdit*>(editor);
        QMenu* menu = line ? line->createStandardContextMenu() : new QMenu(editor);
        if (line) menu->addSeparator();
        QMenu* bind = menu->addMenu(QObject::tr("Bind to Block Argument"));
        bind->setObjectName("bindMenu");
        bind->setEnabled(!names.isEmpty());
        for (const QString& name : names) {
          bind->addAction("$" + name,
                          [set, name] { set(graph::Json(("$" + name).toStdString())); });
        }
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(editor->mapToGlobal(at));
      });
  return editor;
}

// A block argument's value as typed (a default, or an instance's value): JSON when it parses
// (4, [3, 3], true, 0.5), the text as a string otherwise (relu).
graph::Json parseArgumentValue(const QString& text) {
  try {
    return graph::Json::parse(text.toStdString());
  } catch (const graph::Json::parse_error&) {
    return graph::Json(text.toStdString());
  }
}

QString argumentText(const graph::Json& v) {
  return v.is_string() ? qs(v.get<std::string>()) : qs(v.dump());
}

QLabel* sectionLabel(const QString& text) {
  auto* label = new QLabel(QString("<b>%1</b>").arg(text.toHtmlEscaped()));
  label->setContentsMargins(0, 8, 0, 0);
  return label;
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
  return field("option:" + option);
}

QWidget* OptionsEditor::nameEditor() const {
  return field("name");
}

QWidget* OptionsEditor::field(const QString& objectName) const {
  return scroll_->widget() ? scroll_->widget()->findChild<QWidget*>(objectName) : nullptr;
}

void OptionsEditor::editOrRevert(const QString& text,
                                 const std::function<void(graph::Project&)>& fn) {
  if (!document_->edit(text, fn)) QTimer::singleShot(0, this, &OptionsEditor::rebuild);
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
    if (node.folded || graph::has_repeats(document_->project(), node)) {
      auto* folded = new QCheckBox(tr("Fold repeated members (one box ×N)"));
      folded->setChecked(node.folded);
      connect(folded, &QCheckBox::toggled, this,
              [this, id](bool on) { document_->setFolded(id, on); });
      layout->addRow(QString(), folded);
    }
  }
  if (node.type == "ModuleDict") addModuleDictRows(layout, node);
  if (const graph::BlockDef* block = document_->project().find_block(node.type)) {
    addBlockRows(layout, node, *block);
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
    QWidget* editor = optionEditor(spec, v, nullptr, [this, id, optionName](const graph::Json& x) {
      setOption(id, optionName, x);
    });
    editor->setObjectName("option:" + qs(spec.name));
    layout->addRow(qs(spec.name), editor);
  }
  return form;
}

QWidget* OptionsEditor::optionEditor(const graph::OptionSpec& spec, const graph::Json& v,
                                     const graph::BlockDef* block,
                                     std::function<void(const graph::Json&)> set) {
  QWidget* editor = makeOptionField(spec, v, block != nullptr, set, [this](const QString& why) {
    emit document_->logMessage(why);
    QTimer::singleShot(0, this, &OptionsEditor::rebuild);
  });
  if (block && qobject_cast<QLineEdit*>(editor)) {
    QStringList names;
    for (const auto& [key, value] : block->arguments.items()) names << "$" + qs(key);
    editor->setToolTip(editor->toolTip() + tr("\nA value, or a block argument: %1")
                                               .arg(names.isEmpty() ? tr("(the block has none yet)")
                                                                    : names.join(", ")));
  }
  return withBindMenu(editor, block, set);
}

void OptionsEditor::addModuleDictRows(QFormLayout* layout, const graph::Node& dict) {
  const graph::NodeId id = dict.id;
  const bool isSwitch = dict.options.value("switch", false);
  auto* switchBox = new QCheckBox(tr("Route through the active key"));
  switchBox->setObjectName("switch");
  switchBox->setToolTip(
      tr("Like self.activations[act](x): the dict gets ports in and out and calls one member"));
  switchBox->setChecked(isSwitch);
  layout->addRow(tr("Switch"), switchBox);
  auto* active = new QComboBox;
  active->setObjectName("active");
  for (graph::NodeId m : dict.members) {
    if (const graph::Node* member = document_->project().graph.find(m)) {
      active->addItem(qs(member->name));
    }
  }
  active->setCurrentText(qs(dict.options.value("active", std::string())));
  active->setEnabled(isSwitch);
  active->setToolTip(
      tr("The key (member name) the switch calls; rename a member to rename its "
         "key"));
  layout->addRow(tr("Active key"), active);
  auto setOptions = [this, id](bool on, const QString& key) {
    editOrRevert(on ? tr("Switch %1 to %2").arg(qs(document_->project().graph.at(id).name), key)
                    : tr("Make %1 a plain dict").arg(qs(document_->project().graph.at(id).name)),
                 [&](graph::Project& p) {
                   graph::Node& n = p.graph.at(id);
                   n.options.erase("active");
                   n.options.erase("switch");
                   if (on) {
                     n.options["switch"] = true;
                     n.options["active"] = key.toStdString();
                   }
                 });
  };
  connect(switchBox, &QCheckBox::toggled, this,
          [setOptions, active](bool on) { setOptions(on, active->currentText()); });
  connect(active, &QComboBox::textActivated, this,
          [setOptions](const QString& key) { setOptions(true, key); });
}

void OptionsEditor::addBlockRows(QFormLayout* layout, const graph::Node& instance,
                                 const graph::BlockDef& block) {
  const graph::NodeId id = instance.id;
  const std::string blockName = block.name;
  const QString shown = qs(blockName);

  // This instance's values.
  layout->addRow(sectionLabel(tr("Arguments")));
  if (block.arguments.empty()) {
    auto* hint = new QLabel(tr("%1 takes no arguments. Add some to the class below, then type "
                               "$name into the options of the nodes inside it.")
                                .arg(shown));
    hint->setWordWrap(true);
    hint->setEnabled(false);
    layout->addRow(hint);
  }
  for (const auto& [key, defaultValue] : block.arguments.items()) {
    const std::string argument = key;
    auto* edit = new QLineEdit(instance.options.contains(argument)
                                   ? argumentText(instance.options.at(argument))
                                   : QString());
    edit->setObjectName("argument:" + qs(argument));
    edit->setPlaceholderText(tr("default: %1").arg(argumentText(defaultValue)));
    edit->setToolTip(tr("This instance's %1 (empty: the class's default)").arg(qs(argument)));
    connect(edit, &QLineEdit::editingFinished, this, [this, id, argument, edit] {
      const graph::Node* n = document_->project().graph.find(id);
      if (!n) return;
      graph::Json options = n->options.is_object() ? n->options : graph::Json::object();
      const QString text = edit->text().trimmed();
      if (text.isEmpty()) {
        options.erase(argument);
      } else {
        options[argument] = parseArgumentValue(text);
      }
      if (options != n->options && !document_->setNodeOptions(id, options)) {
        QTimer::singleShot(0, this, &OptionsEditor::rebuild);
      }
    });
    layout->addRow(qs(argument), edit);
  }

  // The class, shared by every instance.
  layout->addRow(sectionLabel(tr("Class %1 (every instance)").arg(shown)));
  auto* save = new QPushButton(tr("Save to Library"));
  save->setObjectName("blockSaveToLibrary");
  save->setToolTip(
      tr("Keep %1 (and the blocks it uses) in your block library, for any project").arg(shown));
  connect(save, &QPushButton::clicked, this, [this, blockName] {
    try {
      BlockLibrary::user().save(document_->project(), blockName);
      emit document_->logMessage(tr("Saved %1 to the block library (%2)")
                                     .arg(qs(blockName), BlockLibrary::user().folder()));
    } catch (const Error& e) {
      emit document_->logMessage(tr("Save to Library refused: %1").arg(qs(e.what())));
    }
  });
  layout->addRow(QString(), save);
  for (const auto& [key, defaultValue] : block.arguments.items()) {
    const std::string argument = key;
    auto* row = new QWidget;
    auto* h = new QHBoxLayout(row);
    h->setContentsMargins(0, 0, 0, 0);
    auto* name = new QLineEdit(qs(argument));
    name->setObjectName("blockArgument:" + qs(argument));
    name->setToolTip(tr("The argument's name: $%1 inside the class").arg(qs(argument)));
    auto* def = new QLineEdit(argumentText(defaultValue));
    def->setObjectName("blockDefault:" + qs(argument));
    def->setToolTip(tr("The default value of %1").arg(qs(argument)));
    auto* remove = new QToolButton;
    remove->setObjectName("blockRemove:" + qs(argument));
    remove->setText(QStringLiteral("✕"));
    remove->setToolTip(tr("Remove the argument %1").arg(qs(argument)));
    h->addWidget(name, 3);
    h->addWidget(def, 2);
    h->addWidget(remove);
    connect(name, &QLineEdit::editingFinished, this, [this, blockName, argument, name] {
      const std::string to = name->text().trimmed().toStdString();
      if (to == argument) return;
      editOrRevert(tr("Rename argument %1 to %2").arg(qs(argument), qs(to)),
                   [&](graph::Project& p) { renameBlockArgument(p, blockName, argument, to); });
    });
    connect(def, &QLineEdit::editingFinished, this, [this, blockName, argument, def] {
      const graph::Json value = parseArgumentValue(def->text().trimmed());
      editOrRevert(tr("Set the default of %1").arg(qs(argument)), [&](graph::Project& p) {
        setBlockArgumentDefault(p, blockName, argument, value);
      });
    });
    connect(remove, &QToolButton::clicked, this, [this, blockName, argument] {
      editOrRevert(tr("Remove argument %1").arg(qs(argument)),
                   [&](graph::Project& p) { removeBlockArgument(p, blockName, argument); });
    });
    layout->addRow(tr("Argument"), row);
  }
  auto* addRow = new QWidget;
  auto* h = new QHBoxLayout(addRow);
  h->setContentsMargins(0, 0, 0, 0);
  auto* newName = new QLineEdit;
  newName->setObjectName("blockNewArgument");
  newName->setPlaceholderText(tr("name, e.g. in_features"));
  auto* newDefault = new QLineEdit;
  newDefault->setObjectName("blockNewDefault");
  newDefault->setPlaceholderText(tr("default"));
  auto* add = new QPushButton(tr("Add"));
  add->setObjectName("blockAddArgument");
  add->setToolTip(tr("Add an argument to %1 (a constructor argument, like MyLinear(in_features, "
                     "out_features))")
                      .arg(shown));
  h->addWidget(newName, 3);
  h->addWidget(newDefault, 2);
  h->addWidget(add);
  auto addArgument = [this, blockName, newName, newDefault] {
    const std::string argument = newName->text().trimmed().toStdString();
    const QString text = newDefault->text().trimmed();
    editOrRevert(tr("Add argument %1").arg(qs(argument)), [&](graph::Project& p) {
      addBlockArgument(p, blockName, argument,
                       text.isEmpty() ? graph::Json(nullptr) : parseArgumentValue(text));
    });
  };
  connect(add, &QPushButton::clicked, this, addArgument);
  connect(newDefault, &QLineEdit::returnPressed, this, addArgument);
  layout->addRow(tr("New argument"), addRow);

  // The options of the nodes inside the class.
  for (const graph::Node& inner : block.graph.nodes) {
    const graph::NodeType* type = graph::find_node_type(inner.type);
    if (!type || type->options.empty() || type->kind == graph::NodeKind::Input ||
        type->kind == graph::NodeKind::Output) {
      continue;
    }
    layout->addRow(sectionLabel(tr("%1 (%2)").arg(qs(inner.name), qs(inner.type))));
    const graph::NodeId innerId = inner.id;
    for (const graph::OptionSpec& spec : type->options) {
      const graph::Json v =
          inner.options.contains(spec.name) ? inner.options.at(spec.name) : spec.default_value;
      const std::string optionName = spec.name;
      const std::string innerName = inner.name;
      QWidget* editor = optionEditor(
          spec, v, &block, [this, blockName, innerId, innerName, optionName](const graph::Json& x) {
            editOrRevert(tr("Edit %1.%2").arg(qs(blockName), qs(innerName)),
                         [&](graph::Project& p) {
                           setBlockNodeOption(p, blockName, innerId, optionName, x);
                         });
          });
      editor->setObjectName("inner:" + qs(inner.name) + ":" + qs(spec.name));
      layout->addRow(qs(spec.name), editor);
    }
  }
}

}  // namespace nns::ui
