// SPDX-License-Identifier: GPL-3.0-or-later
// bench_sequence: forward + backward steps per second of the sequence layers (issue 17)
// against PyTorch, in one run, one thread each:
//
//   build/release/tests/bench/bench_sequence [--seconds S] [--no-torch]
//
// A batch of 32 sequences of 20 steps of 32 features (batch_first): LSTM and GRU with 64 hidden
// units, MultiheadAttention (4 heads, self-attention), TransformerEncoderLayer (4 heads,
// feed-forward 64, no dropout). Each step is the layer's output summed and its backward. PyTorch
// runs the same in tests/bench/bench_sequence_torch.py. Every figure is the best of three windows.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cpu/threads.h"
#include "engine/nn/attention.h"
#include "engine/nn/rnn.h"
#include "engine/nn/transformer.h"
#include "engine/tensor/factories.h"
#include "torch_reference.h"

namespace {

using namespace nns;
using Clock = std::chrono::steady_clock;
constexpr int64_t kN = 32, kT = 20, kE = 32;

double best_rate(double seconds, const std::function<void()>& step) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    int64_t n = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      step();
      ++n;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    best = std::max(best, static_cast<double>(n) / elapsed);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1;
  bool torch = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--no-torch")) {
      torch = false;
    } else {
      std::fprintf(stderr, "usage: bench_sequence [--seconds S] [--no-torch]\n");
      return 2;
    }
  }
  set_num_threads(1);
  manual_seed(0);
  const Tensor x = randn({kN, kT, kE});
  nn::RNNOptions r;
  r.input_size = kE;
  r.hidden_size = 64;
  r.batch_first = true;
  auto lstm = std::make_shared<nn::LSTM>(r);
  auto gru = std::make_shared<nn::GRU>(r);
  nn::MultiheadAttentionOptions a;
  a.embed_dim = kE;
  a.num_heads = 4;
  a.batch_first = true;
  auto mha = std::make_shared<nn::MultiheadAttention>(a);
  nn::TransformerOptions t;
  t.d_model = kE;
  t.nhead = 4;
  t.dim_feedforward = 64;
  t.dropout = 0;
  t.batch_first = true;
  auto encoder = std::make_shared<nn::TransformerEncoderLayer>(t);
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"lstm", [&] { lstm->forward(x).sum().backward(); }},
      {"gru", [&] { gru->forward(x).sum().backward(); }},
      {"mha", [&] { mha->forward(x).sum().backward(); }},
      {"encoder", [&] { encoder->forward(x).sum().backward(); }},
  };
  const std::map<std::string, double> reference =
      torch ? nns::bench::torch_figures("bench_sequence_torch.py",
                                        "--seconds " + std::to_string(seconds))
            : std::map<std::string, double>{};
  std::printf("%-8s %14s %14s %8s\n", "layer", "NN Studio /s", "PyTorch /s", "ratio");
  for (const auto& [name, step] : cases) {
    const double ours = best_rate(seconds, step);
    auto it = reference.find(name);
    if (it == reference.end()) {
      std::printf("%-8s %14.1f %14s %8s\n", name.c_str(), ours, "-", "-");
    } else {
      std::printf("%-8s %14.1f %14.1f %7.2fx\n", name.c_str(), ours, it->second, ours / it->second);
    }
  }
  return 0;
}
