// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/image_sets.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <fstream>

#include "engine/serialize/bytes.h"
#include "engine/tensor/error.h"

namespace nns::data {
namespace {

namespace fs = std::filesystem;
using serialize::FileError;

// The largest idx or CIFAR file read into memory (MNIST's training images are 47 MB, CIFAR's
// five batches 150 MB).
constexpr int64_t kMaxFileBytes = int64_t{2} << 30;

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}
bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A whole file, inflated when it is gzip (zlib reads plain files as they are).
std::vector<uint8_t> read_maybe_gzipped(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw FileError(path + ": cannot open the file");
  std::vector<uint8_t> bytes;
  std::array<uint8_t, 1 << 16> chunk{};
  for (;;) {
    const int n = gzread(file, chunk.data(), chunk.size());
    if (n < 0) {
      int code = 0;
      const std::string why = gzerror(file, &code);
      gzclose(file);
      throw FileError(path + ": corrupt or truncated gzip data: " + why);
    }
    if (n == 0) break;
    if (static_cast<int64_t>(bytes.size()) + n > kMaxFileBytes) {
      gzclose(file);
      throw FileError(path + ": more than 2 GiB of data; not an MNIST file");
    }
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  }
  gzclose(file);
  return bytes;
}

uint32_t big_endian32(const std::vector<uint8_t>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
         uint32_t{b[at + 3]};
}

// ---- MNIST and Fashion-MNIST ------------------------------------------------------------

// An idx file of unsigned bytes with `dims` dimensions: its sizes, checked against its length.
std::vector<int64_t> idx_shape(const std::vector<uint8_t>& bytes, int dims,
                               const std::string& path) {
  const size_t header = 4 + 4 * static_cast<size_t>(dims);
  if (bytes.size() < header) {
    throw FileError(path + ": too short for an idx file (" + std::to_string(bytes.size()) +
                    " bytes)");
  }
  const uint32_t magic = big_endian32(bytes, 0);
  const uint32_t expected = 0x800u + static_cast<uint32_t>(dims);
  if (magic != expected) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08X", magic);
    char want[16];
    std::snprintf(want, sizeof want, "0x%08X", expected);
    throw FileError(path + ": wrong idx magic number " + text + " (an idx file of unsigned bytes " +
                    "with " + std::to_string(dims) + " dimensions starts with " + want + ")");
  }
  std::vector<int64_t> shape;
  uint64_t count = 1;
  for (int d = 0; d < dims; ++d) {
    shape.push_back(big_endian32(bytes, 4 + 4 * static_cast<size_t>(d)));
    count *= static_cast<uint64_t>(shape.back());
    if (count > static_cast<uint64_t>(kMaxFileBytes)) break;
  }
  if (count != bytes.size() - header) {
    std::string sizes;
    for (int64_t s : shape) sizes += (sizes.empty() ? "" : " x ") + std::to_string(s);
    throw FileError(path + ": the header says " + sizes + " bytes of data, the file holds " +
                    std::to_string(bytes.size() - header));
  }
  return shape;
}

// The file `stem` in `folder`, plain or .gz; empty when neither is there.
std::string find_idx(const fs::path& folder, const std::string& stem) {
  for (const std::string& name : {stem, stem + ".gz"}) {
    if (is_file(folder / name)) return (folder / name).string();
  }
  return {};
}

class MnistSet : public ImageSet {
 public:
  MnistSet(const fs::path& folder, bool fashion, Split split) : fashion_(fashion) {
    path_ = folder.string();
    const std::string prefix = split == Split::Train ? "train" : "t10k";
    images_file_ = find_idx(folder, prefix + "-images-idx3-ubyte");
    const std::string labels_file = find_idx(folder, prefix + "-labels-idx1-ubyte");
    if (images_file_.empty() || labels_file.empty()) {
      throw FileError(path_ + ": no " + prefix + "-images-idx3-ubyte and " + prefix +
                      "-labels-idx1-ubyte (plain or .gz) for the " + split_name(split) + " split");
    }
    images_ = read_maybe_gzipped(images_file_);
    const std::vector<int64_t> shape = idx_shape(images_, 3, images_file_);
    labels_ = read_maybe_gzipped(labels_file);
    const std::vector<int64_t> label_shape = idx_shape(labels_, 1, labels_file);
    if (label_shape[0] != shape[0]) {
      throw FileError(labels_file + ": " + std::to_string(label_shape[0]) + " labels for " +
                      std::to_string(shape[0]) + " images in " + images_file_);
    }
    count_ = shape[0];
    height_ = shape[1];
    width_ = shape[2];
    for (int64_t i = 0; i < count_; ++i) {
      if (labels_[8 + i] > 9) {
        throw FileError(labels_file + ": label " + std::to_string(labels_[8 + i]) + " of image " +
                        std::to_string(i) + " is not a digit class (0-9)");
      }
    }
    class_names_ =
        fashion
            ? std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                       "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"}
            : std::vector<std::string>{"0 - zero", "1 - one", "2 - two",   "3 - three", "4 - four",
                                       "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"};
  }
  std::string kind() const override { return fashion_ ? "Fashion-MNIST" : "MNIST"; }
  int64_t size() const override { return count_; }
  Image image(int64_t index) const override {
    Image image(height_, width_, 1);
    const auto* first = images_.data() + 16 + index * height_ * width_;
    std::copy(first, first + height_ * width_, image.pixels.begin());
    return image;
  }
  int64_t label(int64_t index) const override { return labels_[8 + index]; }
  std::string sample_name(int64_t index) const override {
    return images_file_ + " image " + std::to_string(index);
  }

 private:
  bool fashion_;
  std::string images_file_;
  std::vector<uint8_t> images_;
  std::vector<uint8_t> labels_;
  int64_t count_ = 0;
  int64_t height_ = 0;
  int64_t width_ = 0;
};

// ---- CIFAR-10 and CIFAR-100 ---------------------------------------------------------------

constexpr int64_t kCifarPixels = 32 * 32 * 3;

std::vector<std::string> read_lines(const fs::path& file) {
  std::vector<std::string> lines;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

class CifarSet : public ImageSet {
 public:
  CifarSet(const fs::path& folder, bool hundred, Split split) : hundred_(hundred) {
    path_ = folder.string();
    std::vector<std::string> names;
    if (hundred) {
      names = {split == Split::Train ? "train.bin" : "test.bin"};
    } else if (split == Split::Train) {
      for (int b = 1; b <= 5; ++b) names.push_back("data_batch_" + std::to_string(b) + ".bin");
    } else {
      names = {"test_batch.bin"};
    }
    // A record: the label (CIFAR-100: coarse, then fine), then the red, green, blue planes.
    const int64_t record = kCifarPixels + (hundred ? 2 : 1);
    for (const std::string& name : names) {
      const fs::path file = folder / name;
      if (!is_file(file))
        throw FileError(path_ + ": no " + name + " for the " + split_name(split) + " split");
      const serialize::FileSource source(file.string());
      const auto bytes = static_cast<int64_t>(source.size());
      if (bytes == 0 || bytes % record != 0 || bytes > kMaxFileBytes) {
        throw FileError(
            file.string() + ": " + std::to_string(bytes) + " bytes is not a whole " + "number of " +
            (hundred ? "CIFAR-100" : "CIFAR-10") + " records (" + std::to_string(record) +
            " bytes each: " + (hundred ? "coarse label, fine label" : "label") + ", 3,072 pixels)");
      }
      const size_t at = records_.size();
      records_.resize(at + static_cast<size_t>(bytes));
      source.read(0, records_.data() + at, static_cast<size_t>(bytes), "the CIFAR batch");
      for (int64_t r = 0; r < bytes / record; ++r) files_.push_back({file.string(), r});
    }
    record_ = record;
    const std::string meta = hundred ? "fine_label_names.txt" : "batches.meta.txt";
    class_names_ = read_lines(folder / meta);
    if (class_names_.empty() && !hundred) {
      class_names_ = {"airplane", "automobile", "bird",  "cat",  "deer",
                      "dog",      "frog",       "horse", "ship", "truck"};
    }
    const size_t classes = hundred ? 100 : 10;
    for (size_t c = class_names_.size(); c < classes; ++c)
      class_names_.push_back(std::to_string(c));
    class_names_.resize(classes);
    for (int64_t i = 0; i < size(); ++i) {
      if (label(i) >= static_cast<int64_t>(classes)) {
        throw FileError(sample_name(i) + ": label " + std::to_string(label(i)) +
                        " is outside the " + std::to_string(classes) + " classes");
      }
    }
  }
  std::string kind() const override { return hundred_ ? "CIFAR-100" : "CIFAR-10"; }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Image image(int64_t index) const override {
    Image image(32, 32, 3);
    const uint8_t* planes = records_.data() + index * record_ + (hundred_ ? 2 : 1);
    for (int64_t p = 0; p < 32 * 32; ++p) {
      for (int64_t c = 0; c < 3; ++c) image.pixels[p * 3 + c] = planes[c * 32 * 32 + p];
    }
    return image;
  }
  // CIFAR-100: the fine label, as torchvision's CIFAR100.
  int64_t label(int64_t index) const override {
    return records_[static_cast<size_t>(index * record_ + (hundred_ ? 1 : 0))];
  }
  std::string sample_name(int64_t index) const override {
    return files_[index].first + " record " + std::to_string(files_[index].second);
  }

 private:
  bool hundred_;
  int64_t record_ = 0;
  std::vector<uint8_t> records_;
  std::vector<std::pair<std::string, int64_t>> files_;  // per sample: its file and record
};

// ---- Image folders ------------------------------------------------------------------------

bool has_image_extension(const fs::path& file) {
  const std::string ext = lower(file.extension().string());
  const auto& known = image_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

// The subfolders' names, sorted by their bytes (Python's order for str).
std::vector<std::string> subfolders(const fs::path& folder) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (is_dir(it->path())) names.push_back(it->path().filename().string());
  }
  if (ec) throw FileError(folder.string() + ": cannot list the folder: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

// A class folder's images in ImageFolder's order: sorted(os.walk(folder)), then each
// folder's files sorted.
std::vector<std::string> class_files(const fs::path& folder) {
  std::vector<std::pair<std::string, std::vector<std::string>>> walked;
  std::vector<fs::path> pending = {folder};
  std::error_code ec;
  while (!pending.empty()) {
    const fs::path dir = pending.back();
    pending.pop_back();
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      if (is_dir(it->path())) {
        // Symbolic links to folders are followed (followlinks=True), but never in a cycle.
        if (walked.size() + pending.size() > 100000) {
          throw FileError(folder.string() + ": more than 100,000 subfolders (a link cycle?)");
        }
        pending.push_back(it->path());
      } else if (has_image_extension(it->path())) {
        files.push_back(it->path().filename().string());
      }
    }
    if (ec) throw FileError(dir.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    walked.emplace_back(dir.string(), std::move(files));
  }
  std::sort(walked.begin(), walked.end());
  std::vector<std::string> paths;
  for (const auto& [dir, files] : walked) {
    for (const std::string& f : files) paths.push_back((fs::path(dir) / f).string());
  }
  return paths;
}

class ImageFolderSet : public ImageSet {
 public:
  explicit ImageFolderSet(const fs::path& folder) {
    path_ = folder.string();
    class_names_ = subfolders(folder);
    if (class_names_.empty()) {
      throw FileError(path_ + ": no class folders (an image folder holds a subfolder of images " +
                      "per class, as torchvision's ImageFolder reads)");
    }
    for (size_t c = 0; c < class_names_.size(); ++c) {
      std::vector<std::string> found = class_files(folder / class_names_[c]);
      if (found.empty()) {
        throw FileError(path_ + ": the class folder '" + class_names_[c] +
                        "' holds no images (files ending " + extensions_text() + ")");
      }
      for (std::string& f : found) {
        files_.push_back(std::move(f));
        labels_.push_back(static_cast<int64_t>(c));
      }
    }
  }
  std::string kind() const override { return "image folder"; }
  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Image image(int64_t index) const override { return to_rgb(read_image_file(files_[index])); }
  int64_t label(int64_t index) const override { return labels_[index]; }
  std::string sample_name(int64_t index) const override { return files_[index]; }

 private:
  static std::string extensions_text() {
    std::string s;
    for (const std::string& e : image_extensions()) s += (s.empty() ? "" : " ") + e;
    return s;
  }
  std::vector<std::string> files_;
  std::vector<int64_t> labels_;
};

// ---- Finding the kind ---------------------------------------------------------------------

struct Found {
  enum class Kind {
    None,
    Folder,
    SplitFolders,
    Mnist,
    FashionMnist,
    Cifar10,
    Cifar100
  } kind = Kind::None;
  fs::path folder;
};

bool contains_idx(const fs::path& folder) {
  return !find_idx(folder, "train-images-idx3-ubyte").empty() ||
         !find_idx(folder, "t10k-images-idx3-ubyte").empty();
}

// The test folder of a split image folder: test/ or val/.
fs::path test_folder(const fs::path& folder) {
  return is_dir(folder / "test") ? folder / "test" : folder / "val";
}

Found find(const fs::path& path) {
  using K = Found::Kind;
  if (!is_dir(path)) return {};
  const bool fashion = lower(path.string()).find("fashion") != std::string::npos;
  if (contains_idx(path)) return {fashion ? K::FashionMnist : K::Mnist, path};
  if (is_file(path / "data_batch_1.bin") || is_file(path / "test_batch.bin"))
    return {K::Cifar10, path};
  if (is_file(path / "train.bin") || is_file(path / "test.bin")) return {K::Cifar100, path};
  // torchvision's root folders.
  for (const char* sub : {"MNIST/raw", "FashionMNIST/raw", "raw"}) {
    if (contains_idx(path / sub)) {
      const bool f = fashion || std::string(sub).rfind("Fashion", 0) == 0;
      return {f ? K::FashionMnist : K::Mnist, path / sub};
    }
  }
  if (is_dir(path / "cifar-10-batches-bin")) return {K::Cifar10, path / "cifar-10-batches-bin"};
  if (is_dir(path / "cifar-100-binary")) return {K::Cifar100, path / "cifar-100-binary"};
  if (is_dir(path / "train") && is_dir(test_folder(path)) && !subfolders(path / "train").empty()) {
    return {K::SplitFolders, path};
  }
  if (!subfolders(path).empty()) return {K::Folder, path};
  return {};
}

}  // namespace

std::string split_name(Split split) {
  return split == Split::Train ? "train" : "test";
}

Split parse_split(const std::string& name) {
  if (name == "train") return Split::Train;
  if (name == "test") return Split::Test;
  throw ValueError("unknown split '" + name + "' (train or test)");
}

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> extensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                      ".pgm", ".tif",  ".tiff", ".webp"};
  return extensions;
}

std::string image_set_kind(const std::string& path) {
  using K = Found::Kind;
  try {
    switch (find(path).kind) {
      case K::Folder:
      case K::SplitFolders:
        return "image folder";
      case K::Mnist:
        return "MNIST";
      case K::FashionMnist:
        return "Fashion-MNIST";
      case K::Cifar10:
        return "CIFAR-10";
      case K::Cifar100:
        return "CIFAR-100";
      case K::None:
        break;
    }
  } catch (const FileError&) {
  }
  return {};
}

bool image_set_has_test_split(const std::string& path) {
  using K = Found::Kind;
  try {
    const Found found = find(path);
    switch (found.kind) {
      case K::Mnist:
      case K::FashionMnist:
        return !find_idx(found.folder, "t10k-images-idx3-ubyte").empty();
      case K::Cifar10:
        return is_file(found.folder / "test_batch.bin");
      case K::Cifar100:
        return is_file(found.folder / "test.bin");
      case K::SplitFolders:
        return true;
      case K::Folder:
      case K::None:
        break;
    }
  } catch (const FileError&) {
  }
  return false;
}

std::unique_ptr<ImageSet> open_image_set(const std::string& path, Split split) {
  using K = Found::Kind;
  if (!is_dir(path)) throw FileError(path + ": not a folder");
  const Found found = find(path);
  switch (found.kind) {
    case K::Mnist:
    case K::FashionMnist:
      return std::make_unique<MnistSet>(found.folder, found.kind == K::FashionMnist, split);
    case K::Cifar10:
    case K::Cifar100:
      return std::make_unique<CifarSet>(found.folder, found.kind == K::Cifar100, split);
    case K::SplitFolders:
      return std::make_unique<ImageFolderSet>(split == Split::Train ? found.folder / "train"
                                                                    : test_folder(found.folder));
    case K::Folder:
      if (split == Split::Test) {
        throw FileError(path + ": an image folder without train/ and test/ (or val/) subfolders " +
                        "has no test split; take a fraction of it for testing instead");
      }
      return std::make_unique<ImageFolderSet>(found.folder);
    case K::None:
      break;
  }
  throw FileError(path + ": no images found: expected class folders (as ImageFolder), train/ and " +
                  "test/ folders of them, MNIST idx files (train-images-idx3-ubyte...) or CIFAR " +
                  "binary batches (data_batch_1.bin..., train.bin/test.bin)");
}

}  // namespace nns::data
