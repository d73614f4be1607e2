// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/panels/profile_panel.h"

#include <QFont>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <map>

#include "ui/canvas/graph_scene.h"
#include "ui/document/qt_strings.h"
#include "ui/training/training_controller.h"
#include "ui/widgets/canvas_theme.h"
#include "ui/widgets/row_table.h"

namespace nns::ui {
namespace {

// A cell that sorts by its number (Qt::UserRole), not by its text: "12.5" after "9.1".
class NumberItem : public QTableWidgetItem {
 public:
  NumberItem(const QString& text, double value) : QTableWidgetItem(text) {
    setData(Qt::UserRole, value);
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  }
  bool operator<(const QTableWidgetItem& other) const override {
    return data(Qt::UserRole).toDouble() < other.data(Qt::UserRole).toDouble();
  }
};

QString milliseconds(double seconds) {
  const double ms = 1000 * seconds;
  return QString::number(ms, 'f', ms < 0.1 ? 3 : ms < 10 ? 2 : 1);
}

QString share(double fraction) {
  return QString::number(100 * fraction, 'f', 1) + "%";
}

}  // namespace

ProfilePanel::ProfilePanel(TrainingController* controller, GraphScene* scene, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      scene_(scene),
      summary_(new QLabel(this)),
      table_(makeRowTable({tr("Module"), tr("Type"), tr("Forward ms"), tr("Backward ms"),
                           tr("Self ms"), tr("Share"), tr("Calls"), tr("Output memory")},
                          this)),
      timer_(new QTimer(this)) {
  summary_->setWordWrap(true);
  summary_->setTextFormat(Qt::PlainText);
  table_->horizontalHeaderItem(Forward)->setToolTip(
      tr("Forward time per step, with the module's children"));
  table_->horizontalHeaderItem(Backward)->setToolTip(
      tr("Backward time per step, with the module's children"));
  table_->horizontalHeaderItem(Self)->setToolTip(
      tr("Forward and backward time per step without the children's: the rows' self times add "
         "up to the step"));
  table_->horizontalHeaderItem(Share)->setToolTip(tr("Self time as a share of the step"));
  table_->horizontalHeaderItem(Memory)->setToolTip(tr("The bytes of its outputs per step"));
  table_->setSortingEnabled(true);
  table_->sortByColumn(Self, Qt::DescendingOrder);
  connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
    const QTableWidgetItem* item = table_->item(row, Module);
    if (!item || item->data(Qt::UserRole).toString().isEmpty()) return;
    const graph::NodeId node =
        controller_->nodeOfModule(item->data(Qt::UserRole).toString().toStdString());
    if (node != 0) emit nodeActivated(node);
  });
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  timer_->setInterval(kRefreshMs);
  connect(timer_, &QTimer::timeout, this, &ProfilePanel::refresh);
  // A new session (an edit, a reset) measures afresh.
  connect(controller_, &TrainingController::sessionReset, this, [this] {
    shownSteps_ = -1;
    if (active_) refresh();
  });
  refresh();
}

void ProfilePanel::setActive(bool on) {
  if (on == active_) return;
  active_ = on;
  if (controller_) controller_->setProfiling(on);
  if (on) {
    timer_->start();
    shownSteps_ = -1;
    refresh();
  } else {
    timer_->stop();
    if (tinted_ && scene_) scene_->setNodeBadges({});
    tinted_ = false;
  }
}

void ProfilePanel::refresh() {
  const std::optional<train::StepProfile> profile = controller_->profile();
  if (!profile || profile->steps == 0) {
    table_->setRowCount(0);
    shownSteps_ = 0;
    summary_->setText(active_ ? tr("Train the model (Start or Step) to see where each step's "
                                   "time goes: every module's forward and backward time, "
                                   "measured as it trains.")
                              : tr("Profiling is off while this panel is hidden."));
    if (tinted_) scene_->setNodeBadges({});
    tinted_ = false;
    return;
  }
  if (profile->steps == shownSteps_) return;
  shownSteps_ = profile->steps;
  showProfile(*profile);
  tintNodes(*profile);
}

void ProfilePanel::showProfile(const train::StepProfile& p) {
  const double steps = static_cast<double>(p.steps);
  const double step = p.step_seconds / steps;
  const double accounted = p.accounted_seconds() / steps;
  summary_->setText(
      tr("%1, %2: %3 sampled steps of %4 ms (profiler cost %5 of the training time). The rows "
         "account for %6 of the step.")
          .arg(qs(p.device), qs(p.timer))
          .arg(p.steps)
          .arg(milliseconds(step), share(p.overhead), share(step > 0 ? accounted / step : 0)));

  const int sortColumn = table_->horizontalHeader()->sortIndicatorSection();
  const Qt::SortOrder order = table_->horizontalHeader()->sortIndicatorOrder();
  table_->setSortingEnabled(false);
  table_->setRowCount(0);
  const QLocale locale;
  auto addRow = [&](const QString& name, const QString& path, const QString& type, double forward,
                    double backward, double self, double calls, double bytes, bool phase) {
    const int row = table_->rowCount();
    table_->insertRow(row);
    auto* nameItem = new QTableWidgetItem(name);
    nameItem->setData(Qt::UserRole, path);
    auto* typeItem = new QTableWidgetItem(type);
    if (phase) {
      QFont italic = nameItem->font();
      italic.setItalic(true);
      nameItem->setFont(italic);
      typeItem->setFont(italic);
    }
    table_->setItem(row, Module, nameItem);
    table_->setItem(row, Type, typeItem);
    auto number = [&](int column, const QString& text, double value) {
      table_->setItem(row, column, new NumberItem(text, value));
    };
    number(Forward, std::isnan(forward) ? "" : milliseconds(forward / steps), forward);
    number(Backward, std::isnan(backward) ? "" : milliseconds(backward / steps), backward);
    number(Self, milliseconds(self / steps), self);
    number(Share, share(p.step_seconds > 0 ? self / p.step_seconds : 0), self);
    number(Calls, std::isnan(calls) ? "" : QString::number(calls / steps, 'g', 4), calls);
    number(Memory, std::isnan(bytes) ? "" : locale.formattedDataSize(std::llround(bytes / steps)),
           bytes);
  };
  for (const train::ModuleProfile& m : p.modules) {
    addRow(qs(m.module), qs(m.module), qs(m.type), m.forward_seconds, m.backward_seconds,
           m.self_forward_seconds + m.self_backward_seconds, static_cast<double>(m.calls),
           static_cast<double>(m.output_bytes), false);
  }
  const double nan = std::nan("");
  addRow(tr("(outside modules)"), {}, tr("functional nodes, autograd"), p.outside_forward_seconds,
         p.outside_backward_seconds, p.outside_forward_seconds + p.outside_backward_seconds, nan,
         nan, true);
  addRow(tr("(loss)"), {}, tr("forward"), p.loss_seconds, nan, p.loss_seconds, nan, nan, true);
  addRow(tr("(data)"), {}, tr("the batch"), nan, nan, p.data_seconds, nan, nan, true);
  addRow(tr("(optimizer)"), {}, tr("zero_grad, step"), nan, nan, p.optimizer_seconds, nan, nan,
         true);
  addRow(tr("(other)"), {}, tr("between the phases"), nan, nan,
         std::max(0.0, p.step_seconds - p.accounted_seconds()), nan, nan, true);
  table_->setSortingEnabled(true);
  table_->sortByColumn(sortColumn, order);
}

void ProfilePanel::tintNodes(const train::StepProfile& p) {
  std::map<std::string, const train::ModuleProfile*> byPath;
  for (const train::ModuleProfile& m : p.modules) byPath[m.module] = &m;
  const double steps = static_cast<double>(p.steps);
  struct Shown {
    graph::NodeId node;
    const train::ModuleProfile* module;
    double share;
  };
  std::vector<Shown> shown;
  double most = 0;
  for (const graph::Node& node : scene_->document()->project().graph.nodes) {
    const QString path = controller_->moduleNameOf(node.id);
    if (path.isNull()) continue;
    const auto it = byPath.find(path.toStdString());
    if (it == byPath.end()) continue;
    const train::ModuleProfile& m = *it->second;
    const double fraction =
        p.step_seconds > 0 ? (m.forward_seconds + m.backward_seconds) / p.step_seconds : 0;
    shown.push_back({node.id, &m, fraction});
    most = std::max(most, fraction);
  }
  std::map<graph::NodeId, GraphScene::NodeBadge> badges;
  const QLocale locale;
  for (const Shown& s : shown) {
    const train::ModuleProfile& m = *s.module;
    // The hottest node is the deepest red: the tint ranks the nodes, the figure says how much.
    badges[s.node] = {
        heatColour(most > 0 ? s.share / most : 0), share(s.share),
        tr("<b>Profile</b>, %1 (%2): %3 of the step<br>forward %4 ms, backward %5 ms per step "
           "(with its children)<br>self %6 ms · %7 calls · outputs %8 per step")
            .arg(qs(m.module).toHtmlEscaped(), qs(m.type).toHtmlEscaped(), share(s.share),
                 milliseconds(m.forward_seconds / steps), milliseconds(m.backward_seconds / steps),
                 milliseconds((m.self_forward_seconds + m.self_backward_seconds) / steps))
            .arg(static_cast<double>(m.calls) / steps, 0, 'g', 4)
            .arg(locale.formattedDataSize(
                std::llround(static_cast<double>(m.output_bytes) / steps))),
        /*bars=*/{}};
  }
  scene_->setNodeBadges(std::move(badges));
  tinted_ = true;
}

}  // namespace nns::ui
