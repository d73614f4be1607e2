// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/app/compare_window.h"

#include <QDockWidget>
#include <QLabel>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "ui/canvas/graph_scene.h"
#include "ui/canvas/graph_view.h"
#include "ui/canvas/node_item.h"
#include "ui/document/project_document.h"
#include "ui/document/qt_strings.h"
#include "ui/widgets/canvas_theme.h"
#include "ui/widgets/row_table.h"

namespace nns::ui {
namespace {

// Below this a matched pair's numbers count as equal: float32 sums in another order differ
// in the last bits, and a module that did not change must not be listed as diverging.
constexpr double kShownDivergence = 1e-5;

QColor kindColour(const CanvasTheme& t, graph::DiffKind kind) {
  switch (kind) {
    case graph::DiffKind::Added:
      return t.matched;
    case graph::DiffKind::Removed:
      return t.error;
    case graph::DiffKind::Changed:
      return t.warning;
    case graph::DiffKind::Renamed:
      return t.port;
    case graph::DiffKind::Same:
      break;
  }
  return t.nodeBody;
}

QString changesText(const graph::NodeDiff& d, const QString& separator) {
  QStringList parts;
  for (const graph::FieldChange& c : d.changes) {
    parts << QString("%1: %2 → %3").arg(qs(c.field), qs(c.a), qs(c.b));
  }
  return parts.join(separator);
}

QString number(double v, int digits = 4) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', digits);
}

QString pair(double a, double b) {
  return number(a) + " → " + number(b);
}

}  // namespace

CompareWindow::CompareWindow(CompareSide a, CompareSide b, int64_t batch, QWidget* parent)
    : QMainWindow(parent),
      a_(std::move(a)),
      b_(std::move(b)),
      batch_(batch),
      document_(new ProjectDocument(this)),
      summary_(new QLabel(this)),
      table_(makeRowTable({tr("Change"), tr("A"), tr("B"), tr("What differs"), tr("Output cosine"),
                           tr("Weight change"), tr("Output norm A → B"), tr("Gradient norm A → B")},
                          this)),
      poll_(new QTimer(this)) {
  setAttribute(Qt::WA_DeleteOnClose);
  setObjectName("compareWindow");
  setWindowTitle(tr("Compare: %1 and %2 — NN Studio").arg(a_.name, b_.name));
  diff_ = graph::diff_projects(a_.project, b_.project);
  union_ = graph::union_project(a_.project, b_.project, diff_);
  document_->open(union_.project, QString());
  scene_ = new GraphScene(document_, this);
  view_ = new GraphView(scene_, this);
  view_->setAcceptDrops(false);  // a view of two models: nothing is dropped into it

  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::RichText);
  auto* central = new QWidget(this);
  auto* layout = new QVBoxLayout(central);
  layout->setContentsMargins(6, 6, 6, 0);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
  setCentralWidget(central);

  connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) { showRow(row); });
  auto* dock = new QDockWidget(tr("Differences"), this);
  dock->setObjectName("differencesDock");
  dock->setWidget(table_);
  dock->setFeatures(QDockWidget::DockWidgetMovable);
  addDockWidget(Qt::BottomDockWidgetArea, dock);

  fillTable();
  paintBadges();
  resize(1300, 900);
  resizeDocks({dock}, {280}, Qt::Vertical);
  QTimer::singleShot(0, view_, &GraphView::frameAll);

  // The numbers on a worker: two models' forward and backward passes can take seconds.
  auto side = [](const CompareSide& s) { return std::make_shared<CompareSide>(s); };
  auto sa = side(a_), sb = side(b_);
  const graph::ProjectDiff diff = diff_;
  computing_ = std::async(std::launch::async, [sa, sb, diff, batch] {
    const train::DiffSide da{sa->project, sa->weights ? &*sa->weights : nullptr,
                             sa->weightsName.toStdString(), sa->baseDir.toStdString()};
    const train::DiffSide db{sb->project, sb->weights ? &*sb->weights : nullptr,
                             sb->weightsName.toStdString(), sb->baseDir.toStdString()};
    try {
      return train::diff_models(da, db, diff, batch);
    } catch (const std::exception& e) {
      train::ModelDiff failed;
      failed.error = e.what();
      return failed;
    }
  });
  poll_->setInterval(50);
  connect(poll_, &QTimer::timeout, this, [this] {
    if (computing_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    poll_->stop();
    numbers_ = computing_.get();
    showNumbers();
  });
  poll_->start();
}

CompareWindow::~CompareWindow() {
  // The worker reads only its own copies; its future waits for it here.
  if (computing_.valid()) computing_.wait();
}

graph::NodeId CompareWindow::rowNode(int row) const {
  const QTableWidgetItem* item = table_->item(row, Change);
  return item ? item->data(Qt::UserRole).toLongLong() : 0;
}

void CompareWindow::fillTable() {
  const std::vector<const graph::NodeDiff*> differences = diff_.differences();
  int added = 0, removed = 0, renamed = 0, changed = 0;
  for (const graph::NodeDiff* d : differences) {
    added += d->kind == graph::DiffKind::Added;
    removed += d->kind == graph::DiffKind::Removed;
    renamed += d->kind == graph::DiffKind::Renamed;
    changed += d->kind == graph::DiffKind::Changed;
  }
  QString legend;
  const CanvasTheme& t = scene_->theme();
  for (auto [kind, count] : {std::pair{graph::DiffKind::Added, added},
                             {graph::DiffKind::Removed, removed},
                             {graph::DiffKind::Renamed, renamed},
                             {graph::DiffKind::Changed, changed}}) {
    legend += QString("<span style='color:%1'>■</span> %2 %3&nbsp;&nbsp; ")
                  .arg(kindColour(t, kind).name())
                  .arg(count)
                  .arg(qs(graph::diff_kind_name(kind)));
  }
  summary_->setText(
      tr("<b>A</b>: %1<br><b>B</b>: %2<br>%3<br>%4")
          .arg(a_.name.toHtmlEscaped(), b_.name.toHtmlEscaped(),
               differences.empty() ? tr("<b>No differences</b> in structure.")
                                   : tr("<b>%1 differences</b> in structure: %2")
                                         .arg(differences.size())
                                         .arg(legend),
               tr("Comparing the outputs, gradients and weights on %1 samples of A's data…")
                   .arg(batch_)));

  table_->setRowCount(0);
  for (const graph::NodeDiff* d : differences) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* kind = new QTableWidgetItem(qs(graph::diff_kind_name(d->kind)));
    kind->setData(Qt::UserRole, QVariant::fromValue<qlonglong>(union_.node_of(*d)));
    kind->setData(Qt::UserRole + 1, QVariant::fromValue<qlonglong>(d->a));
    kind->setForeground(kindColour(t, d->kind));
    QFont bold = kind->font();
    bold.setBold(true);
    kind->setFont(bold);
    table_->setItem(row, Change, kind);
    auto side = [](const std::string& path, const std::string& type) {
      return path.empty() ? QString() : QString("%1 (%2)").arg(qs(path), qs(type));
    };
    table_->setItem(row, ModuleA, new QTableWidgetItem(side(d->path_a, d->type_a)));
    table_->setItem(row, ModuleB, new QTableWidgetItem(side(d->path_b, d->type_b)));
    QString what = changesText(*d, "; ");
    if (d->kind == graph::DiffKind::Added || d->kind == graph::DiffKind::Removed) {
      const std::optional<int64_t> params =
          d->kind == graph::DiffKind::Added ? d->parameters_b : d->parameters_a;
      what = params ? tr("%1 parameters").arg(*params) : QString();
    }
    table_->setItem(row, What, new QTableWidgetItem(what));
  }
}

void CompareWindow::showNumbers() {
  const train::ModelDiff& m = *numbers_;
  QString text = summary_->text();
  const QString pending =
      tr("Comparing the outputs, gradients and weights on %1 samples of A's data…").arg(batch_);
  QString line;
  if (!m.error.empty()) {
    line = tr("<b>The models could not run on the batch</b>: %1").arg(qs(m.error).toHtmlEscaped());
  } else {
    int diverging = 0;
    for (const train::ModuleDiff& d : m.modules) diverging += d.divergence > kShownDivergence;
    line = tr("On %1 samples of %2 (A's weights: %3; B's: %4): loss %5 and %6; %7 of %8 matched "
              "modules diverge")
               .arg(m.batch)
               .arg(qs(m.data).toHtmlEscaped(), qs(m.weights_a).toHtmlEscaped(),
                    qs(m.weights_b).toHtmlEscaped(), number(m.loss_a), number(m.loss_b))
               .arg(diverging)
               .arg(m.modules.size());
  }
  summary_->setText(text.replace(pending, line));

  // The figures of each matched pair: on its structural row, and a row of its own for a pair
  // that matched unchanged but whose numbers differ (most divergent first, as ModelDiff sorts).
  std::map<graph::NodeId, int> rowOfA;
  for (int row = 0; row < table_->rowCount(); ++row) {
    const graph::NodeId a = table_->item(row, Change)->data(Qt::UserRole + 1).toLongLong();
    if (a != 0) rowOfA[a] = row;
  }
  std::map<graph::NodeId, const graph::NodeDiff*> nodeOfA;
  for (const graph::NodeDiff& d : diff_.nodes) {
    if (d.a != 0) nodeOfA[d.a] = &d;
  }
  auto fill = [this](int row, const train::ModuleDiff& d) {
    auto cell = [this, row](int column, const QString& text, const QString& tip = {}) {
      auto* item = new QTableWidgetItem(text);
      item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (!tip.isEmpty()) item->setToolTip(tip);
      table_->setItem(row, column, item);
    };
    cell(Cosine, number(d.output_cosine, 6),
         tr("Output mean %1, std %2")
             .arg(pair(d.output_a.mean, d.output_b.mean), pair(d.output_a.std, d.output_b.std)));
    cell(WeightChange,
         std::isnan(d.weight_change) ? QStringLiteral("–")
                                     : QString::number(100 * d.weight_change, 'g', 3) + "%",
         tr("‖w_B − w_A‖ / ‖w_A‖ over the parameters both sides have with the same shape"));
    cell(OutputNorm, pair(d.output_a.norm, d.output_b.norm));
    cell(GradNorm, pair(d.grad_a.norm, d.grad_b.norm),
         tr("Gradient mean %1, std %2")
             .arg(pair(d.grad_a.mean, d.grad_b.mean), pair(d.grad_a.std, d.grad_b.std)));
  };
  for (const train::ModuleDiff& d : m.modules) {
    if (auto it = rowOfA.find(d.a); it != rowOfA.end()) {
      fill(it->second, d);
      continue;
    }
    if (d.divergence <= kShownDivergence) continue;
    const int row = table_->rowCount();
    table_->insertRow(row);
    const bool weights = !std::isnan(d.weight_change) && d.weight_change > 0;
    auto* kind = new QTableWidgetItem(weights ? tr("weights") : tr("outputs"));
    kind->setData(Qt::UserRole, QVariant::fromValue<qlonglong>(d.a));
    kind->setData(Qt::UserRole + 1, QVariant::fromValue<qlonglong>(d.a));
    kind->setForeground(heatColour(d.divergence).darker(130));
    table_->setItem(row, Change, kind);
    const auto n = nodeOfA.find(d.a);
    const QString type = n == nodeOfA.end() ? QString() : qs(n->second->type_a);
    table_->setItem(row, ModuleA, new QTableWidgetItem(QString("%1 (%2)").arg(qs(d.path_a), type)));
    table_->setItem(row, ModuleB, new QTableWidgetItem(QString("%1 (%2)").arg(qs(d.path_b), type)));
    table_->setItem(row, What,
                    new QTableWidgetItem(tr("diverges by %1").arg(number(d.divergence, 3))));
    fill(row, d);
  }
  paintBadges();
}

void CompareWindow::paintBadges() {
  const CanvasTheme& t = scene_->theme();
  std::map<graph::NodeId, GraphScene::NodeBadge> badges;
  for (const graph::NodeDiff& d : diff_.nodes) {
    if (d.kind == graph::DiffKind::Same) continue;
    QString tip = tr("<b>%1</b>").arg(qs(graph::diff_kind_name(d.kind)));
    if (!d.path_a.empty()) tip += tr("<br>A: %1 (%2)").arg(qs(d.path_a), qs(d.type_a));
    if (!d.path_b.empty()) tip += tr("<br>B: %1 (%2)").arg(qs(d.path_b), qs(d.type_b));
    for (const graph::FieldChange& c : d.changes) {
      tip += "<br>" + QString("%1: %2 → %3").arg(qs(c.field), qs(c.a), qs(c.b)).toHtmlEscaped();
    }
    // A renamed node is drawn under A's name: its badge says B's.
    const QString text = d.kind == graph::DiffKind::Renamed
                             ? tr("→ %1").arg(qs(d.path_b.substr(d.path_b.rfind('.') + 1)))
                             : qs(graph::diff_kind_name(d.kind));
    badges[union_.node_of(d)] = {kindColour(t, d.kind), text, tip, /*bars=*/{}};
  }
  if (numbers_) {
    for (const train::ModuleDiff& d : numbers_->modules) {
      if (badges.count(d.a) || d.divergence <= kShownDivergence) continue;
      const QString figure = !std::isnan(d.weight_change) && d.weight_change > 0
                                 ? tr("Δw %1%").arg(100 * d.weight_change, 0, 'g', 3)
                                 : tr("cos %1").arg(d.output_cosine, 0, 'f', 4);
      badges[d.a] = {
          heatColour(d.divergence), figure,
          tr("<b>Diverges</b> by %1 on the batch<br>output cosine %2<br>weight change "
             "%3<br>output norm %4<br>gradient norm %5")
              .arg(number(d.divergence, 3), number(d.output_cosine, 6), number(d.weight_change, 3),
                   pair(d.output_a.norm, d.output_b.norm), pair(d.grad_a.norm, d.grad_b.norm)),
          /*bars=*/{}};
    }
  }
  scene_->setNodeBadges(std::move(badges));
}

void CompareWindow::showRow(int row) {
  const graph::NodeId node = rowNode(row);
  if (node == 0) return;
  document_->setSelection({node});
  if (NodeItem* item = scene_->shownItem(node)) view_->centerOn(item);
}

}  // namespace nns::ui
