// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/runs_panel.h"

#include <QComboBox>
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
#include "engine/train/weight_changes.h"
#include "ui/canvas/graph_scene.h"
#include "ui/document/project_document.h"
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

QColor RunsPanel::changeColour(double relative) {
  // Log scale: 0.1% (and less) pale, 100% (and more) deep.
  const double t = relative > 0 ? std::clamp((std::log10(relative) + 3) / 3, 0.0, 1.0) : 0.0;
  const QColor pale(255, 243, 196), deep(214, 60, 32);
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return QColor(mix(pale.red(), deep.red()), mix(pale.green(), deep.green()),
                mix(pale.blue(), deep.blue()));
}

RunsPanel::RunsPanel(TrainingController* controller, CurvesWidget* curves, GraphScene* scene,
                     QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      curves_(curves),
      scene_(scene),
      summary_(new QLabel(this)),
      tree_(new QTreeWidget(this)),
      rename_(new QPushButton(tr("Rename…"), this)),
      delete_(new QPushButton(tr("Delete"), this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      stepLabel_(new QLabel(this)),
      branch_(new QPushButton(tr("Branch from here"), this)),
      compareWith_(new QComboBox(this)),
      compare_(new QPushButton(tr("Compare"), this)),
      clearCompare_(new QPushButton(tr("Clear"), this)),
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
  auto* compare = new QHBoxLayout;
  compare->addWidget(new QLabel(tr("Against"), this));
  compare->addWidget(compareWith_, 1);
  compare->addWidget(compare_);
  compare->addWidget(clearCompare_);
  layout->addLayout(compare);
  compareWith_->setObjectName("compareWith");
  compareWith_->setToolTip(
      tr("Another snapshot: Compare tints each node by how far its weights "
         "moved from the step shown to this one"));
  compare_->setToolTip(
      tr("Tint each node by the change of its weights between the two "
         "snapshots (pale 0.1%, deep 100% of their norm)"));
  clearCompare_->setEnabled(false);
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QList<QVariant> at = compareWith_->currentData().toList();
    if (at.size() == 2) compareWith(at[0].toLongLong(), at[1].toLongLong());
  });
  connect(clearCompare_, &QPushButton::clicked, this, &RunsPanel::clearComparison);
  connect(compareWith_, &QComboBox::activated, this, [this] { compareChosen_ = true; });

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
  // The store as it is, within a second of a change: the recorder writes on a thread of its
  // own, so a run's last steps and figures land after the runsChanged that announced its end
  // (the panel showed a finished run "(recording)" at an earlier step count). While a run
  // trains, once a second is enough.
  refreshTimer_->setInterval(kStorePollMs);
  connect(refreshTimer_, &QTimer::timeout, this, [this] {
    train::RunStore* store = controller_->runStore();
    if (!store) return;
    uint64_t revision = 0;
    try {
      revision = store->revision();
    } catch (const std::exception&) {
      return;  // refresh() says why when it next runs
    }
    if (revision == shownRevision_ && store == shownStore_) return;
    if (controller_->isRunning() && sinceRefresh_.isValid() && sinceRefresh_.elapsed() < 1000) {
      return;
    }
    refresh();
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
  // Read before the runs: a write between the two shows at the next tick.
  shownStore_ = store;
  shownRevision_ = 0;
  if (store) {
    try {
      shownRevision_ = store->revision();
    } catch (const std::exception&) {
    }
  }
  sinceRefresh_.start();
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
    summary_->setText((runs.size() == 1 ? tr("1 run") : tr("%1 runs").arg(runs.size())) +
                      tr("; snapshots take %1 MiB. Check runs to compare their curves.")
                          .arg(QString::number(store->snapshot_bytes() / 1048576.0, 'f', 1)));
  }
  std::map<int64_t, QTreeWidgetItem*> items;
  const int64_t current = controller_->currentRun();
  for (const train::RunInfo& r : runs) {
    auto* item = new QTreeWidgetItem;
    QString label = QString::number(r.id);
    if (!r.name.empty()) label += "  " + qs(r.name);
    // The store's word: a run whose figures are written has ended (or rests, paused).
    if (r.id == current && !r.finished) label += tr("  (recording)");
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
  std::vector<int64_t> ids;
  for (const train::RunInfo& r : runs) ids.push_back(r.id);
  fillCompareList(ids);
  updateSlider();
  updateOverlays();
}

void RunsPanel::fillCompareList(const std::vector<int64_t>& runs) {
  train::RunStore* store = controller_->runStore();
  const QVariant current = compareWith_->currentData();
  compareWith_->clear();
  if (store) {
    for (int64_t run : runs) {
      for (const train::SnapshotInfo& s : store->snapshots(run)) {
        compareWith_->addItem(swatch(runColour(run)), tr("run %1, step %2").arg(run).arg(s.step),
                              QList<QVariant>{QVariant::fromValue<qlonglong>(run),
                                              QVariant::fromValue<qlonglong>(s.step)});
      }
    }
  }
  // The user's pick stays; until there is one, the newest snapshot.
  const int keep = compareChosen_ ? compareWith_->findData(current) : -1;
  compareWith_->setCurrentIndex(keep >= 0 ? keep : compareWith_->count() - 1);
  compare_->setEnabled(compareWith_->count() > 0 && selectedRun() != 0);
}

bool RunsPanel::compareWith(int64_t run, int64_t step) {
  train::RunStore* store = controller_->runStore();
  const int64_t from = selectedRun();
  if (!store || !from) return false;
  const std::optional<train::SnapshotInfo> a = store->snapshot_at(from, slider_->value());
  const std::optional<train::SnapshotInfo> b = store->snapshot_at(run, step);
  if (!a || !b) {
    emit controller_->message(tr("Compare: no snapshot of run %1 at or before step %2")
                                  .arg(a ? run : from)
                                  .arg(a ? step : slider_->value()));
    return false;
  }
  std::vector<std::pair<std::string, train::WeightChange>> changes;
  try {
    changes = train::weight_changes(store->load_weights(*a), store->load_weights(*b));
  } catch (const std::exception& e) {
    emit controller_->message(tr("Compare failed: %1").arg(qs(e.what())));
    return false;
  }
  const QString pair =
      tr("run %1 step %2 → run %3 step %4").arg(a->run).arg(a->step).arg(b->run).arg(b->step);
  std::map<graph::NodeId, GraphScene::NodeBadge> badges;
  for (const graph::Node& node : controller_->document()->project().graph.nodes) {
    const QString module = controller_->moduleNameOf(node.id);
    if (module.isNull()) continue;
    const std::string m = module.toStdString();
    train::WeightChange total;
    QStringList lines;
    for (const auto& [key, c] : changes) {
      if (key != m && key.rfind(m + ".", 0) != 0) continue;
      total.add(c);
      lines << tr("%1: %2% (‖Δ‖ %3 of ‖w‖ %4)")
                   .arg(qs(key).toHtmlEscaped())
                   .arg(100 * c.relative(), 0, 'g', 3)
                   .arg(c.norm_change, 0, 'g', 3)
                   .arg(c.norm_before, 0, 'g', 3);
    }
    if (total.numel == 0) continue;
    const double relative = total.relative();
    badges[node.id] = {changeColour(relative), tr("Δ %1%").arg(100 * relative, 0, 'g', 3),
                       tr("<b>Change of weights</b>, %1: %2% of their norm<br>%3")
                           .arg(pair)
                           .arg(100 * relative, 0, 'g', 3)
                           .arg(lines.join("<br>")),
                       /*bars=*/{}};
  }
  scene_->setNodeBadges(std::move(badges));
  clearCompare_->setEnabled(true);
  emit controller_->message(
      tr("Weights compared, %1: the nodes are tinted by how far they moved").arg(pair));
  return true;
}

void RunsPanel::clearComparison() {
  scene_->setNodeBadges({});
  clearCompare_->setEnabled(false);
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
  // The run being recorded is as far as the session went (the store follows within a moment).
  if (info && run == controller_->currentRun()) {
    info->steps = std::max(info->steps, controller_->status().step);
  }
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
  // What would be drawn: the checked runs and how far each was recorded. The panel refreshes
  // every second while a run trains; the curves are read again only when this changed.
  std::map<int64_t, int64_t> drawn;
  if (store) {
    for (int64_t run : checked_) {
      try {
        const std::optional<train::RunInfo> info = store->run(run);
        if (info) drawn[run] = info->steps;
      } catch (const std::exception&) {
        // A store that cannot be read: refresh() says so; nothing is drawn.
      }
    }
  }
  if (drawn == drawn_) return;
  drawn_ = drawn;
  std::vector<RunCurves> runs;
  for (const auto& [run, steps] : drawn) {
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
