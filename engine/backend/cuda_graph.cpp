// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/backend/cuda_graph.h"

#include <cstring>
#include <string>

#include "engine/backend/cuda_backend.h"
#include "engine/tensor/error.h"

namespace nns::cuda {
namespace {

// Room for the scalars of one step: an optimizer's are some 64 bytes a parameter, so this holds
// a model of a few thousand parameter tensors.
constexpr size_t kScalarBytes = size_t{256} << 10;
constexpr size_t kScalarAlign = 16;

thread_local Graph* t_capturing = nullptr;

const CudaBackendTables& tables() {
  const CudaBackendTables* b = backend();
  if (b == nullptr) throw DeviceError("CUDA graph: " + unavailable_reason());
  return *b;
}

}  // namespace

Graph::Graph(int device) : device_(device) {}

Graph::~Graph() {
  if (t_capturing == this) abort_capture();
  if (handle_ != nullptr) {
    try {
      tables().graph_destroy(handle_);
    } catch (const std::exception&) {
      // Nothing to do about a failure while tearing down.
    }
  }
}

Graph* Graph::capturing() {
  return t_capturing;
}

void Graph::capture_begin() {
  if (t_capturing != nullptr) throw DeviceError("CUDA graph: this thread is capturing already");
  if (handle_ != nullptr) {
    tables().graph_destroy(handle_);
    handle_ = nullptr;
  }
  captured_ = false;
  slots_.clear();
  scalars_used_ = 0;
  void* device = nullptr;
  void* host = nullptr;
  handle_ = tables().graph_begin(device_, kScalarBytes, &device, &host);
  scalars_device_ = static_cast<char*>(device);
  scalars_host_ = static_cast<char*>(host);
  t_capturing = this;
}

void Graph::capture_end() {
  if (t_capturing != this) throw DeviceError("CUDA graph: capture_end without capture_begin");
  t_capturing = nullptr;
  nodes_ = tables().graph_end(handle_, true);
  captured_ = true;
  first_replay_ = true;
}

void Graph::abort_capture() noexcept {
  if (t_capturing != this) return;
  t_capturing = nullptr;
  try {
    tables().graph_end(handle_, false);
  } catch (const std::exception&) {
    // The capture is dropped either way.
  }
  slots_.clear();
  captured_ = false;
}

void Graph::replay() {
  if (!captured_) throw DeviceError("CUDA graph: replay before a capture");
  const CudaBackendTables& t = tables();
  if (!first_replay_ && !slots_.empty()) {
    // The last replay's copy of the scalars must have been made before they are rewritten.
    t.graph_wait_scalars(handle_);
    for (const Slot& s : slots_) s.refill(scalars_host_ + s.offset);
  }
  first_replay_ = false;
  t.graph_replay(handle_, scalars_used_);
}

const void* Graph::add_scalars(const void* value, size_t size, std::function<void(void*)> refill) {
  const size_t offset = (scalars_used_ + kScalarAlign - 1) / kScalarAlign * kScalarAlign;
  if (offset + size > kScalarBytes) {
    throw DeviceError("CUDA graph: the step's scalars need more than " +
                      std::to_string(kScalarBytes) + " bytes");
  }
  std::memcpy(scalars_host_ + offset, value, size);
  scalars_used_ = offset + size;
  slots_.push_back({offset, std::move(refill)});
  return scalars_device_ + offset;
}

}  // namespace nns::cuda
