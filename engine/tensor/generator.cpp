// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/tensor/generator.h"

#include <cstring>
#include <sstream>

#include "engine/tensor/error.h"

namespace nns {

// PyTorch's Mersenne Twister keeps only the low 32 bits of the seed for its state, exactly as
// std::mt19937 does, so the two engines produce the same stream for every 64-bit seed.
Generator::Generator(uint64_t seed) : seed_(seed), engine_(static_cast<uint32_t>(seed)) {}

void Generator::manual_seed(uint64_t seed) {
  seed_ = seed;
  engine_.seed(static_cast<uint32_t>(seed));
  // A cached Box-Muller sample belongs to the old stream; PyTorch drops it on reseeding too.
  next_double_normal_sample.reset();
}

uint32_t Generator::random() {
  return static_cast<uint32_t>(engine_());
}

uint64_t Generator::random64() {
  const uint64_t hi = random();
  const uint64_t lo = random();
  return (hi << 32) | lo;
}

namespace {
constexpr const char* kStateTag = "mt19937";
}  // namespace

std::string Generator::get_state() const {
  std::ostringstream out;
  out << kStateTag << ' ' << seed_ << ' ';
  if (next_double_normal_sample) {
    uint64_t bits = 0;
    std::memcpy(&bits, &*next_double_normal_sample, sizeof bits);
    out << "1 " << bits;
  } else {
    out << "0 0";
  }
  out << ' ' << engine_;
  return out.str();
}

void Generator::set_state(const std::string& state) {
  std::istringstream in(state);
  std::string tag;
  uint64_t seed = 0, bits = 0;
  int has_normal = 0;
  std::mt19937 engine;
  in >> tag >> seed >> has_normal >> bits >> engine;
  if (in.fail() || tag != kStateTag || (has_normal != 0 && has_normal != 1)) {
    throw ValueError("Generator::set_state: not a generator state (" +
                     std::to_string(state.size()) + " bytes starting '" + state.substr(0, 16) +
                     "')");
  }
  seed_ = seed;
  engine_ = engine;
  if (has_normal) {
    double v = 0;
    std::memcpy(&v, &bits, sizeof v);
    next_double_normal_sample = v;
  } else {
    next_double_normal_sample.reset();
  }
}

Generator& default_generator() {
  static Generator generator;
  return generator;
}

void manual_seed(uint64_t seed) {
  Generator& generator = default_generator();
  std::lock_guard<std::mutex> lock(generator.mutex);
  generator.manual_seed(seed);
}

std::unique_lock<std::recursive_mutex> seeded_draws() {
  static std::recursive_mutex mutex;
  return std::unique_lock<std::recursive_mutex>(mutex);
}

}  // namespace nns
