#include "ui/training/runs_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QMessageBox>
#include <QPainter>
#include <QPixmap>
#include <QPushButton>
#include <QSlider>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <cmath>
#include <map>

#include "engine/train/run_store.h"
#include "ui/document/qt_strings.h"
#include "ui/training/curves_widget.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

constexpr int kRunRole = Qt::UserRole + 1;
enum Column { kRunColumn, kStepsColumn, kAccuracyColumn, kChangesColumn };

QIcon swatch(const QColor& colour) {
  QPixmap pixmap(12, 12);
  pixmap.fill(Qt::transparent);
  QPainter painter(&pixmap);
  painter.setRenderHint(QPainter::Antialiasing);
  painter.setBrush(colour);
  painter.setPen(colour.darker(130));
  painter.drawRoundedRect(QRectF(1, 1, 10, 10), 2, 2);
  return QIcon(pixmap);
}

QString percentText(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(100 * v, 'f', 1) + "%";
}

QString numberText(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'f', 4);
}

}  // namespace

QColor RunsPanel::runColour(int64_t run) {
  // Distinct from the live curves' blue, orange, green, red and purple.
  static const QColor colours[] = {
      QColor(23, 190, 207),  QColor(140, 86, 75), QColor(227, 119, 194), QColor(188, 189, 34),
      QColor(127, 127, 127), QColor(31, 78, 121), QColor(255, 187, 120), QColor(152, 223, 138)};
  return colours[static_cast<size_t>(std::max<int64_t>(run - 1, 0)) % std::size(colours)];
}

RunsPanel::RunsPanel(TrainingController* controller, CurvesWidget* curves, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      curves_(curves),
      summary_(new QLabel(this)),
      tree_(new QTreeWidget(this)),
      rename_(new QPushButton(tr("Rename…"), this)),
      delete_(new QPushButton(tr("Delete"), this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      stepLabel_(new QLabel(this)),
      branch_(new QPushButton(tr("Branch from here"), this)),
      scrubTimer_(new QTimer(this)),
      refreshTimer_(new QTimer(this)) {
  summary_->setWordWrap(true);
  tree_->setObjectName("runsTree");
  tree_->setColumnCount(4);
  tree_->setHeaderLabels({tr("Run"), tr("Steps"), tr("Test acc."), tr("Changed")});
  tree_->setRootIsDecorated(true);
  tree_->setUniformRowHeights(true);
  tree_->setAlternatingRowColors(true);
  tree_->header()->setStretchLastSection(true);
  tree_->header()->setSectionResizeMode(kRunColumn, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(kStepsColumn, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(kAccuracyColumn, QHeaderView::ResizeToContents);
  rename_->setToolTip(tr("Give the selected run a name"));
  delete_->setToolTip(tr("Delete the selected run, its metrics and snapshots"));
  slider_->setObjectName("runSlider");
  slider_->setToolTip(
      tr("Drag to see the selected run's model as it was at that step (its "
         "nearest snapshot at or before it)"));
  branch_->setToolTip(
      tr("Train on from the step shown, as a new run (a branch), with what you "
         "changed since"));
  stepLabel_->setMinimumWidth(90);

  auto* buttons = new QHBoxLayout;
  buttons->addWidget(rename_);
  buttons->addWidget(delete_);
  buttons->addStretch(1);
  auto* time = new QHBoxLayout;
  time->addWidget(new QLabel(tr("Step"), this));
  time->addWidget(slider_, 1);
  time->addWidget(stepLabel_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(summary_);
  layout->addWidget(tree_, 1);
  layout->addLayout(buttons);
  layout->addLayout(time);
  layout->addWidget(branch_);

  scrubTimer_->setSingleShot(true);
  scrubTimer_->setInterval(60);
  connect(scrubTimer_, &QTimer::timeout, this, [this] { scrubTo(slider_->value()); });
  connect(slider_, &QSlider::valueChanged, this, [this](int value) {
    if (settingSlider_) return;
    stepLabel_->setText(tr("step %1").arg(value));
    scrubTimer_->start();
  });
  connect(branch_, &QPushButton::clicked, this, &RunsPanel::branchFromHere);
  connect(rename_, &QPushButton::clicked, this, &RunsPanel::renameSelected);
  connect(delete_, &QPushButton::clicked, this, &RunsPanel::deleteSelected);
  connect(tree_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int column) {
    if (refreshing_ || column != kRunColumn) return;
    const int64_t run = item->data(kRunColumn, kRunRole).toLongLong();
    if (item->checkState(kRunColumn) == Qt::Checked) {
      checked_.insert(run);
    } else {
      checked_.erase(run);
    }
    updateOverlays();
  });
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this] { updateSlider(); });
  connect(controller_, &TrainingController::runsChanged, this, &RunsPanel::refresh);
  connect(controller_, &TrainingController::snapshotShown, this, &RunsPanel::onSnapshotShown);
  connect(controller_, &TrainingController::sessionReset, this, [this] {
    if (!controller_->shownSnapshot()) curves_->setCursorStep(-1);
  });
  refreshTimer_->setInterval(1000);
  connect(refreshTimer_, &QTimer::timeout, this, [this] {
    if (controller_->isRunning()) refresh();
  });
  refreshTimer_->start();
  refresh();
}

int64_t RunsPanel::selectedRun() const {
  const QTreeWidgetItem* item = tree_->currentItem();
  return item ? item->data(kRunColumn, kRunRole).toLongLong() : 0;
}

QTreeWidgetItem* RunsPanel::itemOf(int64_t run) const {
  for (QTreeWidgetItemIterator it(tree_); *it; ++it) {
    if ((*it)->data(kRunColumn, kRunRole).toLongLong() == run) return *it;
  }
  return nullptr;
}

void RunsPanel::selectRun(int64_t run) {
  if (QTreeWidgetItem* item = itemOf(run)) tree_->setCurrentItem(item);
}

void RunsPanel::setRunChecked(int64_t run, bool on) {
  if (QTreeWidgetItem* item = itemOf(run)) {
    item->setCheckState(kRunColumn, on ? Qt::Checked : Qt::Unchecked);
  }
}

void RunsPanel::refresh() {
  train::RunStore* store = controller_->runStore();
  const int64_t selected = selectedRun();
  refreshing_ = true;
  tree_->clear();
  std::vector<train::RunInfo> runs;
  if (store) {
    try {
      runs = store->runs();
    } catch (const std::exception& e) {
      summary_->setText(tr("The run store cannot be read: %1").arg(qs(e.what())));
    }
  }
  if (!store) {
    summary_->setText(controller_->runStoreError().isEmpty()
                          ? tr("Save the project to keep its training runs: each run, its "
                               "curves and snapshots go beside the project file.")
                          : tr("Runs are not recorded: %1").arg(controller_->runStoreError()));
  } else if (runs.empty()) {
    summary_->setText(tr("No runs yet: every run you train is kept here."));
  } else {
    summary_->setText(tr("%n run(s); snapshots take %1 MiB. Check runs to compare their curves.",
                         "", static_cast<int>(runs.size()))
                          .arg(QString::number(store->snapshot_bytes() / 1048576.0, 'f', 1)));
  }
  std::map<int64_t, QTreeWidgetItem*> items;
  const int64_t current = controller_->currentRun();
  for (const train::RunInfo& r : runs) {
    auto* item = new QTreeWidgetItem;
    QString label = QString::number(r.id);
    if (!r.name.empty()) label += "  " + qs(r.name);
    if (r.id == current) label += tr("  (recording)");
    item->setText(kRunColumn, label);
    item->setIcon(kRunColumn, swatch(runColour(r.id)));
    item->setData(kRunColumn, kRunRole, QVariant::fromValue<qlonglong>(r.id));
    item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
    item->setCheckState(kRunColumn, checked_.count(r.id) ? Qt::Checked : Qt::Unchecked);
    item->setText(kStepsColumn, QString::number(r.steps));
    item->setTextAlignment(kStepsColumn, Qt::AlignRight | Qt::AlignVCenter);
    item->setText(kAccuracyColumn, percentText(r.test_accuracy));
    item->setTextAlignment(kAccuracyColumn, Qt::AlignRight | Qt::AlignVCenter);
    const QString changes = r.parent ? (r.changes.empty() ? tr("nothing") : qs(r.changes)) : "";
    item->setText(kChangesColumn, changes);
    if (r.id == current) {
      QFont bold = item->font(kRunColumn);
      bold.setBold(true);
      item->setFont(kRunColumn, bold);
    }
    item->setToolTip(kRunColumn,
                     tr("Run %1%2\nstarted %3 UTC\n%4\nsteps %5 to %6\ntrain loss %7, accuracy %8\n"
                        "test loss %9, accuracy %10")
                         .arg(r.id)
                         .arg(r.name.empty() ? QString() : " \"" + qs(r.name) + "\"")
                         .arg(qs(r.started))
                         .arg(r.parent ? tr("branch of run %1 at step %2: %3")
                                             .arg(r.parent)
                                             .arg(r.parent_step)
                                             .arg(changes)
                                       : tr("a new run"))
                         .arg(r.first_step)
                         .arg(r.steps)
                         .arg(numberText(r.train_loss), percentText(r.train_accuracy),
                              numberText(r.test_loss), percentText(r.test_accuracy)));
    item->setToolTip(kChangesColumn, changes);
    auto parent = items.find(r.parent);
    if (parent != items.end()) {
      parent->second->addChild(item);
    } else {
      tree_->addTopLevelItem(item);
    }
    items[r.id] = item;
  }
  tree_->expandAll();
  // Runs that are gone are no longer drawn.
  std::erase_if(checked_, [&](int64_t run) { return !items.count(run); });
  const int64_t keep =
      items.count(selected) ? selected : (current ? current : (runs.empty() ? 0 : runs.back().id));
  if (QTreeWidgetItem* item = items.count(keep) ? items[keep] : nullptr)
    tree_->setCurrentItem(item);
  refreshing_ = false;
  rename_->setEnabled(!runs.empty());
  delete_->setEnabled(!runs.empty());
  updateSlider();
  updateOverlays();
}

void RunsPanel::updateSlider() {
  train::RunStore* store = controller_->runStore();
  const int64_t run = selectedRun();
  std::optional<train::RunInfo> info;
  if (store && run) {
    try {
      info = store->run(run);
    } catch (const std::exception&) {
      // Reported by refresh(); the slider is off.
    }
  }
  settingSlider_ = true;
  slider_->setEnabled(info.has_value() && info->steps > info->first_step);
  if (info) {
    slider_->setRange(static_cast<int>(info->first_step), static_cast<int>(info->steps));
    const auto shown = controller_->shownSnapshot();
    if (shown && shown->first == run) {
      slider_->setValue(static_cast<int>(shown->second));
    } else if (!scrubTimer_->isActive()) {
      slider_->setValue(static_cast<int>(info->steps));
    }
    stepLabel_->setText(tr("step %1 of %2").arg(slider_->value()).arg(info->steps));
  } else {
    slider_->setRange(0, 0);
    stepLabel_->setText(QString());
  }
  settingSlider_ = false;
  branch_->setEnabled(controller_->shownSnapshot().has_value());
}

void RunsPanel::updateOverlays() {
  train::RunStore* store = controller_->runStore();
  std::vector<RunCurves> runs;
  if (store) {
    for (int64_t run : checked_) {
      try {
        RunCurves c;
        c.run = run;
        c.colour = runColour(run);
        c.label = tr("run %1").arg(run);
        c.steps = store->steps(run);
        c.epochs = store->epochs(run);
        runs.push_back(std::move(c));
      } catch (const std::exception&) {
        // A run deleted by another process meanwhile: not drawn.
      }
    }
  }
  curves_->setOverlays(runs);
}

void RunsPanel::scrubTo(int64_t step) {
  const int64_t run = selectedRun();
  if (!run) return;
  scrubTimer_->stop();
  controller_->showSnapshot(run, step);
}

void RunsPanel::onSnapshotShown(int64_t run, int64_t step) {
  // The run scrubbed is drawn from the store, the cursor at the snapshot's step.
  if (!checked_.count(run)) {
    checked_.insert(run);
    setRunChecked(run, true);
  }
  updateOverlays();
  curves_->setCursorStep(step);
  settingSlider_ = true;
  if (selectedRun() == run) slider_->setValue(static_cast<int>(step));
  settingSlider_ = false;
  stepLabel_->setText(tr("step %1 (snapshot)").arg(step));
  branch_->setEnabled(true);
}

void RunsPanel::branchFromHere() {
  if (!controller_->shownSnapshot()) return;
  curves_->setCursorStep(-1);
  controller_->start();
}

void RunsPanel::renameSelected() {
  const int64_t run = selectedRun();
  train::RunStore* store = controller_->runStore();
  if (!run || !store) return;
  const std::optional<train::RunInfo> info = store->run(run);
  bool ok = false;
  const QString name =
      QInputDialog::getText(this, tr("Rename run %1").arg(run), tr("Name:"), QLineEdit::Normal,
                            info ? qs(info->name) : QString(), &ok);
  if (ok) controller_->renameRun(run, name.trimmed());
}

void RunsPanel::deleteSelected() {
  const int64_t run = selectedRun();
  if (!run) return;
  const auto answer = QMessageBox::question(
      this, tr("Delete run %1").arg(run),
      tr("Delete run %1 with its curves and snapshots? Its branches stay, as branches of its "
         "parent.")
          .arg(run));
  if (answer == QMessageBox::Yes) controller_->deleteRun(run);
}

}  // namespace nns::ui
