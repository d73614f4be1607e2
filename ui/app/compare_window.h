// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The model diff's window (File > Compare With...): a canvas of both models at once (the union
// of their graphs, engine/graph/diff.h) with every node added, removed, renamed or changed in
// its own colour, and a Differences table beside it (a click shows the node). With both sides'
// weights, each matched module's outputs and gradients on one batch of A's data and its weights
// are compared side by side (engine/train/model_diff.h), on a worker thread: the structure shows
// at once, the numbers when they are ready, and the nodes whose numbers diverge are tinted by
// how far. The window is a view: nothing in it changes either project.
#include <QMainWindow>
#include <QString>
#include <future>
#include <memory>
#include <optional>

#include "engine/graph/diff.h"
#include "engine/graph/project.h"
#include "engine/nn/module.h"
#include "engine/train/model_diff.h"

class QLabel;
class QTableWidget;
class QTimer;

namespace nns::ui {

class GraphScene;
class GraphView;
class ProjectDocument;

// One side of a comparison as the window holds it.
struct CompareSide {
  graph::Project project;
  std::optional<nn::StateDict> weights;  // none: the project's initial weights
  QString name;                          // "spirals.nns, as trained now (step 120)"
  QString weightsName;                   // what ModelDiff says of the weights
  QString baseDir;                       // its data paths' folder
};

class CompareWindow : public QMainWindow {
  Q_OBJECT

 public:
  CompareWindow(CompareSide a, CompareSide b, int64_t batch, QWidget* parent = nullptr);
  ~CompareWindow() override;

  const graph::ProjectDiff& diff() const { return diff_; }
  // The figures on the batch, once the worker is done (nullopt before).
  const std::optional<train::ModelDiff>& numbers() const { return numbers_; }
  bool numbersReady() const { return numbers_.has_value(); }
  GraphScene* scene() const { return scene_; }
  GraphView* view() const { return view_; }
  QTableWidget* table() const { return table_; }
  QLabel* summary() const { return summary_; }
  // The union's node a table row shows (0 for none).
  graph::NodeId rowNode(int row) const;

  enum Column {
    Change,
    ModuleA,
    ModuleB,
    What,
    Cosine,
    WeightChange,
    OutputNorm,
    GradNorm,
    Columns
  };

 private:
  void fillTable();
  void showNumbers();
  void paintBadges();
  void showRow(int row);

  CompareSide a_, b_;
  int64_t batch_;
  graph::ProjectDiff diff_;
  graph::UnionProject union_;
  std::optional<train::ModelDiff> numbers_;
  std::future<train::ModelDiff> computing_;
  ProjectDocument* document_;
  GraphScene* scene_;
  GraphView* view_;
  QLabel* summary_;
  QTableWidget* table_;
  QTimer* poll_;
};

}  // namespace nns::ui
