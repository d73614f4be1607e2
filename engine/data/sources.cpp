// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/sources.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include <unistd.h>

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

// fn(i) for every i in [0, count), on every core (up to 16 threads) when there is enough to
// share; the first exception fn throws is rethrown here once all threads stop.
void on_every_core(int64_t count, const std::function<void(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (int64_t i = next++; i < count && !failed; i = next++) {
      try {
        fn(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  };
  const unsigned threads = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 16);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads && count > 8; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// The samples to decode in one go while a set is read: memory for a chunk, not for the set.
constexpr int64_t kChunk = 2048;

std::string size_text(const Shape& s) {
  return std::to_string(s[0]) + " x " + std::to_string(s[1]) + " x " + std::to_string(s[2]);
}

LoadedSource load_images(const std::shared_ptr<const ImageSet>& set, const SourceOptions& given) {
  SourceOptions options = given;
  std::shared_ptr<TransformPlan> augmentation;
  if (options.defer_random && has_random_transforms(options.transforms)) {
    augmentation = std::make_shared<TransformPlan>(plan_transforms(options.transforms));
    options.transforms = augmentation->fixed;
  }
  const int64_t count = options.head < 0 ? set->size() : std::min(options.head, set->size());
  LoadedSource out;
  out.kind = set->kind();
  Dataset& d = out.dataset;
  // Every sample is decoded once, a chunk at a time on every core: the unreadable ones are
  // found and the sizes checked. The decoded samples are kept while they fit the budget; past
  // it, the set is streamed (decoded again when a batch asks) and they are let go.
  std::vector<int64_t> kept;
  std::vector<Tensor> decoded;
  Shape shape;
  int64_t first = -1;
  bool streamed = false;
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t n = std::min(kChunk, count - begin);
    std::vector<Tensor> chunk(static_cast<size_t>(n));
    std::vector<std::string> errors(static_cast<size_t>(n));
    on_every_core(n, [&](int64_t k) {
      const int64_t i = begin + k;
      try {
        chunk[k] = apply_transforms(options.transforms, set->image(i), epoch_seed(options.seed, i));
      } catch (const FileError& e) {
        errors[k] = e.what();  // an unreadable image: skipped
      } catch (const std::exception& e) {
        throw ValueError(set->sample_name(i) + ": " + e.what());
      }
    });
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = begin + k;
      if (!errors[k].empty()) {
        d.skipped.push_back(errors[k]);
        continue;
      }
      if (first < 0) {
        first = i;
        shape = chunk[k].sizes();
      }
      if (chunk[k].sizes() != shape) {
        throw ValueError(set->sample_name(i) + " is " + size_text(chunk[k].sizes()) + ", " +
                         set->sample_name(first) + " " + size_text(shape) +
                         " (channels x height x width after the transforms): images of different "
                         "sizes need a Resize (and a CenterCrop) to one size");
      }
      kept.push_back(i);
      if (!streamed) decoded.push_back(std::move(chunk[k]));
    }
    const int64_t bytes =
        static_cast<int64_t>(decoded.size()) *
        (first < 0 ? 0 : static_cast<int64_t>(shape_numel(shape) * sizeof(float)));
    if (!streamed && bytes > options.max_decoded_bytes) {
      streamed = true;
      decoded.clear();
      decoded.shrink_to_fit();
    }
  }
  if (kept.empty()) {
    throw FileError(set->path() + ": none of its " + std::to_string(count) +
                    " images could be read" +
                    (d.skipped.empty() ? std::string() : " (" + d.skipped.front() + ")"));
  }
  d.name = fs::path(set->path()).filename().string();
  d.input_kind = InputKind::Image;
  d.targets = empty({static_cast<int64_t>(kept.size())}, kInt64);
  int64_t* y = d.targets.data_ptr<int64_t>();
  for (size_t k = 0; k < kept.size(); ++k) y[k] = set->label(kept[k]);
  if (streamed) {
    d.stream =
        std::make_shared<SampleStream>(set, options.transforms, shape, options.max_decoded_bytes);
    d.stream_rows = kept;
  } else {
    const int64_t per_sample = shape_numel(shape);
    d.inputs = empty({static_cast<int64_t>(kept.size()), shape[0], shape[1], shape[2]}, kFloat32);
    float* x = d.inputs.data_ptr<float>();
    for (size_t k = 0; k < decoded.size(); ++k) {
      std::memcpy(x + k * per_sample, decoded[k].data_ptr<float>(), sizeof(float) * per_sample);
      decoded[k] = Tensor();
    }
  }
  d.class_names = set->class_names();
  d.num_classes = static_cast<int64_t>(d.class_names.size());
  d.image_height = shape[1];
  d.image_width = shape[2];
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
  return load_images(std::shared_ptr<const ImageSet>(open_image_set(path, options.split)), options);
}

Dataset without_augmentation(const Dataset& dataset) {
  if (!dataset.augmentation) return dataset;
  TransformPlan plan = *dataset.augmentation;
  plan.random = test_transforms(plan.random);
  Dataset out = dataset;
  out.augmentation = nullptr;
  // Held decoded from here on: a test set is evaluated whole, again and again.
  out.stream = nullptr;
  out.stream_rows.clear();
  if (dataset.size() == 0) return out;
  std::vector<Tensor> samples;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    samples.push_back(apply_random_transforms(plan, dataset.input_rows({i}).select(0, 0), 0));
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

int64_t default_decoded_budget() {
  // NNSTUDIO_DATA_MEMORY (bytes) sets it: to stream a set that would fit, or hold one that
  // would not.
  if (const char* set = std::getenv("NNSTUDIO_DATA_MEMORY")) {
    char* end = nullptr;
    const long long bytes = std::strtoll(set, &end, 10);
    if (end != set && *end == '\0' && bytes >= 0) return bytes;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  const int64_t memory = pages > 0 && page > 0 ? int64_t{pages} * page : int64_t{8} << 30;
  return memory / 4;
}

SampleStream::SampleStream(std::shared_ptr<const ImageSet> set, std::vector<Transform> fixed,
                           Shape shape, int64_t cache_bytes)
    : set_(std::move(set)),
      fixed_(std::move(fixed)),
      shape_(std::move(shape)),
      cache_bytes_(cache_bytes) {}

Tensor SampleStream::sample(int64_t index) const {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto it = cache_.find(index);
    if (it != cache_.end()) {
      recent_.splice(recent_.begin(), recent_, it->second.second);
      return it->second.first;
    }
  }
  // Decoded outside the lock: other threads decode theirs meanwhile. The fixed transforms draw
  // nothing, so the seed is immaterial.
  Tensor x = apply_transforms(fixed_, set_->image(index), 0);
  if (x.sizes() != shape_) {
    throw ValueError(set_->sample_name(index) + " is now " + size_text(x.sizes()) + ", not " +
                     size_text(shape_) + ": the images changed while the set was in use");
  }
  const int64_t bytes = x.numel() * static_cast<int64_t>(sizeof(float));
  const std::lock_guard<std::mutex> lock(mutex_);
  ++decodes_;
  if (bytes <= cache_bytes_ && !cache_.count(index)) {
    while (cached_ + bytes > cache_bytes_ && !recent_.empty()) {
      cached_ -= bytes;  // every sample has the same size
      cache_.erase(recent_.back());
      recent_.pop_back();
    }
    recent_.push_front(index);
    cache_.emplace(index, std::make_pair(x, recent_.begin()));
    cached_ += bytes;
  }
  return x;
}

Tensor SampleStream::samples(const std::vector<int64_t>& indices) const {
  const auto n = static_cast<int64_t>(indices.size());
  const int64_t per_sample = shape_numel(shape_);
  Shape batch = shape_;
  batch.insert(batch.begin(), n);
  Tensor out = empty(batch, kFloat32);
  float* x = out.data_ptr<float>();
  on_every_core(n, [&](int64_t k) {
    const Tensor s = sample(indices[static_cast<size_t>(k)]);
    std::memcpy(x + k * per_sample, s.data_ptr<float>(), sizeof(float) * per_sample);
  });
  return out;
}

int64_t SampleStream::cached_bytes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

int64_t SampleStream::decodes() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return decodes_;
}

}  // namespace nns::data
