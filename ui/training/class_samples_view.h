// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// ClassSamplesView: what an image data set holds, in the dock's data section: a row per class
// with its name, its number of training samples and its first few images (in colour for three
// channels), so a newcomer sees at once what the classes are and whether they are balanced.
// Sets with many classes show the first kRows and say how many more there are.
#include <QImage>
#include <QString>
#include <QWidget>
#include <vector>

#include "engine/data/dataset.h"

namespace nns::ui {

class ClassSamplesView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRows = 10;     // classes shown
  static constexpr int kPerClass = 6;  // images per class
  static constexpr int kThumb = 28;    // pixels per image

  explicit ClassSamplesView(QWidget* parent = nullptr);

  // Shows the set's classes (an image classification set), or hides the view (any other).
  void setDataset(const data::Dataset& dataset);

  struct Row {
    QString name;
    int64_t count = 0;
    std::vector<QImage> images;
  };
  const std::vector<Row>& rows() const { return rows_; }
  int64_t hiddenClasses() const { return hiddenClasses_; }

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  std::vector<Row> rows_;
  int64_t hiddenClasses_ = 0;
};

// Sample i of an image set [N, C, H, W] as a picture: three channels in colour, else the first
// in grey, each channel stretched from its lowest value to its highest (normalized data shows
// as it looks).
QImage sampleImage(const Tensor& images, int64_t index);

}  // namespace nns::ui
