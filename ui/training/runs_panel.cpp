// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/runs_panel.h"

#include <QByteArray>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
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
#include "ui/widgets/canvas_theme.h"

namespace nns::ui {
namespace {

constexpr int kRunRole = Qt::UserRole + 1;
constexpr int kStoreRole = Qt::UserRole + 2;  // the store's name (RunsPanel::RunKey)
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
  return heatColour(relative > 0 ? (std::log10(relative) + 3) / 3 : 0.0);
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
      watch_(new QPushButton(tr("Watch Folder…"), this)),
      unwatch_(new QPushButton(tr("Stop Watching"), this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      stepLabel_(new QLabel(this)),
      branch_(new QPushButton(tr("Branch from here"), this)),
      compareWith_(new QComboBox(this)),
      compare_(new QPushButton(tr("Compare"), this)),
      clearCompare_(new QPushButton(tr("Clear"), this)),
      scrubTimer_(new QTimer(this)),
      refreshTimer_(new QTimer(this)) {
  setUpTree();
  setUpControls();
  layOutControls();
  setUpCompareControls();
  connectControls();
  connectTree();
  connectController();
  startPollingStores();
  refresh();
}

void RunsPanel::setUpTree() {
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
}

void RunsPanel::setUpControls() {
  rename_->setToolTip(tr("Give the selected run a name"));
  delete_->setToolTip(tr("Delete the selected run, its metrics and snapshots"));
  watch_->setObjectName("watchFolder");
  watch_->setToolTip(
      tr("Show the runs a PyTorch job records in a folder (the exported train.py's runs/, or "
         "any loop with nnstudio_runs.Recorder), live as it trains"));
  unwatch_->setToolTip(tr("Stop showing the selected run's watched folder"));
  unwatch_->setEnabled(false);
  slider_->setObjectName("runSlider");
  slider_->setToolTip(
      tr("Drag to see the selected run's model as it was at that step (its "
         "nearest snapshot at or before it)"));
  branch_->setToolTip(
      tr("Train on from the step shown, as a new run (a branch), with what you "
         "changed since"));
  stepLabel_->setMinimumWidth(90);
}

void RunsPanel::layOutControls() {
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(rename_);
  buttons->addWidget(delete_);
  buttons->addStretch(1);
  buttons->addWidget(watch_);
  buttons->addWidget(unwatch_);
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
}

void RunsPanel::setUpCompareControls() {
  compareWith_->setObjectName("compareWith");
  compareWith_->setToolTip(
      tr("Another snapshot: Compare tints each node by how far its weights "
         "moved from the step shown to this one"));
  compare_->setToolTip(
      tr("Tint each node by the change of its weights between the two "
         "snapshots (pale 0.1%, deep 100% of their norm)"));
  clearCompare_->setEnabled(false);
}

void RunsPanel::connectControls() {
  connect(compare_, &QPushButton::clicked, this, [this] {
    const QList<QVariant> at = compareWith_->currentData().toList();
    if (at.size() == 3) compareWith(at[1].toLongLong(), at[2].toLongLong(), at[0].toString());
  });
  connect(watch_, &QPushButton::clicked, this, [this] {
    const QString folder = QFileDialog::getExistingDirectory(this, tr("Watch the runs in a folder"),
                                                             controller_->document()->baseDir());
    if (!folder.isEmpty()) watchFolder(folder);
  });
  connect(unwatch_, &QPushButton::clicked, this, &RunsPanel::unwatchSelected);
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
}

void RunsPanel::connectTree() {
  connect(tree_, &QTreeWidget::itemChanged, this, [this](QTreeWidgetItem* item, int column) {
    if (refreshing_ || column != kRunColumn) return;
    const RunKey key{item->data(kRunColumn, kStoreRole).toString(),
                     item->data(kRunColumn, kRunRole).toLongLong()};
    if (key.second == 0) return;  // a watched folder's heading
    if (item->checkState(kRunColumn) == Qt::Checked) {
      checked_.insert(key);
    } else {
      checked_.erase(key);
    }
    updateOverlays();
  });
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this] {
    updateSlider();
    showWatchedProbes();
  });
}

void RunsPanel::connectController() {
  connect(controller_, &TrainingController::runsChanged, this, &RunsPanel::refresh);
  connect(controller_, &TrainingController::snapshotShown, this, &RunsPanel::onSnapshotShown);
  connect(controller_, &TrainingController::sessionReset, this, [this] {
    if (!controller_->shownSnapshot()) curves_->setCursorStep(-1);
  });
}

void RunsPanel::startPollingStores() {
  // The store as it is, within a second of a change: the recorder writes on a thread of its
  // own, so a run's last steps and figures land after the runsChanged that announced its end
  // (the panel showed a finished run "(recording)" at an earlier step count). While a run
  // trains, once a second is enough.
  refreshTimer_->setInterval(kStorePollMs);
  connect(refreshTimer_, &QTimer::timeout, this, [this] {
    if (storeRevisions() == shownRevisions_) return;
    if (controller_->isRunning() && sinceRefresh_.isValid() && sinceRefresh_.elapsed() < 1000) {
      return;
    }
    refresh();
  });
  refreshTimer_->start();
}

std::vector<std::pair<const void*, uint64_t>> RunsPanel::storeRevisions() const {
  std::vector<train::RunStore*> stores{controller_->runStore()};
  for (const auto& watched : controller_->watchedStores()) stores.push_back(watched.get());
  std::vector<std::pair<const void*, uint64_t>> revisions;
  for (train::RunStore* store : stores) {
    uint64_t revision = 0;
    try {
      if (store) revision = store->revision();
    } catch (const std::exception&) {
      // refresh() says why when it next runs.
    }
    revisions.emplace_back(store, revision);
  }
  return revisions;
}

int64_t RunsPanel::selectedRun() const {
  const QTreeWidgetItem* item = tree_->currentItem();
  return item ? item->data(kRunColumn, kRunRole).toLongLong() : 0;
}

QString RunsPanel::selectedStore() const {
  const QTreeWidgetItem* item = tree_->currentItem();
  return item ? item->data(kRunColumn, kStoreRole).toString() : QString();
}

std::shared_ptr<train::RunStore> RunsPanel::watchedNamed(const QString& store) const {
  if (store.isEmpty()) return nullptr;
  for (const auto& watched : controller_->watchedStores()) {
    if (qs(watched->folder()) == store) return watched;
  }
  return nullptr;
}

train::RunStore* RunsPanel::storeNamed(const QString& store) const {
  return store.isEmpty() ? controller_->runStore() : watchedNamed(store).get();
}

QTreeWidgetItem* RunsPanel::itemOf(int64_t run, const QString& store) const {
  for (QTreeWidgetItemIterator it(tree_); *it; ++it) {
    if ((*it)->data(kRunColumn, kRunRole).toLongLong() == run &&
        (*it)->data(kRunColumn, kStoreRole).toString() == store)
      return *it;
  }
  return nullptr;
}

void RunsPanel::selectRun(int64_t run, const QString& store) {
  if (QTreeWidgetItem* item = itemOf(run, store)) tree_->setCurrentItem(item);
}

void RunsPanel::setRunChecked(int64_t run, bool on, const QString& store) {
  if (QTreeWidgetItem* item = itemOf(run, store)) {
    item->setCheckState(kRunColumn, on ? Qt::Checked : Qt::Unchecked);
  }
}

std::set<int64_t> RunsPanel::checkedRuns() const {
  std::set<int64_t> runs;
  for (const auto& [store, run] : checked_) {
    if (store.isEmpty()) runs.insert(run);
  }
  return runs;
}

QColor RunsPanel::keyColour(const RunKey& key) {
  // A watched store's runs start 1 to 7 colours after the project's (so its run 1 is not the
  // project's run 1's colour), by a checksum of its name: the same whatever else is watched,
  // and from one session to the next (qHash is seeded per process).
  if (key.first.isEmpty()) return runColour(key.second);
  return runColour(key.second + 1 + qChecksum(key.first.toUtf8()) % 7);
}

QString RunsPanel::runLabel(const RunKey& key) const {
  if (key.first.isEmpty()) return tr("run %1").arg(key.second);
  // A watched store's: "PyTorch run 1", or another project's "run 1 (name.runs)".
  train::RunStore* store = storeNamed(key.first);
  std::optional<train::RunInfo> info;
  try {
    if (store) info = store->run(key.second);
  } catch (const std::exception&) {
  }
  if (info && info->source == "pytorch") return tr("PyTorch run %1").arg(key.second);
  return tr("run %1 (%2)")
      .arg(key.second)
      .arg(store ? QFileInfo(qs(store->folder())).fileName() : QString());
}

QTreeWidgetItem* RunsPanel::makeRunItem(const train::RunInfo& r, const QString& store) {
  auto* item = new QTreeWidgetItem;
  const int64_t current = store.isEmpty() ? controller_->currentRun() : 0;
  QString label = QString::number(r.id);
  if (!r.name.empty()) label += "  " + qs(r.name);
  // The PyTorch badge: who trained it, in how many processes.
  if (r.source == "pytorch") {
    label += r.processes > 1 ? tr("  PyTorch ×%1").arg(r.processes) : tr("  PyTorch");
  }
  // The store's word: a run whose figures are written has ended (or rests, paused).
  if (!r.finished && (r.id == current || !store.isEmpty())) label += tr("  (recording)");
  item->setText(kRunColumn, label);
  item->setIcon(kRunColumn, swatch(keyColour({store, r.id})));
  item->setData(kRunColumn, kRunRole, QVariant::fromValue<qlonglong>(r.id));
  item->setData(kRunColumn, kStoreRole, store);
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(kRunColumn, checked_.count({store, r.id}) ? Qt::Checked : Qt::Unchecked);
  item->setText(kStepsColumn, QString::number(r.steps));
  item->setTextAlignment(kStepsColumn, Qt::AlignRight | Qt::AlignVCenter);
  item->setText(kAccuracyColumn, percentText(r.test_accuracy));
  item->setTextAlignment(kAccuracyColumn, Qt::AlignRight | Qt::AlignVCenter);
  const QString changes = r.parent ? (r.changes.empty() ? tr("nothing") : qs(r.changes))
                                   : qs(r.changes);  // a run from a watched store says so
  item->setText(kChangesColumn, changes);
  if (r.id == current) {
    QFont bold = item->font(kRunColumn);
    bold.setBold(true);
    item->setFont(kRunColumn, bold);
  }
  const QString trainedBy =
      r.source == "pytorch"
          ? tr("\ntrained by PyTorch in %1 process%2 on %3%4")
                .arg(r.processes)
                .arg(r.processes == 1 ? "" : "es")
                .arg(qs(r.device.empty() ? std::string("?") : r.device))
                .arg(r.host.empty() ? QString() : tr(" (host %1)").arg(qs(r.host)))
          : QString();
  item->setToolTip(kRunColumn,
                   tr("Run %1%2\nstarted %3 UTC\n%4%5\nsteps %6 to %7\ntrain loss %8, accuracy "
                      "%9\ntest loss %10, accuracy %11")
                       .arg(r.id)
                       .arg(r.name.empty() ? QString() : " \"" + qs(r.name) + "\"")
                       .arg(qs(r.started))
                       .arg(r.parent ? tr("branch of run %1 at step %2: %3")
                                           .arg(r.parent)
                                           .arg(r.parent_step)
                                           .arg(changes)
                                     : (changes.isEmpty() ? tr("a new run") : changes))
                       .arg(trainedBy)
                       .arg(r.first_step)
                       .arg(r.steps)
                       .arg(numberText(r.train_loss), percentText(r.train_accuracy),
                            numberText(r.test_loss), percentText(r.test_accuracy)));
  item->setToolTip(kChangesColumn, changes);
  return item;
}

void RunsPanel::refresh() {
  train::RunStore* store = controller_->runStore();
  // Read before the runs: a write between the two shows at the next tick.
  shownRevisions_ = storeRevisions();
  sinceRefresh_.start();
  const RunKey selected{selectedStore(), selectedRun()};
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
  std::map<RunKey, QTreeWidgetItem*> items;
  std::vector<RunKey> keys;
  // Each store's runs, branches under the run they came from.
  const auto add_runs = [&](const std::vector<train::RunInfo>& list, const QString& name,
                            QTreeWidgetItem* heading) {
    for (const train::RunInfo& r : list) {
      // A watched store's runs are drawn as they appear (a job's run may start after its
      // folder is watched); one the user unchecked since stays unchecked.
      if (!name.isEmpty() && !listedWatched_.count({name, r.id})) checked_.insert({name, r.id});
      QTreeWidgetItem* item = makeRunItem(r, name);
      auto parent = items.find({name, r.parent});
      if (r.parent != 0 && parent != items.end()) {
        parent->second->addChild(item);
      } else if (heading) {
        heading->addChild(item);
      } else {
        tree_->addTopLevelItem(item);
      }
      items[{name, r.id}] = item;
      keys.push_back({name, r.id});
    }
  };
  add_runs(runs, QString(), nullptr);
  for (const auto& watched : controller_->watchedStores()) {
    const QString name = qs(watched->folder());
    auto* heading = new QTreeWidgetItem;
    heading->setData(kRunColumn, kRunRole, QVariant::fromValue<qlonglong>(0));
    heading->setData(kRunColumn, kStoreRole, name);
    QFont bold = heading->font(kRunColumn);
    bold.setBold(true);
    heading->setFont(kRunColumn, bold);
    heading->setFirstColumnSpanned(false);
    std::vector<train::RunInfo> list;
    QString text = tr("Watched: %1").arg(name);
    try {
      list = watched->runs();
    } catch (const std::exception& e) {
      text += tr(" (cannot be read: %1)").arg(qs(e.what()));
    }
    heading->setText(kRunColumn, text);
    heading->setToolTip(kRunColumn,
                        tr("Runs another process records in %1, shown as they grow").arg(name));
    tree_->addTopLevelItem(heading);
    add_runs(list, name, heading);
  }
  tree_->expandAll();
  listedWatched_.clear();
  for (const auto& [key, item] : items) {
    if (!key.first.isEmpty()) listedWatched_.insert(key);
  }
  // Runs that are gone are no longer drawn.
  std::erase_if(checked_, [&](const RunKey& key) { return !items.count(key); });
  const int64_t current = controller_->currentRun();
  const RunKey keep =
      items.count(selected)
          ? selected
          : RunKey{QString(), current ? current : (runs.empty() ? 0 : runs.back().id)};
  if (QTreeWidgetItem* item = items.count(keep) ? items[keep] : nullptr)
    tree_->setCurrentItem(item);
  refreshing_ = false;
  fillCompareList(keys);
  updateSlider();
  updateOverlays();
  showWatchedProbes();
}

void RunsPanel::showWatchedProbes() {
  // A watched run selected: the canvas's probes show what its job recorded, as it grows.
  if (refreshing_ || selectedStore().isEmpty() || selectedRun() == 0) return;
  controller_->showWatchedProbes(storeNamed(selectedStore()), selectedRun());
}

void RunsPanel::fillCompareList(const std::vector<RunKey>& runs) {
  const QVariant current = compareWith_->currentData();
  compareWith_->clear();
  for (const RunKey& key : runs) {
    train::RunStore* store = storeNamed(key.first);
    if (!store) continue;
    try {
      // The run's label and swatch once, not per snapshot (a watched run's label is a query).
      const QString label = runLabel(key);
      const QIcon icon = swatch(keyColour(key));
      for (const train::SnapshotInfo& s : store->snapshots(key.second)) {
        compareWith_->addItem(icon, tr("%1, step %2").arg(label).arg(s.step),
                              QList<QVariant>{key.first, QVariant::fromValue<qlonglong>(key.second),
                                              QVariant::fromValue<qlonglong>(s.step)});
      }
    } catch (const std::exception&) {
      // A store another process writes: its snapshots show at the next refresh.
    }
  }
  // The user's pick stays; until there is one, the newest snapshot.
  const int keep = compareChosen_ ? compareWith_->findData(current) : -1;
  compareWith_->setCurrentIndex(keep >= 0 ? keep : compareWith_->count() - 1);
  compare_->setEnabled(compareWith_->count() > 0 && selectedRun() != 0);
}

bool RunsPanel::compareWith(int64_t run, int64_t step, const QString& store_name) {
  train::RunStore* store = storeNamed(selectedStore());
  train::RunStore* other = storeNamed(store_name);
  const int64_t from = selectedRun();
  if (!store || !other || !from) return false;
  const std::optional<train::SnapshotInfo> a = store->snapshot_at(from, slider_->value());
  const std::optional<train::SnapshotInfo> b = other->snapshot_at(run, step);
  if (!a || !b) {
    emit controller_->message(tr("Compare: no snapshot of run %1 at or before step %2")
                                  .arg(a ? run : from)
                                  .arg(a ? step : slider_->value()));
    return false;
  }
  std::vector<std::pair<std::string, train::WeightChange>> changes;
  try {
    changes = train::weight_changes(store->load_weights(*a), other->load_weights(*b));
  } catch (const std::exception& e) {
    emit controller_->message(tr("Compare failed: %1").arg(qs(e.what())));
    return false;
  }
  const QString pair = tr("%1 step %2 → %3 step %4")
                           .arg(runLabel({selectedStore(), a->run}))
                           .arg(a->step)
                           .arg(runLabel({store_name, b->run}))
                           .arg(b->step);
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
  const QString name = selectedStore();
  const bool watched = !name.isEmpty();
  train::RunStore* store = storeNamed(name);
  const int64_t run = selectedRun();
  unwatch_->setEnabled(watched);
  rename_->setEnabled(!watched && run != 0);
  delete_->setEnabled(!watched && run != 0);
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
  if (info && !watched && run == controller_->currentRun()) {
    info->steps = std::max(info->steps, controller_->status().step);
  }
  slider_->setEnabled(info.has_value() && info->steps > info->first_step);
  if (info) {
    slider_->setRange(static_cast<int>(info->first_step), static_cast<int>(info->steps));
    const auto shown = controller_->shownSnapshot();
    if (shown && shown->first == run && controller_->shownSource() == (watched ? store : nullptr)) {
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
  // What would be drawn: the checked runs and how far each was recorded. The panel refreshes
  // every second while a run trains; the curves are read again only when this changed.
  std::map<RunKey, int64_t> drawn;
  for (const RunKey& key : checked_) {
    train::RunStore* store = storeNamed(key.first);
    if (!store) continue;
    try {
      const std::optional<train::RunInfo> info = store->run(key.second);
      if (info) drawn[key] = info->steps;
    } catch (const std::exception&) {
      // A store that cannot be read: refresh() says so; nothing is drawn.
    }
  }
  if (drawn == drawn_) return;
  drawn_ = drawn;
  std::vector<RunCurves> runs;
  for (const auto& [key, steps] : drawn) {
    try {
      train::RunStore* store = storeNamed(key.first);
      RunCurves c;
      c.run = key.second;
      c.colour = keyColour(key);
      c.label = runLabel(key);
      c.steps = store->steps(key.second);
      c.epochs = store->epochs(key.second);
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
  controller_->showSnapshot(run, step, watchedNamed(selectedStore()));
}

bool RunsPanel::watchFolder(const QString& folder) {
  if (!controller_->watchFolder(folder)) return false;
  // Its runs are drawn at once, and those it records later as they appear (refresh): what a
  // user watches a job for.
  refresh();
  return true;
}

void RunsPanel::unwatchSelected() {
  const QString name = selectedStore();
  const train::RunStore* store = storeNamed(name);
  if (name.isEmpty() || !store) return;
  // Its runs are forgotten: watched again, they are drawn as new.
  const auto ofStore = [&](const RunKey& key) { return key.first == name; };
  std::erase_if(checked_, ofStore);
  std::erase_if(listedWatched_, ofStore);
  controller_->unwatchFolder(store);
}

void RunsPanel::onSnapshotShown(int64_t run, int64_t step) {
  // The run scrubbed is drawn from the store, the cursor at the snapshot's step.
  QString name;
  for (const auto& watched : controller_->watchedStores()) {
    if (watched.get() == controller_->shownSource()) name = qs(watched->folder());
  }
  if (!checked_.count({name, run})) {
    checked_.insert({name, run});
    setRunChecked(run, true, name);
  }
  updateOverlays();
  curves_->setCursorStep(step);
  settingSlider_ = true;
  if (selectedRun() == run && selectedStore() == name) slider_->setValue(static_cast<int>(step));
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
  if (!run || !store || !selectedStore().isEmpty()) return;
  const std::optional<train::RunInfo> info = store->run(run);
  bool ok = false;
  const QString name =
      QInputDialog::getText(this, tr("Rename run %1").arg(run), tr("Name:"), QLineEdit::Normal,
                            info ? qs(info->name) : QString(), &ok);
  if (ok) controller_->renameRun(run, name.trimmed());
}

void RunsPanel::deleteSelected() {
  const int64_t run = selectedRun();
  if (!run || !selectedStore().isEmpty()) return;  // a watched store belongs to its job
  const auto answer = QMessageBox::question(
      this, tr("Delete run %1").arg(run),
      tr("Delete run %1 with its curves and snapshots? Its branches stay, as branches of its "
         "parent.")
          .arg(run));
  if (answer == QMessageBox::Yes) controller_->deleteRun(run);
}

}  // namespace nns::ui
