// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/probes/sample_trace.h"

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
