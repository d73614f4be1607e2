#include "ui/node_item.h"

#include <QDateTime>
#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneHoverEvent>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "engine/graph/node_types.h"
#include "ui/graph_scene.h"
#include "ui/node_health.h"
#include "ui/qt_strings.h"

namespace nns::ui {
namespace {

constexpr double kPortRadius = 5.5;
constexpr double kPortHitRadius = 10;

QColor markColor(const CanvasTheme& t, NodeLoadMark::Status s) {
  switch (s) {
    case NodeLoadMark::Status::Matched:
      return t.matched;
    case NodeLoadMark::Status::Unexpected:
    case NodeLoadMark::Status::Missing:
      return t.warning;
    case NodeLoadMark::Status::WrongShape:
      return t.error;
  }
  return t.matched;
}

QString markText(NodeLoadMark::Status s) {
  switch (s) {
    case NodeLoadMark::Status::Matched:
      return QObject::tr("state dict: all keys matched");
    case NodeLoadMark::Status::Unexpected:
      return QObject::tr("state dict: unexpected keys");
    case NodeLoadMark::Status::Missing:
      return QObject::tr("state dict: missing keys");
    case NodeLoadMark::Status::WrongShape:
      return QObject::tr("state dict: wrong shapes");
  }
  return {};
}

}  // namespace

NodeItem::NodeItem(GraphScene& scene, graph::NodeId id) : scene_(scene), id_(id) {
  setFlags(ItemIsSelectable | ItemIsMovable | ItemSendsGeometryChanges);
  setAcceptHoverEvents(true);
  refresh();
}

void NodeItem::refresh() {
  const graph::Project& project = scene_.document()->project();
  const graph::Node& node = project.graph.at(id_);
  prepareGeometryChange();
  frame_ = isGroup(node) && !node.collapsed;
  title_ = qs(node.name);
  typeName_ = qs(node.type);
  if (isGroup(node)) typeName_ += QString(" (%1)").arg(node.members.size());
  ports_ = nodePorts(project, node);
  outShapes_.clear();
  const auto& shapes = scene_.document()->analysis().output_shapes;
  if (auto it = shapes.find(id_); it != shapes.end()) {
    for (const auto& [port, shape] : it->second) outShapes_[port] = qs(graph::shape_str(shape));
  }
  problems_.clear();
  portProblems_.clear();
  for (const graph::Problem& p : scene_.document()->analysis().problems) {
    if (p.node != id_ || !p.block.empty()) continue;
    if (p.port.empty()) {
      problems_ << qs(p.message);
    } else {
      portProblems_[p.port] << qs(p.message);
    }
  }
  const auto& marks = scene_.document()->loadMarks();
  mark_.reset();
  if (auto it = marks.find(id_); it != marks.end()) mark_ = it->second;

  setZValue(frame_ ? -10.0 + static_cast<double>(scene_.groupDepth(id_)) : 1.0);
  if (frame_) {
    fitMembers();
  } else {
    const NodeHealthModel* health = scene_.healthModel();
    healthStrip_ = health && !health->sparkline(id_).empty();
    size_ = QSizeF(kWidth, baseHeight() + (healthStrip_ ? kHealthStrip : 0));
    setPosQuietly(QPointF(node.x, node.y));
  }
  updateShape();
  update();
}

double NodeItem::baseHeight() const {
  const size_t rows = std::max<size_t>({ports_.inputs.size(), ports_.outputs.size(), 1});
  return kHeader + static_cast<double>(rows) * kRow + 8;
}

void NodeItem::refreshHealth() {
  if (frame_) return;
  const NodeHealthModel* health = scene_.healthModel();
  const bool strip = health && !health->sparkline(id_).empty();
  if (strip != healthStrip_) {
    prepareGeometryChange();
    healthStrip_ = strip;
    size_ = QSizeF(kWidth, baseHeight() + (healthStrip_ ? kHealthStrip : 0));
    updateShape();
  }
  update();
}

void NodeItem::fitMembers() {
  if (!frame_ || movingMembers_) return;
  QRectF box;
  for (graph::NodeId m : scene_.document()->project().graph.at(id_).members) {
    if (NodeItem* item = scene_.nodeItem(m)) box |= item->sceneBoundingRect();
  }
  if (box.isNull()) box = QRectF(pos(), QSizeF(kWidth, kHeader));
  box.adjust(-kFrameMargin, -kFrameMargin - kHeader, kFrameMargin, kFrameMargin);
  if (box.size() != size_) {
    prepareGeometryChange();
    size_ = box.size();
    updateShape();
  }
  setPosQuietly(box.topLeft());
  update();
}

void NodeItem::setPosQuietly(QPointF pos) {
  quiet_ = true;
  setPos(pos);
  quiet_ = false;
}

QRectF NodeItem::boundingRect() const {
  return QRectF(QPointF(0, 0), size_).adjusted(-kPortRadius - 6, -8, kPortRadius + 6, 8);
}

QPainterPath NodeItem::shape() const {
  return shape_;
}

void NodeItem::updateShape() {
  // The box (a frame: its title bar only, so that clicks inside it reach the canvas for
  // rubber-band selection) united with the ports' hit circles, which reach past its edges.
  QPainterPath path;
  if (frame_) {
    path.addRect(QRectF(0, 0, size_.width(), kHeader));
  } else {
    path.addRoundedRect(QRectF(QPointF(0, 0), size_), 6, 6);
  }
  QPainterPath ports;
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    ports.addEllipse(portLocalPos(i, false), kPortHitRadius, kPortHitRadius);
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    ports.addEllipse(portLocalPos(i, true), kPortHitRadius, kPortHitRadius);
  }
  shape_ = path.united(ports);
}

QPointF NodeItem::portLocalPos(size_t index, bool output) const {
  const double x = output ? size_.width() : 0;
  if (frame_) return QPointF(x, kHeader / 2 + static_cast<double>(index) * kRow);
  return QPointF(x, kHeader + static_cast<double>(index) * kRow + kRow / 2 + 2);
}

std::optional<NodeItem::PortHit> NodeItem::portAt(QPointF scenePos) const {
  const QPointF local = mapFromScene(scenePos);
  auto near = [&](QPointF p) { return QLineF(p, local).length() <= kPortHitRadius; };
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    if (near(portLocalPos(i, false))) return PortHit{ports_.inputs[i], false};
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    if (near(portLocalPos(i, true))) return PortHit{ports_.outputs[i], true};
  }
  return std::nullopt;
}

QPointF NodeItem::portScenePos(const std::string& port, bool output) const {
  const auto& names = output ? ports_.outputs : ports_.inputs;
  auto it = std::find(names.begin(), names.end(), port);
  if (it == names.end()) {
    return mapToScene(
        QPointF(output ? size_.width() : 0, frame_ ? kHeader / 2 : size_.height() / 2));
  }
  return mapToScene(portLocalPos(static_cast<size_t>(it - names.begin()), output));
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  painter->setRenderHint(QPainter::Antialiasing);
  if (frame_) {
    paintFrame(painter);
    return;
  }
  const CanvasTheme& t = scene_.theme();
  const QRectF box(QPointF(0, 0), size_);
  const bool bad = !problems_.isEmpty() || !portProblems_.empty();
  QPen border(isSelected() ? t.selection : bad ? t.error : t.border, isSelected() || bad ? 2 : 1);
  painter->setPen(border);
  painter->setBrush(t.nodeBody);
  painter->drawRoundedRect(box, 6, 6);

  // Title bar: the attribute name, and the type on the right.
  QPainterPath header;
  header.addRoundedRect(QRectF(0, 0, box.width(), kHeader), 6, 6);
  header.addRect(QRectF(0, kHeader / 2, box.width(), kHeader / 2));
  painter->setPen(Qt::NoPen);
  painter->setBrush(isGroup(scene_.document()->project().graph.at(id_)) ? t.groupHeader
                                                                        : t.nodeHeader);
  painter->drawPath(header.simplified());
  painter->setPen(border);
  painter->setBrush(Qt::NoBrush);
  painter->drawRoundedRect(box, 6, 6);

  QFont font = painter->font();
  font.setPointSizeF(9);
  QFont bold = font;
  bold.setBold(true);
  double right = box.width() - 8;
  if (mark_) {
    painter->setPen(Qt::NoPen);
    painter->setBrush(markColor(t, mark_->status));
    painter->drawEllipse(QPointF(right - 4, kHeader / 2), 4.5, 4.5);
    right -= 14;
  }
  painter->setFont(font);
  painter->setPen(t.dimText);
  const QFontMetricsF fm(font);
  const QString type = fm.elidedText(typeName_, Qt::ElideRight, box.width() * 0.45);
  painter->drawText(QRectF(8, 0, right - 8, kHeader), Qt::AlignVCenter | Qt::AlignRight, type);
  painter->setFont(bold);
  painter->setPen(t.text);
  const QString title = QFontMetricsF(bold).elidedText(title_, Qt::ElideRight,
                                                       right - 16 - fm.horizontalAdvance(type));
  painter->drawText(QRectF(10, 0, box.width(), kHeader), Qt::AlignVCenter | Qt::AlignLeft, title);

  // Ports: input names on the left, output shapes on the right.
  painter->setFont(font);
  const bool namedInputs =
      ports_.inputs.size() > 1 || (ports_.inputs.size() == 1 && ports_.inputs[0] != "in");
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    const QPointF p = portLocalPos(i, false);
    const bool portBad = portProblems_.count(ports_.inputs[i]) > 0;
    painter->setPen(QPen(portBad ? t.error : t.port, 1.5));
    painter->setBrush(portBad ? t.error : t.nodeBody);
    painter->drawEllipse(p, kPortRadius, kPortRadius);
    if (namedInputs) {
      painter->setPen(t.dimText);
      painter->drawText(QRectF(p.x() + 10, p.y() - kRow / 2, box.width() / 2, kRow),
                        Qt::AlignVCenter | Qt::AlignLeft, qs(ports_.inputs[i]));
    }
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    const QPointF p = portLocalPos(i, true);
    const std::string& name = ports_.outputs[i];
    const bool portBad = portProblems_.count(name) > 0;
    painter->setPen(QPen(portBad ? t.error : t.port, 1.5));
    painter->setBrush(t.port);
    painter->drawEllipse(p, kPortRadius, kPortRadius);
    auto shape = outShapes_.find(name);
    QString label = shape == outShapes_.end() ? QStringLiteral("?") : shape->second;
    if (ports_.outputs.size() > 1 || name != "out") label = qs(name) + "  " + label;
    painter->setPen(shape == outShapes_.end() ? t.dimText : t.text);
    painter->drawText(QRectF(p.x() - box.width() + 10, p.y() - kRow / 2, box.width() - 22, kRow),
                      Qt::AlignVCenter | Qt::AlignRight, label);
  }
  if (healthStrip_) paintHealth(painter);
  paintFailure(painter);
}

void NodeItem::paintHealth(QPainter* painter) {
  // A tinted strip in the health's colour with three sparklines over the sampled steps: dead
  // units and saturation (0 to 1), and the gradient norm (log scale, spanning its own range).
  const CanvasTheme& t = scene_.theme();
  const NodeHealthModel* model = scene_.healthModel();
  const std::vector<HealthPoint>& points = model->sparkline(id_);
  const std::optional<HealthReport> report = model->health(id_);
  if (!report) return;
  const QColor colour = healthColor(t, report->health);
  const QRectF strip(1, baseHeight() - 4, size_.width() - 2, kHealthStrip + 3);
  QColor tint = colour;
  tint.setAlpha(t.dark() ? 70 : 45);
  painter->setPen(Qt::NoPen);
  painter->setBrush(tint);
  QPainterPath path;
  path.addRoundedRect(strip, 5, 5);
  path.addRect(QRectF(strip.left(), strip.top(), strip.width(), 6));
  painter->drawPath(path.simplified());
  painter->setBrush(colour);
  painter->drawEllipse(QPointF(strip.left() + 9, strip.center().y()), 4.5, 4.5);

  const QRectF plot = strip.adjusted(20, 4, -8, -4);
  const double n = static_cast<double>(std::max<size_t>(points.size() - 1, 1));
  auto line = [&](auto value, double lo, double hi, const QColor& c) {
    QPainterPath trace;
    bool open = false;
    for (size_t i = 0; i < points.size(); ++i) {
      const double v = value(points[i]);
      if (!std::isfinite(v)) {
        open = false;
        continue;
      }
      const double f = hi > lo ? std::clamp((v - lo) / (hi - lo), 0.0, 1.0) : 0.5;
      const QPointF p(plot.left() + plot.width() * static_cast<double>(i) / n,
                      plot.bottom() - plot.height() * f);
      if (open) {
        trace.lineTo(p);
      } else {
        trace.moveTo(p);
        open = true;
      }
    }
    painter->setPen(QPen(c, 1.4));
    painter->setBrush(Qt::NoBrush);
    painter->drawPath(trace);
  };
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const HealthPoint& p : points) {
    if (std::isfinite(p.gradNorm) && p.gradNorm > 0) {
      lo = std::min(lo, std::log10(p.gradNorm));
      hi = std::max(hi, std::log10(p.gradNorm));
    }
  }
  line([](const HealthPoint& p) { return p.dead; }, 0, 1, t.warning.darker(110));
  line([](const HealthPoint& p) { return p.saturation; }, 0, 1, QColor(0x9b, 0x59, 0xb6));
  line([](const HealthPoint& p) { return p.gradNorm > 0 ? std::log10(p.gradNorm) : NAN; }, lo, hi,
       t.port);
}

void NodeItem::paintFailure(QPainter* painter) {
  const NodeHealthModel* model = scene_.healthModel();
  if (!model || !model->failed() || model->failedNode() == 0) return;
  if (scene_.shownItem(model->failedNode()) != this) return;
  // A red wash, a thick red outline and a glow that pulses (about once a second) until the
  // run is reset: visible at any zoom, and over the selection's border.
  const double phase = static_cast<double>(QDateTime::currentMSecsSinceEpoch() % 1000) / 1000.0;
  const double pulse = 0.5 + 0.5 * std::sin(phase * 2 * M_PI);
  const QRectF box(QPointF(0, 0), size_);
  QColor red = scene_.theme().error;
  QColor wash = red;
  wash.setAlpha(40);
  painter->setPen(Qt::NoPen);
  painter->setBrush(wash);
  painter->drawRoundedRect(box, 6, 6);
  QColor glow = red;
  glow.setAlphaF(0.15 + 0.25 * pulse);
  painter->setBrush(Qt::NoBrush);
  painter->setPen(QPen(glow, 8));
  painter->drawRoundedRect(box.adjusted(-3, -3, 3, 3), 9, 9);
  red.setAlphaF(0.75 + 0.25 * pulse);
  painter->setPen(QPen(red, 3));
  painter->drawRoundedRect(box, 6, 6);
}

void NodeItem::paintFrame(QPainter* painter) {
  const CanvasTheme& t = scene_.theme();
  const QRectF box(QPointF(0, 0), size_);
  const bool bad = !problems_.isEmpty() || !portProblems_.empty();
  painter->setPen(QPen(isSelected() ? t.selection
                       : bad        ? t.error
                                    : t.border,
                       isSelected() || bad ? 2 : 1, Qt::DashLine));
  painter->setBrush(t.groupBody);
  painter->drawRoundedRect(box, 8, 8);
  QPainterPath header;
  header.addRoundedRect(QRectF(0, 0, box.width(), kHeader), 8, 8);
  header.addRect(QRectF(0, kHeader / 2, box.width(), kHeader / 2));
  painter->setPen(Qt::NoPen);
  painter->setBrush(t.groupHeader);
  painter->drawPath(header.simplified());

  QFont font = painter->font();
  font.setPointSizeF(9);
  QFont bold = font;
  bold.setBold(true);
  painter->setFont(bold);
  painter->setPen(t.text);
  painter->drawText(QRectF(14, 0, box.width() - 28, kHeader), Qt::AlignVCenter | Qt::AlignLeft,
                    title_);
  painter->setFont(font);
  painter->setPen(t.dimText);
  QString right = typeName_;
  if (auto it = outShapes_.find("out"); it != outShapes_.end()) right += "  " + it->second;
  painter->drawText(QRectF(14, 0, box.width() - 28, kHeader), Qt::AlignVCenter | Qt::AlignRight,
                    right);

  // A Sequential calls its members in a chain: show the implicit wires, dashed.
  const graph::Node& node = scene_.document()->project().graph.at(id_);
  if (node.type == "Sequential" && !node.members.empty()) {
    painter->setPen(QPen(t.wire, 1.5, Qt::DashLine));
    painter->setBrush(Qt::NoBrush);
    QPointF from = portLocalPos(0, false);
    for (graph::NodeId m : node.members) {
      NodeItem* item = scene_.nodeItem(m);
      if (!item) continue;
      const QRectF r = mapRectFromScene(item->sceneBoundingRect());
      const QPointF to(r.left() + kPortRadius + 2, r.top() + kHeader / 2);
      painter->drawLine(from, to);
      from = QPointF(r.right() - kPortRadius - 2, r.top() + kHeader / 2);
    }
    painter->drawLine(from, portLocalPos(0, true));
  }
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    painter->setPen(QPen(t.port, 1.5));
    painter->setBrush(t.nodeBody);
    painter->drawEllipse(portLocalPos(i, false), kPortRadius, kPortRadius);
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    painter->setPen(QPen(t.port, 1.5));
    painter->setBrush(t.port);
    painter->drawEllipse(portLocalPos(i, true), kPortRadius, kPortRadius);
  }
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionChange && frame_ && !quiet_) {
    // A dragged frame carries its members along (those selected move by themselves).
    const QPointF delta = value.toPointF() - pos();
    movingMembers_ = true;
    for (graph::NodeId m : scene_.document()->project().graph.at(id_).members) {
      NodeItem* item = scene_.nodeItem(m);
      if (item && !item->isSelected()) item->moveBy(delta.x(), delta.y());
    }
    movingMembers_ = false;
  }
  if (change == ItemPositionHasChanged) scene_.nodeGeometryChanged(id_);
  if (change == ItemSelectedHasChanged) update();
  return QGraphicsItem::itemChange(change, value);
}

QString NodeItem::tooltipAt(QPointF localPos) const {
  if (auto port = portAt(mapToScene(localPos))) {
    QStringList lines;
    lines << QString("<b>%1.%2</b>").arg(title_, qs(port->name));
    if (port->output) {
      auto it = outShapes_.find(port->name);
      lines << QObject::tr("shape %1").arg(it == outShapes_.end() ? "?" : it->second);
    }
    if (auto it = portProblems_.find(port->name); it != portProblems_.end()) {
      for (const QString& p : it->second)
        lines << QString("<span style='color:#d93f3f'>%1</span>").arg(p.toHtmlEscaped());
    }
    return lines.join("<br>");
  }
  QStringList lines;
  lines << QString("<b>%1</b> : %2").arg(title_.toHtmlEscaped(), typeName_.toHtmlEscaped());
  for (const QString& p : problems_)
    lines << QString("<span style='color:#d93f3f'>%1</span>").arg(p.toHtmlEscaped());
  for (const auto& [port, list] : portProblems_) {
    for (const QString& p : list)
      lines
          << QString("<span style='color:#d93f3f'>%1: %2</span>").arg(qs(port), p.toHtmlEscaped());
  }
  if (mark_) {
    lines << markText(mark_->status);
    for (const QString& d : mark_->details) lines << d.toHtmlEscaped();
  }
  if (const NodeHealthModel* model = scene_.healthModel()) {
    if (model->failed() && model->failedNode() != 0 &&
        scene_.shownItem(model->failedNode()) == this) {
      lines << QString("<span style='color:#d93f3f'><b>%1</b> %2</span>")
                   .arg(QObject::tr("Training stopped here:"),
                        model->failureMessage().toHtmlEscaped());
    }
    if (auto report = model->health(id_)) {
      lines << QObject::tr("<b>Health</b>: %1").arg(report->summary.toHtmlEscaped());
      lines << QObject::tr(
                   "<small>sparklines: dead units (amber), saturation (purple), "
                   "gradient norm (blue, log)<br>thresholds: %1</small>")
                   .arg(healthThresholds().toHtmlEscaped());
    }
  }
  const QString repr = scene_.moduleRepr(id_);
  if (!repr.isEmpty()) lines << QString("<pre>%1</pre>").arg(repr.toHtmlEscaped());
  return lines.join("<br>");
}

void NodeItem::hoverMoveEvent(QGraphicsSceneHoverEvent* event) {
  setToolTip(tooltipAt(event->pos()));
  QGraphicsItem::hoverMoveEvent(event);
}

void NodeItem::mouseDoubleClickEvent(QGraphicsSceneMouseEvent* event) {
  const graph::Node& node = scene_.document()->project().graph.at(id_);
  if (isGroup(node)) {
    scene_.document()->setCollapsed(id_, !node.collapsed, pos());
    return;
  }
  QGraphicsItem::mouseDoubleClickEvent(event);
}

void NodeItem::contextMenuEvent(QGraphicsSceneContextMenuEvent* event) {
  if (!isSelected()) {
    scene_.clearSelection();
    setSelected(true);
  }
  emit scene_.contextMenuRequested(event->screenPos());
}

}  // namespace nns::ui
