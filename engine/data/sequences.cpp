// SPDX-License-Identifier: GPL-3.0-or-later
// The sequence tasks (sequences.h). Random numbers are drawn in whole blocks in a fixed order,
// so every set is a pure function of its options, as in generators.cpp.
#include "engine/data/sequences.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>

#include "engine/data/catalog.h"
#include "engine/data/generators_internal.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

// The largest text file make_text reads: the windows are drawn from memory.
constexpr int64_t kMaxTextBytes = 64LL << 20;

void check_common(const std::string& dataset, int64_t samples, double noise, uint64_t seed) {
  check_option(dataset, "samples", static_cast<double>(samples));
  check_option(dataset, "noise", noise);
  check_option(dataset, "seed", static_cast<double>(seed));
}

// A draw in [0, n) from a uniform draw in [0, 1).
int64_t pick(double u, int64_t n) {
  return std::min(static_cast<int64_t>(u * static_cast<double>(n)), n - 1);
}

// A token task: int64 inputs [N, T] and targets ([N] or [N, T]).
Dataset tokens(std::string name, std::vector<int64_t> inputs, int64_t length,
               std::vector<int64_t> targets, int64_t target_length,
               std::vector<std::string> vocabulary, std::vector<std::string> class_names) {
  const auto n = static_cast<int64_t>(inputs.size()) / length;
  Dataset d;
  d.name = std::move(name);
  d.task = TaskKind::Classification;
  d.input_kind = InputKind::Sequence;
  d.inputs = from_vector(inputs, {n, length});
  d.targets = target_length == 0 ? from_vector(targets, {n}) : from_vector(targets, {n, length});
  d.num_classes = static_cast<int64_t>(class_names.size());
  d.vocabulary = std::move(vocabulary);
  d.class_names = std::move(class_names);
  return d;
}

// Replaces a fraction `noise` of the targets that count by a random class: one uniform draw
// decides each target, a second picks its new class.
void add_label_noise(std::vector<int64_t>& targets, int64_t classes, double noise,
                     Generator& generator) {
  if (noise <= 0) return;
  const auto n = static_cast<int64_t>(targets.size());
  const std::vector<double> hit = uniform_draws(generator, n);
  const std::vector<double> value = uniform_draws(generator, n);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (targets[i] != kIgnoredPosition && hit[i] < noise) targets[i] = pick(value[i], classes);
  }
}

Dataset digit_sequences(const std::string& name, const DigitSequenceOptions& o, bool sort) {
  check_common(name, o.samples, o.noise, o.seed);
  check_option(name, "length", static_cast<double>(o.length));
  check_option(name, "digits", static_cast<double>(o.digits));
  Generator generator(o.seed);
  const std::vector<double> draws = uniform_draws(generator, o.samples * o.length);
  std::vector<int64_t> inputs(draws.size());
  std::vector<int64_t> targets(draws.size());
  for (size_t i = 0; i < draws.size(); ++i) inputs[i] = pick(draws[i], o.digits);
  for (int64_t s = 0; s < o.samples; ++s) {
    const auto first = inputs.begin() + s * o.length;
    const auto out = targets.begin() + s * o.length;
    if (sort) {
      std::copy(first, first + o.length, out);
      std::sort(out, out + o.length);
    } else {
      std::reverse_copy(first, first + o.length, out);
    }
  }
  add_label_noise(targets, o.digits, o.noise, generator);
  const std::vector<std::string> digits = numbered_names("", o.digits, 0);
  return tokens(name, std::move(inputs), o.length, std::move(targets), o.length, digits, digits);
}

using WaveFunction = double (*)(double);

// The waves in catalog order, each of period 1 and amplitude 1.
const std::vector<std::pair<std::string, WaveFunction>>& waves() {
  static const std::vector<std::pair<std::string, WaveFunction>> table = {
      {"sine", [](double t) { return std::sin(2 * std::numbers::pi * t); }},
      {"sawtooth", [](double t) { return 2 * (t - std::floor(t)) - 1; }},
  };
  return table;
}

// How a byte of a text shows as a token: printable ASCII as it is, a space as "␣", a newline
// as "⏎", a tab as "⇥", any other byte as "\xNN".
std::string byte_label(unsigned char byte) {
  if (byte == ' ') return "\u2423";
  if (byte == '\n') return "\u23CE";
  if (byte == '\t') return "\u21E5";
  if (byte > 32 && byte < 127) return std::string(1, static_cast<char>(byte));
  char hex[8];
  std::snprintf(hex, sizeof hex, "\\x%02X", byte);
  return hex;
}

}  // namespace

Dataset make_parity(const ParityOptions& o) {
  check_common("parity", o.samples, o.noise, o.seed);
  check_option("parity", "length", static_cast<double>(o.length));
  Generator generator(o.seed);
  const std::vector<double> draws = uniform_draws(generator, o.samples * o.length);
  std::vector<int64_t> bits(draws.size());
  std::vector<int64_t> labels(static_cast<size_t>(o.samples), 0);
  for (size_t i = 0; i < draws.size(); ++i) {
    bits[i] = draws[i] < 0.5 ? 0 : 1;
    labels[i / static_cast<size_t>(o.length)] ^= bits[i];
  }
  add_label_noise(labels, 2, o.noise, generator);
  return tokens("parity", std::move(bits), o.length, std::move(labels), 0, {"0", "1"},
                {"even", "odd"});
}

Dataset make_reverse(const DigitSequenceOptions& o) {
  return digit_sequences("reverse", o, false);
}

Dataset make_sort(const DigitSequenceOptions& o) {
  return digit_sequences("sort", o, true);
}

Dataset make_addition(const AdditionOptions& o) {
  check_common("addition", o.samples, o.noise, o.seed);
  check_option("addition", "digits", static_cast<double>(o.digits));
  constexpr int64_t kPlus = 10, kEquals = 11, kBlank = 12;
  const int64_t length = 3 * o.digits + 3;
  Generator generator(o.seed);
  const std::vector<double> draws = uniform_draws(generator, o.samples * 2 * o.digits);
  std::vector<int64_t> inputs;
  std::vector<int64_t> targets;
  inputs.reserve(static_cast<size_t>(o.samples * length));
  targets.reserve(static_cast<size_t>(o.samples * length));
  size_t next = 0;
  for (int64_t s = 0; s < o.samples; ++s) {
    int64_t operands[2] = {0, 0};
    for (int64_t& value : operands) {
      for (int64_t k = 0; k < o.digits; ++k) {
        const int64_t digit = pick(draws[next++], 10);
        value = value * 10 + digit;
        inputs.push_back(digit);
      }
      inputs.push_back(&value == &operands[0] ? kPlus : kEquals);
    }
    for (int64_t k = 0; k <= o.digits; ++k) inputs.push_back(kBlank);
    targets.insert(targets.end(), static_cast<size_t>(2 * o.digits + 2), kIgnoredPosition);
    int64_t sum = operands[0] + operands[1];
    std::vector<int64_t> sum_digits(static_cast<size_t>(o.digits + 1));
    for (auto it = sum_digits.rbegin(); it != sum_digits.rend(); ++it, sum /= 10) *it = sum % 10;
    targets.insert(targets.end(), sum_digits.begin(), sum_digits.end());
  }
  add_label_noise(targets, 10, o.noise, generator);
  std::vector<std::string> vocabulary = numbered_names("", 10, 0);
  vocabulary.insert(vocabulary.end(), {"+", "=", "_"});
  return tokens("addition", std::move(inputs), length, std::move(targets), length,
                std::move(vocabulary), numbered_names("", 10, 0));
}

const std::vector<std::string>& wave_names() {
  static const std::vector<std::string> names = names_of(waves());
  return names;
}

Dataset make_forecast(const ForecastOptions& o) {
  check_common("forecast", o.samples, o.noise, o.seed);
  check_option("forecast", "length", static_cast<double>(o.length));
  check_option("forecast", "wave", o.wave);
  const WaveFunction f = std::find_if(waves().begin(), waves().end(), [&](const auto& entry) {
                           return entry.first == o.wave;
                         })->second;
  Generator generator(o.seed);
  // Per window: a period of 8 to 24 steps and a phase; then the noise of every value.
  const std::vector<double> shape = uniform_draws(generator, 2 * o.samples);
  const std::vector<double> noise = normal_draws(generator, o.samples * (o.length + 1));
  std::vector<float> inputs;
  std::vector<float> targets;
  inputs.reserve(static_cast<size_t>(o.samples * o.length));
  targets.reserve(static_cast<size_t>(o.samples));
  size_t k = 0;
  for (int64_t s = 0; s < o.samples; ++s) {
    const double period = 8 + 16 * shape[static_cast<size_t>(2 * s)];
    const double phase = shape[static_cast<size_t>(2 * s + 1)];
    for (int64_t t = 0; t <= o.length; ++t) {
      const double value = f(phase + static_cast<double>(t) / period) + o.noise * noise[k++];
      (t < o.length ? inputs : targets).push_back(static_cast<float>(value));
    }
  }
  Dataset d;
  d.name = "forecast";
  d.task = TaskKind::Regression;
  d.input_kind = InputKind::Sequence;
  d.inputs = from_vector(inputs, {o.samples, o.length, 1});
  d.targets = from_vector(targets, {o.samples, 1});
  d.feature_names = {"value"};
  return d;
}

Dataset make_text(const TextOptions& o) {
  check_option("text", "samples", static_cast<double>(o.samples));
  check_option("text", "length", static_cast<double>(o.length));
  check_option("text", "seed", static_cast<double>(o.seed));
  const std::string where = "text: the file '" + o.file + "'";
  if (o.file.empty()) throw ValueError("text: pick a text file (option 'file')");
  std::ifstream in(o.file, std::ios::binary);
  if (!in) throw ValueError(where + " cannot be opened");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw ValueError(where + " cannot be read");
  if (size > kMaxTextBytes) {
    throw ValueError(where + " has " + std::to_string(size) + " bytes; the most is " +
                     std::to_string(kMaxTextBytes) + " (64 MiB): use a part of it");
  }
  in.seekg(0);
  std::string text(static_cast<size_t>(size), '\0');
  if (!in.read(text.data(), size)) throw ValueError(where + " cannot be read");
  if (static_cast<int64_t>(text.size()) < o.length + 1) {
    throw ValueError(where + " has " + std::to_string(text.size()) +
                     " bytes, fewer than length + 1 = " + std::to_string(o.length + 1) +
                     "; pick a longer text or a shorter length");
  }
  if (text.find('\0') != std::string::npos) {
    throw ValueError(where + " holds NUL bytes: it is not text");
  }
  // The vocabulary: the distinct bytes in byte order.
  int64_t index_of[256];
  std::fill(std::begin(index_of), std::end(index_of), int64_t{-1});
  for (unsigned char c : text) index_of[c] = 0;
  std::vector<std::string> vocabulary;
  for (int b = 0; b < 256; ++b) {
    if (index_of[b] < 0) continue;
    index_of[b] = static_cast<int64_t>(vocabulary.size());
    vocabulary.push_back(byte_label(static_cast<unsigned char>(b)));
  }
  Generator generator(o.seed);
  const std::vector<double> starts = uniform_draws(generator, o.samples);
  const auto positions = static_cast<int64_t>(text.size()) - o.length;
  std::vector<int64_t> inputs;
  std::vector<int64_t> targets;
  inputs.reserve(static_cast<size_t>(o.samples * o.length));
  targets.reserve(static_cast<size_t>(o.samples * o.length));
  for (double u : starts) {
    const auto start = static_cast<size_t>(pick(u, positions));
    for (int64_t t = 0; t < o.length; ++t) {
      inputs.push_back(index_of[static_cast<unsigned char>(text[start + t])]);
      targets.push_back(index_of[static_cast<unsigned char>(text[start + t + 1])]);
    }
  }
  return tokens("text", std::move(inputs), o.length, std::move(targets), o.length, vocabulary,
                vocabulary);
}

}  // namespace nns::data
