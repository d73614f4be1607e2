// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A flat block of device memory shared by a tensor and all its views. It also carries the
// version counter that in-place operations bump, shared by every view of the same memory
// (the check that a tensor saved for backward was not modified in place reads it).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/tensor/device.h"

namespace nns {

class Storage {
 public:
  // Allocates nbytes (64-byte aligned) on device through the device's allocator.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  Storage(void* data, size_t nbytes, Device device)
      : data_(data), nbytes_(nbytes), device_(device) {}
  void* data_;
  size_t nbytes_;
  Device device_;
  std::atomic<uint32_t> version_{0};
};

}  // namespace nns
