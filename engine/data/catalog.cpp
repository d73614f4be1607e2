// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/catalog.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "engine/data/generators.h"
#include "engine/data/sequences.h"

namespace nns::data {
namespace {

// The largest seed: the generator keeps the low 32 bits, and every seed in range is exact in
// the double of an OptionValue.
constexpr double kMaxSeed = 4294967295.0;
constexpr double kMaxPoints = 100000;

OptionInfo integer(std::string name, std::string description, int64_t default_value, double min,
                   double max) {
  return {std::move(name),
          std::move(description),
          OptionType::Integer,
          static_cast<double>(default_value),
          min,
          max,
          {},
          {},
          {}};
}

OptionInfo real(std::string name, std::string description, double default_value, double min,
                double max) {
  return {std::move(name),
          std::move(description),
          OptionType::Real,
          default_value,
          min,
          max,
          {},
          {},
          {}};
}

OptionInfo choice(std::string name, std::string description, std::string default_choice,
                  std::vector<std::string> choices) {
  return {std::move(name),
          std::move(description),
          OptionType::Choice,
          0,
          0,
          0,
          std::move(default_choice),
          std::move(choices),
          {}};
}

OptionInfo file(std::string name, std::string description, std::string filter) {
  OptionInfo info;
  info.name = std::move(name);
  info.description = std::move(description);
  info.type = OptionType::File;
  info.file_filter = std::move(filter);
  return info;
}

OptionInfo samples(int64_t default_value, double min, double max) {
  return integer("samples", "number of samples (all classes together)", default_value, min, max);
}

OptionInfo noise(double default_value, std::string description) {
  return real("noise", std::move(description), default_value, 0, 10);
}

OptionInfo seed(uint64_t default_value) {
  return integer("seed", "seed of the random numbers: the same seed gives the same data",
                 static_cast<int64_t>(default_value), 0, kMaxSeed);
}

std::string number(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

template <class Items, class Name>
std::string listing(const Items& items, Name name) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + name(item);
  return text;
}

std::string choices_text(const OptionInfo& info) {
  return listing(info.choices, [](const std::string& c) { return "'" + c + "'"; });
}

void check_number(const std::string& dataset, const OptionInfo& info, double value) {
  const std::string where = dataset + ": option '" + info.name + "'";
  if (info.type == OptionType::Choice) {
    throw ValueError(where + " expects one of " + choices_text(info) + ", got the number " +
                     number(value));
  }
  if (info.type == OptionType::File) {
    throw ValueError(where + " expects the path of a file, got the number " + number(value));
  }
  if (info.type == OptionType::Integer && !(std::isfinite(value) && value == std::floor(value))) {
    throw ValueError(where + " must be a whole number, got " + number(value));
  }
  if (!(value >= info.min && value <= info.max)) {
    throw ValueError(where + " must be in [" + number(info.min) + ", " + number(info.max) +
                     "], got " + number(value));
  }
}

void check_choice(const std::string& dataset, const OptionInfo& info, const std::string& value) {
  const std::string where = dataset + ": option '" + info.name + "'";
  if (info.type == OptionType::File) return;
  if (info.type != OptionType::Choice) {
    throw ValueError(where + " expects a number, got the string '" + value + "'");
  }
  if (std::find(info.choices.begin(), info.choices.end(), value) == info.choices.end()) {
    throw ValueError(where + " must be one of " + choices_text(info) + ", got '" + value + "'");
  }
}

// The options with defaults filled in, each checked; numbers as doubles, choices as strings.
class ResolvedOptions {
 public:
  ResolvedOptions(const DatasetInfo& info, const DatasetOptions& given)
      : info_(info), given_(given) {
    for (const auto& [name, value] : given) {
      const OptionInfo& option = info.option(name);
      if (const double* x = std::get_if<double>(&value)) {
        check_number(info.name, option, *x);
      } else {
        check_choice(info.name, option, std::get<std::string>(value));
      }
    }
  }

  double number(const std::string& name) const {
    const auto it = given_.find(name);
    return it != given_.end() ? std::get<double>(it->second) : info_.option(name).default_value;
  }
  int64_t integer(const std::string& name) const { return static_cast<int64_t>(number(name)); }
  uint64_t seed() const { return static_cast<uint64_t>(number("seed")); }
  std::string choice(const std::string& name) const {
    const auto it = given_.find(name);
    return it != given_.end() ? std::get<std::string>(it->second)
                              : info_.option(name).default_choice;
  }

 private:
  const DatasetInfo& info_;
  const DatasetOptions& given_;
};

// The catalog, with defaults taken from the option structs so that they agree.
const std::vector<DatasetInfo>& catalog() {
  static const std::vector<DatasetInfo> entries = [] {
    const SpiralsOptions spirals;
    const MoonsOptions moons;
    const CirclesOptions circles;
    const XorOptions xor_;
    const BlobsOptions blobs;
    const CheckerboardOptions board;
    const CurveOptions curve;
    const DigitsOptions digits;
    const ParityOptions parity;
    const DigitSequenceOptions sequence;
    const AdditionOptions addition;
    const ForecastOptions forecast;
    const TextOptions text;
    const auto label_noise = [](double default_value, const char* what) {
      return real("noise", std::string("fraction of the ") + what + " replaced at random",
                  default_value, 0, 1);
    };
    return std::vector<DatasetInfo>{
        {"spirals",
         "interleaved spiral arms, one per class",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(spirals.samples, 2, kMaxPoints),
          integer("classes", "number of spiral arms", spirals.classes, 2, 10),
          noise(spirals.noise, "standard deviation of the angle, in radians"), seed(spirals.seed)}},
        {"moons",
         "two interleaving half circles",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(moons.samples, 2, kMaxPoints),
          noise(moons.noise, "standard deviation of the Gaussian added to each coordinate"),
          seed(moons.seed)}},
        {"circles",
         "a small circle inside a larger one",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(circles.samples, 2, kMaxPoints),
          noise(circles.noise, "standard deviation of the Gaussian added to each coordinate"),
          real("factor", "radius of the inner circle (the outer one has radius 1)", circles.factor,
               0.01, 0.99),
          seed(circles.seed)}},
        {"xor",
         "the four quadrants: same-sign and opposite-sign coordinates",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(xor_.samples, 2, kMaxPoints),
          noise(xor_.noise, "standard deviation of the jitter added after labelling"),
          seed(xor_.seed)}},
        {"blobs",
         "Gaussian clusters, one per class, in any number of dimensions",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(blobs.samples, 2, kMaxPoints),
          integer("classes", "number of clusters", blobs.classes, 2, 20),
          integer("dims", "number of input features", blobs.dims, 1, 100),
          noise(blobs.noise, "spread: standard deviation of each cluster along each axis"),
          real("center_range", "cluster centers are uniform in [-center_range, center_range]",
               blobs.center_range, 0, 100),
          seed(blobs.seed)}},
        {"checkerboard",
         "a board of square tiles of alternating classes",
         TaskKind::Classification,
         InputKind::Points2D,
         {samples(board.samples, 2, kMaxPoints),
          integer("tiles", "tiles along each side", board.tiles, 2, 16),
          noise(board.noise, "standard deviation of the jitter added after labelling"),
          seed(board.seed)}},
        {"curve",
         "1-D regression: y = f(x) + noise for x in [-1, 1]",
         TaskKind::Regression,
         InputKind::Curve1D,
         {samples(curve.samples, 2, kMaxPoints),
          noise(curve.noise, "standard deviation of the Gaussian added to y"),
          choice("curve",
                 "f: xsin = x sin(2 pi x), sine = sin(pi x), cubic = 2x^3 - x, step = 0.5 sign(x)",
                 curve.curve, curve_names()),
          seed(curve.seed)}},
        {"digits",
         "images of the digits 0-9 drawn by the program, with shifts, distortion and noise",
         TaskKind::Classification,
         InputKind::Image,
         {samples(digits.samples, 10, 20000),
          integer("size", "image side in pixels", digits.size, 8, 32),
          real("noise", "standard deviation of the pixel noise (pixels are in [0, 1])",
               digits.noise, 0, 1),
          real("shift", "largest shift of the digit, as a fraction of the image side", digits.shift,
               0, 0.5),
          real("distortion", "scales the random rotation, shear, size and stroke width",
               digits.distortion, 0, 2),
          seed(digits.seed)}},
        {"parity",
         "bit strings: is the number of ones odd?",
         TaskKind::Classification,
         InputKind::Sequence,
         {samples(parity.samples, 2, kMaxPoints),
          integer("length", "bits per string", parity.length, 1, 64),
          label_noise(parity.noise, "labels"), seed(parity.seed)}},
        {"reverse",
         "digit sequences to write back to front, a digit per position",
         TaskKind::Classification,
         InputKind::Sequence,
         {samples(sequence.samples, 2, kMaxPoints),
          integer("length", "digits per sequence", sequence.length, 1, 64),
          integer("digits", "the vocabulary: digits 0 to digits - 1", sequence.digits, 2, 10),
          label_noise(sequence.noise, "target digits"), seed(sequence.seed)}},
        {"sort",
         "digit sequences to sort ascending, a digit per position",
         TaskKind::Classification,
         InputKind::Sequence,
         {samples(sequence.samples, 2, kMaxPoints),
          integer("length", "digits per sequence", sequence.length, 1, 64),
          integer("digits", "the vocabulary: digits 0 to digits - 1", sequence.digits, 2, 10),
          label_noise(sequence.noise, "target digits"), seed(sequence.seed)}},
        {"addition",
         "a + b = written as digit tokens; the model writes the sum's digits",
         TaskKind::Classification,
         InputKind::Sequence,
         {samples(addition.samples, 2, kMaxPoints),
          integer("digits", "digits of each number", addition.digits, 1, 8),
          label_noise(addition.noise, "sum digits"), seed(addition.seed)}},
        {"forecast",
         "windows of a noisy wave: predict the next value",
         TaskKind::Regression,
         InputKind::Sequence,
         {samples(forecast.samples, 2, kMaxPoints),
          integer("length", "values per window", forecast.length, 1, 256),
          noise(forecast.noise, "standard deviation of the Gaussian added to each value"),
          choice("wave", "the wave: sine or sawtooth, period 8 to 24 steps, random phase",
                 forecast.wave, wave_names()),
          seed(forecast.seed)}},
        {"text",
         "character-level language modelling of a text file: the next character at each place",
         TaskKind::Classification,
         InputKind::Sequence,
         {file("file", "the text file (UTF-8 or ASCII; read as bytes)",
               "Text files (*.txt *.md *.csv *.py);;All files (*)"),
          samples(text.samples, 1, kMaxPoints),
          integer("length", "characters per window", text.length, 1, 1024), seed(text.seed)}},
    };
  }();
  return entries;
}

// How make_dataset builds each catalog entry (the catalog test builds every one).
using Builder = Dataset (*)(const ResolvedOptions&);
const std::map<std::string, Builder>& builders() {
  static const std::map<std::string, Builder> table = {
      {"spirals",
       [](const ResolvedOptions& o) {
         return make_spirals(
             {o.integer("samples"), o.integer("classes"), o.number("noise"), o.seed()});
       }},
      {"moons",
       [](const ResolvedOptions& o) {
         return make_moons({o.integer("samples"), o.number("noise"), o.seed()});
       }},
      {"circles",
       [](const ResolvedOptions& o) {
         return make_circles(
             {o.integer("samples"), o.number("noise"), o.number("factor"), o.seed()});
       }},
      {"xor",
       [](const ResolvedOptions& o) {
         return make_xor({o.integer("samples"), o.number("noise"), o.seed()});
       }},
      {"blobs",
       [](const ResolvedOptions& o) {
         return make_blobs({o.integer("samples"), o.integer("classes"), o.integer("dims"),
                            o.number("noise"), o.number("center_range"), o.seed()});
       }},
      {"checkerboard",
       [](const ResolvedOptions& o) {
         return make_checkerboard(
             {o.integer("samples"), o.integer("tiles"), o.number("noise"), o.seed()});
       }},
      {"curve",
       [](const ResolvedOptions& o) {
         return make_curve({o.integer("samples"), o.number("noise"), o.choice("curve"), o.seed()});
       }},
      {"digits",
       [](const ResolvedOptions& o) {
         return make_digits({o.integer("samples"), o.integer("size"), o.number("noise"),
                             o.number("shift"), o.number("distortion"), o.seed()});
       }},
      {"parity",
       [](const ResolvedOptions& o) {
         return make_parity(
             {o.integer("samples"), o.integer("length"), o.number("noise"), o.seed()});
       }},
      {"reverse",
       [](const ResolvedOptions& o) {
         return make_reverse({o.integer("samples"), o.integer("length"), o.integer("digits"),
                              o.number("noise"), o.seed()});
       }},
      {"sort",
       [](const ResolvedOptions& o) {
         return make_sort({o.integer("samples"), o.integer("length"), o.integer("digits"),
                           o.number("noise"), o.seed()});
       }},
      {"addition",
       [](const ResolvedOptions& o) {
         return make_addition(
             {o.integer("samples"), o.integer("digits"), o.number("noise"), o.seed()});
       }},
      {"forecast",
       [](const ResolvedOptions& o) {
         return make_forecast({o.integer("samples"), o.integer("length"), o.number("noise"),
                               o.choice("wave"), o.seed()});
       }},
      {"text",
       [](const ResolvedOptions& o) {
         return make_text({o.choice("file"), o.integer("samples"), o.integer("length"), o.seed()});
       }},
  };
  return table;
}

}  // namespace

const OptionInfo& DatasetInfo::option(const std::string& option_name) const {
  for (const OptionInfo& o : options) {
    if (o.name == option_name) return o;
  }
  throw KeyError(name + ": unknown option '" + option_name + "'; its options are " +
                 listing(options, [](const OptionInfo& o) { return o.name; }));
}

std::vector<DatasetInfo> dataset_catalog() {
  return catalog();
}

const DatasetInfo& dataset_info(const std::string& name) {
  for (const DatasetInfo& info : catalog()) {
    if (info.name == name) return info;
  }
  throw KeyError("unknown data set '" + name + "'; the data sets are " +
                 listing(catalog(), [](const DatasetInfo& i) { return i.name; }));
}

void check_option(const std::string& dataset, const std::string& option, double value) {
  check_number(dataset, dataset_info(dataset).option(option), value);
}

void check_option(const std::string& dataset, const std::string& option, const std::string& value) {
  check_choice(dataset, dataset_info(dataset).option(option), value);
}

Dataset make_dataset(const std::string& name, const DatasetOptions& options) {
  const DatasetInfo& info = dataset_info(name);
  return builders().at(name)(ResolvedOptions(info, options));
}

}  // namespace nns::data
