// SPDX-License-Identifier: GPL-3.0-or-later
// Digits drawn by the program: each glyph is a few strokes (polylines and elliptic arcs) in a
// unit box; every sample maps them through its own random affine transform into pixel space
// and paints them with a distance-based anti-aliased pen, then adds pixel noise.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/data/catalog.h"
#include "engine/data/generators.h"
#include "engine/data/generators_internal.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

struct Point {
  double x;
  double y;
};
using Stroke = std::vector<Point>;
using Glyph = std::vector<Stroke>;

// Points along an elliptic arc from angle a0 to a1 in degrees, y pointing down (-90 is the
// top, 0 the right, 90 the bottom), about one point per 20 degrees.
Stroke arc(double cx, double cy, double rx, double ry, double a0, double a1) {
  const int steps = std::max(2, static_cast<int>(std::ceil(std::abs(a1 - a0) / 20)));
  Stroke points;
  for (int i = 0; i <= steps; ++i) {
    const double a = (a0 + (a1 - a0) * i / steps) * std::numbers::pi / 180;
    points.push_back({cx + rx * std::cos(a), cy + ry * std::sin(a)});
  }
  return points;
}

Stroke join(Stroke a, const Stroke& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The ten glyphs in a unit box (x right, y down), drawn about 0.7 wide and 0.9 tall.
const std::vector<Glyph>& glyphs() {
  static const std::vector<Glyph> table = {
      {arc(0.5, 0.5, 0.3, 0.45, 0, 360)},
      {{{0.3, 0.22}, {0.54, 0.05}, {0.54, 0.95}}},
      {join(arc(0.5, 0.3, 0.28, 0.25, -165, 20), {{0.2, 0.95}, {0.82, 0.95}})},
      {arc(0.5, 0.28, 0.26, 0.23, -160, 90), arc(0.5, 0.73, 0.29, 0.22, -90, 160)},
      {{{0.62, 0.05}, {0.15, 0.65}, {0.85, 0.65}}, {{0.62, 0.05}, {0.62, 0.95}}},
      {join({{0.78, 0.05}, {0.28, 0.05}, {0.24, 0.45}}, arc(0.5, 0.68, 0.29, 0.27, -145, 150))},
      {arc(0.75, 0.62, 0.5, 0.57, -95, -180), arc(0.52, 0.7, 0.27, 0.25, 0, 360)},
      {{{0.15, 0.05}, {0.85, 0.05}, {0.4, 0.95}}},
      {arc(0.5, 0.27, 0.22, 0.22, 0, 360), arc(0.5, 0.72, 0.27, 0.23, 0, 360)},
      {arc(0.48, 0.3, 0.27, 0.25, 0, 360), arc(0.25, 0.38, 0.5, 0.57, 0, 85)},
  };
  return table;
}

double distance_to_segment(Point p, Point a, Point b) {
  const double dx = b.x - a.x;
  const double dy = b.y - a.y;
  const double length2 = dx * dx + dy * dy;
  const double t =
      length2 > 0 ? std::clamp(((p.x - a.x) * dx + (p.y - a.y) * dy) / length2, 0.0, 1.0) : 0;
  const double ex = p.x - (a.x + t * dx);
  const double ey = p.y - (a.y + t * dy);
  return std::sqrt(ex * ex + ey * ey);
}

// The random draws of one sample, each uniform in [0, 1).
enum Draw { kShiftX, kShiftY, kScale, kAspect, kRotation, kShear, kWidth, kInk, kDraws };

}  // namespace

Dataset make_digits(const DigitsOptions& o) {
  check_option("digits", "samples", static_cast<double>(o.samples));
  check_option("digits", "size", static_cast<double>(o.size));
  check_option("digits", "noise", o.noise);
  check_option("digits", "shift", o.shift);
  check_option("digits", "distortion", o.distortion);
  check_option("digits", "seed", static_cast<double>(o.seed));
  Generator generator(o.seed);
  const std::vector<double> draws = uniform_draws(generator, o.samples * kDraws);
  const int64_t pixels = o.size * o.size;
  const std::vector<double> pixel_noise = normal_draws(generator, o.samples * pixels);

  const auto side = static_cast<double>(o.size);
  const double d = o.distortion;
  std::vector<float> images(static_cast<size_t>(o.samples * pixels));
  std::vector<int64_t> labels(static_cast<size_t>(o.samples));
  std::vector<Point> segment_ends;
  for (int64_t n = 0; n < o.samples; ++n) {
    const double* u = &draws[static_cast<size_t>(n * kDraws)];
    const auto symmetric = [&](Draw k) { return 2 * u[k] - 1; };  // uniform in [-1, 1)
    const int64_t digit = n % 10;
    labels[static_cast<size_t>(n)] = digit;
    // The affine map from the unit box to pixels: scale (with aspect), shear, rotate, shift.
    const double glyph = 0.7 * side * (1 + 0.12 * d * symmetric(kScale));
    const double sx = glyph * (1 + 0.12 * d * symmetric(kAspect));
    const double sy = glyph;
    const double shear = 0.25 * d * symmetric(kShear);
    const double angle = 0.2 * d * symmetric(kRotation);
    const double c = std::cos(angle);
    const double s = std::sin(angle);
    const double cx = side / 2 + o.shift * side * symmetric(kShiftX);
    const double cy = side / 2 + o.shift * side * symmetric(kShiftY);
    const auto to_pixels = [&](Point p) {
      const double x = sx * (p.x - 0.5) + shear * sy * (p.y - 0.5);
      const double y = sy * (p.y - 0.5);
      return Point{cx + c * x - s * y, cy + s * x + c * y};
    };
    const double half_width = 0.5 * side * (0.16 + 0.04 * d * symmetric(kWidth));
    const double ink = 0.75 + 0.25 * u[kInk];

    segment_ends.clear();
    for (const Stroke& stroke : glyphs()[static_cast<size_t>(digit)]) {
      for (size_t k = 0; k + 1 < stroke.size(); ++k) {
        segment_ends.push_back(to_pixels(stroke[k]));
        segment_ends.push_back(to_pixels(stroke[k + 1]));
      }
    }
    float* image = &images[static_cast<size_t>(n * pixels)];
    const double* noise = &pixel_noise[static_cast<size_t>(n * pixels)];
    for (int64_t row = 0; row < o.size; ++row) {
      for (int64_t col = 0; col < o.size; ++col) {
        const Point center{static_cast<double>(col) + 0.5, static_cast<double>(row) + 0.5};
        double nearest = side;
        for (size_t k = 0; k < segment_ends.size(); k += 2) {
          nearest =
              std::min(nearest, distance_to_segment(center, segment_ends[k], segment_ends[k + 1]));
        }
        // The pen covers a pixel fully inside the stroke and fades out over one pixel at its
        // edge: a cheap stand-in for the box-filtered area, smooth enough to anti-alias.
        const double coverage = std::clamp(half_width + 0.5 - nearest, 0.0, 1.0);
        const int64_t i = row * o.size + col;
        image[i] = static_cast<float>(std::clamp(ink * coverage + o.noise * noise[i], 0.0, 1.0));
      }
    }
  }
  Dataset data;
  data.name = "digits";
  data.task = TaskKind::Classification;
  data.input_kind = InputKind::Image;
  data.inputs = from_vector(images, {o.samples, 1, o.size, o.size});
  data.targets = from_vector(labels, {o.samples});
  data.num_classes = 10;
  data.class_names = numbered_names("", 10, 0);
  data.image_height = o.size;
  data.image_width = o.size;
  return data;
}

}  // namespace nns::data
