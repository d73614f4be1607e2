// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A user's own labelled images, read as torchvision's datasets read them, sample by sample and
// in the same order:
//   - an image folder as ImageFolder: a subfolder per class (names sorted as Python sorts
//     strings), each walked recursively (subfolders sorted by path, files by name), the files
//     with torchvision's image extensions; every image converted to RGB;
//   - MNIST and Fashion-MNIST idx files (train-images-idx3-ubyte, train-labels-idx1-ubyte,
//     t10k-*, plain or .gz), one channel, as MNIST and FashionMNIST;
//   - CIFAR-10 and CIFAR-100 binary batches (data_batch_1.bin .. data_batch_5.bin and
//     test_batch.bin; train.bin and test.bin with a coarse and a fine label), as CIFAR10 and
//     CIFAR100 (the fine labels).
//
//   auto cifar = nns::data::open_image_set("cifar-10-batches-bin", nns::data::Split::Train);
//   cifar->size();          // 50000
//   cifar->image(0);        // 32 x 32 x 3
//   cifar->label(0);        // 6 ("frog")
//
// Opening checks everything that can be checked without decoding (magic numbers, counts
// against file sizes, record lengths, empty classes) and throws FileError naming the file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/data/image.h"

namespace nns::data {

enum class Split { Train, Test };

// "train" or "test"; parse_split throws ValueError for anything else.
std::string split_name(Split split);
Split parse_split(const std::string& name);

class ImageSet {
 public:
  virtual ~ImageSet() = default;
  // "image folder", "MNIST", "Fashion-MNIST", "CIFAR-10", "CIFAR-100".
  virtual std::string kind() const = 0;
  virtual int64_t size() const = 0;
  // Sample i's image as torchvision's dataset gives it (before its transforms); safe to call
  // from several threads at once. FileError naming the file for an image that cannot be read.
  virtual Image image(int64_t index) const = 0;
  virtual int64_t label(int64_t index) const = 0;
  // What names the sample in a message: its file, or its file and record.
  virtual std::string sample_name(int64_t index) const = 0;

  const std::vector<std::string>& class_names() const { return class_names_; }
  // The folder or file it was opened from.
  const std::string& path() const { return path_; }

 protected:
  std::string path_;
  std::vector<std::string> class_names_;
};

// The image set at `path`, its kind found from what is there: a folder with train/ and test/
// (or val/) subfolders of class folders, a folder of class folders (which has no test split),
// a folder holding MNIST or CIFAR files (or torchvision's root, with MNIST/raw, FashionMNIST/raw,
// cifar-10-batches-bin or cifar-100-binary inside). FileError saying what was looked for when
// the folder holds none of these.
std::unique_ptr<ImageSet> open_image_set(const std::string& path, Split split);

// The kind of image set at `path` ("image folder", "MNIST", "Fashion-MNIST", "CIFAR-10",
// "CIFAR-100"), or empty when it is none; cheap: it looks at names only.
std::string image_set_kind(const std::string& path);

// Whether the image set at `path` has a test split of its own (t10k files, a test batch, a
// test/ or val/ folder); cheap: it looks at names only.
bool image_set_has_test_split(const std::string& path);

// torchvision's IMG_EXTENSIONS (ImageFolder takes files with these, in any letter case).
const std::vector<std::string>& image_extensions();

}  // namespace nns::data
