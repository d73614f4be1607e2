// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/transforms.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>

#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

using Kind = Transform::Kind;

const std::vector<std::pair<Kind, std::string>>& kinds() {
  static const std::vector<std::pair<Kind, std::string>> table = {
      {Kind::Resize, "Resize"},         {Kind::CenterCrop, "CenterCrop"},
      {Kind::RandomCrop, "RandomCrop"}, {Kind::RandomHorizontalFlip, "RandomHorizontalFlip"},
      {Kind::Grayscale, "Grayscale"},   {Kind::ToTensor, "ToTensor"},
      {Kind::Normalize, "Normalize"},
  };
  return table;
}

const std::string& kind_name(Kind kind) {
  for (const auto& [k, name] : kinds()) {
    if (k == kind) return name;
  }
  throw ValueError("unknown transform kind");
}

// ---- The text: Python calls with numbers, tuples and lists ---------------------------------

// An argument's value: a number, True/False (as 1/0), or a tuple or list of numbers.
struct Value {
  std::vector<double> numbers;
  bool sequence = false;
};

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  std::vector<Transform> parse() {
    std::vector<Transform> out;
    skip_space();
    while (at_ < text_.size()) {
      out.push_back(call());
      skip_space();
      if (at_ < text_.size()) expect(',');
      skip_space();
    }
    return out;
  }

 private:
  Transform call() {
    const std::string name = identifier();
    // Accept torchvision's module prefixes as the export writes them.
    std::string bare = name;
    for (const char* prefix : {"transforms.", "T."}) {
      if (bare.rfind(prefix, 0) == 0) bare = bare.substr(std::string(prefix).size());
    }
    std::optional<Kind> kind;
    for (const auto& [k, n] : kinds()) {
      if (n == bare) kind = k;
    }
    if (!kind) fail("unknown transform '" + name + "'; known: " + known_names());
    skip_space();
    expect('(');
    std::vector<Value> positional;
    std::map<std::string, Value> keywords;
    skip_space();
    while (peek() != ')') {
      const size_t start = at_;
      if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
        const std::string word = identifier();
        skip_space();
        if (peek() == '=') {
          ++at_;
          skip_space();
          if (keywords.count(word)) fail(bare + ": '" + word + "' given twice");
          keywords[word] = value();
        } else {
          at_ = start;
          positional.push_back(value());
        }
      } else {
        if (!keywords.empty()) fail(bare + ": a positional argument after a keyword");
        positional.push_back(value());
      }
      skip_space();
      if (peek() != ')') expect(',');
      skip_space();
    }
    expect(')');
    return bind(*kind, bare, positional, keywords);
  }

  Value value() {
    skip_space();
    if (peek() == '(' || peek() == '[') {
      const char close = peek() == '(' ? ')' : ']';
      ++at_;
      Value v{{}, true};
      skip_space();
      while (peek() != close) {
        v.numbers.push_back(number());
        skip_space();
        if (peek() != close) expect(',');
        skip_space();
      }
      ++at_;
      return v;
    }
    if (std::isalpha(static_cast<unsigned char>(peek()))) {
      const std::string word = identifier();
      if (word == "True") return {{1}, false};
      if (word == "False") return {{0}, false};
      fail("expected a number, True or False, found '" + word + "'");
    }
    return {{number()}, false};
  }

  double number() {
    skip_space();
    const size_t start = at_;
    while (at_ < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[at_])) ||
                                  std::strchr("+-.eE", text_[at_]) != nullptr)) {
      ++at_;
    }
    double v = 0;
    const char* first = text_.data() + start;
    const char* last = text_.data() + at_;
    if (*first == '+') ++first;
    const auto [end, error] = std::from_chars(first, last, v);
    if (start == at_ || error != std::errc() || end != last || !std::isfinite(v)) {
      at_ = start;
      fail("expected a number");
    }
    return v;
  }

  std::string identifier() {
    const size_t start = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) ||
                                  text_[at_] == '_' || text_[at_] == '.')) {
      ++at_;
    }
    if (start == at_) fail("expected a transform's name");
    return text_.substr(start, at_ - start);
  }

  char peek() {
    if (at_ >= text_.size()) fail("the text ends too early");
    return text_[at_];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  void skip_space() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ValueError("transforms: " + what + " at character " + std::to_string(at_ + 1) + " of \"" +
                     text_ + "\"");
  }
  static std::string known_names() {
    std::string out;
    for (const auto& [k, n] : kinds()) out += (out.empty() ? "" : ", ") + n;
    return out;
  }

  Transform bind(Kind kind, const std::string& name, const std::vector<Value>& positional,
                 std::map<std::string, Value>& keywords) const;

  const std::string& text_;
  size_t at_ = 0;
};

// The arguments of one call, matched to the transform's parameters as Python would.
Transform Parser::bind(Kind kind, const std::string& name, const std::vector<Value>& positional,
                       std::map<std::string, Value>& keywords) const {
  static const std::map<Kind, std::vector<std::string>> parameters = {
      {Kind::Resize, {"size"}},
      {Kind::CenterCrop, {"size"}},
      {Kind::RandomCrop, {"size", "padding", "pad_if_needed", "fill"}},
      {Kind::RandomHorizontalFlip, {"p"}},
      {Kind::Grayscale, {"num_output_channels"}},
      {Kind::ToTensor, {}},
      {Kind::Normalize, {"mean", "std"}},
  };
  const std::vector<std::string>& names = parameters.at(kind);
  if (positional.size() > names.size()) {
    fail(name + " takes " + std::to_string(names.size()) + " arguments, " +
         std::to_string(positional.size()) + " given");
  }
  for (size_t i = 0; i < positional.size(); ++i) {
    if (keywords.count(names[i])) fail(name + ": '" + names[i] + "' given twice");
    keywords[names[i]] = positional[i];
  }
  for (const auto& [key, v] : keywords) {
    if (std::find(names.begin(), names.end(), key) == names.end()) {
      fail(name + " has no argument '" + key + "' NN Studio reads");
    }
  }
  auto whole = [&](const std::string& key, double v, double min) {
    if (v != std::floor(v) || v < min || v > 1e6) {
      fail(name + ": '" + key + "' must be a whole number of at least " + std::to_string(int(min)));
    }
    return static_cast<int64_t>(v);
  };
  auto sizes = [&](const std::string& key, size_t max_count, double min) {
    std::vector<int64_t> out;
    const Value& v = keywords.at(key);
    if (v.numbers.empty() || v.numbers.size() > max_count || v.numbers.size() == 3) {
      fail(name + ": '" + key + "' must be one number or a pair" +
           (max_count == 4 ? " or four (left, top, right, bottom)" : ""));
    }
    for (double n : v.numbers) out.push_back(whole(key, n, min));
    return out;
  };
  auto required = [&](const std::string& key) {
    if (!keywords.count(key)) fail(name + " needs '" + key + "'");
  };

  Transform t;
  t.kind = kind;
  switch (kind) {
    case Kind::Resize:
    case Kind::CenterCrop:
    case Kind::RandomCrop:
      required("size");
      t.size = sizes("size", 2, 1);
      if (keywords.count("padding")) t.padding = sizes("padding", 4, 0);
      if (keywords.count("pad_if_needed")) t.pad_if_needed = keywords["pad_if_needed"].numbers[0];
      if (keywords.count("fill") && keywords["fill"].numbers != std::vector<double>{0}) {
        fail(name + ": only fill=0 (black) is supported");
      }
      break;
    case Kind::RandomHorizontalFlip:
      if (keywords.count("p")) t.p = keywords["p"].numbers.at(0);
      if (t.p < 0 || t.p > 1) fail(name + ": 'p' must be in [0, 1]");
      break;
    case Kind::Grayscale:
      if (keywords.count("num_output_channels")) {
        t.num_output_channels =
            whole("num_output_channels", keywords["num_output_channels"].numbers.at(0), 1);
      }
      if (t.num_output_channels != 1 && t.num_output_channels != 3) {
        fail(name + ": 'num_output_channels' must be 1 or 3");
      }
      break;
    case Kind::ToTensor:
      break;
    case Kind::Normalize:
      required("mean");
      required("std");
      t.mean = keywords["mean"].numbers;
      t.std = keywords["std"].numbers;
      if (t.mean.empty() || t.mean.size() != t.std.size()) {
        fail(name + ": 'mean' and 'std' must have one number per channel, as many of each");
      }
      for (double s : t.std) {
        if (!(s > 0)) fail(name + ": every 'std' must be greater than 0");
      }
      break;
  }
  return t;
}

std::string number_text(double v) {
  char buffer[32];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string s(buffer, end);
  // Python writes a whole float with ".0"; a bare integer reads as one too, but the
  // export's text is meant to look like what a person writes.
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string tuple_text(const std::vector<double>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + number_text(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

std::string sizes_text(const std::vector<int64_t>& v) {
  if (v.size() == 1) return std::to_string(v[0]);
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// ---- The image steps, as Pillow and torchvision do them -------------------------------------

// Pillow's resampling (libImaging/Resample.c): for each output pixel, a bilinear filter
// stretched by the scale when shrinking, its weights normalized, then turned into 22-bit fixed
// point; the rows are resampled first, then the columns, each rounding to 8 bits.
constexpr int kPrecisionBits = 32 - 8 - 2;

struct Coefficients {
  int64_t ksize = 0;
  std::vector<int64_t> bounds;   // per output pixel: first input pixel, count
  std::vector<int32_t> weights;  // per output pixel: ksize fixed-point weights
};

Coefficients bilinear_coefficients(int64_t in_size, int64_t out_size) {
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  Coefficients c;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(static_cast<size_t>(out_size * 2));
  c.weights.assign(static_cast<size_t>(out_size * c.ksize), 0);
  std::vector<double> k(static_cast<size_t>(c.ksize));
  for (int64_t xx = 0; xx < out_size; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // C's (int) truncates toward zero: Pillow's rounding of the bounds.
    const int64_t xmin = std::max<int64_t>(static_cast<int>(center - support + 0.5), 0);
    const int64_t xmax =
        std::min<int64_t>(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0;
    for (int64_t x = 0; x < xmax; ++x) {
      const double d = std::abs((static_cast<double>(x + xmin) - center + 0.5) * ss);
      k[x] = d < 1.0 ? 1.0 - d : 0.0;
      ww += k[x];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      if (ww != 0.0) k[x] /= ww;
      const double fixed = k[x] * (1 << kPrecisionBits);
      c.weights[xx * c.ksize + x] = static_cast<int32_t>(fixed < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.bounds[2 * xx] = xmin;
    c.bounds[2 * xx + 1] = xmax;
  }
  return c;
}

uint8_t clip8(int32_t v) {
  if (v >= (1 << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> kPrecisionBits);
}

// One pass: along x when `horizontal`, else along y.
Image resample(const Image& in, int64_t out_size, bool horizontal) {
  const int64_t in_size = horizontal ? in.width : in.height;
  const Coefficients c = bilinear_coefficients(in_size, out_size);
  Image out(horizontal ? in.height : out_size, horizontal ? out_size : in.width, in.channels);
  for (int64_t y = 0; y < out.height; ++y) {
    for (int64_t x = 0; x < out.width; ++x) {
      const int64_t o = horizontal ? x : y;
      const int64_t first = c.bounds[2 * o];
      const int64_t count = c.bounds[2 * o + 1];
      const int32_t* k = &c.weights[o * c.ksize];
      for (int64_t ch = 0; ch < in.channels; ++ch) {
        int32_t sum = 1 << (kPrecisionBits - 1);
        for (int64_t i = 0; i < count; ++i) {
          const uint8_t v = horizontal ? in.at(y, first + i, ch) : in.at(first + i, x, ch);
          sum += static_cast<int32_t>(v) * k[i];
        }
        out.at(y, x, ch) = clip8(sum);
      }
    }
  }
  return out;
}

// torchvision's pad with fill 0: left, top, right, bottom.
Image pad(const Image& in, int64_t left, int64_t top, int64_t right, int64_t bottom) {
  return crop(in, -top, -left, in.height + top + bottom, in.width + left + right);
}

// Python's round(): halves to even, as the default floating-point rounding mode does.
int64_t python_round(double v) {
  return static_cast<int64_t>(std::nearbyint(v));
}

Image center_crop(Image image, int64_t th, int64_t tw) {
  if (tw > image.width || th > image.height) {
    const int64_t dw = std::max<int64_t>(tw - image.width, 0);
    const int64_t dh = std::max<int64_t>(th - image.height, 0);
    image = pad(image, dw / 2, dh / 2, (dw + 1) / 2, (dh + 1) / 2);
    if (tw == image.width && th == image.height) return image;
  }
  const int64_t top = python_round(static_cast<double>(image.height - th) / 2.0);
  const int64_t left = python_round(static_cast<double>(image.width - tw) / 2.0);
  return crop(image, top, left, th, tw);
}

// A sample's own stream of random numbers.
class SampleRandom {
 public:
  explicit SampleRandom(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, n).
  int64_t below(int64_t n) { return static_cast<int64_t>(engine_() % static_cast<uint64_t>(n)); }
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

 private:
  std::mt19937_64 engine_;
};

// A window of a [C, H, W] sample; outside it, each channel's fill.
Tensor crop_tensor(const Tensor& x, int64_t top, int64_t left, int64_t height, int64_t width,
                   const std::vector<float>& fill) {
  const int64_t channels = x.size(0);
  const int64_t h = x.size(1);
  const int64_t w = x.size(2);
  Tensor out = empty({channels, height, width}, kFloat32);
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t c = 0; c < channels; ++c) {
    for (int64_t y = 0; y < height; ++y) {
      float* row = o + (c * height + y) * width;
      const int64_t sy = top + y;
      for (int64_t xx = 0; xx < width; ++xx) {
        const int64_t sx = left + xx;
        row[xx] = sy >= 0 && sy < h && sx >= 0 && sx < w ? in[(c * h + sy) * w + sx] : fill[c];
      }
    }
  }
  return out;
}

Tensor pad_tensor(const Tensor& x, int64_t left, int64_t top, int64_t right, int64_t bottom,
                  const std::vector<float>& fill) {
  return crop_tensor(x, -top, -left, x.size(1) + top + bottom, x.size(2) + left + right, fill);
}

Tensor random_crop(Tensor x, const Transform& t, const std::vector<float>& fill,
                   SampleRandom& random) {
  const int64_t th = t.size[0];
  const int64_t tw = t.size.size() == 2 ? t.size[1] : t.size[0];
  if (!t.padding.empty()) {
    const std::vector<int64_t>& p = t.padding;
    if (p.size() == 1) x = pad_tensor(x, p[0], p[0], p[0], p[0], fill);
    if (p.size() == 2) x = pad_tensor(x, p[0], p[1], p[0], p[1], fill);
    if (p.size() == 4) x = pad_tensor(x, p[0], p[1], p[2], p[3], fill);
  }
  // torchvision pads both sides by the shortfall.
  if (t.pad_if_needed && x.size(2) < tw) {
    const int64_t d = tw - x.size(2);
    x = pad_tensor(x, d, 0, d, 0, fill);
  }
  if (t.pad_if_needed && x.size(1) < th) {
    const int64_t d = th - x.size(1);
    x = pad_tensor(x, 0, d, 0, d, fill);
  }
  const int64_t h = x.size(1);
  const int64_t w = x.size(2);
  if (h < th || w < tw) {
    throw ValueError("RandomCrop: the crop (" + std::to_string(th) + " x " + std::to_string(tw) +
                     ") is larger than the image (" + std::to_string(h) + " x " +
                     std::to_string(w) + "); add padding or pad_if_needed=True");
  }
  if (h == th && w == tw) return x;
  const int64_t top = random.below(h - th + 1);
  const int64_t left = random.below(w - tw + 1);
  return crop_tensor(x, top, left, th, tw, fill);
}

// CenterCrop on the tensor: torchvision's padding and rounding, as center_crop does on images.
Tensor center_crop_tensor(Tensor x, int64_t th, int64_t tw, const std::vector<float>& fill) {
  if (tw > x.size(2) || th > x.size(1)) {
    const int64_t dw = std::max<int64_t>(tw - x.size(2), 0);
    const int64_t dh = std::max<int64_t>(th - x.size(1), 0);
    x = pad_tensor(x, dw / 2, dh / 2, (dw + 1) / 2, (dh + 1) / 2, fill);
    if (tw == x.size(2) && th == x.size(1)) return x;
  }
  const int64_t top = python_round(static_cast<double>(x.size(1) - th) / 2.0);
  const int64_t left = python_round(static_cast<double>(x.size(2) - tw) / 2.0);
  return crop_tensor(x, top, left, th, tw, fill);
}

Tensor flip_horizontal(const Tensor& x) {
  Tensor out = x.clone();
  const int64_t w = x.size(2);
  const int64_t rows = x.size(0) * x.size(1);
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < w; ++c) o[r * w + c] = in[r * w + (w - 1 - c)];
  }
  return out;
}

bool is_random(Kind kind) {
  return kind == Kind::RandomCrop || kind == Kind::RandomHorizontalFlip;
}

Image apply_image_step(const Transform& t, Image image) {
  switch (t.kind) {
    case Kind::Resize: {
      int64_t h = t.size[0];
      int64_t w = t.size.size() == 2 ? t.size[1] : t.size[0];
      if (t.size.size() == 1) {
        // The smaller edge becomes size; the other keeps the ratio, truncated (torchvision).
        const int64_t shorter = std::min(image.width, image.height);
        const int64_t longer = std::max(image.width, image.height);
        const auto other = static_cast<int64_t>(static_cast<double>(t.size[0] * longer) /
                                                static_cast<double>(shorter));
        if (image.width <= image.height) {
          w = t.size[0];
          h = other;
        } else {
          h = t.size[0];
          w = other;
        }
      }
      return resize(image, h, w);
    }
    case Kind::CenterCrop:
      return center_crop(std::move(image), t.size[0], t.size.size() == 2 ? t.size[1] : t.size[0]);
    case Kind::Grayscale: {
      Image gray = to_grayscale(image);
      return t.num_output_channels == 3 ? to_rgb(std::move(gray)) : gray;
    }
    case Kind::RandomCrop:
    case Kind::RandomHorizontalFlip:
    case Kind::ToTensor:
    case Kind::Normalize:
      break;
  }
  return image;
}

bool is_image_step(Kind kind) {
  return kind != Kind::ToTensor && kind != Kind::Normalize;
}

}  // namespace

const std::vector<std::string>& transform_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [k, n] : kinds()) out.push_back(n);
    return out;
  }();
  return names;
}

std::vector<Transform> parse_transforms(const std::string& text) {
  std::vector<Transform> transforms = Parser(text).parse();
  bool tensor = false;
  for (const Transform& t : transforms) {
    if (t.kind == Kind::ToTensor) {
      if (tensor) throw ValueError("transforms: ToTensor() appears twice");
      tensor = true;
    } else if (t.kind == Kind::Normalize && !tensor) {
      throw ValueError("transforms: Normalize works on tensors: put ToTensor() before it");
    } else if (is_image_step(t.kind) && tensor) {
      throw ValueError("transforms: " + kind_name(t.kind) +
                       " works on images: put it before ToTensor()");
    }
  }
  return transforms;
}

std::string transform_text(const Transform& t) {
  const std::string& name = kind_name(t.kind);
  switch (t.kind) {
    case Kind::Resize:
    case Kind::CenterCrop:
      return name + "(" + sizes_text(t.size) + ")";
    case Kind::RandomCrop: {
      std::string s = name + "(" + sizes_text(t.size);
      if (!t.padding.empty()) s += ", padding=" + sizes_text(t.padding);
      if (t.pad_if_needed) s += ", pad_if_needed=True";
      return s + ")";
    }
    case Kind::RandomHorizontalFlip:
      return name + "(p=" + number_text(t.p) + ")";
    case Kind::Grayscale:
      return name + "(num_output_channels=" + std::to_string(t.num_output_channels) + ")";
    case Kind::ToTensor:
      return name + "()";
    case Kind::Normalize:
      return name + "(mean=" + tuple_text(t.mean) + ", std=" + tuple_text(t.std) + ")";
  }
  return name;
}

std::string transforms_text(const std::vector<Transform>& transforms) {
  std::string s;
  for (const Transform& t : transforms) s += (s.empty() ? "" : ", ") + transform_text(t);
  return s;
}

bool has_random_transforms(const std::vector<Transform>& transforms) {
  return std::any_of(transforms.begin(), transforms.end(),
                     [](const Transform& t) { return is_random(t.kind); });
}

TransformPlan plan_transforms(const std::vector<Transform>& transforms) {
  TransformPlan plan;
  for (const Transform& t : transforms) {
    if (is_random(t.kind)) {
      plan.random.push_back(t);
    } else if (is_image_step(t.kind) && !plan.random.empty()) {
      throw ValueError("transforms: " + kind_name(t.kind) + " after " +
                       kind_name(plan.random.back().kind) +
                       ": put Resize, CenterCrop and Grayscale before the random transforms");
    } else {
      plan.fixed.push_back(t);
    }
  }
  return plan;
}

Tensor apply_random_transforms(const TransformPlan& plan, const Tensor& sample, uint64_t seed) {
  if (plan.random.empty()) return sample;
  SampleRandom random(seed);
  // Padding is black: 0 after ToTensor, (0 - mean) / std after a Normalize (in float32, as
  // torchvision computes it).
  std::vector<float> fill(static_cast<size_t>(sample.size(0)), 0.0f);
  for (const Transform& t : plan.fixed) {
    if (t.kind != Kind::Normalize) continue;
    for (size_t c = 0; c < fill.size(); ++c) {
      const size_t k = t.mean.size() == 1 ? 0 : c;
      fill[c] = (fill[c] - static_cast<float>(t.mean[k])) / static_cast<float>(t.std[k]);
    }
  }
  Tensor x = sample.contiguous();
  for (const Transform& t : plan.random) {
    if (t.kind == Kind::RandomCrop) {
      x = random_crop(x, t, fill, random);
    } else if (t.kind == Kind::CenterCrop) {  // a test set's stand-in for a RandomCrop
      x = center_crop_tensor(x, t.size[0], t.size.size() == 2 ? t.size[1] : t.size[0], fill);
    } else if (t.kind == Kind::RandomHorizontalFlip && random.uniform() < t.p) {
      x = flip_horizontal(x);
    }
  }
  return x;
}

std::vector<Transform> test_transforms(const std::vector<Transform>& transforms) {
  std::vector<Transform> out;
  for (Transform t : transforms) {
    if (t.kind == Kind::RandomHorizontalFlip) continue;
    if (t.kind == Kind::RandomCrop) {
      t.kind = Kind::CenterCrop;
      t.padding.clear();
      t.pad_if_needed = false;
    }
    out.push_back(t);
  }
  return out;
}

Image resize(const Image& image, int64_t height, int64_t width) {
  if (height < 1 || width < 1) {
    throw ValueError("Resize: the size must be at least 1 x 1, not " + std::to_string(height) +
                     " x " + std::to_string(width));
  }
  Image out = image;
  if (width != out.width) out = resample(out, width, /*horizontal=*/true);
  if (height != out.height) out = resample(out, height, /*horizontal=*/false);
  return out;
}

Image crop(const Image& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  // Pillow's crop: pixels outside the image are black.
  Image out(height, width, image.channels);
  for (int64_t y = 0; y < height; ++y) {
    const int64_t sy = top + y;
    if (sy < 0 || sy >= image.height) continue;
    for (int64_t x = 0; x < width; ++x) {
      const int64_t sx = left + x;
      if (sx < 0 || sx >= image.width) continue;
      for (int64_t c = 0; c < image.channels; ++c) out.at(y, x, c) = image.at(sy, sx, c);
    }
  }
  return out;
}

Tensor apply_transforms(const std::vector<Transform>& transforms, Image image, uint64_t seed) {
  const TransformPlan plan = plan_transforms(transforms);
  size_t i = 0;
  for (; i < plan.fixed.size() && is_image_step(plan.fixed[i].kind); ++i) {
    image = apply_image_step(plan.fixed[i], std::move(image));
  }
  if (i < plan.fixed.size() && plan.fixed[i].kind == Kind::ToTensor) ++i;
  // ToTensor: HWC bytes to CHW floats, divided by 255 in float32 as torchvision does.
  const int64_t channels = image.channels;
  const int64_t plane = image.height * image.width;
  Tensor x = empty({channels, image.height, image.width}, kFloat32);
  float* out = x.data_ptr<float>();
  for (int64_t p = 0; p < plane; ++p) {
    for (int64_t c = 0; c < channels; ++c) {
      out[c * plane + p] = static_cast<float>(image.pixels[p * channels + c]) / 255.0f;
    }
  }
  for (; i < plan.fixed.size(); ++i) {
    const Transform& t = plan.fixed[i];
    if (t.kind != Kind::Normalize) continue;
    const size_t n = t.mean.size();
    if (n != 1 && n != static_cast<size_t>(channels)) {
      throw ValueError("Normalize has " + std::to_string(n) + " means and stds for an image with " +
                       std::to_string(channels) + " channels");
    }
    for (int64_t c = 0; c < channels; ++c) {
      // torchvision's sub_ then div_, in float32.
      const auto mean = static_cast<float>(t.mean[n == 1 ? 0 : c]);
      const auto std = static_cast<float>(t.std[n == 1 ? 0 : c]);
      for (int64_t p = 0; p < plane; ++p) out[c * plane + p] = (out[c * plane + p] - mean) / std;
    }
  }
  return apply_random_transforms(plan, x, seed);
}

}  // namespace nns::data
