// SPDX-License-Identifier: GPL-3.0-or-later
// The 2-D, n-D and 1-D generators; the digits are in digits.cpp. Random numbers are drawn in
// whole blocks (rand/randn of a shape) in a fixed order, so every set is a pure function of
// its options.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/data/catalog.h"
#include "engine/data/generators.h"
#include "engine/data/generators_internal.h"
#include "engine/tensor/factories.h"

namespace nns::data {

std::vector<int64_t> class_sizes(int64_t samples, int64_t classes) {
  std::vector<int64_t> sizes(static_cast<size_t>(classes), samples / classes);
  for (int64_t c = 0; c < samples % classes; ++c) ++sizes[static_cast<size_t>(c)];
  return sizes;
}

std::vector<double> uniform_draws(Generator& generator, int64_t n) {
  return rand({n}, kFloat64, &generator).to_vector<double>();
}

std::vector<double> normal_draws(Generator& generator, int64_t n) {
  return randn({n}, kFloat64, &generator).to_vector<double>();
}

std::vector<std::string> numbered_names(const std::string& prefix, int64_t count, int64_t first) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < count; ++i) names.push_back(prefix + std::to_string(first + i));
  return names;
}

void check_at_least(const std::string& dataset, const char* option, int64_t value, int64_t min,
                    const std::string& why) {
  if (value < min) {
    throw ValueError(dataset + ": option '" + option + "' must be at least " + std::to_string(min) +
                     " " + why + ", got " + std::to_string(value));
  }
}

namespace {

// A classification set of points with one row of `dims` coordinates per label.
Dataset classification(std::string name, const std::vector<double>& coords,
                       std::vector<int64_t> labels, int64_t dims, int64_t classes,
                       std::vector<std::string> class_names = {}) {
  const auto n = static_cast<int64_t>(labels.size());
  Dataset d;
  d.name = std::move(name);
  d.task = TaskKind::Classification;
  d.input_kind = dims == 2   ? InputKind::Points2D
                 : dims == 1 ? InputKind::Curve1D
                             : InputKind::Tabular;
  const std::vector<float> values(coords.begin(), coords.end());
  d.inputs = from_vector(values, {n, dims});
  d.targets = from_vector(labels, {n});
  d.num_classes = classes;
  d.feature_names = dims == 1 ? std::vector<std::string>{"x"} : numbered_names("x", dims, 1);
  d.class_names = class_names.empty() ? numbered_names("", classes, 0) : std::move(class_names);
  return d;
}

void check_common(const std::string& dataset, int64_t samples, double noise, uint64_t seed) {
  check_option(dataset, "samples", static_cast<double>(samples));
  check_option(dataset, "noise", noise);
  check_option(dataset, "seed", static_cast<double>(seed));
}

}  // namespace

Dataset make_spirals(const SpiralsOptions& o) {
  check_common("spirals", o.samples, o.noise, o.seed);
  check_option("spirals", "classes", static_cast<double>(o.classes));
  check_at_least("spirals", "samples", o.samples, o.classes, "(one point per arm)");
  Generator generator(o.seed);
  const std::vector<double> jitter = normal_draws(generator, o.samples);
  std::vector<double> xy;
  std::vector<int64_t> labels;
  xy.reserve(static_cast<size_t>(2 * o.samples));
  labels.reserve(static_cast<size_t>(o.samples));
  const std::vector<int64_t> sizes = class_sizes(o.samples, o.classes);
  for (int64_t c = 0; c < o.classes; ++c) {
    const int64_t m = sizes[static_cast<size_t>(c)];
    for (int64_t i = 0; i < m; ++i) {
      const double r = m > 1 ? static_cast<double>(i) / static_cast<double>(m - 1) : 1;
      const double t = 4.0 * static_cast<double>(c) + 4.0 * r +
                       o.noise * jitter[static_cast<size_t>(labels.size())];
      xy.push_back(r * std::sin(t));
      xy.push_back(r * std::cos(t));
      labels.push_back(c);
    }
  }
  return classification("spirals", xy, std::move(labels), 2, o.classes);
}

Dataset make_moons(const MoonsOptions& o) {
  check_common("moons", o.samples, o.noise, o.seed);
  Generator generator(o.seed);
  const std::vector<double> noise = normal_draws(generator, 2 * o.samples);
  const std::vector<int64_t> sizes = class_sizes(o.samples, 2);
  std::vector<double> xy;
  std::vector<int64_t> labels;
  for (int64_t c = 0; c < 2; ++c) {
    const int64_t m = sizes[static_cast<size_t>(c)];
    for (int64_t i = 0; i < m; ++i) {
      const double t =
          m > 1 ? std::numbers::pi * static_cast<double>(i) / static_cast<double>(m - 1) : 0;
      // scikit-learn's moons, moved by (-0.5, -0.25) to center them on the origin.
      const double x = c == 0 ? std::cos(t) - 0.5 : 0.5 - std::cos(t);
      const double y = c == 0 ? std::sin(t) - 0.25 : 0.25 - std::sin(t);
      xy.push_back(x + o.noise * noise[xy.size()]);
      xy.push_back(y + o.noise * noise[xy.size()]);
      labels.push_back(c);
    }
  }
  return classification("moons", xy, std::move(labels), 2, 2, {"upper", "lower"});
}

Dataset make_circles(const CirclesOptions& o) {
  check_common("circles", o.samples, o.noise, o.seed);
  check_option("circles", "factor", o.factor);
  Generator generator(o.seed);
  const std::vector<double> noise = normal_draws(generator, 2 * o.samples);
  const std::vector<int64_t> sizes = class_sizes(o.samples, 2);
  std::vector<double> xy;
  std::vector<int64_t> labels;
  for (int64_t c = 0; c < 2; ++c) {
    const int64_t m = sizes[static_cast<size_t>(c)];
    const double radius = c == 0 ? 1.0 : o.factor;
    for (int64_t i = 0; i < m; ++i) {
      const double t = 2 * std::numbers::pi * static_cast<double>(i) / static_cast<double>(m);
      xy.push_back(radius * std::cos(t) + o.noise * noise[xy.size()]);
      xy.push_back(radius * std::sin(t) + o.noise * noise[xy.size()]);
      labels.push_back(c);
    }
  }
  return classification("circles", xy, std::move(labels), 2, 2, {"outer", "inner"});
}

Dataset make_xor(const XorOptions& o) {
  check_common("xor", o.samples, o.noise, o.seed);
  Generator generator(o.seed);
  const std::vector<double> position = uniform_draws(generator, 2 * o.samples);
  const std::vector<double> noise = normal_draws(generator, 2 * o.samples);
  // Quadrants in turn (+,+), (-,+), (-,-), (+,-): classes 0, 1, 0, 1.
  constexpr double kSignX[4] = {1, -1, -1, 1};
  constexpr double kSignY[4] = {1, 1, -1, -1};
  std::vector<double> xy;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < o.samples; ++i) {
    const auto q = static_cast<size_t>(i % 4);
    xy.push_back(kSignX[q] * position[xy.size()] + o.noise * noise[xy.size()]);
    xy.push_back(kSignY[q] * position[xy.size()] + o.noise * noise[xy.size()]);
    labels.push_back(static_cast<int64_t>(q % 2));
  }
  return classification("xor", xy, std::move(labels), 2, 2, {"same sign", "opposite sign"});
}

Dataset make_blobs(const BlobsOptions& o) {
  check_common("blobs", o.samples, o.noise, o.seed);
  check_option("blobs", "classes", static_cast<double>(o.classes));
  check_option("blobs", "dims", static_cast<double>(o.dims));
  check_option("blobs", "center_range", o.center_range);
  check_at_least("blobs", "samples", o.samples, o.classes, "(one point per blob)");
  Generator generator(o.seed);
  const std::vector<double> centers = uniform_draws(generator, o.classes * o.dims);
  const std::vector<double> noise = normal_draws(generator, o.samples * o.dims);
  const std::vector<int64_t> sizes = class_sizes(o.samples, o.classes);
  std::vector<double> coords;
  std::vector<int64_t> labels;
  coords.reserve(static_cast<size_t>(o.samples * o.dims));
  for (int64_t c = 0; c < o.classes; ++c) {
    for (int64_t i = 0; i < sizes[static_cast<size_t>(c)]; ++i) {
      for (int64_t k = 0; k < o.dims; ++k) {
        const double center =
            o.center_range * (2 * centers[static_cast<size_t>(c * o.dims + k)] - 1);
        coords.push_back(center + o.noise * noise[coords.size()]);
      }
      labels.push_back(c);
    }
  }
  return classification("blobs", coords, std::move(labels), o.dims, o.classes);
}

Dataset make_checkerboard(const CheckerboardOptions& o) {
  check_common("checkerboard", o.samples, o.noise, o.seed);
  check_option("checkerboard", "tiles", static_cast<double>(o.tiles));
  Generator generator(o.seed);
  const std::vector<double> position = uniform_draws(generator, 2 * o.samples);
  const std::vector<double> noise = normal_draws(generator, 2 * o.samples);
  std::vector<double> xy;
  std::vector<int64_t> labels;
  const auto tile = [&](double u) {
    return std::min(static_cast<int64_t>(u * static_cast<double>(o.tiles)), o.tiles - 1);
  };
  for (int64_t i = 0; i < o.samples; ++i) {
    const double u = position[static_cast<size_t>(2 * i)];
    const double v = position[static_cast<size_t>(2 * i + 1)];
    xy.push_back(2 * u - 1 + o.noise * noise[xy.size()]);
    xy.push_back(2 * v - 1 + o.noise * noise[xy.size()]);
    labels.push_back((tile(u) + tile(v)) % 2);
  }
  return classification("checkerboard", xy, std::move(labels), 2, 2);
}

namespace {

using CurveFunction = double (*)(double);

// The curves in catalog order.
const std::vector<std::pair<std::string, CurveFunction>>& curves() {
  static const std::vector<std::pair<std::string, CurveFunction>> table = {
      {"xsin", [](double x) { return x * std::sin(2 * std::numbers::pi * x); }},
      {"sine", [](double x) { return std::sin(std::numbers::pi * x); }},
      {"cubic", [](double x) { return 2 * x * x * x - x; }},
      {"step", [](double x) { return x < 0 ? -0.5 : 0.5; }},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& curve_names() {
  static const std::vector<std::string> names = names_of(curves());
  return names;
}

Dataset make_curve(const CurveOptions& o) {
  check_common("curve", o.samples, o.noise, o.seed);
  check_option("curve", "curve", o.curve);
  const CurveFunction f = std::find_if(curves().begin(), curves().end(), [&](const auto& entry) {
                            return entry.first == o.curve;
                          })->second;
  Generator generator(o.seed);
  const std::vector<double> position = uniform_draws(generator, o.samples);
  const std::vector<double> noise = normal_draws(generator, o.samples);
  std::vector<float> x(static_cast<size_t>(o.samples));
  std::vector<float> y(static_cast<size_t>(o.samples));
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = 2 * position[i] - 1;
    x[i] = static_cast<float>(xi);
    y[i] = static_cast<float>(f(xi) + o.noise * noise[i]);
  }
  Dataset d;
  d.name = "curve";
  d.task = TaskKind::Regression;
  d.input_kind = InputKind::Curve1D;
  d.inputs = from_vector(x, {o.samples, 1});
  d.targets = from_vector(y, {o.samples, 1});
  d.feature_names = {"x"};
  return d;
}

}  // namespace nns::data
