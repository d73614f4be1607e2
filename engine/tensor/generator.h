#pragma once
// Seeded random numbers. The CPU generator is a 32-bit Mersenne Twister, as in PyTorch, and
// draws numbers the way PyTorch's CPU kernels do, so that nns::manual_seed(s) followed by
// rand/randn/init gives the same values as torch.manual_seed(s) does.
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>

namespace nns {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL);
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  uint32_t random();    // one 32-bit draw
  uint64_t random64();  // two draws, first one high
  // PyTorch's at::normal_distribution<double> keeps the second Box-Muller sample.
  std::optional<double> next_double_normal_sample;
  // Callers that draw many numbers hold it for the whole fill.
  std::mutex mutex;

 private:
  uint64_t seed_;
  std::mt19937 engine_;
};

// The process-wide default generator (torch.default_generator).
Generator& default_generator();
// torch.manual_seed.
void manual_seed(uint64_t seed);

}  // namespace nns
