// bench_train: training steps per second of the engine against PyTorch, in one run.
//
//   build/release/tests/bench/bench_train [--seconds S] [--no-torch]
//
// Two MLPs, SGD with momentum 0.9, cross-entropy, the same fixed batches cycled:
//   small  2-64-64-3 ReLU, batch 256 (all per-op overhead; target >= 5x PyTorch)
//   large  784-512-512-10 ReLU, batch 128 (bound by matrix products; target >= 1.3x)
// Each is timed as a plain loop on the engine's API and through a TrainingSession (the path
// the window and the CLI take), and the session again with a probe on every module at the
// default sampling (every 10 steps; target: at most 5% slower). PyTorch runs the same loop in
// tests/bench/bench_train_torch.py with one thread. Every figure is the best of three windows
// (the machine is shared: the best is the least disturbed).
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/data/dataset.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/factories.h"
#include "engine/tensor/generator.h"
#include "engine/train/session.h"

namespace {

using Clock = std::chrono::steady_clock;

struct ModelSpec {
  const char* name;
  std::vector<int64_t> widths;
  int64_t batch;
  double lr;
};

const ModelSpec kModels[] = {
    {"small", {2, 64, 64, 3}, 256, 0.05},
    {"large", {784, 512, 512, 10}, 128, 0.01},
};
constexpr int64_t kBatches = 16;

std::shared_ptr<nns::nn::Sequential> mlp(const std::vector<int64_t>& widths) {
  auto net = std::make_shared<nns::nn::Sequential>();
  for (size_t i = 0; i + 1 < widths.size(); ++i) {
    net->append(std::make_shared<nns::nn::Linear>(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->append(std::make_shared<nns::nn::ReLU>());
  }
  return net;
}

nns::data::Dataset data_for(const ModelSpec& m) {
  nns::manual_seed(0);
  nns::data::Dataset d;
  d.name = m.name;
  d.inputs = nns::randn({kBatches * m.batch, m.widths.front()});
  d.targets = nns::randint(0, m.widths.back(), {kBatches * m.batch});
  d.num_classes = m.widths.back();
  return d;
}

// Runs fn(i) for i = 0, 1, ... in three windows of `seconds`; the best rate.
template <class Fn>
double best_rate(double seconds, Fn&& fn) {
  for (int i = 0; i < 20; ++i) fn(i);
  double best = 0;
  for (int w = 0; w < 3; ++w) {
    int64_t n = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      fn(n++);
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    }
    best = std::max(best, static_cast<double>(n) / elapsed);
  }
  return best;
}

double plain_loop(const ModelSpec& m, double seconds) {
  const nns::data::Dataset d = data_for(m);
  auto net = mlp(m.widths);
  nns::nn::CrossEntropyLoss loss;
  nns::optim::SGDOptions o(m.lr);
  o.momentum = 0.9;
  nns::optim::SGD sgd(net->parameters(), o);
  std::vector<nns::Tensor> xs, ys;
  for (int64_t b = 0; b < kBatches; ++b) {
    xs.push_back(d.inputs.narrow(0, b * m.batch, m.batch));
    ys.push_back(d.targets.narrow(0, b * m.batch, m.batch));
  }
  return best_rate(seconds, [&](int64_t i) {
    const size_t b = static_cast<size_t>(i % kBatches);
    sgd.zero_grad();
    loss((*net)(xs[b]), ys[b]).backward();
    sgd.step();
  });
}

// Steps per second of a session left running for `seconds`, best of three windows.
double session_rate(const ModelSpec& m, double seconds, bool probes) {
  nns::train::SessionParts parts;
  parts.make_model = [&m] { return mlp(m.widths); };
  parts.loss = std::make_shared<nns::nn::CrossEntropyLoss>();
  parts.make_optimizer = [&m](const std::vector<nns::Tensor>& params) {
    nns::optim::SGDOptions o(m.lr);
    o.momentum = 0.9;
    return std::make_unique<nns::optim::SGD>(params, o);
  };
  parts.train = data_for(m);
  nns::train::SessionConfig config;
  config.batch_size = m.batch;
  config.shuffle = false;
  nns::train::TrainingSession session(std::move(parts), config);
  if (probes) {
    for (const std::string& name : session.module_names()) session.add_probe(name);
  }
  double best = 0;
  session.step(20);
  session.wait_idle();
  for (int w = 0; w < 3; ++w) {
    const int64_t before = session.status().step;
    const auto start = Clock::now();
    session.start();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    session.pause();
    session.wait_idle();
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, static_cast<double>(session.status().step - before) / elapsed);
    session.take_step_metrics();
    session.take_probe_samples();
  }
  return best;
}

// PyTorch's figures from bench_train_torch.py, by model name; empty when it cannot run.
std::map<std::string, double> torch_rates(double seconds) {
  std::map<std::string, double> out;
  const std::string command = std::string("OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 ") +
                              "/usr/bin/python3 " + NNS_BENCH_DIR + "/bench_train_torch.py" +
                              " --seconds " + std::to_string(seconds) + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  char line[256];
  while (std::fgets(line, sizeof line, pipe)) {
    char name[64];
    double rate = 0;
    if (std::sscanf(line, "%63s %lf", name, &rate) == 2) {
      out[name] = rate;
    } else {
      std::fprintf(stderr, "bench_train_torch.py: %s", line);
    }
  }
  pclose(pipe);
  return out;
}

// OpenBLAS's thread count, when the BLAS in the process is OpenBLAS.
void set_blas_threads(int n) {
  using SetThreads = void (*)(int);
  if (auto fn = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    fn(n);
  }
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  bool torch = true;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--no-torch")) {
      torch = false;
    } else {
      std::fprintf(stderr, "usage: bench_train [--seconds S] [--no-torch]\n");
      return 2;
    }
  }
  set_blas_threads(1);
  const std::map<std::string, double> reference =
      torch ? torch_rates(seconds) : std::map<std::string, double>{};
  std::printf("%-6s %12s %12s %12s %12s %10s %10s %9s\n", "model", "engine", "session", "+probes",
              "torch", "eng/torch", "ses/torch", "probe cost");
  for (const ModelSpec& m : kModels) {
    const double engine = plain_loop(m, seconds);
    const double session = session_rate(m, seconds, false);
    const double probed = session_rate(m, seconds, true);
    const auto it = reference.find(m.name);
    const double ref = it == reference.end() ? 0 : it->second;
    std::printf("%-6s %10.0f/s %10.0f/s %10.0f/s %10.0f/s %9.2fx %9.2fx %8.1f%%\n", m.name, engine,
                session, probed, ref, ref > 0 ? engine / ref : 0.0, ref > 0 ? session / ref : 0.0,
                100.0 * (session / probed - 1));
    std::fflush(stdout);
  }
  // The large model with two BLAS threads, for the session's threading choice.
  set_blas_threads(2);
  std::printf("large, 2 BLAS threads: engine %.0f/s\n", plain_loop(kModels[1], seconds));
  return 0;
}
