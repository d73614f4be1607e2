// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Seeded random numbers. The CPU generator is a 32-bit Mersenne Twister, as in PyTorch, and
// draws numbers the way PyTorch's CPU kernels do, so that nns::manual_seed(s) followed by
// rand/randn/init gives the same values as torch.manual_seed(s) does.
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>

namespace nns {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL);
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  uint32_t random();    // one 32-bit draw
  uint64_t random64();  // two draws, first one high
  // The whole state (seed, Mersenne Twister words and the cached normal sample) as text, for
  // a snapshot a run continues from bit for bit (torch.Generator.get_state/set_state).
  // set_state throws ValueError on text get_state did not write, changing nothing.
  std::string get_state() const;
  void set_state(const std::string& state);
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
// Held from a manual_seed to the end of the draws that must follow it (a model's initial
// weights), so that two threads seeding and building at once (a session made in the
// background, the window's model, a session's reset) each get the weights of their own seed.
std::unique_lock<std::recursive_mutex> seeded_draws();
// manual_seed(seed), then make() (a model's initial weights), both under seeded_draws().
//   nn::ModulePtr model = nns::with_seed(42, [&] { return make_model(); });
template <typename Make>
auto with_seed(uint64_t seed, Make&& make) {
  const auto seeded = seeded_draws();
  manual_seed(seed);
  return make();
}

}  // namespace nns
