// SPDX-License-Identifier: GPL-3.0-or-later
// make_session: a TrainingSession from a project's graph, dataset and training settings.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "engine/backend/cuda_backend.h"
#include "engine/data/catalog.h"
#include "engine/data/csv.h"
#include "engine/data/sources.h"
#include "engine/graph/builder.h"
#include "engine/optim/factory.h"
#include "engine/train/losses.h"
#include "engine/train/optimizers.h"
#include "engine/train/session.h"

namespace nns::train {
namespace {

bool same_name(const std::string& a, const std::string& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

optim::SchedulerValues scheduler_options(const graph::Json& json) {
  optim::SchedulerValues out;
  if (json.is_null()) return out;
  if (!json.is_object()) {
    throw ValueError("training.scheduler_options must be an object, got " + json.dump());
  }
  for (auto it = json.begin(); it != json.end(); ++it) {
    const graph::Json& v = it.value();
    if (v.is_boolean()) {
      out.emplace_back(it.key(), v.get<bool>());
    } else if (v.is_number_integer()) {
      out.emplace_back(it.key(), v.get<int64_t>());
    } else if (v.is_number()) {
      out.emplace_back(it.key(), v.get<double>());
    } else if (v.is_string()) {
      out.emplace_back(it.key(), v.get<std::string>());
    } else if (v.is_array() && std::all_of(v.begin(), v.end(),
                                           [](const graph::Json& x) { return x.is_number(); })) {
      out.emplace_back(it.key(), v.get<std::vector<double>>());
    } else {
      throw ValueError("training.scheduler_options." + it.key() +
                       ": expected a flag, a number, a string or a list of numbers, got " +
                       v.dump());
    }
  }
  return out;
}

data::Dataset project_dataset(const graph::DatasetSettings& d, const std::string& base_dir) {
  if (d.name == "csv") {
    if (d.csv_path.empty()) {
      throw ValueError("dataset: \"csv\" needs csv_path (the file, relative to the project)");
    }
    const std::filesystem::path path = std::filesystem::path(base_dir) / d.csv_path;
    return data::load_csv(path.string(), d.label_column);
  }
  data::DatasetOptions options;
  if (!d.options.is_null() && !d.options.is_object()) {
    throw ValueError("dataset.options must be an object, got " + d.options.dump());
  }
  for (auto it = d.options.begin(); it != d.options.end(); ++it) {
    const graph::Json& v = it.value();
    if (v.is_number()) {
      options[it.key()] = v.get<double>();
    } else if (v.is_string()) {
      options[it.key()] = v.get<std::string>();
    } else {
      throw ValueError("dataset.options." + it.key() + ": expected a number or a string, got " +
                       v.dump());
    }
  }
  // The settings' seed is the data's unless the options give their own.
  if (!options.count("seed")) options["seed"] = static_cast<double>(d.seed);
  // A file (the text set's) is kept relative to the project's folder.
  for (const data::OptionInfo& info : data::dataset_info(d.name).options) {
    const auto it = options.find(info.name);
    if (info.type != data::OptionType::File || it == options.end()) continue;
    if (const std::string* path = std::get_if<std::string>(&it->second)) {
      if (!path->empty() && std::filesystem::path(*path).is_relative()) {
        it->second = (std::filesystem::path(base_dir) / *path).string();
      }
    }
  }
  return data::make_dataset(d.name, options);
}

}  // namespace

Device training_device(const std::string& setting) {
  const Device device = Device::parse(setting);
  if (device.is_cuda() && !device_available(device)) {
    const std::string why = cuda::unavailable_reason();
    throw DeviceError("CUDA device " + device.str() + " is not available: " +
                      (why.empty() ? "this machine has " + std::to_string(cuda::device_count()) +
                                         " CUDA device(s)"
                                   : why));
  }
  return device;
}

// A user's source ("files"): its own test split where it has one (MNIST's t10k files, CIFAR's
// test batch, a test/ folder), transformed as a test set is; else a fraction of it.
data::DatasetSplit files_split(const graph::DatasetSettings& d, const std::string& base_dir) {
  if (d.path.empty()) {
    throw ValueError("dataset: \"files\" needs path (the data, relative to the project)");
  }
  const std::string path = (std::filesystem::path(base_dir) / d.path).string();
  data::SourceOptions options;
  options.transforms = data::parse_transforms(d.transforms);
  options.seed = static_cast<uint64_t>(d.seed);
  options.defer_random = true;
  data::DatasetSplit split;
  if (data::has_test_split(path)) {
    split.train = data::load_source(path, options).dataset;
    options.split = data::Split::Test;
    options.transforms = data::test_transforms(options.transforms);
    split.test = data::load_source(path, options).dataset;
    return split;
  }
  split = data::load_source(path, options)
              .dataset.split(d.test_fraction, static_cast<uint64_t>(d.seed));
  split.test = data::without_augmentation(split.test);
  return split;
}

data::DatasetSplit project_split(const graph::Project& project, const std::string& base_dir) {
  if (project.dataset.name == "files") return files_split(project.dataset, base_dir);
  return project_dataset(project.dataset, base_dir)
      .split(project.dataset.test_fraction, static_cast<uint64_t>(project.dataset.seed));
}

std::unique_ptr<TrainingSession> make_session(const graph::Project& project,
                                              const std::string& base_dir) {
  const graph::TrainingSettings& t = project.training;
  data::DatasetSplit split = project_split(project, base_dir);

  SessionConfig config;
  config.batch_size = t.batch_size;
  config.epochs = t.epochs;
  config.seed = static_cast<uint64_t>(t.seed);
  config.clip_grad_norm = t.clip_grad_norm;
  config.device = training_device(t.device);
  config.cuda_graphs = t.cuda_graphs;
  config.scheduler_per_step = same_name(t.scheduler, "OneCycleLR");

  SessionParts parts;
  // Checked here, so that a bad graph fails make_session with its GraphError before a loss or
  // an optimizer's options are looked at (the session builds the model once, seeded).
  graph::check_model(project);
  parts.make_model = [project] { return graph::build_model(project); };
  parts.loss = make_loss(t.loss, t.loss_options);
  const optim::OptionList opt = optimizer_option_list(t.optimizer, t.optimizer_options);
  const std::string optimizer = t.optimizer;
  parts.make_optimizer = [optimizer, opt](const std::vector<Tensor>& params) {
    return optim::make_optimizer(optimizer, {optim::ParamGroup(params)}, opt);
  };
  if (!t.scheduler.empty()) {
    optim::SchedulerValues sched = scheduler_options(t.scheduler_options);
    // OneCycleLR steps per batch: without a length of its own, it spans the whole run.
    if (config.scheduler_per_step && std::none_of(sched.begin(), sched.end(), [](const auto& kv) {
          return kv.first == "total_steps" || kv.first == "epochs";
        })) {
      const int64_t batches =
          (split.train.size() + t.batch_size - 1) / std::max<int64_t>(t.batch_size, 1);
      sched.emplace_back("epochs", std::max<int64_t>(t.epochs, 1));
      sched.emplace_back("steps_per_epoch", std::max<int64_t>(batches, 1));
    }
    const std::string name = t.scheduler;
    parts.make_scheduler = [name, sched](optim::Optimizer& o) {
      return optim::make_scheduler(name, o, sched);
    };
  }
  parts.train = std::move(split.train);
  parts.test = std::move(split.test);

  auto session = std::make_unique<TrainingSession>(std::move(parts), config);
  const auto* model = dynamic_cast<const graph::GraphModule*>(session->model().get());
  for (const graph::ProbeSpec& p : project.probes) {
    if (!model || !model->node_module(p.node)) {
      throw ValueError("probes: node " + std::to_string(p.node) +
                       " has no module to place hooks on (a functional node, an Input or an "
                       "Output, or no such node); probe a module node");
    }
    session->add_probe(
        model->module_name(p.node),
        ProbeOptions{p.activations, p.gradients, p.parameters, p.every, p.max_overhead});
  }
  return session;
}

}  // namespace nns::train
