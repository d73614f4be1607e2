// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Where a tensor's storage lives. CPU is always there; CUDA devices come from the optional
// CUDA backend (engine/cuda) behind the same kernel tables (engine/backend/dispatch.h).
#include <cstdint>
#include <string>

namespace nns {

enum class DeviceType : uint8_t { CPU = 0, CUDA = 1 };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}
  // Parses "cpu", "cuda", "cuda:1"; throws ValueError otherwise.
  static Device parse(const std::string& text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  // "cpu" or "cuda:0", as PyTorch prints a device.
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{DeviceType::CPU, 0};

}  // namespace nns
