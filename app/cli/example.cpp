// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli example: trains a small MLP on spirals with the engine's parts alone (no
// project file, no session): data set, data loader, layers, loss and optimizer in the plain
// PyTorch loop, the quickest check that the engine runs on a machine.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "app/cli/commands.h"
#include "engine/autograd/grad_mode.h"
#include "engine/data/dataloader.h"
#include "engine/data/generators.h"
#include "engine/nn/container.h"
#include "engine/nn/layers.h"
#include "engine/nn/loss.h"
#include "engine/ops/ops.h"
#include "engine/optim/sgd.h"
#include "engine/tensor/generator.h"

namespace nns::cli {
namespace {

int run_example(const Options& o) {
  const int64_t seed = o.integer("seed", 0, INT64_MAX);
  const int64_t points = o.integer("points", 2, 1000000);
  const int64_t classes = o.integer("classes", 2, 100);
  const int64_t hidden = o.integer("hidden", 1, 100000);
  const int64_t epochs = o.integer("epochs", 1, 1000000);
  const int64_t batch_size = o.integer("batch-size", 1, 1000000);
  const double lr = o.real("lr", 0, 100);
  const double momentum = o.real("momentum", 0, 1);
  const bool quiet = o.flag("quiet");

  data::SpiralsOptions spirals;
  spirals.samples = points * classes;
  spirals.classes = classes;
  spirals.noise = o.real("noise", 0, 100);
  spirals.seed = static_cast<uint64_t>(seed);
  const data::Dataset data = data::make_spirals(spirals);

  manual_seed(static_cast<uint64_t>(seed));
  auto model = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(2, hidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, hidden), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Linear>(hidden, classes)});
  int64_t parameters = 0;
  for (const Tensor& p : model->parameters()) parameters += p.numel();
  nn::CrossEntropyLoss criterion;
  optim::SGDOptions sgd_options(lr);
  sgd_options.momentum = momentum;
  optim::SGD optimizer(model->parameters(), sgd_options);
  const data::DataLoader loader(data, {batch_size, true, static_cast<uint64_t>(seed)});

  std::printf(
      "example: %lld-class spirals, %lld points, seed %lld; MLP 2-%lld-%lld-%lld (ReLU), %lld "
      "parameters; SGD lr %g momentum %g, batch %lld, %lld epochs\n",
      static_cast<long long>(classes), static_cast<long long>(data.size()),
      static_cast<long long>(seed), static_cast<long long>(hidden), static_cast<long long>(hidden),
      static_cast<long long>(classes), static_cast<long long>(parameters), lr, momentum,
      static_cast<long long>(batch_size), static_cast<long long>(epochs));

  using Clock = std::chrono::steady_clock;
  double total_seconds = 0, loss = 0, accuracy = 0;
  int64_t total_steps = 0;
  for (int64_t epoch = 0; epoch < epochs; ++epoch) {
    double loss_sum = 0;
    const auto start = Clock::now();
    for (const data::Batch& batch : loader.epoch(epoch)) {
      optimizer.zero_grad();
      const Tensor l = criterion((*model)(batch.inputs), batch.targets);
      l.backward();
      optimizer.step();
      loss_sum += l.item();
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t steps = loader.num_batches();
    total_seconds += seconds;
    total_steps += steps;
    loss = loss_sum / static_cast<double>(steps);
    {
      NoGradGuard no_grad;
      accuracy = mean(eq(argmax((*model)(data.inputs), 1), data.targets).to(kFloat64)).item();
    }
    if (!quiet) {
      std::printf("epoch %3lld/%lld  loss %.4f  train accuracy %5.1f%%  %7.0f steps/s\n",
                  static_cast<long long>(epoch + 1), static_cast<long long>(epochs), loss,
                  100.0 * accuracy, seconds > 0 ? static_cast<double>(steps) / seconds : 0.0);
      std::fflush(stdout);
    }
  }
  std::printf("final: loss %.4f, train accuracy %.1f%%, %.0f steps/s\n", loss, 100.0 * accuracy,
              total_seconds > 0 ? static_cast<double>(total_steps) / total_seconds : 0.0);
  return 0;
}

}  // namespace

Command example_command() {
  return {"example",
          "train the example model (an MLP on 2-D spirals) and print its progress",
          {},
          {
              {"epochs", "N", "30", "passes over the data"},
              {"batch-size", "N", "32", "samples per step"},
              {"lr", "X", "0.1", "learning rate"},
              {"momentum", "X", "0.9", "SGD momentum"},
              {"points", "N", "200", "points per class"},
              {"classes", "N", "3", "spiral arms (classes)"},
              {"noise", "X", "0.2", "standard deviation of the angle noise"},
              {"hidden", "N", "64", "width of both hidden layers"},
              {"seed", "N", "0", "seed of the data, the initial weights and the shuffling"},
              {"quiet", "", "", "print only the final result"},
          },
          run_example};
}

}  // namespace nns::cli
