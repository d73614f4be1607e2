// nnstudio-cli: NN Studio without a window. Every job the window can run has a subcommand
// here, so that it can be scripted and tested headless.
//
//   nnstudio-cli example --epochs 30     train the example MLP on spirals, print progress
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/ops/ops.h"

namespace {

constexpr const char* kProgram = "nnstudio-cli";

// A bad command line: reported with a pointer to the right help and exit code 2.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message, std::string command = "")
      : std::runtime_error(message), command(std::move(command)) {}
  std::string command;  // whose --help to point at; empty for the program's
};

// ---- Command-line options --------------------------------------------------------------------

// One option of a subcommand: `--name VALUE` or `--name=VALUE`, or a flag without a value.
struct OptionSpec {
  std::string name;
  std::string value_name;  // empty for a flag
  std::string default_value;
  std::string help;
};

// The parsed options of one subcommand; typed getters check the values.
class Options {
 public:
  Options(std::string command, std::map<std::string, std::string> values)
      : command_(std::move(command)), values_(std::move(values)) {}

  bool flag(const std::string& name) const { return values_.at(name) == "1"; }

  int64_t integer(const std::string& name, int64_t min, int64_t max) const {
    const std::string& text = values_.at(name);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty()) bad(name, text, "an integer");
    if (v < min || v > max) {
      bad(name, text, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    return v;
  }

  double real(const std::string& name, double min, double max) const {
    const std::string& text = values_.at(name);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || text.empty() || !std::isfinite(v)) bad(name, text, "a number");
    if (v < min || v > max) {
      std::ostringstream range;
      range << "a number in [" << min << ", " << max << "]";
      bad(name, text, range.str());
    }
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string& name, const std::string& text,
                        const std::string& expected) const {
    throw UsageError(command_ + ": --" + name + " expects " + expected + ", got '" + text + "'",
                     command_);
  }

  std::string command_;
  std::map<std::string, std::string> values_;
};

Options parse_options(const std::string& command, const std::vector<OptionSpec>& specs,
                      const std::vector<std::string>& args) {
  std::map<std::string, std::string> values;
  for (const OptionSpec& spec : specs)
    values[spec.name] = spec.value_name.empty() ? "0" : spec.default_value;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0) {
      throw UsageError(command + ": unexpected argument '" + arg + "'", command);
    }
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs) {
      if (s.name == name) spec = &s;
    }
    if (spec == nullptr) throw UsageError(command + ": unknown option '--" + name + "'", command);
    if (spec->value_name.empty()) {
      if (eq != std::string::npos)
        throw UsageError(command + ": --" + name + " takes no value", command);
      values[name] = "1";
    } else if (eq != std::string::npos) {
      values[name] = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      values[name] = args[++i];
    } else {
      throw UsageError(command + ": --" + name + " needs a value (" + spec->value_name + ")",
                       command);
    }
  }
  return Options(command, std::move(values));
}

std::string options_help(const std::vector<OptionSpec>& specs) {
  std::ostringstream os;
  for (const OptionSpec& s : specs) {
    std::string left = "--" + s.name + (s.value_name.empty() ? "" : " " + s.value_name);
    os << "  " << left << std::string(left.size() < 22 ? 22 - left.size() : 1, ' ') << s.help;
    if (!s.value_name.empty()) os << " (default " << s.default_value << ")";
    os << "\n";
  }
  return os.str();
}

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

// ---- Subcommands -----------------------------------------------------------------------------

struct Command {
  std::string name;
  std::string summary;
  std::vector<OptionSpec> options;
  std::function<int(const Options&)> run;
};

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

std::vector<Command> commands() {
  return {
      {"example",
       "train the example model (an MLP on 2-D spirals) and print its progress",
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
       run_example},
  };
}

std::string usage() {
  std::ostringstream os;
  os << "Usage: " << kProgram << " <command> [options]\n\n"
     << "NN Studio without a window.\n\nCommands:\n";
  for (const Command& c : commands()) {
    os << "  " << c.name << std::string(c.name.size() < 12 ? 12 - c.name.size() : 1, ' ')
       << c.summary << "\n";
  }
  os << "\nOptions:\n  -h, --help            show this help, or a command's: " << kProgram
     << " <command> --help\n  --version             print the version\n";
  return os.str();
}

std::string command_help(const Command& c) {
  std::string summary = c.summary;
  if (!summary.empty()) summary[0] = static_cast<char>(std::toupper(summary[0]));
  return "Usage: " + std::string(kProgram) + " " + c.name + " [options]\n\n" + summary +
         ".\n\nOptions:\n" + options_help(c.options) + "  -h, --help            show this help\n";
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cout << usage();
    return 0;
  }
  const std::string& first = args[0];
  if (first == "-h" || first == "--help" || first == "help") {
    std::cout << usage();
    return 0;
  }
  if (first == "--version") {
    std::cout << kProgram << " " << NNS_VERSION << "\n";
    return 0;
  }
  for (const Command& c : commands()) {
    if (c.name != first) continue;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const std::string& a : rest) {
      if (a == "-h" || a == "--help") {
        std::cout << command_help(c);
        return 0;
      }
    }
    return c.run(parse_options(c.name, c.options, rest));
  }
  if (first.rfind("-", 0) == 0) throw UsageError("unknown option '" + first + "'");
  throw UsageError("unknown command '" + first + "'");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return run(args);
  } catch (const UsageError& e) {
    const std::string help = e.command.empty() ? "--help" : e.command + " --help";
    std::cerr << kProgram << ": " << e.what() << "\nTry '" << kProgram << " " << help << "'.\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << kProgram << ": error: " << e.what() << "\n";
    return 1;
  }
}
