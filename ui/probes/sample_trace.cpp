// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/sample_trace.h"

#include <QPaintEvent>
#include <QPainter>
#include <QStringList>
#include <algorithm>
#include <cmath>

#include "ui/document/qt_strings.h"
#include "ui/training/training_controller.h"

namespace nns::ui {
namespace {

// The tensor's values as doubles (float or double tensors; others give none).
std::vector<double> valuesOf(const Tensor& t) {
  std::vector<double> out;
  if (!t.defined() || !t.is_floating_point()) return out;
  const Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  out.assign(p, p + c.numel());
  return out;
}

double rms(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x * x;
  return v.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(v.size()));
}

QString firstValues(const std::vector<double>& v, size_t count) {
  QStringList parts;
  for (size_t i = 0; i < std::min(count, v.size()); ++i) parts << QString::number(v[i], 'g', 3);
  if (v.size() > count) parts << QStringLiteral("…");
  return parts.join(", ");
}

QString shapeText(const Tensor& t) {
  QStringList dims;
  for (int64_t d : t.sizes()) dims << QString::number(d);
  return "[" + dims.join(", ") + "]";
}

}  // namespace

QColor gradientColour(double value) {
  const double t = value > 0 ? std::clamp((std::log10(value) + 6) / 6, 0.0, 1.0) : 0.0;
  const QColor pale(222, 235, 247), deep(33, 102, 172);
  auto mix = [t](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * t)); };
  return QColor(mix(pale.red(), deep.red()), mix(pale.green(), deep.green()),
                mix(pale.blue(), deep.blue()));
}

QString describeTraceStep(const train::ModuleTrace& m) {
  QString text;
  if (m.input.defined()) {
    text +=
        QObject::tr("input %1 %2 → ").arg(shapeText(m.input), firstValues(valuesOf(m.input), 4));
  }
  text += QObject::tr("output %1 %2").arg(shapeText(m.output), firstValues(valuesOf(m.output), 4));
  const std::vector<double> grad = valuesOf(m.grad_output);
  if (!grad.empty()) text += QObject::tr("; gradient RMS %1").arg(rms(grad), 0, 'g', 3);
  return text;
}

TraceStepView::TraceStepView(QWidget* parent) : QWidget(parent) {
  setMinimumSize(220, 180);
  setToolTip(
      tr("The traced sample at one node: its input, its output and the gradient of the "
         "sample's loss w.r.t. that output (blue below zero, red above; F11 steps on)"));
}

void TraceStepView::clear() {
  title_.clear();
  panels_.clear();
  update();
}

void TraceStepView::showStep(const QString& title, const train::ModuleTrace& module) {
  title_ = title;
  panels_.clear();
  const std::pair<const char*, const Tensor*> tensors[] = {
      {"input", &module.input}, {"output", &module.output}, {"gradient", &module.grad_output}};
  for (const auto& [label, tensor] : tensors) {
    Panel panel;
    panel.label = tr(label);
    if (tensor->defined()) {
      panel.shape.assign(tensor->sizes().begin(), tensor->sizes().end());
      // Token ids (an embedding's input) are drawn as the numbers they are.
      const std::vector<double> v =
          tensor->is_floating_point() ? valuesOf(*tensor)
          : tensor->dtype() == kInt64
              ? [&] {
                  const std::vector<int64_t> ids = tensor->contiguous().to_vector<int64_t>();
                  return std::vector<double>(ids.begin(), ids.end());
                }()
              : std::vector<double>{};
      // The sample's dimensions: the batch of one dropped.
      std::vector<int64_t> dims = panel.shape;
      if (!dims.empty() && dims.front() == 1) dims.erase(dims.begin());
      panel.heatmap = dims.size() >= 2 && !v.empty();
      if (panel.heatmap) {
        // A tile per slice of the last two dimensions (a channel's feature map).
        const int64_t h = dims[dims.size() - 2], w = dims.back();
        panel.allTiles = h * w > 0 ? static_cast<int64_t>(v.size()) / (h * w) : 0;
        panel.tiles = std::min(panel.allTiles, kTraceTiles);
        panel.rows = std::min(h, kTraceCells);
        panel.cols = std::min(w, kTraceCells);
        for (int64_t t = 0; t < panel.tiles; ++t) {
          for (int64_t r = 0; r < panel.rows; ++r) {
            for (int64_t c = 0; c < panel.cols; ++c) {
              panel.cells.push_back(v[static_cast<size_t>((t * h + r) * w + c)]);
            }
          }
        }
      } else if (!v.empty()) {
        panel.tiles = panel.allTiles = 1;
        panel.rows = 1;
        panel.cols = std::min(static_cast<int64_t>(v.size()), kTraceCells);
        panel.cells.assign(v.begin(), v.begin() + panel.cols);
      }
      for (double x : panel.cells) {
        if (std::isfinite(x)) panel.largest = std::max(panel.largest, std::abs(x));
      }
    }
    panels_.push_back(std::move(panel));
  }
  update();
}

void TraceStepView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Base));
  const QFontMetrics fm = p.fontMetrics();
  if (panels_.empty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Click a test sample in the Output panel to trace it, then Train → Step "
                  "Through Traced Sample (F11)"));
    return;
  }
  p.setPen(palette().color(QPalette::WindowText));
  p.drawText(QRect(6, 2, width() - 12, fm.height() + 2), Qt::AlignLeft | Qt::AlignVCenter,
             fm.elidedText(title_, Qt::ElideRight, width() - 12));
  const int top = fm.height() + 6;
  const int panelH = (height() - top) / static_cast<int>(panels_.size());
  auto colour = [](double x, double largest) {
    const double t = largest > 0 && std::isfinite(x) ? std::clamp(x / largest, -1.0, 1.0) : 0;
    const QColor end = t < 0 ? QColor(33, 102, 172) : QColor(178, 24, 43);
    const double a = std::abs(t);
    auto mix = [a](int from, int to) {
      return static_cast<int>(std::lround(from + (to - from) * a));
    };
    return QColor(mix(247, end.red()), mix(247, end.green()), mix(247, end.blue()));
  };
  for (size_t i = 0; i < panels_.size(); ++i) {
    const Panel& panel = panels_[i];
    const int y0 = top + static_cast<int>(i) * panelH;
    QStringList dims;
    for (int64_t d : panel.shape) dims << QString::number(d);
    QString caption = panel.shape.empty() ? tr("%1: none reached it").arg(panel.label)
                                          : tr("%1 [%2], |max| %3")
                                                .arg(panel.label, dims.join(", "))
                                                .arg(panel.largest, 0, 'g', 3);
    if (panel.tiles < panel.allTiles) {
      caption += tr(" (the first %1 of %2 maps)").arg(panel.tiles).arg(panel.allTiles);
    }
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(QRect(6, y0, width() - 12, fm.height()), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(caption, Qt::ElideRight, width() - 12));
    const QRectF area(6, y0 + fm.height() + 2, width() - 12, panelH - fm.height() - 6);
    if (panel.cells.empty() || area.height() < 4) continue;
    if (panel.heatmap) {
      // The tiles in the grid of columns that gives the largest cells.
      auto cellFor = [&](int64_t columns) {
        const int64_t rowsOfTiles = (panel.tiles + columns - 1) / columns;
        return std::min(area.width() / static_cast<double>(columns * (panel.cols + 1)),
                        area.height() / static_cast<double>(rowsOfTiles * (panel.rows + 1)));
      };
      int64_t columns = 1;
      for (int64_t c = 2; c <= panel.tiles; ++c) {
        if (cellFor(c) > cellFor(columns)) columns = c;
      }
      const double cell = cellFor(columns);
      const size_t tileSize = static_cast<size_t>(panel.rows * panel.cols);
      for (int64_t t = 0; t < panel.tiles; ++t) {
        const double x0 =
            area.left() + static_cast<double>((t % columns) * (panel.cols + 1)) * cell;
        const double y0 = area.top() + static_cast<double>((t / columns) * (panel.rows + 1)) * cell;
        for (int64_t r = 0; r < panel.rows; ++r) {
          for (int64_t c = 0; c < panel.cols; ++c) {
            p.fillRect(QRectF(x0 + c * cell, y0 + r * cell, cell, cell),
                       colour(panel.cells[static_cast<size_t>(t) * tileSize +
                                          static_cast<size_t>(r * panel.cols + c)],
                              panel.largest));
          }
        }
      }
    } else {
      const double w = area.width() / static_cast<double>(panel.cols);
      const double mid = area.center().y();
      for (int64_t c = 0; c < panel.cols; ++c) {
        const double x = panel.cells[static_cast<size_t>(c)];
        const double h =
            panel.largest > 0 && std::isfinite(x) ? x / panel.largest * (area.height() / 2) : 0;
        p.fillRect(QRectF(area.left() + c * w, std::min(mid, mid - h), std::max(1.0, w - 1),
                          std::max(1.0, std::abs(h))),
                   colour(x, panel.largest));
      }
      p.setPen(palette().color(QPalette::Mid));
      p.drawLine(QPointF(area.left(), mid), QPointF(area.right(), mid));
    }
  }
}

std::map<graph::NodeId, GraphScene::NodeBadge> traceBadges(const train::SampleTrace& trace,
                                                           const TrainingController& controller,
                                                           const graph::Graph& graph) {
  std::map<graph::NodeId, GraphScene::NodeBadge> badges;
  for (const graph::Node& node : graph.nodes) {
    const QString module = controller.moduleNameOf(node.id);
    if (module.isNull()) continue;
    const std::string name = module.toStdString();
    // A module that ran twice (shared weights) shows its last call.
    const train::ModuleTrace* found = nullptr;
    for (const train::ModuleTrace& m : trace.modules) {
      if (m.module == name) found = &m;
    }
    if (!found || !found->output.defined()) continue;
    const std::vector<double> out = valuesOf(found->output);
    const std::vector<double> grad = valuesOf(found->grad_output);
    GraphScene::NodeBadge badge;
    double largest = 0;
    for (size_t i = 0; i < std::min(kTraceBars, out.size()); ++i) {
      largest = std::max(largest, std::abs(out[i]));
    }
    for (size_t i = 0; i < std::min(kTraceBars, out.size()); ++i) {
      badge.bars.push_back(largest > 0 ? static_cast<float>(out[i] / largest) : 0.0f);
    }
    const double g = rms(grad);
    badge.colour = gradientColour(g);
    badge.text = grad.empty() ? QObject::tr("no grad") : QObject::tr("∇ %1").arg(g, 0, 'g', 2);
    badge.tooltip = QObject::tr(
                        "<b>Traced sample</b> (step %1, loss %2)<br>output %3: %4<br>"
                        "d loss / d output%5")
                        .arg(trace.step)
                        .arg(trace.loss, 0, 'g', 4)
                        .arg(shapeText(found->output), firstValues(out, 8).toHtmlEscaped())
                        .arg(grad.empty() ? QObject::tr(": none reached it")
                                          : QObject::tr(" (RMS %1): %2")
                                                .arg(g, 0, 'g', 3)
                                                .arg(firstValues(grad, 8).toHtmlEscaped()));
    badges[node.id] = std::move(badge);
  }
  return badges;
}

}  // namespace nns::ui
