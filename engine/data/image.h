// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// An 8-bit image as Pillow holds one ("L": one channel, "RGB": three), and decoding image files
// to it the way torchvision's ImageFolder does (`Image.open(path).convert("RGB")`), so the
// pixels a model sees here are the pixels it sees in PyTorch.
//
//   nns::data::Image cat = nns::data::read_image_file("cats/001.jpg");   // channels 3
//   cat.at(y, x, 0);   // red
//
// JPEG is decoded by libjpeg-turbo with its defaults (the library and settings Pillow uses:
// the slow exact IDCT, smooth chroma upsampling), PNG, BMP and PPM/PGM by stb_image; PNG and BMP
// are lossless, so any correct decoder gives Pillow's pixels.
#include <cstdint>
#include <string>
#include <vector>

namespace nns::data {

struct Image {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;         // 1 or 3
  std::vector<uint8_t> pixels;  // height x width x channels, row by row

  Image() = default;
  Image(int64_t h, int64_t w, int64_t c)
      : height(h), width(w), channels(c), pixels(static_cast<size_t>(h * w * c)) {}
  uint8_t& at(int64_t y, int64_t x, int64_t c) { return pixels[((y * width) + x) * channels + c]; }
  uint8_t at(int64_t y, int64_t x, int64_t c) const {
    return pixels[((y * width) + x) * channels + c];
  }
};

// The most pixels a decoded image may have: Pillow's limit (twice MAX_IMAGE_PIXELS), past which
// it refuses a file as a decompression bomb.
inline constexpr int64_t kMaxImagePixels = 178956970;

// The file's image with its own channels: 1 for grayscale (an alpha channel dropped), else 3
// (alpha dropped, a palette expanded), as Pillow's "L" and "RGB". FileError naming the file when
// it cannot be read, is not an image NN Studio decodes (JPEG, PNG, BMP, PPM, PGM), is corrupt or
// is larger than kMaxImagePixels.
Image read_image_file(const std::string& path);
// The same for bytes in memory; `name` names them in messages.
Image decode_image(const uint8_t* data, size_t size, const std::string& name);

// Pillow's convert("RGB") of an "L" image (the gray value in each channel); RGB unchanged.
Image to_rgb(Image image);
// Pillow's convert("L") (ITU-R 601-2 luma in 16-bit fixed point, rounded); L unchanged.
Image to_grayscale(const Image& image);

}  // namespace nns::data
