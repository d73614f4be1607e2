// SPDX-License-Identifier: GPL-3.0-or-later
// nnstudio-cli data SOURCE [--transform T] [--split train|test] [--head N] [--out FILE]: what a
// data source holds (its kind, classes and the samples per class) and, with --out, its first N
// samples after the transforms as a safetensors file of `x` and `y`, in the order torchvision's
// dataset indexes them, so they can be compared with torchvision's tensors.
#include <iomanip>
#include <iostream>
#include <map>

#include "app/cli/commands.h"
#include "engine/data/sources.h"
#include "engine/serialize/serialize.h"

namespace nns::cli {
namespace {

void print_counts(const data::Dataset& d) {
  if (d.task != data::TaskKind::Classification || d.per_position()) {
    std::cout << "targets: " << shape_str(d.targets.sizes()) << " (regression)\n";
    return;
  }
  const std::vector<int64_t> counts = d.class_counts();
  std::cout << "classes: " << d.num_classes << "\n";
  for (size_t c = 0; c < counts.size(); ++c) {
    const std::string name = c < d.class_names.size() ? d.class_names[c] : std::to_string(c);
    std::cout << "  " << std::setw(4) << c << "  " << std::left << std::setw(24) << name
              << std::right << std::setw(8) << counts[c] << "\n";
  }
}

int run_data(const Options& o) {
  const std::string source = o.positional(0);
  data::SourceOptions options;
  try {
    options.transforms = data::parse_transforms(o.text("transform"));
  } catch (const ValueError& e) {
    o.bad("transform", o.text("transform"), e.what());
  }
  options.split = data::parse_split(o.choice("split", {"train", "test"}));
  options.head = o.has("head") ? o.integer("head", 0, int64_t{1} << 40) : -1;
  options.seed = static_cast<uint64_t>(o.integer("seed", 0, int64_t{1} << 53));
  if (o.has("out") && !o.has("head")) {
    throw UsageError("data: --out writes the first N samples: give --head N", "data");
  }

  const data::LoadedSource loaded = data::load_source(source, options);
  const data::Dataset& d = loaded.dataset;
  std::cout << source << ": " << loaded.kind << ", " << data::split_name(options.split)
            << " split, " << d.size() << " samples" << (options.head >= 0 ? " (first)" : "")
            << ", x " << shape_str([&] {
                 Shape s = d.sample_shape();
                 s.insert(s.begin(), d.size());
                 return s;
               }())
            << (d.stream ? " (streamed: larger than the memory budget)" : "") << "\n";
  if (!options.transforms.empty()) {
    std::cout << "transforms: " << data::transforms_text(options.transforms) << "\n";
  }
  print_counts(d);
  if (!d.skipped.empty()) {
    std::cout << "skipped " << d.skipped.size() << " unreadable image"
              << (d.skipped.size() == 1 ? "" : "s") << ":\n";
    for (const std::string& why : d.skipped) std::cout << "  " << why << "\n";
  }
  if (o.flag("stats")) {
    std::vector<double> mean;
    std::vector<double> std;
    data::channel_statistics(source, options.transforms, 10000, mean, std);
    std::cout << "per-channel mean and std (for Normalize): Normalize(mean=(";
    for (size_t c = 0; c < mean.size(); ++c) std::cout << (c ? ", " : "") << mean[c];
    std::cout << "), std=(";
    for (size_t c = 0; c < std.size(); ++c) std::cout << (c ? ", " : "") << std[c];
    std::cout << "))\n";
  }
  if (o.has("out")) {
    nn::StateDict tensors;
    tensors.insert("x", d.stream ? d.input_range(0, d.size()) : d.inputs);
    tensors.insert("y", d.targets);
    serialize::save_state_dict_file(tensors, o.text("out"));
    std::cout << "wrote " << o.text("out") << "\n";
  }
  return 0;
}

}  // namespace

Command data_command() {
  return {"data",
          "show a data source (image folder, MNIST, CIFAR, NumPy, CSV) and write its samples",
          {{"SOURCE",
            "a folder of class folders, a folder of MNIST or CIFAR files, an .npz/.npy or a "
            ".csv"}},
          {{"transform", "T", "",
            "torchvision transforms, as \"Resize(40), RandomCrop(32), ToTensor(), "
            "Normalize(mean=(0.5,), std=(0.25,))\""},
           {"split", "SPLIT", "train", "train or test"},
           {"head", "N", "", "only the first N samples"},
           {"seed", "S", "0", "the random transforms' seed"},
           {"stats", "", "", "also print the per-channel mean and std (for Normalize)"},
           {"out", "FILE", "", "write the samples as tensors x and y (.safetensors or .pt)"}},
          run_data};
}

}  // namespace nns::cli
