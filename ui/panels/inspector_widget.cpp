// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/panels/inspector_widget.h"

#include <QCheckBox>
#include <QFontDatabase>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QTabBar>
#include <QTableWidget>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <cmath>
#include <map>

#include "engine/autograd/grad_mode.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/panels/options_editor.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

double norm(const Tensor& t) {
  if (!t.defined() || t.numel() == 0 || !t.is_floating_point()) return std::nan("");
  NoGradGuard guard;
  // A host copy of weights on a GPU (the session's model lives on the run's device).
  const Tensor host = t.device() == kCPU ? t.detach() : t.detach().to(kCPU);
  return host.to(kFloat64).pow(2).sum().sqrt().item();
}

QString normText(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', 5);
}

QTableWidgetItem* cell(const QString& text, bool number = false) {
  auto* item = new QTableWidgetItem(text);
  item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  if (number) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}

QTableWidget* makeTable(const QStringList& headers) {
  auto* table = new QTableWidget(0, static_cast<int>(headers.size()));
  table->setHorizontalHeaderLabels(headers);
  table->verticalHeader()->hide();
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setAlternatingRowColors(true);
  table->horizontalHeader()->setStretchLastSection(true);
  table->setWordWrap(false);
  return table;
}

}  // namespace

InspectorWidget::InspectorWidget(ProjectDocument* document, TrainingController* training,
                                 QWidget* parent)
    : QTabWidget(parent), document_(document), training_(training), valuesTimer_(new QTimer(this)) {
  valuesTimer_->setSingleShot(true);

  // Six short, compactly padded tabs fit the dock's default width: every tab stays one click
  // away, with no scroll arrows hiding the first or the last.
  setUsesScrollButtons(false);
  tabBar()->setStyleSheet("QTabBar::tab { padding: 4px 7px; }");
  options_ = new OptionsEditor(document_, this);
  addTab(options_, tr("Node"));

  modules_ = new QTreeWidget;
  modules_->setHeaderLabels({tr("Module"), tr("Class"), tr("Mode")});
  modules_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  addTab(modules_, tr("Modules"));

  auto* paramPage = new QWidget;
  auto* paramLayout = new QVBoxLayout(paramPage);
  paramLayout->setContentsMargins(4, 4, 4, 4);
  parameterScope_ = new QLabel;
  parameters_ = makeTable(
      {tr("Name"), tr("Shape"), tr("Dtype"), tr("Grad"), tr("Numel"), tr("Norm"), tr("Grad norm")});
  parameters_->horizontalHeaderItem(3)->setToolTip(
      tr("requires_grad: untick to freeze the parameter"));
  paramLayout->addWidget(parameterScope_);
  paramLayout->addWidget(parameters_);
  addTab(paramPage, tr("Params"));

  buffers_ = makeTable({tr("Name"), tr("Shape"), tr("Dtype"), tr("Persistent")});
  addTab(buffers_, tr("Buffers"));

  repr_ = new QPlainTextEdit;
  repr_->setReadOnly(true);
  repr_->setLineWrapMode(QPlainTextEdit::NoWrap);
  repr_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  addTab(repr_, tr("Repr"));

  connect(this, &QTabWidget::currentChanged, this, [this] {
    if (stale_ && showsModel()) refresh();
  });
  // The model's views follow a graph edit, a new selection or new flags while shown, else when
  // shown or asked for: filling them builds the model and a row per module and parameter,
  // which for a 10,000-node model is a tenth of a second the Node tab does not need.
  connect(document_, &ProjectDocument::changed, this, [this] { scheduleRefresh(); });
  connect(document_, &ProjectDocument::selectionChanged, this, [this] { scheduleRefresh(); });
  connect(document_, &ProjectDocument::modelStateChanged, this, [this] { scheduleRefresh(); });
  // New values at rest (a step, a reset, a load, a snapshot, a new session).
  connect(training_, &TrainingController::weightsChanged, this, [this] {
    valuesCurrent_ = false;
    scheduleRefresh();
  });
  // An edit: the session is out of date; its values are read again once the edits pause.
  connect(training_, &TrainingController::sessionStale, this, [this] {
    valuesCurrent_ = false;
    if (showsModel()) valuesTimer_->start(static_cast<int>(training_->settleMs()) + 1);
  });
  connect(valuesTimer_, &QTimer::timeout, this, [this] {
    if (showsModel()) refresh();
  });
  connect(parameters_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* item) {
    if (filling_ || item->column() != 3) return;
    const QString name = parameters_->item(item->row(), 0)->text();
    document_->setParameterFrozen(name, item->checkState() != Qt::Checked);
  });
  connect(modules_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) {
    const QVariant id = item->data(0, Qt::UserRole);
    if (!id.isNull()) document_->setSelection({id.toLongLong()});
  });
  refresh();
}

void InspectorWidget::scheduleRefresh() {
  stale_ = true;
  if (pending_ || !showsModel()) return;
  pending_ = true;
  QTimer::singleShot(0, this, [this] {
    if (stale_) refresh();
    pending_ = false;
  });
}

bool InspectorWidget::showsModel() const {
  return currentWidget() != options_ && currentWidget() != nullptr &&
         currentIndex() <= indexOf(repr_);
}

QString InspectorWidget::scopePrefix() const {
  auto model = document_->model();
  const auto& sel = document_->selection();
  if (!model || sel.size() != 1) return {};
  return qs(model->module_name(sel.front()));
}

void InspectorWidget::readValues() {
  // Only after the edits paused (the timer) or with a session that is up to date: making a
  // large model's session at every edit would cost every edit a frame.
  if (training_->isStale() && !training_->isRunning()) {
    if (!training_->editsSettled()) {
      valuesTimer_->start(static_cast<int>(training_->settleMs() - training_->msSinceEdit()) + 1);
    } else {
      // Made on a worker thread: its weightsChanged brings the values.
      training_->makeSessionInBackground();
    }
    return;
  }
  const bool read = training_->withRestingModel([&](graph::GraphModule& model) {
    values_.clear();
    for (const auto& [name, p] : model.named_parameters()) {
      values_[name] = {norm(p), norm(p.grad())};
    }
  });
  if (read) {
    valuesCurrent_ = true;
    valuesStep_ = training_->status().step;
  }
}

void InspectorWidget::refresh() {
  stale_ = false;
  if (!valuesCurrent_) readValues();
  filling_ = true;
  auto model = document_->model();
  modules_->clear();
  parameters_->setRowCount(0);
  buffers_->setRowCount(0);
  if (!model) {
    repr_->setPlainText(tr("No model: the graph has problems.\n\n%1").arg(document_->modelError()));
    parameterScope_->setText(tr("No model"));
    filling_ = false;
    return;
  }
  repr_->setPlainText(qs(model->repr()));

  // Module names -> node ids, so that the tree can select nodes.
  std::map<std::string, graph::NodeId> nodeOf;
  for (const graph::Node& n : document_->project().graph.nodes) {
    const std::string name = model->module_name(n.id);
    if (!name.empty()) nodeOf.emplace(name, n.id);
  }
  std::map<std::string, QTreeWidgetItem*> items;
  for (auto& [name, module] : model->named_modules()) {
    const auto dot = name.rfind('.');
    QTreeWidgetItem* parent = nullptr;
    if (!name.empty()) {
      auto it = items.find(dot == std::string::npos ? std::string() : name.substr(0, dot));
      if (it != items.end()) parent = it->second;
    }
    const QString label = name.empty() ? qs(document_->project().name)
                                       : qs(dot == std::string::npos ? name : name.substr(dot + 1));
    auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(modules_);
    item->setText(0, label);
    item->setText(1, qs(module->name()));
    item->setText(2, module->is_training() ? tr("train") : tr("eval"));
    item->setToolTip(0, name.empty() ? tr("the model") : qs(name));
    if (auto it = nodeOf.find(name); it != nodeOf.end()) {
      item->setData(0, Qt::UserRole, static_cast<qlonglong>(it->second));
    }
    items[name] = item;
  }
  modules_->expandAll();

  const QString prefix = scopePrefix();
  auto inScope = [&](const std::string& name) {
    const QString n = qs(name);
    return prefix.isEmpty() || n.startsWith(prefix + ".");
  };
  QString scope = prefix.isEmpty() ? tr("All parameters of %1").arg(qs(document_->project().name))
                                   : tr("Parameters of %1").arg(prefix);
  if (valuesStep_ >= 0 && !values_.empty()) {
    scope += valuesCurrent_ ? tr(" (values at step %1)").arg(valuesStep_)
                            : tr(" (values read at step %1; shown again at rest)").arg(valuesStep_);
  }
  parameterScope_->setText(scope);
  for (auto& [name, p] : model->named_parameters()) {
    if (!inScope(name)) continue;
    const int row = parameters_->rowCount();
    parameters_->insertRow(row);
    parameters_->setItem(row, 0, cell(qs(name)));
    parameters_->setItem(row, 1, cell(qs(shape_str(p.shape()))));
    parameters_->setItem(row, 2, cell(qs(dtype_name(p.dtype()))));
    auto* grad = new QTableWidgetItem;
    grad->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
    grad->setCheckState(p.requires_grad() ? Qt::Checked : Qt::Unchecked);
    grad->setToolTip(p.requires_grad() ? tr("requires_grad=True: trains")
                                       : tr("requires_grad=False: frozen"));
    parameters_->setItem(row, 3, grad);
    parameters_->setItem(row, 4, cell(QString::number(p.numel()), true));
    // The session's values (the architecture's own are never trained).
    const auto v = values_.find(name);
    const bool known = v != values_.end();
    parameters_->setItem(row, 5, cell(normText(known ? v->second.first : std::nan("")), true));
    parameters_->setItem(row, 6, cell(normText(known ? v->second.second : std::nan("")), true));
  }
  for (auto& [name, b] : model->named_buffers()) {
    if (!inScope(name)) continue;
    const auto dot = name.rfind('.');
    bool persistent = true;
    if (dot == std::string::npos) {
      persistent = model->is_persistent_buffer(name);
    } else if (nn::ModulePtr owner = model->get_submodule(name.substr(0, dot))) {
      persistent = owner->is_persistent_buffer(name.substr(dot + 1));
    }
    const int row = buffers_->rowCount();
    buffers_->insertRow(row);
    buffers_->setItem(row, 0, cell(qs(name)));
    buffers_->setItem(row, 1, cell(qs(shape_str(b.shape()))));
    buffers_->setItem(row, 2, cell(qs(dtype_name(b.dtype()))));
    buffers_->setItem(row, 3, cell(persistent ? tr("yes") : tr("no")));
  }
  parameters_->resizeColumnsToContents();
  buffers_->resizeColumnsToContents();
  filling_ = false;
}

}  // namespace nns::ui
