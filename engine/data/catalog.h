// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The built-in data sets by name, for a UI that lists them and a project file that stores a
// data set as a name and its options. Each entry says what the set is and which options it
// takes, with their types, defaults and ranges; make_dataset builds one from a name and a
// name -> value map.
//
//   for (const nns::data::DatasetInfo& info : nns::data::dataset_catalog()) ...
//   nns::data::Dataset d = nns::data::make_dataset("spirals", {{"classes", 2.0}, {"noise", 0.1}});
//   nns::data::make_dataset("curve", {{"curve", std::string("cubic")}});
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "engine/data/dataset.h"

namespace nns::data {

enum class OptionType { Integer, Real, Choice, File };

// One option of a data set: a number in [min, max] (whole for Integer), one of `choices`, or
// the path of a file (File; a project keeps it relative to its folder).
struct OptionInfo {
  std::string name;
  std::string description;
  OptionType type = OptionType::Real;
  double default_value = 0;  // Integer, Real
  double min = 0;
  double max = 0;
  std::string default_choice;        // Choice, File
  std::vector<std::string> choices;  // Choice
  // File: what the file chooser offers, as "Text files (*.txt)".
  std::string file_filter{};
};

struct DatasetInfo {
  std::string name;
  std::string description;
  TaskKind task = TaskKind::Classification;
  // The input kind with the default options (blobs with dims != 2 are not 2-D).
  InputKind input_kind = InputKind::Points2D;
  std::vector<OptionInfo> options;

  // The option with this name; KeyError listing the options when there is none.
  const OptionInfo& option(const std::string& option_name) const;
};

// A number for Integer and Real options, a string for Choice and File options.
using OptionValue = std::variant<double, std::string>;
using DatasetOptions = std::map<std::string, OptionValue>;

// Every built-in data set, in the order a UI lists them.
std::vector<DatasetInfo> dataset_catalog();
// The entry for one data set; KeyError listing the known names when there is none.
const DatasetInfo& dataset_info(const std::string& name);

// Builds a data set from the catalog: options left out take their defaults. Throws KeyError
// for an unknown data set or option (listing the known ones) and ValueError for a value of
// the wrong kind, a fraction for an Integer option, or a value outside the option's range.
Dataset make_dataset(const std::string& name, const DatasetOptions& options = {});

// Throws ValueError when `value` is outside the catalog's range for this option of this data
// set, or not whole for an Integer option. The make_* functions check their options with it,
// so the catalog is the one place where the limits live.
void check_option(const std::string& dataset, const std::string& option, double value);
// The same for a Choice option: ValueError listing the choices when `value` is none of them
// (a File option takes any path; the data set says when it cannot read it).
void check_option(const std::string& dataset, const std::string& option, const std::string& value);

}  // namespace nns::data
