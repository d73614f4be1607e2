#include "engine/train/losses.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "engine/nn/loss.h"
#include "engine/tensor/error.h"

namespace nns::train {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The options of one loss, each read once: what is left over is unknown.
class LossOptions {
 public:
  LossOptions(std::string loss, const graph::Json& options)
      : loss_(std::move(loss)), options_(options.is_null() ? graph::Json::object() : options) {
    if (!options_.is_object()) {
      throw ValueError(loss_ + ": the loss options must be an object, got " + options_.dump());
    }
  }

  Reduction reduction() {
    const std::string name = text("reduction", "mean");
    if (name != "mean" && name != "sum") {
      throw ValueError(loss_ + ": reduction must be \"mean\" or \"sum\" for training, got \"" +
                       name + "\"");
    }
    return reduction_from_name(name);
  }
  double number(const std::string& key, double fallback, double min, double max) {
    if (!take(key)) return fallback;
    const graph::Json& v = options_[key];
    if (!v.is_number()) throw ValueError(loss_ + ": " + key + " must be a number, got " + v.dump());
    const double x = v.get<double>();
    if (!(x >= min && x <= max)) {
      throw ValueError(loss_ + ": " + key + " must be in [" + std::to_string(min) + ", " +
                       std::to_string(max) + "], got " + v.dump());
    }
    return x;
  }
  int64_t integer(const std::string& key, int64_t fallback) {
    if (!take(key)) return fallback;
    const graph::Json& v = options_[key];
    if (!v.is_number_integer()) {
      throw ValueError(loss_ + ": " + key + " must be an integer, got " + v.dump());
    }
    return v.get<int64_t>();
  }
  // Every option was read: otherwise a KeyError naming the first unknown one.
  void done(const std::string& known) const {
    for (auto it = options_.begin(); it != options_.end(); ++it) {
      if (std::find(taken_.begin(), taken_.end(), it.key()) == taken_.end()) {
        throw KeyError(loss_ + " has no option '" + it.key() + "'; its options are " + known);
      }
    }
  }

 private:
  bool take(const std::string& key) {
    taken_.push_back(key);
    return options_.contains(key);
  }
  std::string text(const std::string& key, const std::string& fallback) {
    if (!take(key)) return fallback;
    const graph::Json& v = options_[key];
    if (!v.is_string()) throw ValueError(loss_ + ": " + key + " must be a string, got " + v.dump());
    return v.get<std::string>();
  }

  std::string loss_;
  graph::Json options_;
  std::vector<std::string> taken_;
};

}  // namespace

const std::vector<std::string>& loss_names() {
  static const std::vector<std::string> names = {"CrossEntropyLoss", "NLLLoss", "BCEWithLogitsLoss",
                                                 "MSELoss",          "L1Loss",  "HuberLoss"};
  return names;
}

nn::ModulePtr make_loss(const std::string& name, const graph::Json& options) {
  const std::string key = lower(name);
  auto canonical = std::find_if(loss_names().begin(), loss_names().end(),
                                [&](const std::string& n) { return lower(n) == key; });
  if (canonical == loss_names().end()) {
    std::string known;
    for (const std::string& n : loss_names()) known += (known.empty() ? "" : ", ") + n;
    throw KeyError("unknown loss '" + name + "'; the losses are " + known);
  }
  LossOptions o(*canonical, options);
  nn::ModulePtr loss;
  if (*canonical == "CrossEntropyLoss") {
    nn::CrossEntropyLossOptions c;
    c.reduction = o.reduction();
    c.label_smoothing = o.number("label_smoothing", 0.0, 0.0, 1.0);
    c.ignore_index = o.integer("ignore_index", -100);
    o.done("reduction, label_smoothing, ignore_index");
    loss = std::make_shared<nn::CrossEntropyLoss>(c);
  } else if (*canonical == "NLLLoss") {
    nn::NLLLossOptions c;
    c.reduction = o.reduction();
    c.ignore_index = o.integer("ignore_index", -100);
    o.done("reduction, ignore_index");
    loss = std::make_shared<nn::NLLLoss>(c);
  } else if (*canonical == "BCEWithLogitsLoss") {
    nn::BCEWithLogitsLossOptions c;
    c.reduction = o.reduction();
    o.done("reduction");
    loss = std::make_shared<nn::BCEWithLogitsLoss>(c);
  } else if (*canonical == "MSELoss") {
    nn::MSELossOptions c{o.reduction()};
    o.done("reduction");
    loss = std::make_shared<nn::MSELoss>(c);
  } else if (*canonical == "L1Loss") {
    nn::L1LossOptions c{o.reduction()};
    o.done("reduction");
    loss = std::make_shared<nn::L1Loss>(c);
  } else {
    nn::HuberLossOptions c;
    c.reduction = o.reduction();
    c.delta = o.number("delta", 1.0, 1e-12, 1e300);
    o.done("reduction, delta");
    loss = std::make_shared<nn::HuberLoss>(c);
  }
  return loss;
}

}  // namespace nns::train
