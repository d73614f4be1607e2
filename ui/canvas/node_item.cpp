// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/canvas/node_item.h"

#include <QDateTime>
#include <QGraphicsSceneContextMenuEvent>
#include <QGraphicsSceneHoverEvent>
#include <QLocale>
#include <QPainter>
#include <QStyleOptionGraphicsItem>
#include <algorithm>
#include <cmath>

#include "engine/graph/layout.h"
#include "engine/graph/node_types.h"
#include "ui/canvas/graph_scene.h"
#include "ui/canvas/probe_item.h"
#include "ui/document/qt_strings.h"
#include "ui/probes/node_health.h"

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
  // Not drawn yet: the scene refreshes the items it shows (most of a 10,000-node model is
  // inside collapsed groups, and each box refreshed twice was a fifth of the open).
}

void NodeItem::refresh() {
  const graph::Project& project = scene_.document()->project();
  const graph::Node& node = scene_.node(id_);
  group_ = isGroup(node);
  frame_ = group_ && !node.collapsed && !node.members.empty();
  leftToRight_ = project.layout_direction == "LR";
  title_ = qs(node.name);
  typeName_ = qs(node.type);
  repeats_ = scene_.repeatCount(id_);
  if (repeats_ > 1) {
    // The box stands for the run: its first member's name to its last's ("1–5").
    if (const graph::Node* group = project.graph.parent_of(id_)) {
      const auto first = std::find(group->members.begin(), group->members.end(), id_);
      if (group->members.end() - first >= repeats_) {
        title_ += QString::fromUtf8("\u2013") + qs(scene_.node(first[repeats_ - 1]).name);
      }
    }
  }
  if (isGroup(node)) typeName_ += QString(" (%1)").arg(node.members.size());
  ports_ = graph::project_node_ports(project, node);
  analysisRead_ = false;
  summaryRead_ = false;
  const auto& marks = scene_.document()->loadMarks();
  mark_.reset();
  if (auto it = marks.find(id_); it != marks.end()) mark_ = it->second;

  setZValue(frame_ ? -10.0 + static_cast<double>(scene_.groupDepth(id_)) : 1.0);
  if (frame_) {
    fitMembers();
  } else {
    const NodeHealthModel* health = scene_.healthModel();
    healthStrip_ = health && !health->sparkline(id_).empty();
    const graph::NodeSize size = graph::node_box_size(project, node);
    // Only a new size moves the bounds (and the scene's index entry); most refreshes keep it.
    if (QSizeF(size.width, size.height) != size_) {
      prepareGeometryChange();
      size_ = QSizeF(size.width, size.height);
    }
    setPosQuietly(QPointF(node.x, node.y));
  }
  updateShape();
  update();
}

void NodeItem::readAnalysis() const {
  if (analysisRead_) return;
  analysisRead_ = true;
  outShapes_.clear();
  const auto& shapes = scene_.document()->lastAnalysis().output_shapes;
  if (auto it = shapes.find(id_); it != shapes.end()) {
    for (const auto& [port, shape] : it->second) outShapes_[port] = qs(graph::shape_str(shape));
  }
  problems_.clear();
  portProblems_.clear();
  for (const graph::Problem* p : scene_.document()->lastProblemsAt(id_)) {
    if (p->port.empty()) {
      problems_ << qs(p->message);
    } else {
      portProblems_[p->port] << qs(p->message);
    }
  }
}

bool NodeItem::drawsProblem() const {
  readAnalysis();
  return !problems_.isEmpty() || !portProblems_.empty();
}

const QString& NodeItem::summary() const {
  if (!summaryRead_) {
    summaryRead_ = true;
    detail_ = group_ && !frame_ ? groupSummary(scene_.node(id_)) : QString();
  }
  return detail_;
}

QString NodeItem::groupSummary(const graph::Node& node) const {
  // What a collapsed group holds: its modules and their parameters (counted without building
  // the model, which at 10,000 nodes takes a tenth of a second).
  QString text = QObject::tr("%n module(s)", nullptr, static_cast<int>(node.members.size()));
  if (const std::optional<int64_t> count = scene_.document()->parameterCount(id_)) {
    text += QObject::tr(" · %1 params").arg(QLocale().toString(static_cast<qlonglong>(*count)));
  }
  return text;
}

void NodeItem::refreshHealth() {
  if (frame_) return;
  const NodeHealthModel* health = scene_.healthModel();
  healthStrip_ = health && !health->sparkline(id_).empty();
  update();
}

size_t NodeItem::sparklinePoints() const {
  const NodeHealthModel* health = scene_.healthModel();
  if (!healthStrip_ || !health || !health->health(id_)) return 0;
  const std::vector<HealthPoint>& points = health->sparkline(id_);
  return static_cast<size_t>(std::count_if(points.begin(), points.end(), [](const HealthPoint& p) {
    return std::isfinite(p.dead) || std::isfinite(p.saturation) ||
           (std::isfinite(p.gradNorm) && p.gradNorm > 0);
  }));
}

void NodeItem::fitMembers() {
  if (!frame_ || movingMembers_) return;
  // The layout's box for the group while its members are where the layout put them; a member
  // dragged out grows the frame to hold it.
  const graph::Layout& layout = scene_.document()->layout();
  QRectF box;
  if (auto it = layout.boxes.find(id_); it != layout.boxes.end()) {
    box = QRectF(it->second.x, it->second.y, it->second.width, it->second.height);
  }
  for (graph::NodeId m : scene_.node(id_).members) {
    NodeItem* item = scene_.nodeItem(m);
    if (!item || scene_.shownItem(m) != item) continue;  // a folded repeat: not drawn
    if (scene_.isStale(m)) continue;  // it goes inside the layout's box in the next events
    QRectF r(item->pos(), item->boxSize());
    r.adjust(-kFrameMargin, -kFrameMargin - graph::kFrameHeader, kFrameMargin, kFrameMargin);
    if (!box.contains(r)) box |= r;
  }
  if (box.isNull()) box = QRectF(pos(), QSizeF(graph::kNodeWidth, graph::kFrameHeader));
  if (box.size() != size_) {
    prepareGeometryChange();
    size_ = box.size();
    updateShape();
  }
  setPosQuietly(box.topLeft());
  // The implicit links are drawn on every paint: their paths are made here, once per fit.
  chain_ = scene_.chainPaths(id_);
  update();
}

void NodeItem::setPosQuietly(QPointF pos) {
  quiet_ = true;
  setPos(pos);
  quiet_ = false;
}

QRectF NodeItem::boundingRect() const {
  // Room for the ports, which reach past the box, and the input names written beside them.
  return QRectF(QPointF(0, 0), size_).adjusted(-kPortRadius - 6, -kRow, kPortRadius + 6, 8);
}

QPainterPath NodeItem::shape() const {
  if (!shapeStale_) return shape_;
  shapeStale_ = false;
  // The box (a frame: its title bar only, so that clicks inside it reach the canvas for
  // rubber-band selection) united with the ports' hit circles, which reach past its edges.
  QPainterPath path;
  if (frame_) {
    path.addRect(QRectF(0, 0, size_.width(), graph::kFrameHeader));
  } else {
    path.addRoundedRect(QRectF(QPointF(0, 0), size_), 6, 6);
  }
  // Winding fill makes the overlapping parts one area, without the cost of a boolean union.
  path.setFillRule(Qt::WindingFill);
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    path.addEllipse(portLocalPos(i, false), kPortHitRadius, kPortHitRadius);
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    path.addEllipse(portLocalPos(i, true), kPortHitRadius, kPortHitRadius);
  }
  shape_ = path;
  return shape_;
}

QPointF NodeItem::portLocalPos(size_t index, bool output) const {
  const auto& names = output ? ports_.outputs : ports_.inputs;
  if (frame_) {
    // Where the layout's wires cross the frame, else the middle of the side.
    const graph::Layout& layout = scene_.document()->layout();
    const auto& anchors = output ? layout.group_outputs : layout.group_inputs;
    if (auto it = anchors.find(id_); it != anchors.end() && index == 0) {
      const QPointF local = mapFromScene(QPointF(it->second.x, it->second.y));
      if (leftToRight_)
        return QPointF(output ? size_.width() : 0, std::clamp(local.y(), 0.0, size_.height()));
      return QPointF(std::clamp(local.x(), 0.0, size_.width()), output ? size_.height() : 0);
    }
  }
  // Ports spread evenly along the side the data enters (inputs) or leaves (outputs) by.
  const double f = (static_cast<double>(index) + 1) / (static_cast<double>(names.size()) + 1);
  if (leftToRight_) return QPointF(output ? size_.width() : 0, f * size_.height());
  return QPointF(f * size_.width(), output ? size_.height() : 0);
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
    // A member's port hidden in this collapsed group: the middle of the side.
    return mapToScene(leftToRight_ ? QPointF(output ? size_.width() : 0, size_.height() / 2)
                                   : QPointF(size_.width() / 2, output ? size_.height() : 0));
  }
  return mapToScene(portLocalPos(static_cast<size_t>(it - names.begin()), output));
}

void NodeItem::paintPorts(QPainter* painter, const QFont& font) {
  const CanvasTheme& t = scene_.theme();
  // Inputs' names, when they say more than "in", are written outside the box beside the port.
  const bool namedInputs =
      ports_.inputs.size() > 1 || (ports_.inputs.size() == 1 && ports_.inputs[0] != "in");
  QFont small = font;
  small.setPointSizeF(7.5);
  for (size_t i = 0; i < ports_.inputs.size(); ++i) {
    const QPointF p = portLocalPos(i, false);
    const bool portBad = portProblems_.count(ports_.inputs[i]) > 0;
    painter->setPen(QPen(portBad ? t.error : t.port, 1.5));
    painter->setBrush(portBad ? t.error : t.nodeBody);
    painter->drawEllipse(p, kPortRadius, kPortRadius);
    if (namedInputs && !frame_) {
      painter->setFont(small);
      painter->setPen(t.dimText);
      const QRectF label = leftToRight_ ? QRectF(p.x() - 64, p.y() - kRow, 58, kRow)
                                        : QRectF(p.x() + 7, p.y() - kRow, 60, kRow - 2);
      painter->drawText(label, Qt::AlignBottom | (leftToRight_ ? Qt::AlignRight : Qt::AlignLeft),
                        qs(ports_.inputs[i]));
    }
  }
  for (size_t i = 0; i < ports_.outputs.size(); ++i) {
    const bool portBad = portProblems_.count(ports_.outputs[i]) > 0;
    painter->setPen(QPen(portBad ? t.error : t.port, 1.5));
    painter->setBrush(t.port);
    painter->drawEllipse(portLocalPos(i, true), kPortRadius, kPortRadius);
  }
}

QString NodeItem::outputText() const {
  readAnalysis();
  // "[N, 64]" for one output "out"; "out [N, 8]  h_n [1, N, 8]" for several.
  QStringList parts;
  for (const std::string& name : ports_.outputs) {
    auto shape = outShapes_.find(name);
    QString text = shape == outShapes_.end() ? QStringLiteral("?") : shape->second;
    if (ports_.outputs.size() > 1 || name != "out") text = qs(name) + " " + text;
    parts << text;
  }
  return parts.join("  ");
}

void NodeItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
  readAnalysis();
  if (QStyleOptionGraphicsItem::levelOfDetailFromTransform(painter->worldTransform()) <
      kDetailZoom) {
    paintPlain(painter);
    return;
  }
  painter->setRenderHint(QPainter::Antialiasing);
  if (frame_) {
    paintFrame(painter);
    return;
  }
  const CanvasTheme& t = scene_.theme();
  const QRectF box(QPointF(0, 0), size_);
  const bool bad = drawsProblem();
  QPen border(isSelected() ? t.selection : bad ? t.error : t.border, isSelected() || bad ? 2 : 1);
  if (repeats_ > 1) {
    // A folded run: the boxes of the repeats it stands for, stacked behind it.
    painter->setPen(QPen(t.border, 1));
    painter->setBrush(t.nodeBody);
    const double step = graph::kRepeatStack / 2;
    painter->drawRoundedRect(box.translated(2 * step, 2 * step), 6, 6);
    painter->drawRoundedRect(box.translated(step, step), 6, 6);
  }
  painter->setPen(border);
  painter->setBrush(t.nodeBody);
  painter->drawRoundedRect(box, 6, 6);

  // Title bar: the attribute name, and the type on the right.
  QPainterPath header;
  header.addRoundedRect(QRectF(0, 0, box.width(), kHeader), 6, 6);
  header.addRect(QRectF(0, kHeader / 2, box.width(), kHeader / 2));
  painter->setPen(Qt::NoPen);
  painter->setBrush(group_ ? t.groupHeader : t.nodeHeader);
  painter->drawPath(header.simplified());
  painter->setPen(border);
  painter->setBrush(Qt::NoBrush);
  painter->drawRoundedRect(box, 6, 6);

  QFont font = painter->font();
  font.setPointSizeF(8.5);
  QFont bold = font;
  bold.setBold(true);
  double right = box.width() - 8;
  // A probe's tag sits on the title bar's right end: the type moves left of it.
  if (scene_.probeItem(id_)) right -= ProbeItem::kWidth + 4;
  if (repeats_ > 1) right -= paintRepeatPill(painter, right, kHeader) + 6;
  if (mark_) {
    painter->setPen(Qt::NoPen);
    painter->setBrush(markColor(t, mark_->status));
    painter->drawEllipse(QPointF(right - 4, kHeader / 2), 4.5, 4.5);
    right -= 14;
  }
  painter->setFont(font);
  painter->setPen(t.dimText);
  const QFontMetricsF fm(font);
  const QFontMetricsF boldFm(bold);
  // The name comes first: it keeps its full width, up to 60% of the room, before the type
  // is shortened; a short name is never elided for a long type name (a plugin's).
  const double room = right - 8 - 10;
  const double nameWidth = boldFm.horizontalAdvance(title_);
  const double typeWidth = fm.horizontalAdvance(typeName_);
  const double nameBudget = nameWidth + typeWidth <= room
                                ? nameWidth
                                : std::max(room - typeWidth, std::min(nameWidth, room * 0.6));
  const QString type = fm.elidedText(typeName_, Qt::ElideRight, room - nameBudget);
  painter->drawText(QRectF(8, 0, right - 8, kHeader), Qt::AlignVCenter | Qt::AlignRight, type);
  painter->setFont(bold);
  painter->setPen(t.text);
  const QString title = boldFm.elidedText(title_, Qt::ElideRight, nameBudget + 1);
  painter->drawText(QRectF(8, 0, box.width(), kHeader), Qt::AlignVCenter | Qt::AlignLeft, title);

  // The body: what a collapsed group holds, then the output's shape; a badge's tint under it
  // and its figure on the right.
  painter->setFont(font);
  double y = kHeader;
  const GraphScene::NodeBadge* badge = scene_.nodeBadge(id_);
  double badgeWidth = 0;
  if (badge) {
    QColor tint = badge->colour;
    tint.setAlpha(t.dark() ? 120 : 150);
    painter->setPen(Qt::NoPen);
    painter->setBrush(tint);
    QPainterPath body;
    body.addRoundedRect(QRectF(1, kHeader, box.width() - 2, box.height() - kHeader - 1), 5, 5);
    body.addRect(QRectF(1, kHeader, box.width() - 2, 6));
    painter->drawPath(body.simplified());
    badgeWidth = boldFm.horizontalAdvance(badge->text) + 8;
  }
  if (!summary().isEmpty()) {
    painter->setPen(t.dimText);
    painter->drawText(QRectF(8, y, box.width() - 16, kRow), Qt::AlignVCenter | Qt::AlignLeft,
                      fm.elidedText(summary(), Qt::ElideRight, box.width() - 16));
    y += kRow - 4;
  }
  if (badge) {
    // On the shapes' row, whose text makes room for it: the row below is a probe's health
    // strip when there is one.
    painter->setFont(bold);
    painter->setPen(t.text);
    painter->drawText(QRectF(8, y, box.width() - 16, kRow), Qt::AlignVCenter | Qt::AlignRight,
                      badge->text);
    painter->setFont(font);
  }
  if (badge && !badge->bars.empty()) {
    // A traced sample's values as bars about a middle line, in place of the shapes: up
    // positive, down negative.
    const double width = box.width() - 20 - badgeWidth, mid = y + kRow / 2, half = kRow / 2 - 4;
    const double w = width / static_cast<double>(badge->bars.size());
    painter->setPen(QPen(t.dimText, 0.5));
    painter->drawLine(QPointF(8, mid), QPointF(8 + width, mid));
    painter->setPen(Qt::NoPen);
    painter->setBrush(t.text);
    for (size_t i = 0; i < badge->bars.size(); ++i) {
      const double v = std::clamp(static_cast<double>(badge->bars[i]), -1.0, 1.0);
      painter->drawRect(QRectF(8 + w * static_cast<double>(i), v >= 0 ? mid - half * v : mid,
                               std::max(w - 0.6, 0.6), std::max(half * std::abs(v), 0.5)));
    }
  } else {
    const QString shapes = outputText();
    painter->setPen(shapes.contains('?') ? t.dimText : t.text);
    painter->drawText(QRectF(8, y, box.width() - 16 - badgeWidth, kRow),
                      Qt::AlignVCenter | Qt::AlignLeft,
                      fm.elidedText(shapes, Qt::ElideMiddle, box.width() - 16 - badgeWidth));
  }
  paintPorts(painter, font);
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
  const QRectF strip(1, size_.height() - graph::kHealthStripHeight - 1, size_.width() - 2,
                     graph::kHealthStripHeight);
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
  const bool bad = drawsProblem();
  painter->setPen(QPen(isSelected() ? t.selection
                       : bad        ? t.error
                                    : t.border,
                       isSelected() || bad ? 2 : 1));
  painter->setBrush(t.groupBody);
  painter->drawRoundedRect(box, 8, 8);
  QPainterPath header;
  header.addRoundedRect(QRectF(0, 0, box.width(), graph::kFrameHeader), 8, 8);
  header.addRect(QRectF(0, graph::kFrameHeader / 2, box.width(), graph::kFrameHeader / 2));
  // A badge (a diff's kind, a profile's share) tints the title band of an open group, which
  // holds its figure at the right: the members inside carry their own.
  const GraphScene::NodeBadge* badge = scene_.nodeBadge(id_);
  QColor bandColour = t.groupHeader;
  if (badge) {
    bandColour = badge->colour;
    bandColour.setAlpha(t.dark() ? 160 : 190);
  }
  painter->setPen(Qt::NoPen);
  painter->setBrush(bandColour);
  painter->drawPath(header.simplified());

  QFont font = painter->font();
  font.setPointSizeF(8.5);
  QFont bold = font;
  bold.setBold(true);
  QRectF band(10, 0, box.width() - 20, graph::kFrameHeader);
  if (repeats_ > 1)
    band.setRight(band.right() - paintRepeatPill(painter, band.right(), graph::kFrameHeader) - 6);
  if (badge) {
    painter->setFont(bold);
    painter->setPen(t.text);
    painter->drawText(band, Qt::AlignVCenter | Qt::AlignRight, badge->text);
    band.setRight(band.right() - QFontMetricsF(bold).horizontalAdvance(badge->text) - 8);
  }
  QString right = typeName_;
  if (auto it = outShapes_.find("out"); it != outShapes_.end()) right += "  " + it->second;
  const QFontMetricsF fm(font);
  right = fm.elidedText(right, Qt::ElideRight, band.width() * 0.6);
  painter->setFont(font);
  painter->setPen(t.dimText);
  painter->drawText(band, Qt::AlignVCenter | Qt::AlignRight, right);
  painter->setFont(bold);
  painter->setPen(t.text);
  painter->drawText(band, Qt::AlignVCenter | Qt::AlignLeft,
                    QFontMetricsF(bold).elidedText(title_, Qt::ElideRight,
                                                   band.width() - fm.horizontalAdvance(right) - 8));

  // A Sequential's chain and a switch's branches are implicit wires: drawn dashed (a switch's
  // active branch solid), along the layout's routes where the members are still in place.
  const graph::Node& node = scene_.node(id_);
  const std::string active = node.options.is_object() && node.options.contains("active") &&
                                     node.options["active"].is_string()
                                 ? node.options["active"].get<std::string>()
                                 : std::string();
  painter->setBrush(Qt::NoBrush);
  for (const auto& [link, path] : chain_) {
    const graph::Node* member =
        scene_.findNode(link.from.node == id_ ? link.to.node : link.from.node);
    const bool solid = graph::is_switch_dict(node) && member && member->name == active;
    painter->setPen(QPen(t.wire, 1.5, solid ? Qt::SolidLine : Qt::DashLine));
    painter->drawPath(mapFromScene(path));
  }
  paintPorts(painter, font);
}

double NodeItem::paintRepeatPill(QPainter* painter, double right, double bandHeight) {
  // "x12": how many equal blocks this box stands for, on the title bar's right end.
  const CanvasTheme& t = scene_.theme();
  QFont font = painter->font();
  font.setPointSizeF(8.5);
  font.setBold(true);
  const QString text = QString::fromUtf8("\u00d7%1").arg(repeats_);
  const double width = QFontMetricsF(font).horizontalAdvance(text) + 12;
  const QRectF pill(right - width, (bandHeight - 16) / 2, width, 16);
  painter->save();
  painter->setPen(Qt::NoPen);
  painter->setBrush(t.selection);
  painter->drawRoundedRect(pill, 8, 8);
  painter->setFont(font);
  painter->setPen(Qt::white);
  painter->drawText(pill, Qt::AlignCenter, text);
  painter->restore();
  return width;
}

void NodeItem::paintPlain(QPainter* painter) {
  // Thousands of boxes on screen at once: no text, no ports, no curves, no lookups.
  const CanvasTheme& t = scene_.theme();
  painter->setRenderHint(QPainter::Antialiasing, false);
  const QRectF box(QPointF(0, 0), size_);
  const bool bad = drawsProblem();
  const QPen border(isSelected() ? t.selection : bad ? t.error : t.border, 0);
  if (!frame_) {
    painter->setPen(border);
    painter->setBrush(group_ ? t.groupHeader : t.nodeHeader);
    painter->drawRect(box);
    return;
  }
  painter->setPen(border);
  painter->setBrush(t.groupBody);
  painter->drawRect(box);
  painter->setPen(Qt::NoPen);
  painter->setBrush(t.groupHeader);
  painter->drawRect(QRectF(0, 0, box.width(), graph::kFrameHeader));
  painter->setPen(QPen(t.wire, 0));
  for (const auto& [link, path] : chain_) {
    if (path.elementCount() == 0) continue;
    const QPainterPath::Element first = path.elementAt(0);
    painter->drawLine(mapFromScene(QPointF(first.x, first.y)),
                      mapFromScene(path.currentPosition()));
  }
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  if (change == ItemPositionChange && frame_ && !quiet_) {
    // A dragged frame carries its members along (those selected move by themselves).
    const QPointF delta = value.toPointF() - pos();
    movingMembers_ = true;
    for (graph::NodeId m : scene_.node(id_).members) {
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
  readAnalysis();
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
  if (const GraphScene::NodeBadge* badge = scene_.nodeBadge(id_)) lines << badge->tooltip;
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
    scene_.document()->setCollapsed(id_, !node.collapsed);
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
