// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A user's data set from a CSV file: a header row of column names, then one sample per row.
// Every column but the label column is a numeric feature; the label column holds classes
// (integers or strings) or, for regression, numbers.
//
//   nns::data::Dataset iris = nns::data::load_csv("iris.csv", "species");
//   iris.class_names;     // {"setosa", "versicolor", "virginica"}
//   iris.inputs;          // float32 [150, 4]
//
// Class labels are numbered in sorted order: numerically when every label is an integer
// (labels 0..k-1 keep their values), otherwise as strings. Cells may be quoted ("a, b" with ""
// for a quote); spaces around cells, a UTF-8 byte-order mark, CRLF line ends and blank lines
// are ignored. Problems throw ValueError naming the file, line and column (KeyError for a
// missing label column, listing the columns); nothing in a file can crash the loader.
#include <cstdint>
#include <string>

#include "engine/data/dataset.h"

namespace nns::data {

struct CsvOptions {
  TaskKind task = TaskKind::Classification;
  // Shift and scale each feature column to mean 0 and standard deviation 1 (constant columns
  // are only shifted).
  bool standardize = false;
  char delimiter = ',';
  // Larger files are refused rather than loaded: the limits keep a mistaken choice of file
  // from taking all memory.
  int64_t max_bytes = int64_t{256} << 20;
  int64_t max_rows = 1000000;
  int64_t max_columns = 10000;
  int64_t max_classes = 1000;
};

// The data set is named after the file (its stem); its input kind is 1-D or 2-D for one or two
// feature columns, tabular otherwise.
Dataset load_csv(const std::string& path, const std::string& label_column,
                 const CsvOptions& options = {});

}  // namespace nns::data
