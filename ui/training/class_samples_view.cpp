// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/training/class_samples_view.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

#include "ui/document/qt_strings.h"

namespace nns::ui {
namespace {

constexpr int kGap = 3;

int rowHeight() {
  return ClassSamplesView::kThumb + kGap;
}

}  // namespace

QImage sampleImage(const Tensor& images, int64_t index) {
  const Tensor x = images.select(0, index).to(kFloat32).contiguous();
  const int64_t channels = x.dim() == 3 ? x.size(0) : 1;
  const int64_t h = x.size(-2);
  const int64_t w = x.size(-1);
  const float* v = x.data_ptr<float>();
  const int64_t plane = h * w;
  const bool colour = channels == 3;
  std::vector<float> low(static_cast<size_t>(channels)), high(low.size());
  for (int64_t c = 0; c < channels; ++c) {
    const auto [lo, hi] = std::minmax_element(v + c * plane, v + (c + 1) * plane);
    low[c] = *lo;
    high[c] = *hi > *lo ? *hi : *lo + 1;
  }
  auto level = [&](int64_t c, int64_t p) {
    return static_cast<int>(std::lround(255.0 * (v[c * plane + p] - low[c]) / (high[c] - low[c])));
  };
  QImage image(static_cast<int>(w), static_cast<int>(h), QImage::Format_RGB32);
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t xx = 0; xx < w; ++xx) {
      const int64_t p = y * w + xx;
      const int g = level(0, p);
      image.setPixel(static_cast<int>(xx), static_cast<int>(y),
                     colour ? qRgb(g, level(1, p), level(2, p)) : qRgb(g, g, g));
    }
  }
  return image;
}

ClassSamplesView::ClassSamplesView(QWidget* parent) : QWidget(parent) {
  QSizePolicy policy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  policy.setHeightForWidth(true);
  setSizePolicy(policy);
  hide();
}

void ClassSamplesView::setDataset(const data::Dataset& d) {
  rows_.clear();
  hiddenClasses_ = 0;
  const bool images = d.input_kind == data::InputKind::Image &&
                      d.task == data::TaskKind::Classification && !d.per_position() &&
                      d.size() > 0 && d.sample_shape().size() >= 2;
  if (!images) {
    hide();
    return;
  }
  const std::vector<int64_t> counts = d.class_counts();
  const std::vector<int64_t> labels = d.targets.to_vector<int64_t>();
  const auto classes = static_cast<int64_t>(counts.size());
  const int64_t shown = std::min<int64_t>(classes, kRows);
  hiddenClasses_ = classes - shown;
  rows_.resize(static_cast<size_t>(shown));
  for (int64_t c = 0; c < shown; ++c) {
    Row& row = rows_[static_cast<size_t>(c)];
    row.name =
        c < static_cast<int64_t>(d.class_names.size()) ? qs(d.class_names[c]) : QString::number(c);
    row.count = counts[static_cast<size_t>(c)];
  }
  // The first kPerClass samples of each shown class, in the set's order (decoded together when
  // the set is streamed).
  std::vector<int64_t> picked;
  std::vector<int> taken(static_cast<size_t>(shown), 0);
  for (size_t i = 0; i < labels.size(); ++i) {
    const int64_t c = labels[i];
    if (c < 0 || c >= shown || taken[static_cast<size_t>(c)] >= kPerClass) continue;
    ++taken[static_cast<size_t>(c)];
    picked.push_back(static_cast<int64_t>(i));
  }
  const Tensor pictures = d.input_rows(picked);
  for (size_t k = 0; k < picked.size(); ++k) {
    rows_[static_cast<size_t>(labels[static_cast<size_t>(picked[k])])].images.push_back(
        sampleImage(pictures, static_cast<int64_t>(k)));
  }
  setToolTip(tr("Each class of the training set: its name, its samples and the first of them"));
  show();
  updateGeometry();
  update();
}

int ClassSamplesView::heightForWidth(int) const {
  const int extra = hiddenClasses_ > 0 ? fontMetrics().height() + kGap : 0;
  return static_cast<int>(rows_.size()) * rowHeight() + extra + kGap;
}

QSize ClassSamplesView::sizeHint() const {
  const int width = 120 + kPerClass * (kThumb + kGap);
  return {width, heightForWidth(width)};
}

void ClassSamplesView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  const QFontMetrics fm = fontMetrics();
  // The name column takes what the images leave, between 80 and 140 pixels.
  const int imagesWidth = kPerClass * (kThumb + kGap);
  const int nameWidth = std::clamp(width() - imagesWidth, 80, 140);
  const int perRow = std::max(0, std::min(kPerClass, (width() - nameWidth) / (kThumb + kGap)));
  int y = kGap;
  for (const Row& row : rows_) {
    const QRect text(0, y, nameWidth - 4, kThumb);
    p.setPen(palette().color(QPalette::WindowText));
    p.drawText(text.adjusted(0, 0, 0, -kThumb / 2), Qt::AlignLeft | Qt::AlignBottom,
               fm.elidedText(row.name, Qt::ElideRight, text.width()));
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(text.adjusted(0, kThumb / 2, 0, 0), Qt::AlignLeft | Qt::AlignTop,
               row.count == 1 ? tr("1 image") : tr("%1 images").arg(row.count));
    for (int k = 0; k < perRow && k < static_cast<int>(row.images.size()); ++k) {
      const QRect box(nameWidth + k * (kThumb + kGap), y, kThumb, kThumb);
      p.drawImage(box, row.images[static_cast<size_t>(k)]);
    }
    y += rowHeight();
  }
  if (hiddenClasses_ > 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(QRect(0, y, width(), fm.height()), Qt::AlignLeft,
               hiddenClasses_ == 1 ? tr("and 1 more class")
                                   : tr("and %1 more classes").arg(hiddenClasses_));
  }
}

}  // namespace nns::ui
