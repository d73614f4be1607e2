// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/data/device_batches.h"

#include <atomic>
#include <cstring>
#include <utility>

#include "engine/autograd/grad_mode.h"
#include "engine/backend/cuda_backend.h"
#include "engine/tensor/factories.h"

namespace nns::data {
namespace {

std::atomic<bool> g_prefetch{true};

const CudaBackendTables& tables() {
  const CudaBackendTables* t = cuda::backend();
  if (t == nullptr) throw DeviceError("moving a batch to the GPU: " + cuda::unavailable_reason());
  return *t;
}

// The targets start on a boundary of their own in a staging buffer (cudaMemcpy is fastest
// from aligned addresses).
constexpr size_t kAlign = 256;
size_t aligned(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// A staging buffer grows to the next power of two of what a batch needs, from 1 MiB: the last
// batch of an epoch is smaller, the next epoch's first one the same size again, and making
// pinned memory is slow (and freeing it waits for the device).
size_t staging_size(size_t need) {
  size_t size = size_t{1} << 20;
  while (size < need) size <<= 1;
  return size;
}

size_t nbytes(const Tensor& t) {
  return static_cast<size_t>(t.numel()) * t.element_size();
}

}  // namespace

void DeviceBatches::set_prefetch_for_testing(bool on) {
  g_prefetch = on;
}

DeviceBatches::DeviceBatches(Device device) : device_(device) {}

DeviceBatches::~DeviceBatches() {
  try {
    clear();
  } catch (const std::exception&) {
    // Nothing to do about a failure while tearing down.
  }
  const CudaBackendTables* t = cuda::backend();
  if (!device_.is_cuda() || t == nullptr) return;
  for (Slot& slot : slots_) {
    try {
      // The buffer may be read by a copy still queued.
      if (slot.done != nullptr) t->event_synchronize(slot.done);
    } catch (const std::exception&) {
    }
    t->host_free_pinned(slot.pinned);
    t->event_destroy(slot.done);
  }
}

Batch DeviceBatches::host_batch(const EpochBatches& epoch, int64_t b) {
  std::optional<Pending> taken;
  if (next_ && next_->index == b && next_->epoch.order().is_same(epoch.order())) {
    taken = std::move(next_);
    next_.reset();
  } else {
    release(next_);
    taken.emplace(Pending{epoch, b, epoch[b], std::nullopt, nullptr, false});
  }
  release(current_);
  current_ = std::move(taken);
  return current_->host;
}

Batch DeviceBatches::on_device() {
  if (!current_) throw ValueError("DeviceBatches: on_device() before host_batch()");
  Pending& c = *current_;
  if (device_.is_cpu()) return c.host;
  if (c.waited) return *c.device;
  const bool prefetch = g_prefetch;
  if (!c.device && !prefetch) {
    c.device = Batch{c.host.inputs.to(device_), c.host.targets.to(device_)};
    c.waited = true;
    return *c.device;
  }
  if (!c.device) queue_copy(c);
  wait_on_device(c);
  c.waited = true;
  // The next batch's copy goes on the copy stream before this step's kernels are queued, so
  // that it waits only for the last step's. Its failure (a streamed batch that cannot be
  // decoded, a device error) belongs to the next step, which makes the batch again.
  if (prefetch && c.index + 1 < c.epoch.size()) {
    try {
      next_.emplace(
          Pending{c.epoch, c.index + 1, c.epoch[c.index + 1], std::nullopt, nullptr, false});
      queue_copy(*next_);
    } catch (const std::exception&) {
      release(next_);
    }
  }
  return *c.device;
}

void DeviceBatches::clear() {
  release(next_);
  release(current_);
}

void DeviceBatches::queue_copy(Pending& p) {
  const CudaBackendTables& t = tables();
  Tensor inputs, targets;
  {
    NoGradGuard no_grad;
    inputs = p.host.inputs.contiguous();
    targets = p.host.targets.contiguous();
  }
  const size_t input_bytes = nbytes(inputs);
  const size_t target_bytes = nbytes(targets);
  const size_t need = aligned(input_bytes) + target_bytes;
  const int s = 1 - last_slot_;
  Slot& slot = slots_[s];
  if (slot.done == nullptr) slot.done = t.event_create(device_.index);
  t.event_synchronize(slot.done);  // the copy that read this buffer last has finished
  if (slot.capacity < need) {
    t.host_free_pinned(slot.pinned);
    slot.capacity = 0;
    slot.pinned = t.host_alloc_pinned(staging_size(need));
    if (slot.pinned == nullptr) {
      // No pinned memory: the batch crosses as tensor.to would take it (synchronously).
      p.device = Batch{inputs.to(device_), targets.to(device_)};
      p.slot = nullptr;
      return;
    }
    slot.capacity = staging_size(need);
  }
  last_slot_ = s;
  char* staging = static_cast<char*>(slot.pinned);
  if (input_bytes > 0) std::memcpy(staging, inputs.raw_data(), input_bytes);
  if (target_bytes > 0)
    std::memcpy(staging + aligned(input_bytes), targets.raw_data(), target_bytes);
  Batch device{empty(inputs.sizes(), TensorOptions(inputs.dtype()).device(device_)),
               empty(targets.sizes(), TensorOptions(targets.dtype()).device(device_))};
  try {
    t.copy_host_to_device_async(device.inputs.raw_data(), staging, input_bytes, slot.done);
    t.copy_host_to_device_async(device.targets.raw_data(), staging + aligned(input_bytes),
                                target_bytes, slot.done);
  } catch (const std::exception&) {
    // A copy that was queued may still write to the tensors: their memory goes back to the
    // allocator only after the compute stream has waited for it.
    try {
      t.compute_wait_event(slot.done);
    } catch (const std::exception&) {
    }
    throw;
  }
  p.device = std::move(device);
  p.slot = &slot;
}

void DeviceBatches::wait_on_device(const Pending& p) {
  if (p.slot != nullptr) tables().compute_wait_event(p.slot->done);
}

void DeviceBatches::release(std::optional<Pending>& p) {
  if (!p) return;
  // Its tensors' blocks may be handed out at once: the compute stream, which orders the
  // allocator, waits for a copy still writing to them.
  if (!p->waited && p->device) {
    try {
      wait_on_device(*p);
    } catch (const std::exception&) {
      // The copy's stream failed: the device reports that error at the next call.
    }
  }
  p.reset();
}

}  // namespace nns::data
