// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/tensor/device.h"

#include "engine/tensor/error.h"

namespace nns {

Device Device::parse(const std::string& text) {
  if (text == "cpu") return kCPU;
  if (text == "cuda") return Device(DeviceType::CUDA, 0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5) {
    int index = 0;
    for (size_t i = 5; i < text.size(); ++i) {
      if (text[i] < '0' || text[i] > '9' || index > 1000) {
        throw ValueError("Device::parse: bad device string '" + text +
                         "'; expected 'cpu', 'cuda' or 'cuda:N'");
      }
      index = index * 10 + (text[i] - '0');
    }
    return Device(DeviceType::CUDA, index);
  }
  throw ValueError("Device::parse: bad device string '" + text +
                   "'; expected 'cpu', 'cuda' or 'cuda:N'");
}

std::string Device::str() const {
  if (type == DeviceType::CPU) return "cpu";
  return "cuda:" + std::to_string(index);
}

}  // namespace nns
