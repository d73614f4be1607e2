// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/image.h"

#include <jpeglib.h>
#include <stb_image.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <limits>
#include <memory>

#include "engine/serialize/bytes.h"

namespace nns::data {
namespace {

using serialize::FileError;

void check_pixels(int64_t width, int64_t height, const std::string& name) {
  if (width <= 0 || height <= 0) {
    throw FileError(name + ": the image has no pixels (" + std::to_string(width) + " x " +
                    std::to_string(height) + ")");
  }
  if (width > kMaxImagePixels / height) {
    throw FileError(name + ": the image is " + std::to_string(width) + " x " +
                    std::to_string(height) + " pixels, more than the " +
                    std::to_string(kMaxImagePixels) +
                    " NN Studio (like Pillow) decodes: a possible decompression bomb");
  }
}

// libjpeg reports errors through a callback that must not return; it jumps back to the
// decoder, which then throws. Only C frames lie between the two.
struct JpegErrors {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_fail(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  std::longjmp(errors->jump, 1);
}

void jpeg_warn(j_common_ptr, int) {}  // Pillow decodes through warnings (a truncated scan) too

// The decoder's state lives on the heap so that nothing of it sits in registers across the
// longjmp (C forbids reading non-volatile locals changed after setjmp).
struct JpegDecode {
  jpeg_decompress_struct cinfo{};
  JpegErrors errors{};
  Image image;
};

Image decode_jpeg(const uint8_t* data, size_t size, const std::string& name) {
  auto state = std::make_unique<JpegDecode>();
  jpeg_decompress_struct* cinfo = &state->cinfo;
  cinfo->err = jpeg_std_error(&state->errors.manager);
  state->errors.manager.error_exit = jpeg_fail;
  state->errors.manager.emit_message = jpeg_warn;
  if (setjmp(state->errors.jump)) {
    jpeg_destroy_decompress(cinfo);
    throw FileError(name + ": corrupt JPEG: " + state->errors.message);
  }
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  const bool gray = cinfo->jpeg_color_space == JCS_GRAYSCALE;
  if (!gray && cinfo->num_components != 3) {
    jpeg_destroy_decompress(cinfo);
    throw FileError(name + ": a JPEG with " + std::to_string(cinfo->num_components) +
                    " color components (CMYK?) is not read; save it as RGB");
  }
  cinfo->out_color_space = gray ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(cinfo);
  // Checked once libjpeg has validated the header; jumping out of here still destroys.
  const int64_t width = cinfo->output_width;
  const int64_t height = cinfo->output_height;
  if (width * height > kMaxImagePixels) {
    jpeg_destroy_decompress(cinfo);
    check_pixels(width, height, name);
  }
  state->image = Image(height, width, cinfo->output_components);
  const size_t stride = static_cast<size_t>(width * cinfo->output_components);
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = state->image.pixels.data() + cinfo->output_scanline * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  jpeg_destroy_decompress(cinfo);
  return std::move(state->image);
}

// stb_image reads a binary PGM or PPM cut short without a word (the missing pixels are left
// as they were); Pillow calls it truncated, and so does this: the header's size against the
// bytes after it.
void check_pnm_length(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 2 || data[0] != 'P' || (data[1] != '5' && data[1] != '6')) return;
  size_t at = 2;
  uint64_t fields[3] = {0, 0, 0};  // width, height, maxval
  for (uint64_t& field : fields) {
    while (at < size && (std::isspace(data[at]) || data[at] == '#')) {
      if (data[at] == '#') {
        while (at < size && data[at] != '\n') ++at;
      } else {
        ++at;
      }
    }
    while (at < size && std::isdigit(data[at]) && field < (uint64_t{1} << 40)) {
      field = field * 10 + (data[at++] - '0');
    }
  }
  ++at;  // the one whitespace character before the pixels
  const uint64_t channels = data[1] == '6' ? 3 : 1;
  const uint64_t needed = fields[0] * fields[1] * channels * (fields[2] > 255 ? 2 : 1);
  if (fields[0] > 0 && fields[1] > 0 && fields[0] <= (uint64_t{1} << 20) &&
      fields[1] <= (uint64_t{1} << 20) && (at > size || size - at < needed)) {
    throw FileError(name + ": truncated image: " + std::to_string(fields[0]) + " x " +
                    std::to_string(fields[1]) + " pixels need " + std::to_string(needed) +
                    " bytes, the file has " + std::to_string(at > size ? 0 : size - at));
  }
}

Image decode_with_stb(const uint8_t* data, size_t size, const std::string& name) {
  check_pnm_length(data, size, name);
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) {
    throw FileError(name + ": the image file is larger than 2 GiB");
  }
  int width = 0;
  int height = 0;
  int channels = 0;
  if (!stbi_info_from_memory(data, static_cast<int>(size), &width, &height, &channels)) {
    throw FileError(name +
                    ": not an image NN Studio reads (JPEG, PNG, BMP, PPM or PGM), or "
                    "corrupt: " +
                    stbi_failure_reason());
  }
  check_pixels(width, height, name);
  // Gray with or without alpha decodes to "L", everything else to "RGB" (alpha dropped).
  const int wanted = channels <= 2 ? 1 : 3;
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, static_cast<int>(size), &width, &height, &channels, wanted),
      stbi_image_free);
  if (!pixels) {
    throw FileError(name + ": corrupt image (the decoder stopped at: " + stbi_failure_reason() +
                    ")");
  }
  Image image(height, width, wanted);
  std::copy_n(pixels.get(), image.pixels.size(), image.pixels.begin());
  return image;
}

}  // namespace

Image decode_image(const uint8_t* data, size_t size, const std::string& name) {
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    return decode_jpeg(data, size, name);
  }
  return decode_with_stb(data, size, name);
}

Image read_image_file(const std::string& path) {
  const serialize::FileSource file(path);
  std::vector<uint8_t> bytes(file.size());
  file.read(0, bytes.data(), bytes.size(), "the image");
  return decode_image(bytes.data(), bytes.size(), path);
}

Image to_rgb(Image image) {
  if (image.channels == 3) return image;
  Image rgb(image.height, image.width, 3);
  for (size_t i = 0; i < image.pixels.size(); ++i) {
    rgb.pixels[3 * i] = rgb.pixels[3 * i + 1] = rgb.pixels[3 * i + 2] = image.pixels[i];
  }
  return rgb;
}

Image to_grayscale(const Image& image) {
  if (image.channels == 1) return image;
  Image gray(image.height, image.width, 1);
  for (size_t i = 0; i < gray.pixels.size(); ++i) {
    const uint32_t r = image.pixels[3 * i];
    const uint32_t g = image.pixels[3 * i + 1];
    const uint32_t b = image.pixels[3 * i + 2];
    // Pillow's L24: the weights 0.299, 0.587, 0.114 scaled by 2^16, rounded.
    gray.pixels[i] = static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
  }
  return gray;
}

}  // namespace nns::data
