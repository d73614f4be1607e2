// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/sources.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "engine/data/csv.h"
#include "engine/data/dataloader.h"
#include "engine/data/numpy.h"
#include "engine/ops/indexing.h"
#include "engine/serialize/bytes.h"
#include "engine/serialize/zip.h"
#include "engine/tensor/error.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

namespace fs = std::filesystem;
using serialize::FileError;

std::string extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// ---- NumPy ----------------------------------------------------------------------------------

// The labels file beside an .npy of inputs: x.npy -> y.npy, NAME_x.npy -> NAME_y.npy.
std::string npy_labels_path(const std::string& path) {
  const fs::path p(path);
  std::string stem = p.stem().string();
  if (stem == "x" || stem == "X") return (p.parent_path() / "y.npy").string();
  for (const char* suffix : {"_x", "_X", "-x"}) {
    const std::string s = suffix;
    if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0) {
      return (p.parent_path() / (stem.substr(0, stem.size() - 1) + "y.npy")).string();
    }
  }
  throw FileError(path + ": an .npy of inputs is named x.npy or NAME_x.npy, with its labels in " +
                  "y.npy or NAME_y.npy beside it");
}

// Inputs and labels as a TensorDataset takes them: x float32 [N, ...]; y int64 class indices
// [N] or, when y is floating point, regression targets [N, 1].
Dataset numpy_dataset(Tensor x, Tensor y, const std::string& name, const std::string& where) {
  if (x.dim() < 1 || y.dim() < 1 || x.size(0) != y.size(0)) {
    throw ValueError(where + ": x and y must have the same first dimension (x " +
                     shape_str(x.sizes()) + ", y " + shape_str(y.sizes()) + ")");
  }
  if (x.size(0) == 0) throw ValueError(where + ": x and y hold no samples");
  if (x.dtype() == kBool) throw ValueError(where + ": x is bool; inputs must be numbers");
  Dataset d;
  d.name = name;
  d.inputs = x.to(kFloat32).contiguous();
  if (x.dim() == 2) {
    d.input_kind = x.size(1) == 2 ? InputKind::Points2D
                                  : (x.size(1) == 1 ? InputKind::Curve1D : InputKind::Tabular);
  } else if (x.dim() == 4 || x.dim() == 3) {
    d.input_kind = InputKind::Image;
    d.image_height = x.size(x.dim() == 4 ? 2 : 1);
    d.image_width = x.size(x.dim() == 4 ? 3 : 2);
  }
  if (is_floating_point(y.dtype())) {
    if (y.numel() != y.size(0))
      throw ValueError(where + ": floating-point y must be one number per sample");
    d.task = TaskKind::Regression;
    d.targets = y.to(kFloat32).reshape({y.size(0), 1}).contiguous();
    return d;
  }
  if (y.dim() != 1)
    throw ValueError(where + ": integer y must be one class per sample, [N]; it is " +
                     shape_str(y.sizes()));
  d.targets = y.to(kInt64).contiguous();
  const int64_t* labels = d.targets.data_ptr<int64_t>();
  const int64_t max = *std::max_element(labels, labels + d.targets.numel());
  const int64_t min = *std::min_element(labels, labels + d.targets.numel());
  if (min < 0 || max >= 100000) {
    throw ValueError(where + ": class labels must lie in [0, 100000); y holds " +
                     std::to_string(min) + " to " + std::to_string(max));
  }
  d.num_classes = max + 1;
  for (int64_t c = 0; c <= max; ++c) d.class_names.push_back(std::to_string(c));
  return d;
}

Dataset load_numpy(const std::string& path, Split split) {
  const std::string name = fs::path(path).stem().string();
  if (extension(path) == ".npy") {
    if (split == Split::Test) throw FileError(path + ": an .npy pair has no test split");
    return numpy_dataset(read_npy_file(path), read_npy_file(npy_labels_path(path)), name, path);
  }
  const auto arrays = read_npz_file(path);
  auto find = [&](std::initializer_list<const char*> names) -> const Tensor* {
    for (const char* n : names) {
      for (const auto& [key, tensor] : arrays) {
        if (key == n) return &tensor;
      }
    }
    return nullptr;
  };
  const bool train = split == Split::Train;
  const Tensor* x = train ? find({"x", "x_train", "X", "X_train"}) : find({"x_test", "X_test"});
  const Tensor* y = train ? find({"y", "y_train", "Y", "Y_train"}) : find({"y_test", "Y_test"});
  if (!x || !y) {
    std::string keys;
    for (const auto& [key, tensor] : arrays) keys += (keys.empty() ? "" : ", ") + key;
    throw FileError(path + ": no arrays " +
                    (train ? "'x' and 'y' (or 'x_train' and 'y_train')" : "'x_test' and 'y_test'") +
                    "; it holds " + (keys.empty() ? "none" : keys));
  }
  return numpy_dataset(*x, *y, name, path);
}

// ---- Images -------------------------------------------------------------------------------

// Decodes and transforms samples [0, count) on all cores: each sample's tensor, or why not.
struct Decoded {
  std::vector<Tensor> tensors;
  std::vector<std::string> errors;  // empty where the sample was read
};

Decoded decode_all(const ImageSet& set, int64_t count, const SourceOptions& options) {
  Decoded out;
  out.tensors.resize(static_cast<size_t>(count));
  out.errors.resize(static_cast<size_t>(count));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::string fatal;
  std::mutex fatal_mutex;
  auto work = [&] {
    for (int64_t i = next++; i < count && !failed; i = next++) {
      try {
        const uint64_t seed = epoch_seed(options.seed, i);
        out.tensors[i] = apply_transforms(options.transforms, set.image(i), seed);
      } catch (const FileError& e) {
        out.errors[i] = e.what();  // an unreadable image: skipped
      } catch (const std::exception& e) {
        const std::lock_guard<std::mutex> lock(fatal_mutex);
        if (!failed.exchange(true)) fatal = set.sample_name(i) + ": " + e.what();
      }
    }
  };
  const unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && count > 64; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (failed) throw ValueError(fatal);
  return out;
}

LoadedSource load_images(const ImageSet& set, const SourceOptions& given) {
  SourceOptions options = given;
  std::shared_ptr<TransformPlan> augmentation;
  if (options.defer_random && has_random_transforms(options.transforms)) {
    augmentation = std::make_shared<TransformPlan>(plan_transforms(options.transforms));
    options.transforms = augmentation->fixed;
  }
  const int64_t count = options.head < 0 ? set.size() : std::min(options.head, set.size());
  Decoded decoded = decode_all(set, count, options);
  LoadedSource out;
  out.kind = set.kind();
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < count; ++i) {
    if (!decoded.errors[i].empty()) {
      out.dataset.skipped.push_back(decoded.errors[i]);
    } else {
      kept.push_back(i);
    }
  }
  if (kept.empty()) {
    throw FileError(
        set.path() + ": none of its " + std::to_string(count) + " images could be read" +
        (out.dataset.skipped.empty() ? std::string() : " (" + out.dataset.skipped.front() + ")"));
  }
  const Tensor& first = decoded.tensors[kept.front()];
  for (int64_t i : kept) {
    const Tensor& t = decoded.tensors[i];
    if (t.sizes() != first.sizes()) {
      throw ValueError(set.sample_name(i) + " is " + std::to_string(t.size(0)) + " x " +
                       std::to_string(t.size(1)) + " x " + std::to_string(t.size(2)) + ", " +
                       set.sample_name(kept.front()) + " " + std::to_string(first.size(0)) + " x " +
                       std::to_string(first.size(1)) + " x " + std::to_string(first.size(2)) +
                       " (channels x height x width after the transforms): images of different "
                       "sizes need a Resize (and a CenterCrop) to one size");
    }
  }
  const Shape sample_shape = first.sizes();
  const int64_t per_sample = first.numel();
  Dataset& d = out.dataset;
  d.name = fs::path(set.path()).filename().string();
  d.input_kind = InputKind::Image;
  d.inputs =
      empty({static_cast<int64_t>(kept.size()), sample_shape[0], sample_shape[1], sample_shape[2]},
            kFloat32);
  d.targets = empty({static_cast<int64_t>(kept.size())}, kInt64);
  float* x = d.inputs.data_ptr<float>();
  int64_t* y = d.targets.data_ptr<int64_t>();
  for (size_t k = 0; k < kept.size(); ++k) {
    std::memcpy(x + k * per_sample, decoded.tensors[kept[k]].data_ptr<float>(),
                sizeof(float) * per_sample);
    decoded.tensors[kept[k]] = Tensor();
    y[k] = set.label(kept[k]);
  }
  d.class_names = set.class_names();
  d.num_classes = static_cast<int64_t>(d.class_names.size());
  d.image_height = sample_shape[1];
  d.image_width = sample_shape[2];
  d.augmentation = augmentation;
  return out;
}

}  // namespace

std::string source_kind(const std::string& path) {
  const std::string ext = extension(path);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    if (ext == ".npz" || ext == ".npy") return "NumPy";
    if (ext == ".csv" || ext == ".tsv" || ext == ".txt") return "CSV";
    return {};
  }
  return image_set_kind(path);
}

bool has_test_split(const std::string& path) {
  const std::string kind = source_kind(path);
  if (kind == "CSV" || kind.empty()) return false;
  if (kind != "NumPy") return image_set_has_test_split(path);
  if (extension(path) != ".npz") return false;
  try {
    // The archive's directory alone: which arrays it holds.
    const serialize::FileSource file(path);
    bool x = false, y = false;
    for (const serialize::ZipEntry& e : serialize::read_zip_directory(file)) {
      x = x || e.name == "x_test.npy" || e.name == "X_test.npy";
      y = y || e.name == "y_test.npy" || e.name == "Y_test.npy";
    }
    return x && y;
  } catch (const Error&) {
    return false;
  }
}

LoadedSource load_source(const std::string& path, const SourceOptions& options) {
  const std::string kind = source_kind(path);
  if (kind == "NumPy" || kind == "CSV") {
    LoadedSource out;
    out.kind = kind;
    if (kind == "NumPy") {
      out.dataset = load_numpy(path, options.split);
    } else {
      if (options.split == Split::Test) throw FileError(path + ": a CSV file has no test split");
      std::string label = options.label_column;
      if (label.empty()) {
        // The header's last cell.
        std::ifstream in(path);
        std::string header;
        std::getline(in, header);
        const size_t comma = header.find_last_of(',');
        label = header.substr(comma == std::string::npos ? 0 : comma + 1);
        while (!label.empty() && std::isspace(static_cast<unsigned char>(label.back())))
          label.pop_back();
      }
      out.dataset = load_csv(path, label);
    }
    if (options.head >= 0 && options.head < out.dataset.size()) {
      std::vector<int64_t> first(static_cast<size_t>(options.head));
      for (int64_t i = 0; i < options.head; ++i) first[i] = i;
      out.dataset = out.dataset.subset(first);
    }
    return out;
  }
  if (kind.empty()) {
    std::error_code ec;
    if (!fs::exists(path, ec)) throw FileError(path + ": no such file or folder");
    throw FileError(path +
                    ": not a data source NN Studio reads: an image folder (a subfolder per " +
                    "class), MNIST or CIFAR files, a NumPy .npz/.npy or a CSV file");
  }
  return load_images(*open_image_set(path, options.split), options);
}

Dataset without_augmentation(const Dataset& dataset) {
  if (!dataset.augmentation) return dataset;
  TransformPlan plan = *dataset.augmentation;
  plan.random = test_transforms(plan.random);
  Dataset out = dataset;
  out.augmentation = nullptr;
  if (dataset.size() == 0) return out;
  std::vector<Tensor> samples;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    samples.push_back(apply_random_transforms(plan, dataset.inputs.select(0, i), 0));
  }
  out.inputs = stack(samples, 0);
  out.image_height = out.inputs.size(2);
  out.image_width = out.inputs.size(3);
  return out;
}

void channel_statistics(const std::string& path, const std::vector<Transform>& transforms,
                        int64_t max_samples, std::vector<double>& mean, std::vector<double>& std) {
  const auto set = open_image_set(path, Split::Train);
  std::vector<Transform> steps;
  for (const Transform& t : transforms) {
    if (t.kind != Transform::Kind::Normalize) steps.push_back(t);
  }
  const int64_t n = std::min(max_samples, set->size());
  std::vector<double> sum;
  std::vector<double> squares;
  int64_t values = 0;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = k * set->size() / n;
    Tensor x;
    try {
      x = apply_transforms(steps, set->image(i), epoch_seed(0, i));
    } catch (const FileError&) {
      continue;  // unreadable: the data set skips it too
    }
    const int64_t channels = x.size(0);
    const int64_t plane = x.size(1) * x.size(2);
    sum.resize(static_cast<size_t>(channels), 0.0);
    squares.resize(static_cast<size_t>(channels), 0.0);
    const float* p = x.data_ptr<float>();
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t j = 0; j < plane; ++j) {
        const double v = p[c * plane + j];
        sum[c] += v;
        squares[c] += v * v;
      }
    }
    values += plane;
  }
  if (values == 0) throw FileError(path + ": no readable images to measure");
  mean.assign(sum.size(), 0.0);
  std.assign(sum.size(), 0.0);
  for (size_t c = 0; c < sum.size(); ++c) {
    mean[c] = sum[c] / static_cast<double>(values);
    std[c] = std::sqrt(std::max(squares[c] / static_cast<double>(values) - mean[c] * mean[c], 0.0));
  }
}

}  // namespace nns::data
