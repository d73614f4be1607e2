// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Shows a cell in an error message, cut short when long.
std::string shown(std::string_view cell) {
  constexpr size_t kShown = 40;
  return "'" + std::string(cell.substr(0, kShown)) + (cell.size() > kShown ? "...'" : "'");
}

// A whole cell as a double, or nothing when it is not a number from start to end.
std::optional<double> parse_number(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (error != std::errc() || end != cell.data() + cell.size() || cell.empty()) {
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> parse_integer(std::string_view cell) {
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  int64_t value = 0;
  const auto [end, error] = std::from_chars(cell.data(), cell.data() + cell.size(), value);
  if (error != std::errc() || end != cell.data() + cell.size() || cell.empty()) {
    return std::nullopt;
  }
  return value;
}

class CsvReader {
 public:
  CsvReader(std::string path, std::string text, char delimiter)
      : path_(std::move(path)), text_(std::move(text)), delimiter_(delimiter) {
    // A UTF-8 byte-order mark, as spreadsheet programs write it.
    if (text_.rfind("\xEF\xBB\xBF", 0) == 0) position_ = 3;
  }

  // The cells of the next non-blank line, or false at the end of the file.
  bool next_row(std::vector<std::string>& cells) {
    while (position_ < text_.size()) {
      size_t end = text_.find('\n', position_);
      if (end == std::string::npos) end = text_.size();
      std::string_view line(text_.data() + position_, end - position_);
      position_ = end + 1;
      ++line_number_;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (trim(line).empty()) continue;
      split(line, cells);
      return true;
    }
    return false;
  }

  int64_t line_number() const { return line_number_; }
  const std::string& path() const { return path_; }
  // "data.csv:7"
  std::string where() const { return path_ + ":" + std::to_string(line_number_); }

 private:
  void split(std::string_view line, std::vector<std::string>& cells) {
    cells.clear();
    size_t i = 0;
    while (true) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      std::string cell;
      if (i < line.size() && line[i] == '"') {
        const size_t open = i++;
        bool closed = false;
        while (i < line.size()) {
          if (line[i] == '"') {
            if (i + 1 < line.size() && line[i + 1] == '"') {
              cell += '"';
              i += 2;
              continue;
            }
            closed = true;
            ++i;
            break;
          }
          cell += line[i++];
        }
        if (!closed) {
          throw ValueError("load_csv: " + where() + ": the quote opened at column " +
                           std::to_string(cells.size() + 1) + " (character " +
                           std::to_string(open + 1) + ") is not closed; cells cannot span lines");
        }
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        if (i < line.size() && line[i] != delimiter_) {
          throw ValueError("load_csv: " + where() + ": column " + std::to_string(cells.size() + 1) +
                           " has text after its closing quote; quote the whole cell");
        }
      } else {
        size_t end = line.find(delimiter_, i);
        if (end == std::string_view::npos) end = line.size();
        cell = std::string(trim(line.substr(i, end - i)));
        i = end;
      }
      cells.push_back(std::move(cell));
      if (i >= line.size()) break;
      ++i;  // the delimiter
      if (i == line.size()) {
        cells.emplace_back();  // a trailing delimiter ends with an empty cell
        break;
      }
    }
  }

  std::string path_;
  std::string text_;
  char delimiter_;
  size_t position_ = 0;
  int64_t line_number_ = 0;
};

std::string read_file(const std::string& path, const CsvOptions& options) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    throw ValueError(
        "load_csv: cannot open '" + path + "': " +
        (std::filesystem::exists(path, error) ? "it is not a regular file" : "no such file"));
  }
  const auto size = static_cast<int64_t>(std::filesystem::file_size(path, error));
  if (error) throw ValueError("load_csv: cannot read '" + path + "': " + error.message());
  if (size > options.max_bytes) {
    throw ValueError("load_csv: '" + path + "' has " + std::to_string(size) +
                     " bytes, more than the limit of " + std::to_string(options.max_bytes) +
                     "; use a smaller file or raise CsvOptions::max_bytes");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError("load_csv: cannot open '" + path + "' for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void check_options(const std::string& path, const CsvOptions& options) {
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r') {
    throw ValueError("load_csv: '" + path + "': the delimiter cannot be a quote or a line end");
  }
  if (options.max_bytes < 0 || options.max_rows < 1 || options.max_columns < 2 ||
      options.max_classes < 1) {
    throw ValueError("load_csv: '" + path +
                     "': the limits must allow one row, two columns and one class");
  }
}

// The header row: at most max_columns names, each used once.
std::vector<std::string> read_header(CsvReader& reader, const CsvOptions& options) {
  std::vector<std::string> header;
  if (!reader.next_row(header)) {
    throw ValueError("load_csv: '" + reader.path() +
                     "' is empty; expected a header row of column names, then one row per sample");
  }
  const auto columns = static_cast<int64_t>(header.size());
  if (columns > options.max_columns) {
    throw ValueError("load_csv: " + reader.where() + ": the header has " + std::to_string(columns) +
                     " columns, more than the limit of " + std::to_string(options.max_columns));
  }
  for (int64_t c = 0; c < columns; ++c) {
    for (int64_t k = 0; k < c; ++k) {
      if (header[c] == header[k]) {
        throw ValueError("load_csv: " + reader.where() + ": columns " + std::to_string(k + 1) +
                         " and " + std::to_string(c + 1) + " are both named '" + header[c] +
                         "'; give every column its own name");
      }
    }
  }
  return header;
}

// Where label_column is in the header, which must also have a feature column.
int64_t find_label_column(const std::vector<std::string>& header, const std::string& label_column,
                          const std::string& path) {
  const auto label_it = std::find(header.begin(), header.end(), label_column);
  if (label_it == header.end()) {
    std::string column_list;
    for (const std::string& name : header) column_list += (column_list.empty() ? "" : ", ") + name;
    throw KeyError("load_csv: '" + path + "' has no column named '" + label_column +
                   "'; its columns are " + column_list);
  }
  if (header.size() < 2) {
    throw ValueError("load_csv: '" + path + "' has only the label column '" + label_column +
                     "'; add at least one feature column");
  }
  return static_cast<int64_t>(label_it - header.begin());
}

// The data rows, as read so far.
struct Samples {
  std::vector<float> features;           // row-major, the label column left out
  std::vector<float> numeric_labels;     // regression
  std::vector<std::string> text_labels;  // classification
  int64_t rows = 0;
};

// Adds the cells of one data row (as many as the header has columns) to samples.
void add_row(const std::vector<std::string>& cells, const CsvReader& reader,
             const std::vector<std::string>& header, int64_t label_index, bool regression,
             Samples& samples) {
  const auto columns = static_cast<int64_t>(header.size());
  for (int64_t c = 0; c < columns; ++c) {
    const std::string& cell = cells[static_cast<size_t>(c)];
    const auto place = [&] {
      return "load_csv: " + reader.where() + ", column " + std::to_string(c + 1) + " ('" +
             header[c] + "')";
    };
    if (cell.empty()) {
      throw ValueError(place() + ": the cell is empty; fill it in or remove the row");
    }
    if (c == label_index && !regression) {
      samples.text_labels.push_back(cell);
      continue;
    }
    const std::optional<double> value = parse_number(cell);
    if (!value) {
      throw ValueError(place() + ": " + shown(cell) + " is not a number" +
                       (c == label_index ? "; a regression target must be numeric" : ""));
    }
    if (!std::isfinite(*value) || std::abs(*value) > 3.4e38) {
      throw ValueError(place() + ": " + shown(cell) + " is not a finite float32 number");
    }
    (c == label_index ? samples.numeric_labels : samples.features)
        .push_back(static_cast<float>(*value));
  }
}

// The rows after the header: at least one, at most max_rows, each as wide as the header.
Samples read_samples(CsvReader& reader, const std::vector<std::string>& header, int64_t label_index,
                     const CsvOptions& options) {
  const auto columns = static_cast<int64_t>(header.size());
  const bool regression = options.task == TaskKind::Regression;
  Samples samples;
  std::vector<std::string> cells;
  while (reader.next_row(cells)) {
    if (static_cast<int64_t>(cells.size()) != columns) {
      throw ValueError("load_csv: " + reader.where() + ": the row has " +
                       std::to_string(cells.size()) + " cells but the header has " +
                       std::to_string(columns) + " columns");
    }
    if (samples.rows == options.max_rows) {
      throw ValueError("load_csv: '" + reader.path() + "' has more than " +
                       std::to_string(options.max_rows) +
                       " data rows; use a smaller file or raise CsvOptions::max_rows");
    }
    add_row(cells, reader, header, label_index, regression, samples);
    ++samples.rows;
  }
  if (samples.rows == 0) {
    throw ValueError("load_csv: '" + reader.path() + "' has a header but no data rows");
  }
  return samples;
}

// Shifts and scales each of the dims columns of features to mean 0 and standard deviation 1;
// a constant column is only shifted.
void standardize(std::vector<float>& features, int64_t rows, int64_t dims) {
  for (int64_t k = 0; k < dims; ++k) {
    double sum = 0;
    double sum2 = 0;
    for (int64_t r = 0; r < rows; ++r) sum += features[static_cast<size_t>(r * dims + k)];
    const double mean = sum / static_cast<double>(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const double d = features[static_cast<size_t>(r * dims + k)] - mean;
      sum2 += d * d;
    }
    const double std = std::sqrt(sum2 / static_cast<double>(rows));
    const double scale = std > 0 ? 1 / std : 1;
    for (int64_t r = 0; r < rows; ++r) {
      float& x = features[static_cast<size_t>(r * dims + k)];
      x = static_cast<float>((x - mean) * scale);
    }
  }
}

// Sets data's classes and targets from the text labels, the classes numbered in sorted order:
// as integers when every label is one.
void set_classes(Dataset& data, const Samples& samples, const std::string& path,
                 const std::string& label_column, const CsvOptions& options) {
  const std::vector<std::string>& text_labels = samples.text_labels;
  bool all_integers = true;
  std::map<int64_t, int64_t> integer_classes;
  for (const std::string& label : text_labels) {
    const std::optional<int64_t> v = parse_integer(label);
    if (!v) {
      all_integers = false;
      break;
    }
    integer_classes.emplace(*v, 0);
  }
  std::map<std::string, int64_t> string_classes;
  if (!all_integers) {
    for (const std::string& label : text_labels) string_classes.emplace(label, 0);
  }
  const size_t class_count = all_integers ? integer_classes.size() : string_classes.size();
  if (static_cast<int64_t>(class_count) > options.max_classes) {
    throw ValueError("load_csv: '" + path + "': the label column '" + label_column + "' has " +
                     std::to_string(class_count) + " distinct values, more than the limit of " +
                     std::to_string(options.max_classes) +
                     " classes; for a numeric target use the regression task");
  }
  int64_t next = 0;
  for (auto& [value, index] : integer_classes) {
    index = next++;
    data.class_names.push_back(std::to_string(value));
  }
  for (auto& [name, index] : string_classes) {
    index = next++;
    data.class_names.push_back(name);
  }
  std::vector<int64_t> labels;
  labels.reserve(text_labels.size());
  for (const std::string& label : text_labels) {
    labels.push_back(all_integers ? integer_classes.at(*parse_integer(label))
                                  : string_classes.at(label));
  }
  data.num_classes = static_cast<int64_t>(class_count);
  data.targets = from_vector(labels, {samples.rows});
}

}  // namespace

Dataset load_csv(const std::string& path, const std::string& label_column,
                 const CsvOptions& options) {
  check_options(path, options);
  CsvReader reader(path, read_file(path, options), options.delimiter);
  const std::vector<std::string> header = read_header(reader, options);
  const int64_t label = find_label_column(header, label_column, path);
  Samples samples = read_samples(reader, header, label, options);

  const int64_t dims = static_cast<int64_t>(header.size()) - 1;
  Dataset data;
  data.name = std::filesystem::path(path).stem().string();
  data.task = options.task;
  data.input_kind = dims == 1   ? InputKind::Curve1D
                    : dims == 2 ? InputKind::Points2D
                                : InputKind::Tabular;
  for (int64_t c = 0; c < static_cast<int64_t>(header.size()); ++c) {
    if (c != label) data.feature_names.push_back(header[c]);
  }
  if (options.standardize) standardize(samples.features, samples.rows, dims);
  data.inputs = from_vector(samples.features, {samples.rows, dims});

  if (options.task == TaskKind::Regression) {
    data.targets = from_vector(samples.numeric_labels, {samples.rows, 1});
    return data;
  }
  set_classes(data, samples, path, label_column, options);
  return data;
}

}  // namespace nns::data
