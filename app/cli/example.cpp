// nnstudio-cli example: trains a small MLP on spirals with the tensor API alone (no project
// file), the quickest check that the engine runs on a machine.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "app/cli/commands.h"
#include "engine/ops/ops.h"

namespace nns::cli {
namespace {

// ---- Data: toy datasets ----------------------------------------------------------------------

// A labelled data set: inputs [N, features] float32, labels [N] int64.
struct Dataset {
  nns::Tensor inputs;
  nns::Tensor labels;
  int64_t num_classes = 0;
  int64_t size() const { return inputs.size(0); }
};

// Interleaved spirals, one arm per class (the CS231n / TensorFlow Playground data): point i
// of class c sits at radius r = i / (n - 1) and angle 4c + 4r plus Gaussian noise.
Dataset make_spirals(int64_t points_per_class, int64_t classes, double noise,
                     nns::Generator& generator) {
  const int64_t n = points_per_class * classes;
  const std::vector<double> jitter = nns::randn({n}, nns::kFloat64, &generator).to_vector<double>();
  std::vector<float> xy;
  std::vector<int64_t> labels;
  xy.reserve(static_cast<size_t>(2 * n));
  labels.reserve(static_cast<size_t>(n));
  for (int64_t c = 0; c < classes; ++c) {
    for (int64_t i = 0; i < points_per_class; ++i) {
      const double r = points_per_class > 1 ? static_cast<double>(i) / (points_per_class - 1) : 1;
      const double t =
          4.0 * c + 4.0 * r + noise * jitter[static_cast<size_t>(c * points_per_class + i)];
      xy.push_back(static_cast<float>(r * std::sin(t)));
      xy.push_back(static_cast<float>(r * std::cos(t)));
      labels.push_back(c);
    }
  }
  return {nns::from_vector(xy, {n, 2}), nns::from_vector(labels, {n}), classes};
}

// ---- Model: a multilayer perceptron on the tensor API ----------------------------------------

// Linear layers as PyTorch's nn.Linear stores them (weight [out, in], bias [out]) and
// initializes them (uniform in +-1/sqrt(in) for both), with ReLU between them.
class Mlp {
 public:
  Mlp(const std::vector<int64_t>& widths, nns::Generator& generator) {
    nns::NoGradGuard no_grad;
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(widths[i]));
      nns::Tensor w = nns::empty({widths[i + 1], widths[i]});
      nns::Tensor b = nns::empty({widths[i + 1]});
      nns::uniform_(w, -bound, bound, &generator);
      nns::uniform_(b, -bound, bound, &generator);
      weights_.push_back(w.requires_grad_(true));
      biases_.push_back(b.requires_grad_(true));
    }
  }

  // Logits [N, classes] for inputs [N, features].
  nns::Tensor forward(const nns::Tensor& x) const {
    nns::Tensor h = x;
    for (size_t i = 0; i < weights_.size(); ++i) {
      h = nns::add(nns::matmul(h, weights_[i].t()), biases_[i]);
      if (i + 1 < weights_.size()) h = nns::relu(h);
    }
    return h;
  }

  std::vector<nns::Tensor> parameters() const {
    std::vector<nns::Tensor> params;
    for (size_t i = 0; i < weights_.size(); ++i) {
      params.push_back(weights_[i]);
      params.push_back(biases_[i]);
    }
    return params;
  }

  int64_t num_parameters() const {
    int64_t n = 0;
    for (const nns::Tensor& p : parameters()) n += p.numel();
    return n;
  }

 private:
  std::vector<nns::Tensor> weights_;
  std::vector<nns::Tensor> biases_;
};

// torch.nn.functional.cross_entropy with mean reduction.
nns::Tensor cross_entropy(const nns::Tensor& logits, const nns::Tensor& labels) {
  const nns::Tensor log_probs = nns::log_softmax(logits, 1);
  return nns::neg(nns::mean(nns::gather(log_probs, 1, labels.unsqueeze(1))));
}

// torch.optim.SGD with momentum (dampening 0, no weight decay): v = mu * v + g; p -= lr * v.
class Sgd {
 public:
  Sgd(std::vector<nns::Tensor> params, double lr, double momentum)
      : params_(std::move(params)), lr_(lr), momentum_(momentum), velocity_(params_.size()) {}

  void zero_grad() {
    for (const nns::Tensor& p : params_) p.set_grad(nns::Tensor());
  }

  void step() {
    nns::NoGradGuard no_grad;
    for (size_t i = 0; i < params_.size(); ++i) {
      const nns::Tensor g = params_[i].grad();
      if (!g.defined()) continue;
      nns::Tensor& v = velocity_[i];
      if (momentum_ == 0) {
        params_[i].add_(g, -lr_);
        continue;
      }
      // Like PyTorch, the first step's buffer is the gradient itself.
      if (!v.defined()) {
        v = g.clone();
      } else {
        v.mul_(momentum_).add_(g);
      }
      params_[i].add_(v, -lr_);
    }
  }

 private:
  std::vector<nns::Tensor> params_;
  double lr_;
  double momentum_;
  std::vector<nns::Tensor> velocity_;
};

double accuracy(const nns::Tensor& logits, const nns::Tensor& labels) {
  nns::NoGradGuard no_grad;
  const std::vector<int64_t> predicted = nns::argmax(logits, 1).to_vector<int64_t>();
  const std::vector<int64_t> truth = labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i] ? 1 : 0;
  return truth.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(truth.size());
}

// ---- Training loop ---------------------------------------------------------------------------

struct TrainConfig {
  int64_t epochs = 30;
  int64_t batch_size = 32;
  double lr = 0.1;
  double momentum = 0.9;
  bool quiet = false;
};

struct TrainResult {
  double final_loss = 0;
  double train_accuracy = 0;
  double steps_per_second = 0;
};

// Minibatch SGD over shuffled data; prints one line per epoch unless quiet.
TrainResult train(Mlp& model, const Dataset& data, const TrainConfig& config,
                  nns::Generator& generator) {
  Sgd optimizer(model.parameters(), config.lr, config.momentum);
  const int64_t n = data.size();
  using Clock = std::chrono::steady_clock;
  double total_seconds = 0;
  int64_t total_steps = 0;
  TrainResult result;
  for (int64_t epoch = 1; epoch <= config.epochs; ++epoch) {
    const nns::Tensor order = nns::randperm(n, &generator);
    double loss_sum = 0;
    int64_t steps = 0;
    const auto start = Clock::now();
    for (int64_t begin = 0; begin < n; begin += config.batch_size) {
      const nns::Tensor index = order.slice(0, begin, begin + config.batch_size);
      const nns::Tensor x = nns::index_select(data.inputs, 0, index);
      const nns::Tensor y = nns::index_select(data.labels, 0, index);
      optimizer.zero_grad();
      const nns::Tensor loss = cross_entropy(model.forward(x), y);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item();
      ++steps;
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    total_seconds += seconds;
    total_steps += steps;
    result.final_loss = loss_sum / static_cast<double>(steps);
    {
      nns::NoGradGuard no_grad;
      result.train_accuracy = accuracy(model.forward(data.inputs), data.labels);
    }
    if (!config.quiet) {
      std::printf("epoch %3lld/%lld  loss %.4f  train accuracy %5.1f%%  %7.0f steps/s\n",
                  static_cast<long long>(epoch), static_cast<long long>(config.epochs),
                  result.final_loss, 100.0 * result.train_accuracy,
                  seconds > 0 ? static_cast<double>(steps) / seconds : 0.0);
      std::fflush(stdout);
    }
  }
  result.steps_per_second =
      total_seconds > 0 ? static_cast<double>(total_steps) / total_seconds : 0;
  return result;
}

int run_example(const Options& o) {
  const int64_t seed = o.integer("seed", 0, INT64_MAX);
  const int64_t points = o.integer("points", 2, 1000000);
  const int64_t classes = o.integer("classes", 2, 100);
  const int64_t hidden = o.integer("hidden", 1, 100000);
  TrainConfig config;
  config.epochs = o.integer("epochs", 1, 1000000);
  config.batch_size = o.integer("batch-size", 1, 1000000);
  config.lr = o.real("lr", 0, 100);
  config.momentum = o.real("momentum", 0, 1);
  config.quiet = o.flag("quiet");
  const double noise = o.real("noise", 0, 100);

  nns::Generator generator(static_cast<uint64_t>(seed));
  const Dataset data = make_spirals(points, classes, noise, generator);
  Mlp model({2, hidden, hidden, classes}, generator);
  std::printf(
      "example: %lld-class spirals, %lld points, seed %lld; MLP 2-%lld-%lld-%lld (ReLU), %lld "
      "parameters; SGD lr %g momentum %g, batch %lld, %lld epochs\n",
      static_cast<long long>(classes), static_cast<long long>(data.size()),
      static_cast<long long>(seed), static_cast<long long>(hidden), static_cast<long long>(hidden),
      static_cast<long long>(classes), static_cast<long long>(model.num_parameters()), config.lr,
      config.momentum, static_cast<long long>(config.batch_size),
      static_cast<long long>(config.epochs));
  const TrainResult result = train(model, data, config, generator);
  std::printf("final: loss %.4f, train accuracy %.1f%%, %.0f steps/s\n", result.final_loss,
              100.0 * result.train_accuracy, result.steps_per_second);
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
