#include "engine/tensor/generator.h"

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

Generator& default_generator() {
  static Generator generator;
  return generator;
}

void manual_seed(uint64_t seed) {
  Generator& generator = default_generator();
  std::lock_guard<std::mutex> lock(generator.mutex);
  generator.manual_seed(seed);
}

}  // namespace nns
